"""Is a group active, paused or dead? The rules, over a :class:`~.observation.GroupObservation`
(the group now) and its stored :class:`~.observation.GroupHistoryPoint` s (the admin API has no
commit timestamps). Pure: each rule returns findings (:mod:`.deadfindings`), never a sentence;
``cleanup.evidence_text`` renders them and ``cleanup.permission`` decides, from the patterns,
whether a dead group may be deleted. The reads are in :mod:`.deadgroup_reads`.

The verdict, the first that matches wins:

1. **dead** (``state_dead``) - Kafka answered ``Dead``: the group does not exist, or Kafka already
   expired its offsets; nothing to delete.
2. **active** or **paused** as its state says - a share or streams group (KIP-932, KIP-1071):
   these consumer-group rules never judge it (cannot tell), so never dead.
3. **active** - members, or a state other than ``Empty``.
4. **dead** - ``Empty`` and at least one rule below gives evidence.
5. **paused** - ``Empty`` otherwise (scaled to zero, a weekly batch job...: deleting it would
   make its consumers fall back to ``auto.offset.reset``).

The rules of an ``Empty`` group; each gives evidence, *cannot tell* (never evidence, and it
cancels no other rule's evidence) or a note:

``no_commits``
    No committed offset at all: evidence only with ``assume_full_visibility`` (the principal
    may Describe every topic and group) and only for plain consumer groups (protocol type
    ``consumer`` or empty); otherwise cannot tell, as an all-partitions fetch leaves out the
    topics the principal may not Describe. A committed offset read with an error is unknown,
    never "no commit": cannot tell.
``topics_deleted``
    Every topic it committed to (readable or not) answered UNKNOWN_TOPIC_OR_PARTITION when
    checked by name (``topic_checks``). A topic that answers TOPIC_AUTHORIZATION_FAILED, whose
    check failed, or that was not checked by name makes it cannot tell; a topic listing alone
    (``existing_topics``) is never evidence. Any protocol type.
``idle``
    The *idle run*: the trailing snapshots, going back from now, at each of which the group was
    ``Empty`` without members, its committed offsets were all readable and those of now, and it
    had records to read (a log end beyond a committed offset). The idle time is at least now
    minus the run's first snapshot, and less than now minus the snapshot before the run when that
    one saw it not idle (members, other offsets, nothing to read); with no such snapshot (the run
    reaches the history's start, or the snapshot before it could not tell) it has no upper bound.
    What that interval proves against ``idle_hours`` is :mod:`.bounds`' rule: evidence when the
    lower bound is **more than** ``idle_hours``, known too short when the upper bound is at or
    below it, otherwise *cannot tell*. Only plain consumer groups: Connect and other protocol
    types may commit elsewhere or rarely (their idle run is still reported).

Notes: the last commit progress the history saw, and when Kafka expires the offsets
(``offsets.retention.minutes`` after it became Empty, KIP-211).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..client.errors import CLIENT_NOT_READ, ConfigurationError, Failure
from ..client.numbers import check_int, check_number
from ..client.results import GroupDescription, GroupOffsets, GroupState, TopicExistence
from ..client.selection import compile_pattern
from .bounds import Against, Interval
from .deadfindings import (
    BreakReason,
    CommitsUnreadable,
    DeadReason,
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
from .model import LagSnapshot
from .observation import GroupHistoryPoint, GroupObservation, empty_since, history_points, last_progress

__all__ = [
    "DeadGroupRules",
    "GroupHealth",
    "DeadReason",
    "DEFAULT_DENY_PATTERNS",
    "NOT_JUDGED_GROUP_TYPES",
    "judge_group",
    "judge_groups",
]

#: System groups never called deletable unless a user allow pattern names them (cleanup.permission).
DEFAULT_DENY_PATTERNS = (
    "connect-*",  # Kafka Connect: the worker group (default "connect-cluster") and sink connectors' groups
    "_confluent*",  # Confluent Platform internals (ksqlDB "_confluent-ksql-*", Control Center...)
    "__*",  # internal by convention
    "schema-registry*",  # Confluent Schema Registry's group
)
#: Group types (ListGroups v5 / GroupDescription.group_type) the consumer-group rules never judge.
NOT_JUDGED_GROUP_TYPES = ("share", "streams")


@dataclass(frozen=True, slots=True)
class DeadGroupRules:
    """The thresholds of the rules, and the patterns ``cleanup.permission`` reads (``allow``,
    ``deny``, ``default_deny``: globs, or ``re:`` regular expressions; ``deny_streams_apps``)."""

    idle_hours: float = 7 * 24.0  # idle (Empty, records to read, no commit progress) longer is evidence
    offsets_retention_minutes: int = 7 * 24 * 60  # the cluster's offsets.retention.minutes (Kafka's default)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default_deny: tuple[str, ...] = DEFAULT_DENY_PATTERNS
    deny_streams_apps: bool = True
    #: The principal may Describe every topic and group (e.g. a super user): only then is "no
    #: committed offset at all" evidence. Off by default.
    assume_full_visibility: bool = False

    def __post_init__(self) -> None:
        check_number("idle_hours", self.idle_hours, above=0, must_be="a positive number of hours")
        check_int(
            "offsets_retention_minutes",
            self.offsets_retention_minutes,
            at_least=1,
            must_be="a positive int (the broker setting)",
        )
        for name in ("deny_streams_apps", "assume_full_visibility"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(f"{name} must be True or False, got {getattr(self, name)!r}.")
        for name in ("allow", "deny", "default_deny"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigurationError(
                    f"{name} must be a list of patterns, not the single string {value!r}."
                )
            object.__setattr__(self, name, tuple(value))
            for pattern in value:
                compile_pattern(pattern)

    @property
    def idle_ms(self) -> int:
        return int(self.idle_hours * 3_600_000)


def _commit_rules(obs: GroupObservation, rules: DeadGroupRules) -> list[Finding]:
    """``no_commits``, and the committed offsets that could not be read."""
    if obs.unreadable:
        return [CommitsUnreadable(Reason.COMMITS_UNREADABLE, tuple(sorted(obs.unreadable.items())))]
    if obs.committed:
        return []
    found = [Finding(Reason.NO_VISIBLE_COMMITS)]
    if obs.is_plain_consumer_group:
        found.append(Finding(Reason.NO_COMMITS if rules.assume_full_visibility else Reason.NO_COMMITS_UNSEEN))
    return found


def _topic_rules(
    obs: GroupObservation,
    topic_checks: Mapping[str, TopicExistence | Failure] | None,
    existing_topics: Collection[str] | None,
) -> list[Finding]:
    """``topics_deleted``: by name; a listing only ever says "cannot tell"."""
    topics = obs.topics()
    if not topics:
        return []
    if topic_checks is not None:
        answers = {t: topic_checks.get(t) for t in topics}
        absent = tuple(t for t, a in answers.items() if a == TopicExistence.ABSENT)
        if len(absent) == len(topics):
            return [TopicsFinding(Reason.TOPICS_DELETED, absent, len(topics))]
        found: list[Finding] = (
            [TopicsFinding(Reason.SOME_TOPICS_DELETED, absent, len(topics))] if absent else []
        )
        if not any(a == TopicExistence.EXISTS for a in answers.values()):
            found.append(
                TopicsUnknown(
                    Reason.TOPICS_UNKNOWN,
                    tuple(t for t, a in answers.items() if a == TopicExistence.NOT_VISIBLE),
                    tuple((t, a) for t, a in answers.items() if isinstance(a, Failure)),
                    tuple(t for t, a in answers.items() if a is None),
                )
            )
        return found
    if existing_topics is None:
        return []
    missing = tuple(t for t in topics if t not in existing_topics)
    if len(missing) == len(topics):
        return [TopicsFinding(Reason.TOPICS_NOT_LISTED, missing, len(topics))]
    return [TopicsFinding(Reason.SOME_TOPICS_NOT_LISTED, missing, len(topics))] if missing else []


def _idle_run(
    history: Sequence[GroupHistoryPoint], obs: GroupObservation
) -> tuple[int | None, IdleBreak | None]:
    """(the first snapshot of the trailing idle run, or None; what the snapshot before it saw,
    None when the run starts with the history). Log ends never shrink, so a backlog at one point
    with no commit since lasts until now."""
    if obs.unreadable:
        return None, IdleBreak(BreakReason.UNREADABLE, obs.at_ms)
    start = None
    for point in reversed(history):
        at = point.at_ms
        if point.state is not GroupState.EMPTY or point.members:
            return start, IdleBreak(BreakReason.MEMBERS, at, point.state, point.members)
        if point.unreadable:
            return start, IdleBreak(BreakReason.UNREADABLE, at)
        if point.committed != obs.committed:
            return start, IdleBreak(BreakReason.OFFSETS_CHANGED, at)
        if not point.committed:
            return start, IdleBreak(BreakReason.NO_VISIBLE_COMMIT, at)
        if not point.has_records_to_read:
            caught_up = all(tp in point.log_end for tp in point.committed)
            return start, IdleBreak(BreakReason.CAUGHT_UP if caught_up else BreakReason.LOG_END_UNKNOWN, at)
        start = at
    return start, None


def _idle_rule(
    obs: GroupObservation, history: Sequence[GroupHistoryPoint], rules: DeadGroupRules
) -> IdleFinding:
    if not history:
        return IdleFinding(Reason.NO_HISTORY, rules.idle_hours)
    start, before = _idle_run(history, obs)
    at_least = obs.at_ms - start if start is not None else 0
    at_most = obs.at_ms - before.at_ms if before is not None and before.reason.proves_not_idle else None
    against = Interval(at_least, at_most).against(rules.idle_ms)  # what a bound proves: lag.bounds
    if not obs.is_plain_consumer_group:
        reason = Reason.NOT_IDLE if start is None else Reason.IDLE_NOT_EVIDENCE
    elif against is Against.OVER:
        reason = Reason.IDLE
    elif against is Against.WITHIN:
        reason = Reason.NOT_IDLE if start is None else Reason.IDLE_SHORT
    else:
        reason = Reason.IDLE_UNKNOWN
    return IdleFinding(reason, rules.idle_hours, start, at_least, at_most, before)


def judge_group(
    obs: GroupObservation,
    history: Sequence[GroupHistoryPoint],
    rules: DeadGroupRules = DeadGroupRules(),
    *,
    topic_checks: Mapping[str, TopicExistence | Failure] | None = None,
    existing_topics: Collection[str] | None = None,
) -> GroupEvidence:
    """The verdict and its findings for one group (module docstring). ``history``: its stored
    points, oldest first (:func:`.observation.history_points`); ``topic_checks``: ``check_topics``
    answers per committed topic; ``existing_topics``: a topic listing, used only when
    ``topic_checks`` is None, and then only to say "cannot tell"."""
    # 1. Kafka answered Dead
    if obs.state is GroupState.DEAD:
        return GroupEvidence(obs, GroupHealth.DEAD, (Finding(Reason.STATE_DEAD),))
    active = bool(obs.members) or obs.state is not GroupState.EMPTY
    # 2. a share or streams group
    if obs.group_type in NOT_JUDGED_GROUP_TYPES:
        return GroupEvidence(
            obs, GroupHealth.ACTIVE if active else GroupHealth.PAUSED, (Finding(Reason.NOT_JUDGED_TYPE),)
        )
    # 3. members, or not Empty
    if active:
        return GroupEvidence(obs, GroupHealth.ACTIVE, (Finding(Reason.ACTIVE),))
    # 4. / 5. Empty: dead on any rule's evidence, else paused
    found: list[Finding] = [] if obs.is_plain_consumer_group else [Finding(Reason.NOT_PLAIN_CONSUMER)]
    found += _commit_rules(obs, rules)
    found += _topic_rules(obs, topic_checks, existing_topics)
    points = [*history, GroupHistoryPoint(obs.at_ms, obs.state, obs.members, obs.committed)]
    progressed = last_progress(points)
    if len(points) >= 2:
        found.append(
            ProgressFinding(Reason.LAST_PROGRESS, progressed)
            if progressed is not None
            else ProgressFinding(Reason.NO_PROGRESS, points[0].at_ms)
        )
    idle = _idle_rule(obs, history, rules)
    found.append(idle)
    empty = empty_since(points) if history else None
    expires = None
    if obs.committed and not history:
        found.append(ExpiryFinding(Reason.EXPIRY_UNKNOWN, rules.offsets_retention_minutes))
    elif obs.committed and empty is not None:
        expires = empty + rules.offsets_retention_minutes * 60_000
        found.append(ExpiryFinding(Reason.EXPIRES, rules.offsets_retention_minutes, empty, expires))
    dead = any(f.effect is Effect.DEAD for f in found)
    return GroupEvidence(
        obs,
        GroupHealth.DEAD if dead else GroupHealth.PAUSED,
        tuple(found),
        progressed,
        idle.since_ms,
        empty,
        expires,
    )


def judge_groups(
    descriptions: Mapping[str, GroupDescription],
    offsets: Mapping[str, GroupOffsets],
    history: Iterable[LagSnapshot],
    rules: DeadGroupRules,
    now_ms: int,
    *,
    failures: Mapping[str, Failure] | None = None,
    topic_checks: Mapping[str, TopicExistence | Failure] | None = None,
    existing_topics: Collection[str] | None = None,
) -> tuple[dict[str, GroupEvidence], dict[str, Failure]]:
    """:func:`judge_group` for every described group: (evidence, failures). A group whose
    committed offsets could not be read is a failure, not guessed at."""
    snapshots = sorted(history, key=lambda s: s.taken_at_ms)
    evidence: dict[str, GroupEvidence] = {}
    all_failures = dict(failures or {})
    for group_id, description in descriptions.items():
        if group_id not in offsets and description.state is not GroupState.DEAD:
            all_failures.setdefault(group_id, Failure(CLIENT_NOT_READ, "committed offsets were not read"))
            continue
        obs = GroupObservation.of(description, offsets.get(group_id), now_ms, group_id=group_id)
        evidence[group_id] = judge_group(
            obs,
            history_points(snapshots, group_id),
            rules,
            topic_checks=topic_checks,
            existing_topics=existing_topics,
        )
    return evidence, all_failures
