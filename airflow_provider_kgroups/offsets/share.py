"""Lag of share groups (KIP-932): per share-partition, the log end minus the start offset.

A share group commits no offsets; the share coordinator keeps each share-partition's *start
offset* (records below it are done) and DescribeShareGroupOffsets (Kafka 4.1+) reads it. The lag
here is an upper bound: records above the start offset that were already acknowledged (the
share-partition's in-flight window) are counted too, so it is reported as "at most", never as
the exact number of records still to deliver. A share-partition never initialized has no start
offset: its lag is unknown, never zero. A broker without the API fails the group by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..client.errors import Failure
from ..client.results import TopicPartition
from ..client.selection import validate_group_ids

__all__ = ["SharePartitionLag", "ShareGroupLag", "share_group_lag"]


@dataclass(frozen=True, slots=True)
class SharePartitionLag:
    tp: TopicPartition
    start_offset: int | None  # None: never initialized (or unreadable: ``error``)
    log_end: int | None
    error: Failure | None = None

    @property
    def lag_at_most(self) -> int | None:
        if self.start_offset is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.start_offset)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "start_offset": self.start_offset,
            "log_end": self.log_end,
            "lag_at_most": self.lag_at_most,
            "error": None if self.error is None else self.error.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class ShareGroupLag:
    groups: Mapping[str, tuple[SharePartitionLag, ...]] = field(default_factory=dict)
    failures: Mapping[str, Failure] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every group read and every partition's lag known (unknown is never fine)."""
        return not self.failures and all(p.lag_at_most is not None for ps in self.groups.values() for p in ps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "groups": {
                g: {
                    "partitions": [p.to_dict() for p in ps],
                    "total_lag_at_most": None
                    if any(p.lag_at_most is None for p in ps)
                    else sum(p.lag_at_most for p in ps),
                }
                for g, ps in self.groups.items()
            },
            "failures": {g: f.to_dict() for g, f in self.failures.items()},
        }


async def share_group_lag(aclient, group_ids: Iterable[str]) -> ShareGroupLag:
    """One DescribeShareGroupOffsets per coordinator, one ListOffsets per leader for all groups."""
    ids = validate_group_ids(group_ids)
    starts = await aclient.describe_share_group_offsets(ids)
    tps = sorted({tp for offsets in starts.values.values() for tp in offsets.partitions})
    ends = await aclient.log_end_offsets(tps) if tps else None
    groups = {}
    for g, offsets in starts.values.items():
        rows = []
        for tp, c in sorted(offsets.partitions.items()):
            end = ends.values.get(tp) if ends is not None else None
            error = c.error or (ends.failures.get(tp) if ends is not None else None)
            rows.append(SharePartitionLag(tp, c.offset, end.offset if end is not None else None, error))
        groups[g] = tuple(rows)
    return ShareGroupLag(groups, dict(starts.failures))
