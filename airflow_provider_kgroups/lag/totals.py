"""Totals and worst partitions of a group, per topic: small pure views over a :class:`GroupLag`.

Every total follows the group's :class:`UnknownLagPolicy`: a partition that counts and has
an unknown lag makes the total unknown (``None``), never zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .model import GroupLag, LagFlag, PartitionLag

__all__ = ["TopicLag", "topic_lags", "worst_partitions"]


@dataclass(frozen=True, slots=True)
class TopicLag:
    """One group's lag on one topic."""

    topic: str
    total_lag: int | None  # None when a counted partition's lag is unknown
    worst: PartitionLag | None  # the counted partition with the largest known lag
    partitions: int
    unknown: int  # counted partitions whose lag is unknown
    flagged: frozenset[LagFlag] = frozenset()  # every flag seen on the topic's partitions

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "total_lag": self.total_lag,
            "worst": self.worst.to_dict() if self.worst else None,
            "partitions": self.partitions,
            "unknown": self.unknown,
            "flags": sorted(f.value for f in self.flagged),
        }


def topic_lags(group: GroupLag) -> dict[str, TopicLag]:
    """Per topic: total, worst partition, partition count and unknown count."""
    by_topic: dict[str, list[PartitionLag]] = {}
    for p in group.partitions:
        by_topic.setdefault(p.topic, []).append(p)
    out = {}
    for topic, parts in sorted(by_topic.items()):
        counted = [p for p in parts if group.counts_in_totals(p)]
        unknown = sum(1 for p in counted if p.lag is None)
        known = [p for p in counted if p.lag is not None]
        out[topic] = TopicLag(
            topic=topic,
            total_lag=None if unknown else sum(p.lag for p in known),  # type: ignore[misc]  # known: lag is not None
            worst=max(known, key=lambda p: p.lag, default=None),  # type: ignore[arg-type, return-value]  # known: lag is not None
            partitions=len(parts),
            unknown=unknown,
            flagged=frozenset(f for p in parts for f in p.flags),
        )
    return out


def worst_partitions(group: GroupLag, n: int) -> list[PartitionLag]:
    """The ``n`` counted partitions with the largest lag > 0, largest first."""
    lagging = [p for p in group.partitions if p.lag and group.counts_in_totals(p)]
    return sorted(lagging, key=lambda p: (-p.lag, p.topic, p.partition))[: max(0, n)]  # type: ignore[operator]  # lagging: lag is not None
