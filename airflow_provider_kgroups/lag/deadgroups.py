"""Is a group active, paused or dead? A verdict with the evidence behind it, what could not be
told, and whether it may be deleted.

What is read, per group: its state and members (DescribeGroups), its committed offsets
(OffsetFetch of all its partitions), its committed topics checked **by name** (Metadata
naming them), and the stored history of snapshots (the admin API has no commit timestamps).

* Members, or a state other than ``Empty`` -> **active**. ``Dead`` -> **dead** (the group no
  longer exists, or Kafka already expired its offsets: nothing to delete).
* Share and streams groups (KIP-932, KIP-1071) are never judged by these consumer-group rules:
  **active** or **paused** as their state says, never dead or deletable here.
* An ``Empty`` consumer-protocol group is **dead** when at least one rule below gives evidence,
  otherwise **paused** (scaled to zero, a weekly batch job...: deleting it would make its
  consumers fall back to ``auto.offset.reset``).

The rules (``dead_reasons`` codes in brackets):

``idle``
    The group was *idle* for at least ``idle_hours``: at every stored snapshot of an unbroken
    trailing run up to now it was ``Empty`` with no members, its committed offsets were those
    of now, and it had records to read (log end beyond the committed offset on at least one
    partition). Time with members, or with nothing to read (caught up on a quiet topic, or
    log ends not read), never counts; the idle time is now minus the run's first snapshot.
    Only plain consumer groups (protocol type ``consumer`` or empty): Connect and other
    protocol types may commit elsewhere or rarely, so a lack of commit progress is never
    evidence against them. Only the offsets the principal may see are compared.
``topics_deleted``
    Every topic it committed to answered UNKNOWN_TOPIC_OR_PARTITION when checked by name
    (``topic_checks``). A topic that answers TOPIC_AUTHORIZATION_FAILED (not visible), fails,
    or was not checked by name makes this rule *cannot tell*: a topic listing leaves out the
    topics the principal may not Describe, without an error. Any protocol type.
``no_commits``
    It has no committed offset at all - only with ``assume_full_visibility`` (set it only when
    the principal may Describe every topic and group, e.g. a super user) and only for plain
    consumer groups. Without it this is *cannot tell*: a fetch of all of a group's offsets
    leaves out the topics the principal may not Describe, without an error.
``state_dead``
    Kafka answered state ``Dead``.

``deletable`` is true only for a dead ``Empty`` group that the patterns allow. Pattern
precedence (globs, or ``re:`` regular expressions, as in :mod:`..client.selection`): a user
``deny`` match always wins; then a user ``allow`` match (which may override a default deny,
being explicit); then the default deny patterns for system groups; and when ``allow`` is
given, a group matching none of it is not deletable. Kafka Streams application ids (the
group id prefixes an existing ``-changelog`` or ``-repartition`` topic) are denied by default
too.

Durations are printed floored, to the minute from one hour up and to the second below
(``216 h 5 min``, ``1 min 12 s``), so a printed duration is never above the true one and a
rule's threshold (``idle_hours=48``) is never contradicted by rounding.

Over 400 lines on purpose: each rule, its evidence line and its cannot-tell line stand side by
side, so that changing a rule is one edit in one place (the Spark job and the cleanup read them
from here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Collection, Iterable, Mapping, Sequence

from ..client.errors import CLIENT_NOT_READ, ConfigurationError, Failure
from ..client.results import GroupDescription, GroupOffsets, GroupState, TopicExistence, TopicPartition
from ..client.selection import GroupSelector, compile_pattern, select_groups
from .model import LagSnapshot
from .snapshot import now_ms as _now_ms

__all__ = ["GroupHealth", "DeadReason", "DeadGroupRules", "GroupHealthReport", "GroupHistoryPoint",
           "DEFAULT_DENY_PATTERNS", "DeadGroupsResult", "classify_group", "classify_groups", "history_points",
           "find_dead_groups", "format_duration", "format_time", "last_progress"]

#: System groups never called deletable unless a user allow pattern names them.
DEFAULT_DENY_PATTERNS = (
    "connect-*",  # Kafka Connect: the worker group (default "connect-cluster") and sink connectors' groups
    "_confluent*",  # Confluent Platform internals (ksqlDB "_confluent-ksql-*", Control Center...)
    "__*",  # internal by convention
    "schema-registry*",  # Confluent Schema Registry's group
)
_STREAMS_SUFFIXES = ("-changelog", "-repartition")
#: Group types (ListGroups v5 / GroupDescription.group_type) the consumer-group rules never judge.
NOT_JUDGED_GROUP_TYPES = ("share", "streams")


class GroupHealth(str, Enum):
    ACTIVE = "active"
    PAUSED = "paused"
    DEAD = "dead"


class DeadReason(str, Enum):
    """Machine-readable dead reasons (``GroupHealthReport.dead_reasons``)."""

    STATE_DEAD = "state_dead"  # Kafka says Dead: nothing to delete
    IDLE = "idle"  # Empty with records to read and no commit progress for idle_hours
    TOPICS_DELETED = "topics_deleted"  # every committed topic answered UNKNOWN_TOPIC_OR_PARTITION by name
    NO_COMMITS = "no_commits"  # no committed offset at all, under assume_full_visibility


@dataclass(frozen=True, slots=True)
class DeadGroupRules:
    idle_hours: float = 7 * 24.0  # idle (Empty, records to read, no commit progress) this long is evidence
    offsets_retention_minutes: int = 7 * 24 * 60  # the cluster's offsets.retention.minutes (Kafka's default)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default_deny: tuple[str, ...] = DEFAULT_DENY_PATTERNS
    deny_streams_apps: bool = True
    #: The principal may Describe every topic and group (e.g. a super user): only then is "no
    #: committed offset at all" evidence. Off by default.
    assume_full_visibility: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.idle_hours, bool) or not isinstance(self.idle_hours, (int, float)) or self.idle_hours <= 0:
            raise ConfigurationError(f"idle_hours must be a positive number of hours, got {self.idle_hours!r}.")
        if isinstance(self.offsets_retention_minutes, bool) or not isinstance(self.offsets_retention_minutes, int) \
                or self.offsets_retention_minutes <= 0:
            raise ConfigurationError("offsets_retention_minutes must be a positive int (the broker setting), "
                                     f"got {self.offsets_retention_minutes!r}.")
        for name in ("deny_streams_apps", "assume_full_visibility"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(f"{name} must be True or False, got {getattr(self, name)!r}.")
        for name in ("allow", "deny", "default_deny"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigurationError(f"{name} must be a list of patterns, not the single string {value!r}.")
            object.__setattr__(self, name, tuple(value))
            for pattern in value:
                compile_pattern(pattern)

    @property
    def idle_ms(self) -> int:
        return int(self.idle_hours * 3_600_000)

    def first_match(self, which: str, group_id: str) -> str | None:
        return next((p for p in getattr(self, which) if compile_pattern(p).match(group_id)), None)


@dataclass(frozen=True, slots=True)
class GroupHistoryPoint:
    """A group as one stored snapshot saw it. ``log_end``: the partitions' log end offsets
    read in that snapshot (a partition without one is unknown, never "nothing to read")."""

    at_ms: int
    state: GroupState
    members: int
    committed: Mapping[TopicPartition, int]
    log_end: Mapping[TopicPartition, int] = field(default_factory=dict)

    @property
    def has_records_to_read(self) -> bool:
        return any(tp in self.log_end and self.log_end[tp] > c for tp, c in self.committed.items())


@dataclass(frozen=True, slots=True)
class GroupHealthReport:
    group_id: str
    health: GroupHealth
    evidence: tuple[str, ...]  # evidence[0]: the verdict line; evidence[-1]: the permission line
    deletable: bool
    state: GroupState
    protocol_type: str = ""
    last_progress_ms: int | None = None  # last time the history saw the committed offsets change
    empty_since_ms: int | None = None  # Empty since at least this time (history)
    expires_at_ms: int | None = None  # Kafka expires its offsets at or before this time (KIP-211)
    dead_reasons: tuple[str, ...] = ()  # DeadReason values; empty unless health is DEAD
    cannot_tell: tuple[str, ...] = ()  # rules that could not be decided, and why (also in evidence)
    idle_since_ms: int | None = None  # start of the idle run (Empty, records to read, no progress)
    group_type: str = "classic"
    #: The patterns alone allow deleting it (the permission line, evidence[-1]), whatever the evidence.
    permitted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "health": self.health.value, "evidence": list(self.evidence),
                "deletable": self.deletable, "permitted": self.permitted, "state": self.state.value, "protocol_type": self.protocol_type,
                "group_type": self.group_type, "dead_reasons": list(self.dead_reasons),
                "cannot_tell": list(self.cannot_tell), "last_progress_ms": self.last_progress_ms,
                "idle_since_ms": self.idle_since_ms, "empty_since_ms": self.empty_since_ms,
                "expires_at_ms": self.expires_at_ms}


@dataclass(frozen=True, slots=True)
class DeadGroupsResult:
    reports: Mapping[str, GroupHealthReport]
    failures: Mapping[str, Failure] = field(default_factory=dict)  # groups that could not be read

    @property
    def deletable(self) -> list[str]:
        return [g for g, r in self.reports.items() if r.deletable]

    def to_dict(self) -> dict[str, Any]:
        return {"reports": {g: r.to_dict() for g, r in self.reports.items()},
                "failures": {g: f.to_dict() for g, f in self.failures.items()}}


def format_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


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


def history_points(snapshots: Iterable[LagSnapshot], group_id: str) -> list[GroupHistoryPoint]:
    """The group's points in stored snapshots, oldest first (snapshots where it was read)."""
    points = []
    for snapshot in sorted(snapshots, key=lambda s: s.taken_at_ms):
        group = snapshot.groups.get(group_id)
        if group is None:
            continue
        committed, log_end = {}, {}
        for p in group.partitions:
            tp = p.tp
            if p.committed is not None:
                committed[tp] = p.committed
            if p.log_end is not None:
                log_end[tp] = p.log_end
        points.append(GroupHistoryPoint(snapshot.taken_at_ms, group.state, group.members, committed, log_end))
    return points


def last_progress(points: Sequence[GroupHistoryPoint]) -> int | None:
    """The time of the last point whose committed offsets differ from the point before."""
    for before, after in zip(reversed(points[:-1]), reversed(points)):
        if dict(after.committed) != dict(before.committed):
            return after.at_ms
    return None


def _empty_since(points: Sequence[GroupHistoryPoint]) -> int | None:
    since = None
    for point in reversed(points):
        if point.state is not GroupState.EMPTY or point.members:
            break
        since = point.at_ms
    return since


def _idle_run(history: Sequence[GroupHistoryPoint], committed: Mapping[TopicPartition, int]
              ) -> tuple[int | None, str | None]:
    """(first snapshot of the trailing idle run, or None; why the run does not reach further
    back, or None when it starts with the history). The live point (now) is Empty with
    ``committed``; a stored point belongs to the run when it was Empty without members, had
    the same committed offsets and had records to read (log ends never shrink, so a backlog
    at one point with no commit since lasts until now)."""
    start = None
    for point in reversed(history):
        at = format_time(point.at_ms)
        if point.state is not GroupState.EMPTY or point.members:
            return start, f"it had {point.members} member(s) in state {point.state.value} at {at}"
        if dict(point.committed) != dict(committed):
            return start, f"its committed offsets changed after {at}"
        if not point.committed:
            return start, f"it had no visible committed offset at {at}"
        if not point.has_records_to_read:
            if all(tp in point.log_end for tp in point.committed):
                return start, f"it had nothing to read at {at} (caught up on every partition)"
            return start, f"nothing to read was known at {at} (log end offsets not read)"
        start = point.at_ms
    return start, None


def _streams_topics(group_id: str, topics: Collection[str]) -> list[str]:
    prefix = group_id + "-"
    return sorted(t for t in topics if t.startswith(prefix) and t.endswith(_STREAMS_SUFFIXES))


def _permission(group_id: str, rules: DeadGroupRules, topics: Collection[str] | None) -> tuple[bool, str]:
    """(may be deleted, why) from the patterns alone."""
    denied = rules.first_match("deny", group_id)
    if denied:
        return False, f"matches the deny pattern {denied!r}: never deletable"
    allowed = rules.first_match("allow", group_id)
    if allowed:
        return True, f"matches the allow pattern {allowed!r}"
    if rules.allow:
        return False, "matches no allow pattern: not deletable"
    system = rules.first_match("default_deny", group_id)
    if system:
        return False, f"matches the default deny pattern {system!r} (a system group): not deletable"
    streams = _streams_topics(group_id, topics or ()) if rules.deny_streams_apps else []
    if streams:
        return False, (f"looks like a Kafka Streams application id (topic(s) {', '.join(streams[:3])} exist): "
                       "not deletable")
    return True, "matches no deny pattern"


class _Findings:
    """What the rules found for one Empty group: evidence lines, dead reasons, cannot-tells."""

    def __init__(self) -> None:
        self.evidence: list[str] = []
        self.reasons: list[tuple[DeadReason, str]] = []
        self.cannot_tell: list[str] = []

    def dead(self, code: DeadReason, text: str) -> None:
        self.reasons.append((code, text))

    def unknown(self, text: str) -> None:
        self.cannot_tell.append(text)
        self.evidence.append(text)


def _commit_rules(found: _Findings, committed: Mapping[TopicPartition, int], plain: bool,
                  existing_topics: Collection[str] | None, topic_checks: Mapping[str, TopicExistence | Failure] | None,
                  rules: DeadGroupRules) -> None:
    """The ``no_commits`` and ``topics_deleted`` rules."""
    if not committed:
        found.evidence.append("no committed offsets")
        if not plain:
            return
        if rules.assume_full_visibility:
            found.dead(DeadReason.NO_COMMITS, "it has no committed offset at all (assume_full_visibility)")
        else:
            found.unknown("cannot tell whether it has no committed offset at all: a fetch of all its offsets leaves "
                          "out topics the principal may not Describe (set assume_full_visibility only if it may "
                          "Describe every topic and group)")
        return
    topics = sorted({tp.topic for tp in committed})
    if topic_checks is not None:
        absent = [t for t in topics if topic_checks.get(t) == TopicExistence.ABSENT]
        exists = [t for t in topics if topic_checks.get(t) == TopicExistence.EXISTS]
        hidden = [t for t in topics if topic_checks.get(t) == TopicExistence.NOT_VISIBLE]
        failures = [t for t in topics if isinstance(topic_checks.get(t), Failure)]
        failed = [f"{t} ({topic_checks[t]})" for t in failures]
        unchecked = [t for t in topics if t not in {*absent, *exists, *hidden, *failures}]
        if len(absent) == len(topics):
            found.dead(DeadReason.TOPICS_DELETED, "every topic it committed to was deleted")
            found.evidence.append(f"every committed topic was deleted (UNKNOWN_TOPIC_OR_PARTITION by name): "
                                  f"{', '.join(absent)}")
            return
        if absent:
            found.evidence.append(f"{len(absent)} of {len(topics)} committed topics no longer exist (checked by "
                                  f"name): {', '.join(absent)}")
        if not exists:
            why = [f"{', '.join(hidden)} not visible to this principal (TOPIC_AUTHORIZATION_FAILED)"] if hidden else []
            why += [f"the check of {', '.join(failed)} failed"] if failed else []
            why += [f"{', '.join(unchecked)} not checked by name"] if unchecked else []
            found.unknown(f"cannot tell whether every committed topic was deleted: {'; '.join(why)}")
        return
    if existing_topics is None:
        return
    missing = [t for t in topics if t not in existing_topics]
    if len(missing) == len(topics):
        found.unknown(f"cannot tell whether every committed topic was deleted: {', '.join(missing)} not in the "
                      "topic list (which leaves out topics the principal may not Describe) and not checked by name")
    elif missing:
        found.evidence.append(f"{len(missing)} of {len(topics)} committed topics are not in the topic list (not "
                              f"checked by name): {', '.join(missing)}")


def _idle_rule(found: _Findings, history: Sequence[GroupHistoryPoint], committed: Mapping[TopicPartition, int],
               plain: bool, rules: DeadGroupRules, now: int) -> int | None:
    """The ``idle`` rule; returns the start of the idle run."""
    if not history:
        found.unknown("cannot tell how long it has been idle: no stored history")
        return None
    start, before = _idle_run(history, committed)
    if start is None:
        found.evidence.append(f"not idle by the history: {before or 'no stored snapshot'}; idle time counts only "
                              "while Empty with records to read and no commit progress")
        return None
    idle_ms = now - start
    line = (f"idle for at least {format_duration(idle_ms)}: Empty, with records to read and no commit progress, "
            f"at every stored snapshot since {format_time(start)}")
    line += f" (before that, {before})" if before else ""
    if idle_ms < rules.idle_ms:
        line += f"; less than idle_hours={rules.idle_hours:g}"
    elif plain:
        found.dead(DeadReason.IDLE, f"no commit progress for at least {format_duration(idle_ms)} while Empty with "
                                    f"records to read (idle_hours={rules.idle_hours:g})")
    found.evidence.append(line)
    return start


def classify_group(group_id: str, description: GroupDescription, offsets: GroupOffsets | None,
                   existing_topics: Collection[str] | None, history: Sequence[GroupHistoryPoint],
                   rules: DeadGroupRules = DeadGroupRules(), now_ms: int | None = None, *,
                   topic_checks: Mapping[str, TopicExistence | Failure] | None = None) -> GroupHealthReport:
    """Verdict, evidence and ``deletable`` for one group (rules in the module docstring). Pure.

    ``existing_topics``: a topic listing (None: unknown), used for the Kafka Streams
    heuristic and, only when ``topic_checks`` is None, to say a topic may be gone (never as
    evidence). ``topic_checks``: ``check_topics`` answers per committed topic
    (``TopicExistence`` or ``Failure``). ``history``: the group's stored points, oldest first
    (see :func:`history_points`).
    """
    now = _now_ms() if now_ms is None else now_ms
    state = description.state
    members = len(description.members)
    group_type = description.group_type
    base = {"group_id": group_id, "state": state, "protocol_type": description.protocol_type,
            "group_type": group_type}
    committed = offsets.committed() if offsets is not None else {}
    points = [*history, GroupHistoryPoint(now, state, members, committed)]
    may_delete, permission = _permission(group_id, rules, existing_topics)
    base["permitted"] = may_delete

    if state is GroupState.DEAD:
        return GroupHealthReport(**base, health=GroupHealth.DEAD, deletable=False,
                                 dead_reasons=(DeadReason.STATE_DEAD.value,), evidence=(
            "state Dead: the group does not exist, or Kafka already expired its offsets (nothing to delete)",
            permission))
    active = bool(members) or state is not GroupState.EMPTY
    if group_type in NOT_JUDGED_GROUP_TYPES:
        note = (f"a {group_type} group: the consumer-group rules do not apply to it, so it is never dead or "
                "deletable by them")
        head = f"state {state.value} with {members} member(s)" if active else f"paused: state Empty, {note}"
        return GroupHealthReport(**base, health=GroupHealth.ACTIVE if active else GroupHealth.PAUSED,
                                 deletable=False, cannot_tell=(note,),
                                 evidence=(head, note, permission) if active else (head, permission))
    if active:
        return GroupHealthReport(**base, health=GroupHealth.ACTIVE, deletable=False, evidence=(
            f"state {state.value} with {members} member(s)", permission))

    plain = description.is_plain_consumer_group
    found = _Findings()
    found.evidence.append("state Empty: no members")
    if not plain:
        found.evidence.append(f"protocol type {description.protocol_type!r} is not a plain consumer group: neither "
                              "a missing commit nor a lack of commit progress is evidence against it")
    _commit_rules(found, committed, plain, existing_topics, topic_checks, rules)

    progressed_at = last_progress(points)
    if len(points) >= 2:
        found.evidence.append(
            f"last commit progress {format_duration(now - progressed_at)} ago ({format_time(progressed_at)})"
            if progressed_at is not None else
            f"no commit progress in the {format_duration(now - points[0].at_ms)} of stored history (since "
            f"{format_time(points[0].at_ms)})")
    idle_since = _idle_rule(found, history, committed, plain, rules, now)

    empty_since = _empty_since(points) if history else None
    expires_at = None
    if committed and not history:
        found.evidence.append(f"Kafka expires its offsets {rules.offsets_retention_minutes} min after it became "
                              "Empty (KIP-211); when that was is not in the history")
    elif committed and empty_since is not None:
        expires_at = empty_since + rules.offsets_retention_minutes * 60_000
        found.evidence.append(f"Empty since at least {format_time(empty_since)}: Kafka will expire its offsets at or "
                              f"before {format_time(expires_at)} "
                              f"(offsets.retention.minutes={rules.offsets_retention_minutes}, KIP-211)")
    found.evidence.append(permission)
    dead = bool(found.reasons)
    head = (f"dead: {'; '.join(text for _, text in found.reasons)}" if dead
            else "paused: Empty, but no evidence that it is abandoned")
    return GroupHealthReport(**base, health=GroupHealth.DEAD if dead else GroupHealth.PAUSED,
                             evidence=(head, *found.evidence), deletable=dead and may_delete,
                             dead_reasons=tuple(code.value for code, _ in found.reasons),
                             cannot_tell=tuple(found.cannot_tell), last_progress_ms=progressed_at,
                             idle_since_ms=idle_since, empty_since_ms=empty_since, expires_at_ms=expires_at)


def classify_groups(descriptions: Mapping[str, GroupDescription], offsets: Mapping[str, GroupOffsets],
                    existing_topics: Collection[str] | None, history: Iterable[LagSnapshot] = (),
                    rules: DeadGroupRules = DeadGroupRules(), now_ms: int | None = None,
                    failures: Mapping[str, Failure] | None = None, *,
                    topic_checks: Mapping[str, TopicExistence | Failure] | None = None) -> DeadGroupsResult:
    """:func:`classify_group` for every described group; a group whose committed offsets
    could not be read is reported in ``failures``, not guessed at."""
    now = _now_ms() if now_ms is None else now_ms
    snapshots = sorted(history, key=lambda s: s.taken_at_ms)
    reports = {}
    all_failures = dict(failures or {})
    for group_id, description in descriptions.items():
        if group_id not in offsets and description.state is not GroupState.DEAD:
            all_failures.setdefault(group_id, Failure(CLIENT_NOT_READ, "committed offsets were not read"))
            continue
        reports[group_id] = classify_group(group_id, description, offsets.get(group_id), existing_topics,
                                           history_points(snapshots, group_id), rules, now,
                                           topic_checks=topic_checks)
    return DeadGroupsResult(reports, all_failures)


def _topics_to_check(descriptions: Mapping[str, GroupDescription], offsets: Mapping[str, GroupOffsets]) -> list[str]:
    """The committed topics of the groups the topics_deleted rule may judge (Empty, not share/streams)."""
    topics: set[str] = set()
    for group_id, description in descriptions.items():
        if description.state is GroupState.EMPTY and not description.members \
                and description.group_type not in NOT_JUDGED_GROUP_TYPES and group_id in offsets:
            topics.update(tp.topic for tp in offsets[group_id].committed())
    return sorted(topics)


async def find_dead_groups(client, group_ids: Iterable[str] | None = None, *, history: Iterable[LagSnapshot] = (),
                           rules: DeadGroupRules = DeadGroupRules(), now_ms: int | None = None,
                           timeout_s: float | None = None) -> DeadGroupsResult:
    """Describe the groups (default: every group the cluster lists), read their committed
    offsets, check the committed topics of Empty groups by name (``check_topics``) and, for
    the Streams-application heuristic only, list the cluster's topics; classify them.
    Nothing is deleted."""
    if group_ids is None:
        # The shared selection routine: a broker whose listing failed raises IncompleteListingError
        # rather than leaving its groups out of "every group".
        ids = await select_groups(client, GroupSelector(patterns=("*",)), timeout_s=timeout_s)
        if not ids:
            return DeadGroupsResult({}, {})
    else:
        if isinstance(group_ids, str):
            raise ConfigurationError(f"group_ids must be a list, not the single string {group_ids!r}.")
        ids = list(dict.fromkeys(group_ids))
    descriptions = await client.describe_groups(ids, timeout_s=timeout_s)
    offsets = await client.fetch_committed_offsets(ids, timeout_s=timeout_s)
    failures = {**descriptions.failures, **offsets.failures}
    described = {g: d for g, d in descriptions.values.items() if g not in failures}
    to_check = _topics_to_check(described, offsets.values)
    checks: dict[str, TopicExistence | Failure] = {}
    if to_check:
        checked = await client.check_topics(to_check, timeout_s=timeout_s)
        checks = {**checked.values, **checked.failures}
    # The listing leaves out topics the principal may not Describe: used only for the Streams
    # heuristic, which can only protect a group, never as evidence of absence.
    listed_topics = set(await client.describe_topics(None, timeout_s=timeout_s)) if rules.deny_streams_apps else None
    return classify_groups(described, offsets.values, listed_topics, history, rules, now_ms, failures,
                           topic_checks=checks)
