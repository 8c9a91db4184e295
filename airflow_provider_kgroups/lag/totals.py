"""Totals and worst partitions of a group, per topic: small pure views over a :class:`GroupLag`,
and what of some groups a snapshot could not read (:func:`first_unread`).

Every total follows the group's :class:`UnknownLagPolicy`: a partition that counts and has
an unknown lag makes the total unknown (``None``), never zero.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..client.errors import Failure
from ..client.results import TopicPartition
from .model import GroupLag, LagFlag, LagSnapshot, PartitionLag

__all__ = ["TopicLag", "Unread", "first_unread", "topic_lags", "total_lag", "worst_partitions"]


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


def total_lag(groups: Iterable[GroupLag], topics: Collection[str] | None = None) -> int | None:
    """Records left over ``groups`` on ``topics`` (None: every topic): the sum of their topic
    totals (:func:`topic_lags`); None when one of them is unknown."""
    totals = [
        t.total_lag for g in groups for t in topic_lags(g).values() if topics is None or t.topic in topics
    ]
    return None if None in totals else sum(totals)  # type: ignore[arg-type]  # None ruled out


class Unread(NamedTuple):
    """What a snapshot could not read of a group: the whole group (``tp`` None) or one partition,
    with the error when one was returned."""

    group_id: str
    tp: TopicPartition | None = None
    failure: Failure | None = None


def first_unread(snapshot: LagSnapshot, group_ids: Iterable[str], topics: Collection[str]) -> Unread | None:
    """The first of ``group_ids`` (or of their partitions on ``topics``) that ``snapshot`` could
    not read: a group that failed or is absent, or has no partition on the topics; a partition
    read with an error or without its log end. None: every one was read."""
    for group_id in group_ids:
        group = snapshot.groups.get(group_id)
        if group_id in snapshot.failures or group is None:
            return Unread(group_id, None, snapshot.failures.get(group_id))
        mine = [p for p in group.partitions if p.topic in topics]
        if not mine:
            return Unread(group_id)  # none of the topics' partitions in its snapshot
        for p in mine:
            if p.error is not None or p.log_end is None:
                return Unread(group_id, p.tp, p.error)
    return None
