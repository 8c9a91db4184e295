"""The one renderer of dead-group evidence: findings (:mod:`..lag.deadfindings`) and a permission
(:mod:`.permission`) in, the lines the CLI, the audit records, the logs and the Spark job show.

``evidence_lines``: the verdict line first (``dead: <reasons>``, ``paused: ...``, or the state of
an active group), then one line per finding, the permission line last. ``cannot_tell_lines``:
the lines of the findings that could not decide.

Durations are floored, to the minute from one hour up and to the second below (``216 h 5 min``,
``1 min 12 s``), so a printed duration is never above the true one and never contradicts the
threshold it is compared with (``idle_hours=48``). Times are UTC to the minute.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..lag.deadfindings import (
    BreakReason,
    CommitsUnreadable,
    Effect,
    ExpiryFinding,
    Finding,
    GroupEvidence,
    GroupHealth,
    IdleBreak,
    IdleFinding,
    ProgressFinding,
    Reason,
    TopicsFinding,
    TopicsUnknown,
)
from ..lag.observation import GroupObservation
from .permission import Permission, PermissionReason

__all__ = [
    "format_time",
    "format_duration",
    "evidence_lines",
    "cannot_tell_lines",
    "verdict_line",
    "permission_line",
    "finding_lines",
    "break_text",
]

_IDLE_MEANS = "idle time counts only while Empty with records to read and no commit progress"


def format_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def format_duration(ms: int) -> str:
    """Floored: ``216 h 5 min`` from one hour up, ``1 min 12 s`` / ``40 s`` below."""
    seconds = max(0, ms) // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    return f"{seconds} s"


def permission_line(p: Permission) -> str:
    return {
        PermissionReason.DENY: f"matches the deny pattern {p.pattern!r}: never deletable",
        PermissionReason.ALLOW: f"matches the allow pattern {p.pattern!r}",
        PermissionReason.NOT_ALLOWED: "matches no allow pattern: not deletable",
        PermissionReason.DEFAULT_DENY: f"matches the default deny pattern {p.pattern!r} (a system group): not "
        "deletable",
        PermissionReason.STREAMS_APP: f"looks like a Kafka Streams application id (topic(s) {', '.join(p.topics)} "
        "exist): not deletable",
        PermissionReason.NO_DENY: "matches no deny pattern",
    }[p.reason]


def break_text(b: IdleBreak) -> str:
    at = format_time(b.at_ms)
    state = b.state.value if b.state is not None else "?"
    return {
        BreakReason.MEMBERS: f"it had {b.members} member(s) in state {state} at {at}",
        BreakReason.UNREADABLE: f"its committed offsets could not all be read at {at}",
        BreakReason.OFFSETS_CHANGED: f"its committed offsets changed after {at}",
        BreakReason.NO_VISIBLE_COMMIT: f"it had no visible committed offset at {at}",
        BreakReason.CAUGHT_UP: f"it had nothing to read at {at} (caught up on every partition)",
        BreakReason.LOG_END_UNKNOWN: f"nothing to read was known at {at} (log end offsets not read)",
    }[b.reason]


#: where a group type the consumer-group rules do not judge is deleted by hand, once its owner
#: says it is gone
_OWN_TOOL = {
    "streams": "kafka-streams-groups.sh --delete --group <id>",
    "share": "kafka-share-groups.sh --delete --group <id>",
}


def _not_judged(obs: GroupObservation) -> str:
    tool = _OWN_TOOL.get(str(obs.group_type))
    return (
        f"a {obs.group_type} group: the consumer-group rules do not apply to it, so it is never dead or "
        "deletable by them" + (f" (its owner can delete it with {tool})" if tool else "")
    )


def _dead_text(f: Finding) -> str:
    """A dead reason as the verdict line names it."""
    if f.reason is Reason.NO_COMMITS:
        return "it has no committed offset at all (assume_full_visibility)"
    if f.reason is Reason.TOPICS_DELETED:
        return "every topic it committed to was deleted"
    assert isinstance(f, IdleFinding)
    return (
        f"no commit progress for at least {format_duration(f.at_least_ms)} while Empty with records to read "
        f"(idle_hours={f.idle_hours:g})"
    )


def _idle_lines(f: IdleFinding) -> list[str]:
    lines = []
    if f.since_ms is not None:
        line = (
            f"idle for at least {format_duration(f.at_least_ms)}: Empty, with records to read and no commit "
            f"progress, at every stored snapshot since {format_time(f.since_ms)}"
        )
        line += f" (before that, {break_text(f.before)})" if f.before is not None else ""
        threshold = int(f.idle_hours * 3_600_000)
        if f.at_least_ms < threshold:
            line += f"; less than idle_hours={f.idle_hours:g}"
        elif f.reason is Reason.IDLE_UNKNOWN:
            line += f"; not more than idle_hours={f.idle_hours:g}"
        lines.append(line)
    elif f.reason is Reason.NOT_IDLE:
        lines.append(
            f"not idle by the history: {break_text(f.before) if f.before else 'no stored snapshot'}; "
            f"{_IDLE_MEANS}"
        )
    if f.reason is Reason.IDLE_UNKNOWN:
        head = f"cannot tell whether it has been idle for more than idle_hours={f.idle_hours:g}: "
        if f.since_ms is None:
            why = break_text(f.before) if f.before is not None else "no stored snapshot shows it idle"
            if f.at_most_ms is not None:  # seen not idle, but longer ago than idle_hours
                why += f", {format_duration(f.at_most_ms)} ago, and no stored snapshot since"
        elif f.before is None:
            why = (
                f"idle at every stored snapshot since {format_time(f.since_ms)}, the first: the history does not "
                "reach further back"
            )
        else:
            why = f"idle for at least {format_duration(f.at_least_ms)}; before that, {break_text(f.before)}"
        lines.append(head + why)
    return lines


def finding_lines(f: Finding, obs: GroupObservation) -> list[str]:
    """The evidence lines of one finding of an Empty group (none for a dead reason that only the
    verdict line names)."""
    reason, now = f.reason, obs.at_ms
    if isinstance(f, IdleFinding):
        if reason is Reason.NO_HISTORY:
            return ["cannot tell how long it has been idle: no stored history"]
        return _idle_lines(f)
    if isinstance(f, TopicsFinding):
        return [_topics_line(f)]
    if isinstance(f, TopicsUnknown):
        return [_topics_unknown_line(f)]
    if isinstance(f, CommitsUnreadable):
        parts = ", ".join(str(tp) if failure is None else f"{tp} ({failure})" for tp, failure in f.partitions)
        return [f"cannot tell what it committed on {parts}: its committed offsets there could not be read"]
    if isinstance(f, ProgressFinding):
        if reason is Reason.LAST_PROGRESS:
            return [f"last commit progress {format_duration(now - f.at_ms)} ago ({format_time(f.at_ms)})"]
        return [
            f"no commit progress in the {format_duration(now - f.at_ms)} of stored history (since "
            f"{format_time(f.at_ms)})"
        ]
    if isinstance(f, ExpiryFinding):
        return [_expiry_line(f)]
    return {
        Reason.NOT_PLAIN_CONSUMER: [
            f"protocol type {obs.protocol_type!r} is not a plain consumer group: neither a "
            "missing commit nor a lack of commit progress is evidence against it"
        ],
        Reason.NO_VISIBLE_COMMITS: ["no committed offsets"],
        Reason.NO_COMMITS: [],
        Reason.NO_COMMITS_UNSEEN: [
            "cannot tell whether it has no committed offset at all: a fetch of all its "
            "offsets leaves out topics the principal may not Describe (set "
            "assume_full_visibility only if it may Describe every topic and group)"
        ],
    }[reason]


def _topics_line(f: TopicsFinding) -> str:
    topics = ", ".join(f.topics)
    return {
        Reason.TOPICS_DELETED: f"every committed topic was deleted (UNKNOWN_TOPIC_OR_PARTITION by name): {topics}",
        Reason.SOME_TOPICS_DELETED: f"{len(f.topics)} of {f.of} committed topics no longer exist (checked by "
        f"name): {topics}",
        Reason.TOPICS_NOT_LISTED: f"cannot tell whether every committed topic was deleted: {topics} not in the "
        "topic list (which leaves out topics the principal may not Describe) and not "
        "checked by name",
        Reason.SOME_TOPICS_NOT_LISTED: f"{len(f.topics)} of {f.of} committed topics are not in the topic list "
        f"(not checked by name): {topics}",
    }[f.reason]


def _topics_unknown_line(f: TopicsUnknown) -> str:
    why = (
        [f"{', '.join(f.hidden)} not visible to this principal (TOPIC_AUTHORIZATION_FAILED)"]
        if f.hidden
        else []
    )
    why += (
        [f"the check of {', '.join(f'{t} ({failure})' for t, failure in f.failed)} failed"]
        if f.failed
        else []
    )
    why += [f"{', '.join(f.unchecked)} not checked by name"] if f.unchecked else []
    return f"cannot tell whether every committed topic was deleted: {'; '.join(why)}"


def _expiry_line(f: ExpiryFinding) -> str:
    # the times are known unless the reason is EXPIRY_UNKNOWN
    if f.reason is Reason.EXPIRY_UNKNOWN or f.empty_since_ms is None or f.expires_at_ms is None:
        return (
            f"Kafka expires its offsets {f.retention_minutes} min after it became Empty (KIP-211); when that "
            "was is not in the history"
        )
    return (
        f"Empty since at least {format_time(f.empty_since_ms)}: Kafka will expire its offsets at or before "
        f"{format_time(f.expires_at_ms)} (offsets.retention.minutes={f.retention_minutes}, KIP-211)"
    )


def verdict_line(found: GroupEvidence) -> str:
    obs = found.observation
    first = found.findings[0].reason if found.findings else None
    if first is Reason.STATE_DEAD:
        return (
            "state Dead: the group does not exist, or Kafka already expired its offsets (nothing to delete)"
        )
    if found.health is GroupHealth.ACTIVE:
        return f"state {obs.state.value} with {obs.members} member(s)"
    if first is Reason.NOT_JUDGED_TYPE:
        return f"paused: state Empty, {_not_judged(obs)}"
    dead = [_dead_text(f) for f in found.findings if f.effect is Effect.DEAD]
    return f"dead: {'; '.join(dead)}" if dead else "paused: Empty, but no evidence that it is abandoned"


def evidence_lines(found: GroupEvidence, permission: Permission) -> tuple[str, ...]:
    obs = found.observation
    lines = [verdict_line(found)]
    first = found.findings[0].reason if found.findings else None
    if first is Reason.NOT_JUDGED_TYPE:
        lines += [_not_judged(obs)] if found.health is GroupHealth.ACTIVE else []
    elif first not in (Reason.STATE_DEAD, Reason.ACTIVE):
        lines.append("state Empty: no members")
        for f in found.findings:
            lines += finding_lines(f, obs)
    lines.append(permission_line(permission))
    return tuple(lines)


def cannot_tell_lines(found: GroupEvidence) -> tuple[str, ...]:
    obs = found.observation
    return tuple(
        _not_judged(obs) if f.reason is Reason.NOT_JUDGED_TYPE else finding_lines(f, obs)[-1]
        for f in found.cannot_tell
    )
