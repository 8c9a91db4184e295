"""Is a group active, paused or dead? A verdict with the evidence behind it, and whether it
may be deleted.

Evidence, per group:

* its state and members (DescribeGroups): Stable / rebalancing or any member -> **active**;
  ``Dead`` -> **dead** (the group no longer exists, or Kafka already expired its offsets:
  nothing to delete);
* for an ``Empty`` group: its committed topics that no longer exist; whether it has any
  committed offset at all; when its committed offsets last changed according to the stored
  history (the admin API has no commit timestamps); since when it has been Empty in that
  history, and so when Kafka itself will expire its offsets (``offsets.retention.minutes``
  after it became Empty, KIP-211, Kafka 2.1+).

An ``Empty`` group is **dead** when at least one of these holds, otherwise **paused**
(scaled to zero, a weekly batch job...; deleting it would make its consumers fall back to
``auto.offset.reset``):

* no commit progress for ``idle_hours`` or more according to the history (the history must
  reach back that far: a short history proves nothing);
* every topic it committed to has been deleted;
* it has no committed offset at all - only for plain consumer groups (protocol type
  ``consumer`` or empty): Connect, Streams and other protocol types may keep their positions
  elsewhere, so a missing commit is never evidence against them.

``deletable`` is true only for a dead ``Empty`` group that the patterns allow. Pattern
precedence (globs, or ``re:`` regular expressions, as in :mod:`..client.selection`): a user
``deny`` match always wins; then a user ``allow`` match (which may override a default deny,
being explicit); then the default deny patterns for system groups; and when ``allow`` is
given, a group matching none of it is not deletable. Kafka Streams application ids (the
group id prefixes an existing ``-changelog`` or ``-repartition`` topic) are denied by default
too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Collection, Iterable, Mapping, Sequence

from ..client.errors import ConfigurationError, Failure
from ..client.results import GroupDescription, GroupOffsets, GroupState, TopicPartition
from ..client.selection import compile_pattern
from .model import LagSnapshot
from .snapshot import now_ms as _now_ms

__all__ = ["GroupHealth", "DeadGroupRules", "GroupHealthReport", "GroupHistoryPoint", "DEFAULT_DENY_PATTERNS",
           "DeadGroupsResult", "classify_group", "classify_groups", "history_points", "find_dead_groups"]

#: System groups never called deletable unless a user allow pattern names them.
DEFAULT_DENY_PATTERNS = (
    "connect-*",  # Kafka Connect: the worker group (default "connect-cluster") and sink connectors' groups
    "_confluent*",  # Confluent Platform internals (ksqlDB "_confluent-ksql-*", Control Center...)
    "__*",  # internal by convention
    "schema-registry*",  # Confluent Schema Registry's group
)
_STREAMS_SUFFIXES = ("-changelog", "-repartition")


class GroupHealth(str, Enum):
    ACTIVE = "active"
    PAUSED = "paused"
    DEAD = "dead"


@dataclass(frozen=True, slots=True)
class DeadGroupRules:
    idle_hours: float = 7 * 24.0  # no commit progress for this long (from the history) is evidence of death
    offsets_retention_minutes: int = 7 * 24 * 60  # the cluster's offsets.retention.minutes (Kafka's default)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default_deny: tuple[str, ...] = DEFAULT_DENY_PATTERNS
    deny_streams_apps: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.idle_hours, bool) or not isinstance(self.idle_hours, (int, float)) or self.idle_hours <= 0:
            raise ConfigurationError(f"idle_hours must be a positive number of hours, got {self.idle_hours!r}.")
        if isinstance(self.offsets_retention_minutes, bool) or not isinstance(self.offsets_retention_minutes, int) \
                or self.offsets_retention_minutes <= 0:
            raise ConfigurationError("offsets_retention_minutes must be a positive int (the broker setting), "
                                     f"got {self.offsets_retention_minutes!r}.")
        for name in ("allow", "deny", "default_deny"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigurationError(f"{name} must be a list of patterns, not the single string {value!r}.")
            object.__setattr__(self, name, tuple(value))
            for pattern in value:
                compile_pattern(pattern)

    def first_match(self, which: str, group_id: str) -> str | None:
        return next((p for p in getattr(self, which) if compile_pattern(p).match(group_id)), None)


@dataclass(frozen=True, slots=True)
class GroupHistoryPoint:
    """A group as one stored snapshot saw it."""

    at_ms: int
    state: GroupState
    members: int
    committed: Mapping[TopicPartition, int]


@dataclass(frozen=True, slots=True)
class GroupHealthReport:
    group_id: str
    health: GroupHealth
    evidence: tuple[str, ...]
    deletable: bool
    state: GroupState
    protocol_type: str = ""
    last_progress_ms: int | None = None  # last time the history saw the committed offsets change
    empty_since_ms: int | None = None  # Empty since at least this time (history)
    expires_at_ms: int | None = None  # Kafka expires its offsets at or before this time (KIP-211)

    def to_dict(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "health": self.health.value, "evidence": list(self.evidence),
                "deletable": self.deletable, "state": self.state.value, "protocol_type": self.protocol_type,
                "last_progress_ms": self.last_progress_ms, "empty_since_ms": self.empty_since_ms,
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


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _hours(ms: int) -> str:
    return f"{ms / 3_600_000:.1f} h"


def history_points(snapshots: Iterable[LagSnapshot], group_id: str) -> list[GroupHistoryPoint]:
    """The group's points in stored snapshots, oldest first (snapshots where it was read)."""
    points = []
    for snapshot in sorted(snapshots, key=lambda s: s.taken_at_ms):
        group = snapshot.groups.get(group_id)
        if group is None:
            continue
        committed = {p.tp: p.committed for p in group.partitions if p.committed is not None}
        points.append(GroupHistoryPoint(snapshot.taken_at_ms, group.state, group.members, committed))
    return points


def _last_progress(points: Sequence[GroupHistoryPoint]) -> int | None:
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


def classify_group(group_id: str, description: GroupDescription, offsets: GroupOffsets | None,
                   existing_topics: Collection[str] | None, history: Sequence[GroupHistoryPoint],
                   rules: DeadGroupRules = DeadGroupRules(), now_ms: int | None = None) -> GroupHealthReport:
    """Verdict, evidence and ``deletable`` for one group (rules in the module docstring). Pure.

    ``existing_topics=None`` means the topic list is unknown (no topic evidence);
    ``history`` is the group's stored points, oldest first (see :func:`history_points`).
    """
    now = _now_ms() if now_ms is None else now_ms
    state = description.state
    members = len(description.members)
    base = {"group_id": group_id, "state": state, "protocol_type": description.protocol_type}
    committed = offsets.committed() if offsets is not None else {}
    points = [*history, GroupHistoryPoint(now, state, members, committed)]
    may_delete, permission = _permission(group_id, rules, existing_topics)

    if state is GroupState.DEAD:
        return GroupHealthReport(**base, health=GroupHealth.DEAD, deletable=False, evidence=(
            "state Dead: the group does not exist, or Kafka already expired its offsets (nothing to delete)",
            permission))
    if members or state is not GroupState.EMPTY:
        return GroupHealthReport(**base, health=GroupHealth.ACTIVE, deletable=False, evidence=(
            f"state {state.value} with {members} member(s)", permission))

    evidence = ["state Empty: no members"]
    dead_reasons = []
    if not description.is_plain_consumer_group:
        evidence.append(f"protocol type {description.protocol_type!r} is not a plain consumer group: a missing "
                        "commit is not evidence against it")
    if not committed:
        if description.is_plain_consumer_group:
            dead_reasons.append("it has no committed offset at all")
        evidence.append("no committed offsets")
    elif existing_topics is not None:
        topics = sorted({tp.topic for tp in committed})
        gone = [t for t in topics if t not in existing_topics]
        if gone and len(gone) == len(topics):
            dead_reasons.append("every topic it committed to was deleted")
            evidence.append(f"every committed topic was deleted: {', '.join(gone)}")
        elif gone:
            evidence.append(f"{len(gone)} of {len(topics)} committed topics no longer exist: {', '.join(gone)}")

    last_progress = _last_progress(points)
    covered_ms = now - points[0].at_ms
    idle_needed_ms = int(rules.idle_hours * 3_600_000)
    if len(points) < 2:
        evidence.append("no stored history: how long it has been idle is unknown")
    elif last_progress is not None:
        idle_ms = now - last_progress
        evidence.append(f"last commit progress {_hours(idle_ms)} ago ({_iso(last_progress)})")
        if idle_ms >= idle_needed_ms:
            dead_reasons.append(f"no commit progress for {_hours(idle_ms)} (>= {rules.idle_hours:g} h)")
    else:
        evidence.append(f"no commit progress in the {_hours(covered_ms)} of stored history (since "
                        f"{_iso(points[0].at_ms)})")
        if covered_ms >= idle_needed_ms:
            dead_reasons.append(f"no commit progress for at least {_hours(covered_ms)} (>= {rules.idle_hours:g} h)")
        else:
            evidence.append(f"the history is shorter than the {rules.idle_hours:g} h needed to call it idle")

    empty_since = _empty_since(points)
    expires_at = None
    if empty_since is not None and committed:
        expires_at = empty_since + rules.offsets_retention_minutes * 60_000
        if len(points) < 2:
            evidence.append(f"Kafka expires its offsets {rules.offsets_retention_minutes} min after it became Empty "
                            "(KIP-211); when that was is not in the history")
            expires_at = None
        else:
            evidence.append(f"Empty since at least {_iso(empty_since)}: Kafka will expire its offsets at or before "
                            f"{_iso(expires_at)} (offsets.retention.minutes={rules.offsets_retention_minutes}, "
                            "KIP-211)")
    evidence.append(permission)
    health = GroupHealth.DEAD if dead_reasons else GroupHealth.PAUSED
    evidence.insert(0, f"dead: {'; '.join(dead_reasons)}" if dead_reasons
                    else "paused: Empty, but no evidence that it is abandoned")
    return GroupHealthReport(**base, health=health, evidence=tuple(evidence),
                             deletable=health is GroupHealth.DEAD and may_delete,
                             last_progress_ms=last_progress, empty_since_ms=empty_since if len(points) > 1 else None,
                             expires_at_ms=expires_at)


def classify_groups(descriptions: Mapping[str, GroupDescription], offsets: Mapping[str, GroupOffsets],
                    existing_topics: Collection[str] | None, history: Iterable[LagSnapshot] = (),
                    rules: DeadGroupRules = DeadGroupRules(), now_ms: int | None = None,
                    failures: Mapping[str, Failure] | None = None) -> DeadGroupsResult:
    """:func:`classify_group` for every described group; a group whose committed offsets
    could not be read is reported in ``failures``, not guessed at."""
    now = _now_ms() if now_ms is None else now_ms
    snapshots = sorted(history, key=lambda s: s.taken_at_ms)
    reports = {}
    all_failures = dict(failures or {})
    for group_id, description in descriptions.items():
        if group_id not in offsets and description.state is not GroupState.DEAD:
            all_failures.setdefault(group_id, Failure(-1, "committed offsets were not read"))
            continue
        reports[group_id] = classify_group(group_id, description, offsets.get(group_id), existing_topics,
                                           history_points(snapshots, group_id), rules, now)
    return DeadGroupsResult(reports, all_failures)


async def find_dead_groups(client, group_ids: Iterable[str] | None = None, *, history: Iterable[LagSnapshot] = (),
                           rules: DeadGroupRules = DeadGroupRules(), now_ms: int | None = None,
                           timeout_s: float | None = None) -> DeadGroupsResult:
    """Describe the groups (default: every group the cluster lists), read their committed
    offsets and the cluster's topics, and classify them. Nothing is deleted."""
    if group_ids is None:
        listed = await client.list_groups(timeout_s=timeout_s)
        ids = [g.group_id for g in listed.groups]
        if not ids:
            return DeadGroupsResult({}, {})
    else:
        if isinstance(group_ids, str):
            raise ConfigurationError(f"group_ids must be a list, not the single string {group_ids!r}.")
        ids = list(dict.fromkeys(group_ids))
    descriptions = await client.describe_groups(ids, timeout_s=timeout_s)
    offsets = await client.fetch_committed_offsets(ids, timeout_s=timeout_s)
    topics = await client.describe_topics(None, timeout_s=timeout_s)
    failures = {**descriptions.failures, **offsets.failures}
    described = {g: d for g, d in descriptions.values.items() if g not in failures}
    return classify_groups(described, offsets.values, set(topics), history, rules, now_ms, failures)

