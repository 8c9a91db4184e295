"""The lag engine's values. One JSON path (``to_dict``) and one flat row shape (``rows``)
shared by the CLI, XCom, the history store and the Spark jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from ..client.errors import Failure
from ..client.results import GroupState, TopicPartition


class UnknownLagPolicy(str, Enum):
    """What a partition without a committed offset counts as. Never NaN, never silently zero."""

    FAIL = "fail"  # the group's lag is unknown (a barrier or threshold cannot pass)
    IGNORE = "ignore"  # leave the partition out of totals, but still list it
    FROM_EARLIEST = "from_earliest"  # lag = log end - log start (what auto.offset.reset=earliest would read)
    FROM_LATEST = "from_latest"  # lag = 0 (what auto.offset.reset=latest would skip to)


class LagFlag(str, Enum):
    NO_COMMIT = "no_commit"  # no committed offset: lag decided by the policy
    CLAMPED = "clamped"  # committed > log end (a read race): lag clamped to 0
    LOST = "lost"  # committed < log start: records were deleted by retention before being read
    ERROR = "error"  # the broker returned an error for this partition


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None
    log_start: int | None
    log_end: int | None
    lag: int | None  # None: unknown (no commit under FAIL/IGNORE, or an error)
    flags: frozenset[LagFlag] = frozenset()
    assigned_to: str | None = None  # member id holding the partition, if any
    error: Failure | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "committed": self.committed,
                "log_start": self.log_start, "log_end": self.log_end, "lag": self.lag,
                "flags": sorted(f.value for f in self.flags), "assigned_to": self.assigned_to,
                "error": self.error.to_dict() if self.error else None}


@dataclass(frozen=True, slots=True)
class GroupLag:
    group_id: str
    state: GroupState
    protocol_type: str
    members: int
    partitions: tuple[PartitionLag, ...]
    error: Failure | None = None  # the group itself could not be read

    @property
    def total_lag(self) -> int | None:
        """Sum over partitions with a known lag; None if any counted partition is unknown."""
        lags = [p.lag for p in self.partitions if LagFlag.NO_COMMIT not in p.flags or p.lag is not None]
        if any(lag is None for lag in lags):
            return None
        return sum(lags)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "state": self.state.value, "protocol_type": self.protocol_type,
                "members": self.members, "total_lag": self.total_lag,
                "partitions": [p.to_dict() for p in self.partitions],
                "error": self.error.to_dict() if self.error else None}


@dataclass(frozen=True, slots=True)
class LagSnapshot:
    """Lag of many groups at one moment (``taken_at_ms``: when the committed offsets were read)."""

    taken_at_ms: int
    groups: Mapping[str, GroupLag]
    policy: UnknownLagPolicy = UnknownLagPolicy.FAIL
    failures: Mapping[str, Failure] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"taken_at_ms": self.taken_at_ms, "policy": self.policy.value,
                "groups": {g: v.to_dict() for g, v in self.groups.items()},
                "failures": {g: f.to_dict() for g, f in self.failures.items()}}


#: The history store's row: one per (snapshot, group, partition); a group with no partition
#: gets one row with topic/partition null so that its state history is kept. Parquet types:
#: snapshot_ms int64 (epoch ms, UTC), group_id string, group_state string, protocol_type
#: string, members int32, topic string (null), partition int32 (null), committed int64 (null),
#: log_start int64 (null), log_end int64 (null), lag int64 (null), flags string (comma-joined
#: LagFlag values, "" when none). Partitioned on disk by ``date`` (YYYY-MM-DD of snapshot_ms, UTC).
HISTORY_COLUMNS = ("snapshot_ms", "group_id", "group_state", "protocol_type", "members", "topic", "partition",
                   "committed", "log_start", "log_end", "lag", "flags")
