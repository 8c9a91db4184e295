"""Catch-up barrier: has every group consumed everything up to a target fixed once?

The target is fixed when the barrier is created and never moves: per group, per partition,
either the log-end offset at that moment (``TargetKind.LOG_END``) or the first offset whose
record timestamp is >= a given time (``TargetKind.TIMESTAMP``, e.g. a data interval's end;
where no record is that recent yet, the log end at that moment). Producers writing on do not
move it, unlike "wait until lag == 0". The target is plain JSON (``to_dict``/``from_dict``)
so a sensor can persist it across pokes and hand it to a trigger.

A partition has *reached* the target when committed >= target. A share group (KIP-932) commits
nothing: its share-partition start offset stands for the commit (:mod:`.share_positions`), and it
passes a partition's target when its start offset reaches it: every record below is done
(acknowledged, rejected or archived), whatever the records above it. Without a commit it has
reached it only if nothing before the target exists any more (log start >= target, e.g. an
empty partition); otherwise it has not, and ``remaining`` counts from the log start.

Progress: given the previous check (a :class:`BarrierCheckpoint`, also JSON), each partition
gets a rate (offsets per second) and a projected time to reach its target; a group's
projection is its slowest partition's, and it is ``None`` (never, at the current rate) when an
unreached partition is not moving.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import TYPE_CHECKING, Any

from ..client.errors import CLIENT_NOT_READ, ConfigurationError, ErrorCode, Failure, KafkaGroupsError
from ..client.offset_map import OffsetKind, OffsetMap
from ..client.results import GroupOffsets, KeyedResults, TopicPartition
from ..client.selection import validate_group_ids
from .policy import non_negative_ms
from .share_positions import share_candidates, with_share_positions
from .snapshot import now_ms, partitions_of_groups, topic_partitions

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = [
    "TargetKind",
    "BarrierTarget",
    "BarrierCheckpoint",
    "PartitionProgress",
    "BarrierStatus",
    "TargetUnavailable",
    "fix_target",
    "check_barrier",
    "evaluate_barrier",
]

FORMAT_VERSION = 1


class TargetUnavailable(KafkaGroupsError):
    """The target offsets could not all be read (a partition without leader, a timeout, an
    authorization error...). ``failures``: why, per partition or group."""

    def __init__(self, message: str, failures: Mapping[Any, Failure] | None = None) -> None:
        super().__init__(message)
        self.failures = dict(failures or {})


class TargetKind(str, Enum):
    LOG_END = "log_end"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True, slots=True)
class BarrierTarget:
    offsets: Mapping[str, Mapping[TopicPartition, int]]  # group -> partition -> target offset
    kind: TargetKind
    fixed_at_ms: int
    timestamp_ms: int | None = None  # for TargetKind.TIMESTAMP
    read_committed: bool = False

    @property
    def group_ids(self) -> list[str]:
        return list(self.offsets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "kgroups-barrier-target",
            "version": FORMAT_VERSION,
            "kind": self.kind.value,
            "fixed_at_ms": self.fixed_at_ms,
            "timestamp_ms": self.timestamp_ms,
            "read_committed": self.read_committed,
            "groups": {
                g: OffsetMap(offsets, OffsetKind.COMMITTED, name=f"groups[{g!r}]").nested()
                for g, offsets in self.offsets.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BarrierTarget:
        if not isinstance(data, Mapping) or data.get("format") != "kgroups-barrier-target":
            raise ConfigurationError("not a barrier target: expected a dict from BarrierTarget.to_dict().")
        if data.get("version") != FORMAT_VERSION:
            raise ConfigurationError(
                f"barrier target version {data.get('version')!r} is not {FORMAT_VERSION}."
            )
        try:
            kind = TargetKind(data["kind"])
        except (KeyError, ValueError):
            raise ConfigurationError(
                f"barrier target kind {data.get('kind')!r} is not one of {[k.value for k in TargetKind]}."
            ) from None
        groups = data.get("groups")
        if not isinstance(groups, Mapping) or not groups:
            raise ConfigurationError("barrier target has no groups.")
        offsets = {
            str(g): OffsetMap.parse(nested, OffsetKind.COMMITTED, name=f"groups[{g!r}]").flat()
            for g, nested in groups.items()
        }
        timestamp = data.get("timestamp_ms")
        return cls(
            offsets=offsets,
            kind=kind,
            fixed_at_ms=non_negative_ms("fixed_at_ms", data.get("fixed_at_ms")),
            timestamp_ms=None if timestamp is None else non_negative_ms("timestamp_ms", timestamp),
            read_committed=bool(data.get("read_committed", False)),
        )


@dataclass(frozen=True, slots=True)
class BarrierCheckpoint:
    """Committed offsets at one check: what the next check measures progress against."""

    checked_at_ms: int
    committed: Mapping[str, Mapping[TopicPartition, int | None]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked_at_ms": self.checked_at_ms,
            "committed": {
                g: OffsetMap(offsets, OffsetKind.CHECKPOINT, name=f"committed[{g!r}]").nested()
                for g, offsets in self.committed.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BarrierCheckpoint:
        if not isinstance(data, Mapping) or "committed" not in data:
            raise ConfigurationError(
                "not a barrier checkpoint: expected a dict from BarrierCheckpoint.to_dict()."
            )
        committed = data["committed"]
        if not isinstance(committed, Mapping):
            raise ConfigurationError(
                "barrier checkpoint 'committed' must be {group: {topic: {partition: offset}}}."
            )
        return cls(
            non_negative_ms("checked_at_ms", data.get("checked_at_ms")),
            {
                str(g): OffsetMap.parse(v, OffsetKind.CHECKPOINT, name=f"committed[{g!r}]").flat()
                for g, v in committed.items()
            },
        )


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    group_id: str
    topic: str
    partition: int
    target: int
    committed: int | None
    reached: bool
    remaining: int | None  # offsets left to the target (None: unknown)
    rate_per_s: float | None = None  # committed offsets per second since the previous check
    eta_s: float | None = None  # projected seconds to reach the target (0 when reached)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "topic": self.topic,
            "partition": self.partition,
            "target": self.target,
            "committed": self.committed,
            "reached": self.reached,
            "remaining": self.remaining,
            "rate_per_s": self.rate_per_s,
            "eta_s": self.eta_s,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class BarrierStatus:
    target: BarrierTarget
    checked_at_ms: int
    partitions: tuple[PartitionProgress, ...]
    failures: Mapping[str, Failure] = field(default_factory=dict)  # groups whose offsets could not be read

    @property
    def reached(self) -> bool:
        return not self.failures and all(p.reached for p in self.partitions)

    def group_reached(self, group_id: str) -> bool:
        return group_id not in self.failures and all(
            p.reached for p in self.partitions if p.group_id == group_id
        )

    def remaining(self, group_id: str | None = None) -> int | None:
        parts = [p for p in self.partitions if group_id is None or p.group_id == group_id]
        if any(p.remaining is None for p in parts):
            return None
        return sum(p.remaining for p in parts)  # type: ignore[misc]  # none is None (checked above)

    def eta_s(self, group_id: str | None = None) -> float | None:
        """Projected seconds until every (or ``group_id``'s) partition reaches the target:
        the slowest partition's projection; None when one is not progressing or unknown."""
        parts = [p for p in self.partitions if group_id is None or p.group_id == group_id]
        if any(p.eta_s is None for p in parts):
            return None
        return max((p.eta_s for p in parts), default=0.0)  # type: ignore[type-var]  # none is None (checked above)

    def checkpoint(self) -> BarrierCheckpoint:
        committed: dict[str, dict[TopicPartition, int | None]] = {}
        for p in self.partitions:
            committed.setdefault(p.group_id, {})[TopicPartition(p.topic, p.partition)] = p.committed
        return BarrierCheckpoint(self.checked_at_ms, committed)

    def summary(self) -> str:
        """One sentence for a log line."""
        if self.reached:
            return f"all {len(self.target.offsets)} group(s) reached the target"
        waiting = [g for g in self.target.offsets if not self.group_reached(g)]
        eta = self.eta_s()
        projection = f"projected in {eta:.0f} s" if eta is not None else "no projection (not progressing)"
        return (
            f"{len(waiting)} of {len(self.target.offsets)} group(s) not there yet ({', '.join(waiting[:5])}"
            f"{'...' if len(waiting) > 5 else ''}); {self.remaining()} offsets remaining; {projection}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked_at_ms": self.checked_at_ms,
            "reached": self.reached,
            "remaining": self.remaining(),
            "eta_s": self.eta_s(),
            "summary": self.summary(),
            "groups": {
                g: {"reached": self.group_reached(g), "remaining": self.remaining(g), "eta_s": self.eta_s(g)}
                for g in self.target.offsets
            },
            "partitions": [p.to_dict() for p in self.partitions],
            "failures": {g: f.to_dict() for g, f in self.failures.items()},
        }


# -- pure evaluation ----------------------------------------------------------------------------


def _partition_progress(
    group_id: str,
    tp: TopicPartition,
    target: int,
    committed: int | None,
    log_start: int | None,
    previous: int | None,
    elapsed_s: float | None,
) -> PartitionProgress:
    progress = partial(PartitionProgress, group_id, tp.topic, tp.partition, target, committed)
    if committed is not None and committed >= target:
        return progress(reached=True, remaining=0, eta_s=0.0)
    if committed is None:
        if log_start is not None and log_start >= target:
            return progress(
                reached=True,
                remaining=0,
                eta_s=0.0,
                note=f"no commit, but nothing before the target exists (log start {log_start})",
            )
        remaining = target - log_start if log_start is not None else None
        return progress(reached=False, remaining=remaining, note="no committed offset yet")
    remaining = target - committed
    if previous is None or not elapsed_s or elapsed_s <= 0:
        return progress(reached=False, remaining=remaining, note="no previous check: no rate yet")
    rate = (committed - previous) / elapsed_s
    if rate < 0:
        return progress(
            reached=False,
            remaining=remaining,
            rate_per_s=rate,
            note=f"committed offset went back from {previous} to {committed}",
        )
    if rate == 0:
        return progress(
            reached=False,
            remaining=remaining,
            rate_per_s=0.0,
            note="not progressing since the previous check",
        )
    return progress(reached=False, remaining=remaining, rate_per_s=rate, eta_s=remaining / rate)


def evaluate_barrier(
    target: BarrierTarget,
    committed: KeyedResults[str, GroupOffsets] | Mapping[str, Mapping[TopicPartition, int | None]],
    checked_at_ms: int,
    *,
    log_starts: Mapping[TopicPartition, int] | None = None,
    previous: BarrierCheckpoint | None = None,
) -> BarrierStatus:
    """Progress of every group toward ``target`` given committed offsets read at
    ``checked_at_ms``. ``committed`` is the client's OffsetFetch result or plain
    ``{group: {partition: offset or None}}``. Pure."""
    if isinstance(committed, KeyedResults):
        failures = dict(committed.failures)
        read = {
            g: {tp: c.offset if c.error is None else None for tp, c in o.partitions.items()}
            for g, o in committed.values.items()
        }
    else:
        failures, read = {}, {g: dict(v) for g, v in committed.items()}
    elapsed_s = (checked_at_ms - previous.checked_at_ms) / 1000.0 if previous is not None else None
    partitions = []
    for group_id, targets in target.offsets.items():
        if group_id not in read:
            failures.setdefault(group_id, Failure(CLIENT_NOT_READ, "committed offsets were not read"))
            continue
        before = previous.committed.get(group_id, {}) if previous is not None else {}
        for tp in sorted(targets):
            partitions.append(
                _partition_progress(
                    group_id,
                    tp,
                    targets[tp],
                    read[group_id].get(tp),
                    (log_starts or {}).get(tp),
                    before.get(tp),
                    elapsed_s,
                )
            )
    return BarrierStatus(
        target, checked_at_ms, tuple(partitions), {g: f for g, f in failures.items() if g in target.offsets}
    )


# -- with the client ----------------------------------------------------------------------------


def _raise_unreadable(failures: Mapping[TopicPartition, Failure], what: str) -> None:
    unknown = sorted(
        {tp.topic for tp, f in failures.items() if f.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    )
    if unknown:
        raise ConfigurationError(
            f"topic(s) {', '.join(map(repr, unknown))} do not exist in the cluster: "
            "a barrier needs topics that exist."
        )
    if failures:
        listed = "; ".join(f"{tp}: {f}" for tp, f in sorted(failures.items())[:5])
        raise TargetUnavailable(
            f"could not read the {what} of {len(failures)} partition(s): {listed}", failures
        )


async def fix_target(
    client: AsyncGroupsClient,
    group_ids: Iterable[str],
    *,
    topics: Iterable[str] | None = None,
    timestamp_ms: int | None = None,
    read_committed: bool = False,
    timeout_s: float | None = None,
) -> BarrierTarget:
    """Fix the target now. Partitions: every partition of ``topics`` for every group, or
    (``topics=None``) each group's committed and assigned partitions. ``timestamp_ms``: the
    first offset at or after that time instead of the log end."""
    ids = validate_group_ids(group_ids)  # timestamp_ms: checked by the client's offsets_for_timestamp
    fixed_at = now_ms()
    if topics is not None:
        partitions = await topic_partitions(client, topics)
        per_group = {
            g: sorted(TopicPartition(t, p) for t, parts in partitions.items() for p in parts) for g in ids
        }
    else:
        descriptions = await client.describe_groups(ids, timeout_s=timeout_s)
        offsets = await client.fetch_committed_offsets(ids, timeout_s=timeout_s)
        share, maybe_share = share_candidates(ids, descriptions, offsets)
        offsets = await with_share_positions(client, offsets, share, maybe_share, timeout_s=timeout_s)
        if offsets.failures:
            listed = "; ".join(f"{g}: {f}" for g, f in offsets.failures.items())
            raise TargetUnavailable(f"could not read the committed offsets of: {listed}", offsets.failures)
        per_group = partitions_of_groups(descriptions.values, offsets.values)
        empty = [g for g in ids if not per_group.get(g)]
        if empty:
            raise ConfigurationError(
                f"group(s) {', '.join(map(repr, empty))} have no committed offsets (a share group: no "
                "share-partition start offset) and no assigned partitions: name the topics the barrier is about."
            )
    tps = sorted({tp for parts in per_group.values() for tp in parts})
    if timestamp_ms is None:
        ends = await client.log_end_offsets(tps, read_committed=read_committed, timeout_s=timeout_s)
        _raise_unreadable(ends.failures, "log-end offsets")
        offsets_now = {tp: ends.values[tp].offset for tp in tps}
    else:
        at_time = await client.offsets_for_timestamp(tps, timestamp_ms, timeout_s=timeout_s)
        _raise_unreadable(at_time.failures, f"offsets for timestamp {timestamp_ms}")
        offsets_now = {tp: at_time.values[tp].offset for tp in tps}
        newer_than_all = [tp for tp, offset in offsets_now.items() if offset < 0]
        if newer_than_all:  # no record that recent yet: everything there now is before the time
            ends = await client.log_end_offsets(
                newer_than_all, read_committed=read_committed, timeout_s=timeout_s
            )
            _raise_unreadable(ends.failures, "log-end offsets")
            offsets_now.update({tp: ends.values[tp].offset for tp in newer_than_all})
    return BarrierTarget(
        offsets={g: {tp: offsets_now[tp] for tp in per_group[g]} for g in ids},
        kind=TargetKind.LOG_END if timestamp_ms is None else TargetKind.TIMESTAMP,
        fixed_at_ms=fixed_at,
        timestamp_ms=timestamp_ms,
        read_committed=read_committed,
    )


async def check_barrier(
    client: AsyncGroupsClient,
    target: BarrierTarget,
    *,
    previous: BarrierCheckpoint | None = None,
    timeout_s: float | None = None,
) -> BarrierStatus:
    """One check: the groups' committed offsets now (one OffsetFetch per coordinator; a group that
    committed nothing may be a share group: its start offsets, :mod:`.share_positions`), plus
    the log start of partitions without a commit (rare)."""
    checked_at = now_ms()
    committed = await client.fetch_committed_offsets(target.group_ids, timeout_s=timeout_s)
    _, maybe_share = share_candidates(target.group_ids, None, committed)
    committed = await with_share_positions(client, committed, (), maybe_share, timeout_s=timeout_s)
    uncommitted = sorted(
        {
            tp
            for g, targets in target.offsets.items()
            if g in committed.values
            for tp in targets
            if committed.values[g].committed().get(tp) is None
        }
    )
    log_starts: dict[TopicPartition, int] = {}
    if uncommitted:
        starts = await client.log_start_offsets(uncommitted, timeout_s=timeout_s)
        log_starts = {tp: v.offset for tp, v in starts.values.items()}
    return evaluate_barrier(target, committed, checked_at, log_starts=log_starts, previous=previous)
