"""Lag of share groups (KIP-932), per share-partition: the broker's exact lag where it gives one,
else an upper bound, said as such.

A share group commits no offsets; the share coordinator keeps each share-partition's *start
offset* (records below it are done) and DescribeShareGroupOffsets (Kafka 4.1+) reads it.

* **exact** (DescribeShareGroupOffsets v1, KIP-1226, Kafka 4.2+): the broker's ``Lag``, the log
  end minus the start offset minus the records above the start offset whose delivery is already
  complete (acknowledged, rejected or archived): the records still to deliver.
* **at most** (a Kafka 4.1 broker answering v0, or a v1 broker that answered -1 for a partition
  whose start offset it has): the log end minus the start offset, an upper bound, since records
  above the start offset that were already acknowledged count too. Reported as "at most", never
  as the number of records still to deliver.
* **unknown**: a share-partition never initialized (no start offset), or unreadable (an error):
  never zero.

``lag_at_most`` (the log end minus the start offset) is kept beside the exact lag whatever the
broker: it is the bound, named as one. A broker without the API fails the group by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..client.errors import Failure
from ..client.results import TopicPartition
from ..client.selection import validate_group_ids

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["LagKind", "SharePartitionLag", "ShareGroupLag", "share_group_lag"]


class LagKind(str, Enum):
    """What a share-partition's ``lag`` is."""

    EXACT = "exact"  # the broker's Lag (DescribeShareGroupOffsets v1, KIP-1226)
    AT_MOST = "at_most"  # log end - start offset: an upper bound

    @property
    def words(self) -> str:
        return "exact" if self is LagKind.EXACT else "at most"


@dataclass(frozen=True, slots=True)
class SharePartitionLag:
    tp: TopicPartition
    start_offset: int | None  # None: never initialized (or unreadable: ``error``)
    log_end: int | None
    error: Failure | None = None
    #: the broker's exact lag (v1); None where it gave none (v0) or did not know it (-1)
    exact_lag: int | None = None
    #: whether the broker's protocol carries the lag (DescribeShareGroupOffsets v1, Kafka 4.2+)
    broker_reports_lag: bool = False

    @property
    def lag_at_most(self) -> int | None:
        """The log end minus the start offset: an upper bound of the lag, on any broker."""
        if self.start_offset is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.start_offset)

    @property
    def lag_kind(self) -> LagKind | None:
        """EXACT where the broker gave the lag, AT_MOST where only the bound is known, None: unknown."""
        if self.exact_lag is not None or self.lag_at_most == 0:
            return LagKind.EXACT  # a start offset at the log end has nothing above it: 0 on any broker
        return LagKind.AT_MOST if self.lag_at_most is not None else None

    @property
    def lag(self) -> int | None:
        """The exact lag where the broker gave it, else the upper bound (see :attr:`lag_kind`)."""
        kind = self.lag_kind
        if kind is None:
            return None
        return self.exact_lag if self.exact_lag is not None else self.lag_at_most

    @property
    def note(self) -> str:
        """Why the lag is not exact (empty when it is)."""
        if self.error is not None:
            return str(self.error)
        if self.start_offset is None:
            return "never initialized: unknown"
        if self.lag_kind is LagKind.EXACT:
            return ""
        why = (
            "the broker did not know the exact lag (-1)"
            if self.broker_reports_lag
            else "the broker has no exact lag (DescribeShareGroupOffsets v0, Kafka before 4.2)"
        )
        if self.log_end is None:
            return f"{why}; the log end is unknown"
        return f"{why}: log end - start offset, an upper bound"

    def to_dict(self) -> dict[str, Any]:
        kind = self.lag_kind
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "start_offset": self.start_offset,
            "log_end": self.log_end,
            "lag": self.lag,
            "lag_kind": None if kind is None else kind.value,
            "lag_at_most": self.lag_at_most,
            "error": None if self.error is None else self.error.to_dict(),
        }


def total(partitions: Iterable[SharePartitionLag]) -> tuple[int | None, LagKind | None]:
    """A group's lag: the sum, exact only when every partition's is; unknown (None) when any is,
    or when the group has no share-partition at all (no position anywhere, not 0)."""
    ps = list(partitions)
    if not ps or any(p.lag_kind is None for p in ps):
        return None, None
    kind = LagKind.EXACT if all(p.lag_kind is LagKind.EXACT for p in ps) else LagKind.AT_MOST
    return sum(p.lag or 0 for p in ps), kind


@dataclass(frozen=True, slots=True)
class ShareGroupLag:
    groups: Mapping[str, tuple[SharePartitionLag, ...]] = field(default_factory=dict)
    failures: Mapping[str, Failure] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every group read, with at least one share-partition, and every partition's lag known,
        exact or at most (unknown is never fine)."""
        return not self.failures and all(
            ps and all(p.lag_kind is not None for p in ps) for ps in self.groups.values()
        )

    def to_dict(self) -> dict[str, Any]:
        groups = {}
        for g, ps in self.groups.items():
            lag, kind = total(ps)
            bounds = [p.lag_at_most for p in ps]
            groups[g] = {
                "partitions": [p.to_dict() for p in ps],
                "total_lag": lag,
                "total_lag_kind": None if kind is None else kind.value,
                "total_lag_at_most": None
                if not bounds or any(b is None for b in bounds)
                else sum(b or 0 for b in bounds),
            }
        return {"groups": groups, "failures": {g: f.to_dict() for g, f in self.failures.items()}}


async def share_group_lag(aclient: AsyncGroupsClient, group_ids: Iterable[str]) -> ShareGroupLag:
    """One DescribeShareGroupOffsets per coordinator (v1 where the broker has it: the exact lag),
    one ListOffsets per leader for all groups (the log end, and the bound where no exact lag)."""
    ids = validate_group_ids(group_ids)
    starts = await aclient.describe_share_group_offsets(ids)
    tps = sorted({tp for offsets in starts.values.values() for tp in offsets.partitions})
    ends = await aclient.log_end_offsets(tps) if tps else None
    groups = {}
    for g, offsets in starts.values.items():
        lags = offsets.lags  # None: the broker answered v0
        rows = []
        for tp, c in sorted(offsets.partitions.items()):
            end = ends.values.get(tp) if ends is not None else None
            error = c.error or (ends.failures.get(tp) if ends is not None else None)
            rows.append(
                SharePartitionLag(
                    tp,
                    c.offset,
                    end.offset if end is not None else None,
                    error,
                    exact_lag=None if lags is None else lags.get(tp),
                    broker_reports_lag=lags is not None,
                )
            )
        groups[g] = tuple(rows)
    return ShareGroupLag(groups, dict(starts.failures))
