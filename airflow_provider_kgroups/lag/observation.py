"""What the dead-group rules look at: a group as read now (:class:`GroupObservation`) and as the
stored snapshots saw it (:class:`GroupHistoryPoint`). Values only; the rules are in
:mod:`.deadgroups`.

An observation comes from the live reads (DescribeGroups and an all-partitions OffsetFetch:
:meth:`GroupObservation.of`) or from a group's row in a stored snapshot standing for them (the
Spark lag-history job: :meth:`GroupObservation.of_snapshot`). Either way a committed offset
that was read with an error is *unreadable*, never "no commit": what the group committed there
is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..client.errors import Failure
from ..client.results import CLASSIC, GroupDescription, GroupOffsets, GroupState, TopicPartition
from .model import GroupLag, LagFlag, LagSnapshot

__all__ = ["GroupObservation", "GroupHistoryPoint", "history_points", "last_progress", "empty_since"]


@dataclass(frozen=True, slots=True)
class GroupObservation:
    """One group at ``at_ms``: its state, members, protocol and group type, and committed offsets
    (``committed``: read without an error; ``unreadable``: read with one, the error if known)."""

    group_id: str
    at_ms: int
    state: GroupState
    members: int
    protocol_type: str = "consumer"
    group_type: str = CLASSIC
    committed: Mapping[TopicPartition, int] = field(default_factory=dict)
    unreadable: Mapping[TopicPartition, Failure | None] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        description: GroupDescription,
        offsets: GroupOffsets | None,
        at_ms: int,
        *,
        group_id: str | None = None,
    ) -> GroupObservation:
        """From DescribeGroups (or its KIP-848/932/1071 twin) and an all-partitions OffsetFetch."""
        parts = offsets.partitions if offsets is not None else {}
        return cls(
            description.group_id if group_id is None else group_id,
            at_ms,
            description.state,
            len(description.members),
            description.protocol_type,
            description.group_type,
            {tp: c.offset for tp, c in parts.items() if c.error is None and c.offset is not None},
            {tp: c.error for tp, c in parts.items() if c.error is not None},
        )

    @classmethod
    def of_snapshot(cls, group: GroupLag, at_ms: int) -> GroupObservation:
        """A stored snapshot's row of the group standing for the live reads. The history keeps no
        group type: every group reads as classic, and a non-consumer protocol type is what keeps
        share and streams groups from being judged dead. A partition without a committed offset
        whose row carries the ``error`` flag is unreadable (the history keeps no error code)."""
        committed, unreadable = {}, {}
        for p in group.partitions:
            if p.committed is not None:
                committed[p.tp] = p.committed
            elif p.error is not None or LagFlag.ERROR in p.flags:
                unreadable[p.tp] = p.error
        return cls(
            group.group_id,
            at_ms,
            group.state,
            group.members,
            group.protocol_type,
            CLASSIC,
            committed,
            unreadable,
        )

    @property
    def is_plain_consumer_group(self) -> bool:
        """Connect, Streams and other protocol types are groups, but not plain consumer groups."""
        return self.protocol_type in ("consumer", "")

    @property
    def empty(self) -> bool:
        return self.state is GroupState.EMPTY and not self.members

    def topics(self) -> list[str]:
        """Every topic it has a committed offset on, readable or not (sorted)."""
        return sorted({tp.topic for tp in self.committed} | {tp.topic for tp in self.unreadable})

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "at_ms": self.at_ms,
            "state": self.state.value,
            "members": self.members,
            "protocol_type": self.protocol_type,
            "group_type": self.group_type,
            "committed": {str(tp): c for tp, c in sorted(self.committed.items())},
            "unreadable": {
                str(tp): None if f is None else f.to_dict() for tp, f in sorted(self.unreadable.items())
            },
        }


@dataclass(frozen=True, slots=True)
class GroupHistoryPoint:
    """A group as one stored snapshot saw it. ``log_end``: the partitions' log end offsets
    read in that snapshot (a partition without one is unknown, never "nothing to read");
    ``unreadable``: partitions whose committed offset could not be read then."""

    at_ms: int
    state: GroupState
    members: int
    committed: Mapping[TopicPartition, int]
    log_end: Mapping[TopicPartition, int] = field(default_factory=dict)
    unreadable: frozenset[TopicPartition] = frozenset()

    @property
    def has_records_to_read(self) -> bool:
        return any(tp in self.log_end and self.log_end[tp] > c for tp, c in self.committed.items())


def history_points(snapshots: Iterable[LagSnapshot], group_id: str) -> list[GroupHistoryPoint]:
    """The group's points in stored snapshots, oldest first (snapshots where it was read)."""
    points = []
    for snapshot in sorted(snapshots, key=lambda s: s.taken_at_ms):
        group = snapshot.groups.get(group_id)
        if group is None:
            continue
        committed, log_end, unreadable = {}, {}, []
        for p in group.partitions:
            tp = p.tp
            if p.committed is not None:
                committed[tp] = p.committed
            elif p.error is not None or LagFlag.ERROR in p.flags:
                unreadable.append(tp)
            if p.log_end is not None:
                log_end[tp] = p.log_end
        points.append(
            GroupHistoryPoint(
                snapshot.taken_at_ms, group.state, group.members, committed, log_end, frozenset(unreadable)
            )
        )
    return points


def last_progress(points: Sequence[GroupHistoryPoint]) -> int | None:
    """The time of the last point whose committed offsets differ from the point before."""
    for before, after in zip(reversed(points[:-1]), reversed(points)):
        if dict(after.committed) != dict(before.committed):
            return after.at_ms
    return None


def empty_since(points: Sequence[GroupHistoryPoint]) -> int | None:
    """The first point of the trailing run in which it was Empty without members (None: not
    Empty at the last point)."""
    since = None
    for point in reversed(points):
        if point.state is not GroupState.EMPTY or point.members:
            break
        since = point.at_ms
    return since
