"""The lag engine's values. One JSON path (``to_dict``) and one flat row shape (``rows``)
shared by the CLI, XCom, the history store and the Spark jobs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..client.errors import Failure
from ..client.frozen import fast_init
from ..client.results import SHARE, GroupState, TopicPartition, topic_partition


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
    #: the group is Stable with members and none of them is assigned a partition of this topic
    #: (its assignments were read): whatever it committed here is not being consumed now
    TOPIC_UNASSIGNED = "topic_unassigned"
    #: a share group's share-partition (KIP-932) whose broker gave no exact lag
    #: (DescribeShareGroupOffsets v0, Kafka 4.1, or -1 for it): only the log end minus the start
    #: offset is known, an upper bound, so the lag is unknown (a bound is not a value)
    LAG_AT_MOST = "lag_at_most"


@fast_init  # built once per group and partition: 36,000 for 3,000 groups
@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One partition of a group. For a share group (KIP-932) ``committed`` is the share-partition's
    start offset (every record below it is done: acknowledged, rejected or archived) and ``lag``
    the broker's exact lag (records not yet delivered completely), which may be less than
    ``log_end - committed`` (:func:`~.compute.share_partition_lag`)."""

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
        return topic_partition(self.topic, self.partition)  # one shared instance per partition

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "committed": self.committed,
            "log_start": self.log_start,
            "log_end": self.log_end,
            "lag": self.lag,
            "flags": sorted(f.value for f in self.flags) if self.flags else [],
            "assigned_to": self.assigned_to,
            "error": self.error.to_dict() if self.error else None,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class GroupLag:
    group_id: str
    state: GroupState
    protocol_type: str
    members: int
    partitions: tuple[PartitionLag, ...]
    error: Failure | None = None  # the group itself could not be read
    policy: UnknownLagPolicy = UnknownLagPolicy.FAIL  # how NO_COMMIT partitions were counted

    def counts_in_totals(self, partition: PartitionLag) -> bool:
        """IGNORE leaves partitions without a commit out of totals; every other partition counts."""
        return not (self.policy is UnknownLagPolicy.IGNORE and LagFlag.NO_COMMIT in partition.flags)

    @property
    def is_share(self) -> bool:
        """A share group (KIP-932): no committed offsets, its position is the start offsets."""
        return self.protocol_type == SHARE

    @property
    def not_found(self) -> bool:
        """The group does not exist: Kafka describes an unknown group as Dead (DescribeGroups;
        from v6 with GROUP_ID_NOT_FOUND), and it has no member and no committed offset. Its
        lag is unknown, never 0."""
        return (
            self.state is GroupState.DEAD
            and self.members == 0
            and all(p.committed is None for p in self.partitions)
        )

    @property
    def total_lag(self) -> int | None:
        """Sum over the partitions that count; None if any of them is unknown (FAIL and no
        commit, or an error) or the group does not exist: an unknown lag is never summed as zero.
        A share group without any share-partition has no position anywhere: unknown, not 0; so is
        a group without any partition whose description failed (``error``): which partitions it is
        assigned, and whether it exists, are unknown."""
        if self.not_found or (not self.partitions and (self.is_share or self.error is not None)):
            return None
        if self.policy is UnknownLagPolicy.IGNORE:
            lags = [p.lag for p in self.partitions if self.counts_in_totals(p)]
        else:  # every partition counts (counts_in_totals), without a call per partition
            lags = [p.lag for p in self.partitions]
        if None in lags:
            return None
        return sum(lags)  # type: ignore[arg-type]  # every lag known (checked above)

    @property
    def worst(self) -> PartitionLag | None:
        """The counted partition with the largest known lag (ties: the first in partition order)."""
        known = [p for p in self.partitions if p.lag is not None and self.counts_in_totals(p)]
        return max(known, key=lambda p: p.lag, default=None)  # type: ignore[arg-type, return-value]  # known: lag is not None

    def to_dict(self) -> dict[str, Any]:
        return self.document([p.to_dict() for p in self.partitions])

    def document(self, partitions: list[Any]) -> dict[str, Any]:
        """:meth:`to_dict`'s object with ``partitions`` in its place: the compact JSON writers
        pass each partition without a flag or an error as its :class:`PartitionLag`, which
        msgspec encodes as the object its ``to_dict`` makes (:func:`...cli.lag_rows.encodable_partitions`)."""
        return {
            "group_id": self.group_id,
            "state": self.state.value,
            "protocol_type": self.protocol_type,
            "members": self.members,
            "not_found": self.not_found,
            "total_lag": self.total_lag,
            "policy": self.policy.value,
            "partitions": partitions,
            "error": self.error.to_dict() if self.error else None,
        }


@dataclass(frozen=True, slots=True)
class LagSnapshot:
    """Lag of many groups at one moment (``taken_at_ms``: when the committed offsets were read)."""

    taken_at_ms: int
    groups: Mapping[str, GroupLag]
    policy: UnknownLagPolicy = UnknownLagPolicy.FAIL
    failures: Mapping[str, Failure] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "taken_at_ms": self.taken_at_ms,
            "policy": self.policy.value,
            "groups": {g: v.to_dict() for g, v in self.groups.items()},
            "failures": {g: f.to_dict() for g, f in self.failures.items()},
        }

    def rows(self) -> list[dict[str, Any]]:
        """The history store's rows (:data:`HISTORY_COLUMNS`) for this snapshot. Groups in
        ``failures`` (nothing could be read) have no row: an unread group is not evidence of
        anything. A group whose description failed but whose offsets were read keeps its
        rows, with state ``Unknown``."""
        out: list[dict[str, Any]] = []
        for group in self.groups.values():
            head = {
                "snapshot_ms": self.taken_at_ms,
                "group_id": group.group_id,
                "group_state": group.state.value,
                "protocol_type": group.protocol_type,
                "members": group.members,
            }
            if not group.partitions:
                out.append(
                    {
                        **head,
                        "topic": None,
                        "partition": None,
                        "committed": None,
                        "log_start": None,
                        "log_end": None,
                        "lag": None,
                        "flags": "",
                    }
                )
            for p in group.partitions:
                out.append(
                    {
                        **head,
                        "topic": p.topic,
                        "partition": p.partition,
                        "committed": p.committed,
                        "log_start": p.log_start,
                        "log_end": p.log_end,
                        "lag": p.lag,
                        "flags": ",".join(sorted(f.value for f in p.flags)),
                    }
                )
        return out


#: The history store's row: one per (snapshot, group, partition); a group with no partition
#: gets one row with topic/partition null so that its state history is kept. Parquet types:
#: snapshot_ms int64 (epoch ms, UTC), group_id string, group_state string, protocol_type
#: string, members int32, topic string (null), partition int32 (null), committed int64 (null),
#: log_start int64 (null), log_end int64 (null), lag int64 (null), flags string (comma-joined
#: LagFlag values, "" when none). Partitioned on disk by ``date`` (YYYY-MM-DD of snapshot_ms, UTC).
HISTORY_COLUMNS = (
    "snapshot_ms",
    "group_id",
    "group_state",
    "protocol_type",
    "members",
    "topic",
    "partition",
    "committed",
    "log_start",
    "log_end",
    "lag",
    "flags",
)
