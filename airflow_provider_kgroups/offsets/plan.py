"""The reset plan: for every group asked, the new offset of each partition in scope and why, or
why the group is not reset. Read-only; a dry run prints exactly this and a real run commits
exactly this (``cleanup.reset``).

One batched read per API for all groups: DescribeGroups (and the newer describes), OffsetFetch,
Metadata for the named topics, ListOffsets earliest / latest (/ by time) per partition leader.
Kafka's tool (``ConsumerGroupCommand.resetOffsets``) does the same per group, one at a time.

A group is reset only when it has no members: Kafka's tool refuses any other state ("Assignments
can only be reset if the group '...' is inactive, but the current state is ...") and the broker
refuses an administrator's commit into a group with members. A group that does not exist
(Dead) is planned too, as Kafka's tool does: the commit creates it, Empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..client.errors import ConfigurationError
from ..client.results import (
    SHARE,
    STREAMS,
    GroupDescription,
    GroupOffsets,
    GroupState,
    KeyedResults,
    ListedOffset,
    TopicExistence,
    TopicPartition,
)
from ..client.selection import validate_group_ids
from .spec import ResetSpec, Strategy

__all__ = [
    "Finding",
    "Refusal",
    "PartitionReset",
    "GroupReset",
    "ResetPlan",
    "plan_reset",
    "NO_OFFSET_AT_TIME",
]

NO_OFFSET_AT_TIME = -1  # ListOffsets by time: no record that recent (ListOffsetsResponse.UNKNOWN_OFFSET)


class Finding(str, Enum):
    """What happened to one partition's requested offset on its way to the plan."""

    CLAMPED_TO_LOG_START = "clamped_to_log_start"  # asked below the log start (deleted by retention)
    CLAMPED_TO_LOG_END = "clamped_to_log_end"  # asked beyond the log end
    NO_RECORD_AT_TIME = "no_record_at_time"  # no record at or after the time: the log end
    NO_COMMIT = "no_commit"  # --to-current without a committed offset: the log end


class Refusal(str, Enum):
    """Why a group is not reset (the plan's and the safety path's reasons, one vocabulary)."""

    HAS_MEMBERS = "has_members"  # not inactive: Kafka's tool and the broker refuse
    SHARE_GROUP = "share_group"  # a share group on a broker without its offset APIs (before Kafka 4.1)
    STREAMS_GROUP = "streams_group"  # Kafka Streams groups: kafka-streams-groups.sh --reset-offsets
    UNREADABLE = "unreadable"  # its description, commits or a partition's offsets could not be read
    NO_COMMIT_TO_SHIFT = "no_commit_to_shift"  # --shift-by on a partition without a commit
    NOT_IN_FILE = "not_in_file"  # --from-file has no line for the group
    NOTHING_IN_SCOPE = "nothing_in_scope"  # --all-topics and no committed offset
    CONNECT_SINK = "connect_sink"  # a Kafka Connect sink connector's group (safety path)
    CONNECT_UNKNOWN = "connect_unknown"  # looks like one, and Kafka Connect could not tell (safety path)
    OVER_CAP = "over_cap"  # more groups than the run's cap (safety path)
    CHANGED = "changed"  # changed between the plan and the commit (safety path)
    REWIND = "rewind"  # would move a committed offset back, and the run only moves forward (safety path)


@dataclass(frozen=True, slots=True)
class PartitionReset:
    tp: TopicPartition
    current: int | None  # the committed offset when planned (None: none)
    requested: int  # what the strategy asked for
    target: int  # what is committed
    log_start: int
    log_end: int
    finding: Finding | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "current": self.current,
            "requested": self.requested,
            "new": self.target,
            "log_start": self.log_start,
            "log_end": self.log_end,
            "finding": None if self.finding is None else self.finding.value,
        }


@dataclass(frozen=True, slots=True)
class GroupReset:
    group_id: str
    state: GroupState
    group_type: str
    protocol_type: str
    members: int
    current: Mapping[TopicPartition, int]  # every committed offset of the group when planned
    partitions: tuple[PartitionReset, ...] = ()
    refusal: Refusal | None = None
    detail: str = ""  # the values behind a refusal (a state, a failure, a partition)

    @property
    def is_share(self) -> bool:
        """A share group: ``current`` holds start offsets, set with AlterShareGroupOffsets."""
        return self.group_type == SHARE

    @property
    def exists(self) -> bool:
        return self.state is not GroupState.DEAD

    @property
    def ok(self) -> bool:
        return self.refusal is None

    def targets(self) -> dict[TopicPartition, int]:
        return {p.tp: p.target for p in self.partitions}

    def refused(self, refusal: Refusal, detail: str) -> GroupReset:
        return GroupReset(
            self.group_id,
            self.state,
            self.group_type,
            self.protocol_type,
            self.members,
            self.current,
            self.partitions,
            refusal,
            detail,
        )

    def reason(self) -> str:
        """The refusal in words (the one renderer the CLI, the audit and the logs share)."""
        return "" if self.refusal is None else render_refusal(self.group_id, self.refusal, self.detail)

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "group_type": self.group_type,
            "members": self.members,
            "exists": self.exists,
            "refusal": None if self.refusal is None else self.refusal.value,
            "reason": self.reason(),
            "partitions": [p.to_dict() for p in self.partitions],
        }


def render_refusal(group_id: str, refusal: Refusal, detail: str) -> str:
    words = {
        Refusal.HAS_MEMBERS: f"Assignments can only be reset if the group '{group_id}' is inactive, but the current "
        f"state is {detail}",
        Refusal.SHARE_GROUP: f"a share group whose start offsets cannot be read or set here: {detail} (KIP-932's "
        "DescribeShareGroupOffsets and AlterShareGroupOffsets, Kafka 4.1+)",
        Refusal.STREAMS_GROUP: "a Kafka Streams group: reset it with kafka-streams-groups.sh --reset-offsets "
        "(KIP-1071), which also handles its internal topics",
        Refusal.UNREADABLE: f"could not be read, so not planned: {detail}",
        Refusal.NO_COMMIT_TO_SHIFT: f"cannot shift {detail}: it has no committed offset (Kafka's tool refuses too)",
        Refusal.NOT_IN_FILE: "the file has no line for this group",
        Refusal.NOTHING_IN_SCOPE: "no committed offset to reset (--all-topics covers the partitions the group "
        "committed; name topics with --topic to start a group)",
        Refusal.CONNECT_SINK: f"a Kafka Connect sink connector's group: {detail}",
        Refusal.CONNECT_UNKNOWN: f"may be a Kafka Connect sink connector's group and Kafka Connect could not tell: "
        f"{detail}",
        Refusal.OVER_CAP: f"over this run's cap: {detail}",
        Refusal.CHANGED: f"changed between the plan and the commit: {detail}",
        Refusal.REWIND: f"would move {detail} back: the group already went further (a rerun of an older range?); "
        "nothing committed (allow_rewind=True commits it anyway)",
    }
    return words[refusal]


@dataclass(frozen=True, slots=True)
class ResetPlan:
    spec: ResetSpec
    planned_at_ms: int
    groups: Mapping[str, GroupReset] = field(default_factory=dict)  # in the order asked

    def ready(self) -> list[str]:
        return [g for g, r in self.groups.items() if r.ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_dict(),
            "strategy": self.spec.describe(self.planned_at_ms),
            "planned_at_ms": self.planned_at_ms,
            "groups": {g: r.to_dict() for g, r in self.groups.items()},
        }


async def _check_scope_topics(aclient, spec: ResetSpec) -> dict[str, int]:
    """topic -> partition count, for the topics the scope or the file names. A topic that does
    not exist or cannot be seen, or a partition it does not have, is bad input."""
    named: dict[str, set[int]] = {t: set(p or ()) for t, p in spec.scope.topics.items()}
    for offsets in (spec.file_offsets or {}).values():
        for tp in offsets:
            named.setdefault(tp.topic, set()).add(tp.partition)
    if not named:
        return {}
    described = await aclient.describe_topics(sorted(named))
    missing = sorted(set(named) - set(described))
    if missing:
        existence = await aclient.check_topics(missing)
        why = {
            t: (
                "does not exist"
                if existence.values.get(t) is TopicExistence.ABSENT
                else "is not visible to this principal (no Describe permission)"
                if existence.values.get(t) is TopicExistence.NOT_VISIBLE
                else f"could not be checked ({existence.failures.get(t, 'no answer')})"
            )
            for t in missing
        }
        raise ConfigurationError(
            "; ".join(f"topic {t!r} {w}" for t, w in why.items()) + ": nothing was reset."
        )
    counts = {t: len(d.partitions) for t, d in described.items()}
    for topic, partitions in named.items():
        beyond = sorted(p for p in partitions if p >= counts[topic])
        if beyond:
            raise ConfigurationError(
                f"topic {topic!r} has partitions 0-{counts[topic] - 1}; partition(s) "
                f"{', '.join(map(str, beyond))} do not exist: nothing was reset."
            )
    return counts


def _scope_partitions(
    spec: ResetSpec, group_id: str, current: Mapping[TopicPartition, int], counts: Mapping[str, int]
) -> list[TopicPartition]:
    if spec.strategy is Strategy.FROM_FILE and not spec.scope.given:
        return sorted((spec.file_offsets or {}).get(group_id, {}))
    if spec.scope.all_topics:
        return sorted(current)
    out = []
    for topic, partitions in spec.scope.topics.items():
        out += [
            TopicPartition(topic, p) for p in (partitions if partitions is not None else range(counts[topic]))
        ]
    return sorted(set(out))


def _first_failure(tps: Iterable[TopicPartition], *reads: KeyedResults) -> str | None:
    for tp in tps:
        for read in reads:
            if tp in read.failures:
                return f"{tp}: {read.failures[tp]}"
    return None


async def plan_reset(aclient, spec: ResetSpec, group_ids: Iterable[str], *, now_ms: int) -> ResetPlan:
    """Plan ``spec`` for ``group_ids`` (raises ConfigurationError for a topic or partition that
    does not exist, before anything is changed)."""
    ids = validate_group_ids(group_ids)
    _check_file_groups(spec, ids)
    counts = await _check_scope_topics(aclient, spec)
    described, committed = await _read_groups(aclient, ids)
    groups: dict[str, GroupReset] = {}
    scopes: dict[str, list[TopicPartition]] = {}
    for g in ids:
        groups[g], scope = _screen_group(spec, g, described, committed, counts)
        if scope is not None:
            scopes[g] = scope
    wanted = sorted({tp for g, tps in scopes.items() if groups[g].ok for tp in tps})
    starts, ends, at_time = await _read_partition_offsets(aclient, wanted, spec.at_ms(now_ms))
    for g, tps in scopes.items():
        if groups[g].ok:
            groups[g] = _plan_group(spec, groups[g], tps, starts, ends, at_time)
    return ResetPlan(spec, now_ms, groups)


def _check_file_groups(spec: ResetSpec, ids: list[str]) -> None:
    """A file naming a group this call does not is bad input."""
    if spec.file_offsets is None:
        return
    stray = sorted(set(spec.file_offsets) - set(ids))
    if stray:
        raise ConfigurationError(
            f"the file names group(s) {', '.join(map(repr, stray))}, which this call does not."
        )


async def _read_groups(
    aclient, ids: list[str]
) -> tuple[KeyedResults[str, GroupDescription], KeyedResults[str, GroupOffsets]]:
    """(descriptions, committed offsets) of the groups; a share group's "committed offsets" are
    its start offsets, read with their own API."""
    described, committed = await asyncio.gather(
        aclient.describe_groups(ids), aclient.fetch_committed_offsets(ids)
    )
    shares = [g for g in ids if g in described.values and described.values[g].group_type == SHARE]
    if not shares:
        return described, committed
    starts = await aclient.describe_share_group_offsets(shares)
    committed = KeyedResults(
        {**{g: v for g, v in committed.values.items() if g not in shares}, **starts.values},
        {
            **{g: f for g, f in committed.failures.items() if g not in shares},
            **{g: f for g, f in starts.failures.items()},
        },
    )
    return described, committed


def _screen_group(
    spec: ResetSpec,
    g: str,
    described: KeyedResults[str, GroupDescription],
    committed: KeyedResults[str, GroupOffsets],
    counts: Mapping[str, int],
) -> tuple[GroupReset, list[TopicPartition] | None]:
    """The group as read, refused when it cannot be reset; with its partitions in scope when
    it was not refused before they were known (None: refused before)."""
    d = described.values.get(g)
    current = committed.values[g].committed() if g in committed.values else {}
    base = GroupReset(
        g,
        d.state if d else GroupState.UNKNOWN,
        d.group_type if d else "",
        d.protocol_type if d else "",
        len(d.members) if d else 0,
        current,
    )
    failure = described.failures.get(g) or committed.failures.get(g)
    if failure is not None and d is not None and d.group_type == SHARE and failure.code < 0:
        return base.refused(Refusal.SHARE_GROUP, str(failure)), None  # e.g. the broker lacks the API
    if failure is not None:
        return base.refused(Refusal.UNREADABLE, str(failure)), None
    assert d is not None  # described, as every group read without a failure
    if d.group_type == STREAMS:
        return base.refused(Refusal.STREAMS_GROUP, ""), None
    if d.members or d.state not in (GroupState.EMPTY, GroupState.DEAD):
        return base.refused(Refusal.HAS_MEMBERS, f"{d.state.value}."), None
    if spec.strategy is Strategy.FROM_FILE and g not in (spec.file_offsets or {}):
        return base.refused(Refusal.NOT_IN_FILE, ""), None
    scope = _scope_partitions(spec, g, current, counts)
    return (base if scope else base.refused(Refusal.NOTHING_IN_SCOPE, "")), scope


async def _read_partition_offsets(
    aclient, wanted: list[TopicPartition], at_ms: int | None
) -> tuple[KeyedResults, KeyedResults, KeyedResults]:
    """(log starts, log ends, offsets at ``at_ms``) of the partitions, read at once."""
    empty: KeyedResults = KeyedResults()
    return await asyncio.gather(
        aclient.log_start_offsets(wanted) if wanted else _done(empty),
        aclient.log_end_offsets(wanted) if wanted else _done(empty),
        aclient.offsets_for_timestamp(wanted, at_ms) if wanted and at_ms is not None else _done(empty),
    )


async def _done(value):
    return value


def _plan_group(
    spec: ResetSpec,
    group: GroupReset,
    tps: list[TopicPartition],
    starts: KeyedResults,
    ends: KeyedResults,
    at_time: KeyedResults,
) -> GroupReset:
    reads = (starts, ends, at_time) if spec.at_ms(0) is not None else (starts, ends)
    failed = _first_failure(tps, *reads)
    if failed is not None:
        return group.refused(Refusal.UNREADABLE, failed)
    clamps = spec.strategy.clamps
    rows = []
    for tp in tps:
        start, end = starts.values[tp].offset, ends.values[tp].offset
        current = group.current.get(tp)
        if spec.strategy is Strategy.SHIFT_BY and current is None:
            return group.refused(Refusal.NO_COMMIT_TO_SHIFT, str(tp))
        requested, finding = _requested(spec, group.group_id, tp, current, start, end, at_time)
        if requested is None:
            continue  # a scope wider than the file: the file's partitions only
        target = requested
        if clamps and requested > end:
            target, finding = end, Finding.CLAMPED_TO_LOG_END
        elif clamps and requested < start:
            target, finding = start, Finding.CLAMPED_TO_LOG_START
        rows.append(PartitionReset(tp, current, requested, target, start, end, finding))
    if not rows:
        return group.refused(Refusal.NOTHING_IN_SCOPE, "")
    return GroupReset(
        group.group_id,
        group.state,
        group.group_type,
        group.protocol_type,
        group.members,
        group.current,
        tuple(rows),
    )


def _requested(
    spec: ResetSpec,
    group_id: str,
    tp: TopicPartition,
    current: int | None,
    start: int,
    end: int,
    at_time: KeyedResults,
) -> tuple[int | None, Finding | None]:
    """The offset the strategy asks for ``tp`` (None: the file does not name it), and the finding
    when it is not what was asked for literally (no commit, no record at the time)."""
    s = spec.strategy
    if s is Strategy.TO_EARLIEST:
        return start, None
    if s is Strategy.TO_LATEST:
        return end, None
    if s is Strategy.TO_CURRENT:
        return (current, None) if current is not None else (end, Finding.NO_COMMIT)
    if s is Strategy.TO_OFFSET:
        return spec.offset, None
    if s is Strategy.SHIFT_BY:
        if spec.shift is None:  # reset_spec requires one for shift_by
            raise ConfigurationError("reset strategy shift_by needs a shift: build the spec with reset_spec.")
        assert current is not None  # a partition without a commit refuses the group first
        return current + spec.shift, None
    if s in (Strategy.TO_DATETIME, Strategy.BY_DURATION):
        found: ListedOffset = at_time.values[tp]
        return (found.offset, None) if found.offset != NO_OFFSET_AT_TIME else (end, Finding.NO_RECORD_AT_TIME)
    if spec.file_offsets is None:  # FROM_FILE; reset_spec requires them for from_file
        raise ConfigurationError(
            "reset strategy from_file needs the file's offsets: build the spec with reset_spec."
        )
    return spec.file_offsets[group_id].get(tp), None
