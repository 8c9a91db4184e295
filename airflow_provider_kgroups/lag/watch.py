"""Consecutive offset ranges that a set of consumer groups has finished reading: what an
event-driven downstream job (an Airflow asset event) processes one after another. Pure: the
caller polls, this decides.

Each range starts where the previous one ended (the first one where the groups' committed
offsets were when watching began, or where a stored previous range ended) and ends at:

* ``barrier`` mode: the topics' log-end offsets fixed when the range opened; the range is
  finished when every group has committed at least that far on every partition (the target
  does not move while producers keep writing);
* ``threshold`` mode (``max_total_lag``): the lowest committed offset over the groups per
  partition, at the first poll where the groups' total lag over the topics is at most
  ``max_total_lag``.

An empty range (nothing new was written) is never reported; its barrier is fixed again at the
next poll. A poll in which a group or a partition could not be read reports nothing and says
why (:attr:`RangeWatch.waiting_for`): unknown is never taken as caught up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..client.offset_map import OffsetKind, OffsetMap
from ..client.results import TopicPartition
from .gate_spec import LagMode
from .model import LagSnapshot
from .offset_range import OffsetRange

EARLIEST = -2  # no committed offset yet: the range starts at the log start (Spark's -2)


@dataclass(frozen=True)
class FinishedRange:
    """``[starting, ending)`` per partition, consumed by every watched group."""

    group_ids: tuple[str, ...]
    starting: Mapping[TopicPartition, int]
    ending: Mapping[TopicPartition, int]
    mode: LagMode
    total_lag: int
    opened_at_ms: int
    finished_at_ms: int

    def to_payload(self) -> dict[str, Any]:
        """Plain JSON (an asset event's extra): Spark's ``startingOffsets``/``endingOffsets``
        exactly as the ConsumerLagSensor's XCom carries them."""
        return {**OffsetRange(self.starting, self.ending).to_xcom(),
                "group_ids": list(self.group_ids), "mode": LagMode(self.mode).value, "total_lag": self.total_lag,
                "opened_at_ms": self.opened_at_ms, "finished_at_ms": self.finished_at_ms}


def _lowest(values) -> int | None:
    """The lowest committed offset, or None when a group has none there."""
    values = list(values)
    return None if any(v is None for v in values) else min(values)


def nested_offsets(offsets: Mapping[str, Mapping[str, int]] | None) -> dict[TopicPartition, int] | None:
    """Where a previous range ended, ``{"topic": {"0": 5}}`` as stored -> ``{TopicPartition: 5}``
    (actual offsets: a range ends at committed offsets)."""
    return dict(OffsetMap.parse(offsets, OffsetKind.COMMITTED, name="the stored range end")) if offsets else None


@dataclass
class RangeWatch:
    group_ids: tuple[str, ...]
    topics: tuple[str, ...]
    max_total_lag: int | None = None  # None: barrier mode
    start: dict[TopicPartition, int] | None = None
    barrier: dict[TopicPartition, int] | None = None
    opened_at_ms: int | None = None
    waiting_for: str = "the first poll"
    _polls: int = field(default=0, repr=False)

    @property
    def mode(self) -> LagMode:
        return LagMode.BARRIER if self.max_total_lag is None else LagMode.THRESHOLD

    def observe(self, snapshot: LagSnapshot) -> FinishedRange | None:
        """One poll: the range it finished, if any."""
        self._polls += 1
        read = self._read(snapshot)
        if read is None:
            return None
        committed, log_end, total_lag = read
        low = {tp: _lowest(per_group[tp] for per_group in committed.values()) for tp in log_end}
        if self.start is None:
            self.start = {tp: EARLIEST if low[tp] is None else low[tp] for tp in log_end}
        for tp in log_end:  # a partition added to a topic since: from its log start
            self.start.setdefault(tp, EARLIEST)
        if self.mode is LagMode.THRESHOLD:
            return self._threshold(low, total_lag, snapshot.taken_at_ms)
        return self._barrier(committed, log_end, total_lag, snapshot.taken_at_ms)

    def _read(self, snapshot: LagSnapshot):
        """Committed offsets per group and log ends of the watched topics, or None (and why)."""
        committed: dict[str, dict[TopicPartition, int | None]] = {}
        log_end: dict[TopicPartition, int] = {}
        total = 0
        for group_id in self.group_ids:
            if group_id in snapshot.failures or group_id not in snapshot.groups:
                failure = snapshot.failures.get(group_id)
                self.waiting_for = f"group {group_id!r} could not be read" + (f": {failure}" if failure else "")
                return None
            mine = [p for p in snapshot.groups[group_id].partitions if p.topic in self.topics]
            if not mine:
                self.waiting_for = f"no partition of {', '.join(self.topics)} in the snapshot of {group_id!r}"
                return None
            for p in mine:
                if p.error is not None or p.log_end is None:
                    self.waiting_for = f"{p.tp} of {group_id!r} could not be read" + (f": {p.error}" if p.error else "")
                    return None
                log_end[p.tp] = max(log_end.get(p.tp, 0), p.log_end)
                committed.setdefault(group_id, {})[p.tp] = p.committed
                # a commit past the end read (it raced ahead of ListOffsets) has lag 0, never a negative
                # part that would pull the total under max_total_lag; no commit: the whole log (or more)
                total += max(0, p.log_end - (p.committed if p.committed is not None else p.log_start or 0))
        for per_group in committed.values():  # a group that never committed on a partition: from the start
            for tp in log_end:
                per_group.setdefault(tp, None)
        return committed, log_end, total

    def _barrier(self, committed, log_end, total_lag: int, now_ms: int) -> FinishedRange | None:
        assert self.start is not None
        if self.barrier is None or self.barrier == self.start:  # nothing to wait for: fix it (again) now
            self.barrier = {tp: max(log_end[tp], max(self.start.get(tp, 0), 0)) for tp in log_end}
            self.opened_at_ms = now_ms
        behind = sorted((g, tp) for g, per_group in committed.items() for tp, c in per_group.items()
                        if tp in self.barrier and (c is None or c < self.barrier[tp]))
        if self.barrier == {tp: max(o, 0) for tp, o in self.start.items()} or behind:
            self.waiting_for = (f"{len(behind)} group partition(s) below the barrier, e.g. {behind[0][0]!r} on "
                                f"{behind[0][1]}" if behind else "new records (the range is empty)")
            return None
        return self._finish(dict(self.barrier), total_lag, now_ms)

    def _threshold(self, low, total_lag: int, now_ms: int) -> FinishedRange | None:
        assert self.start is not None
        if self.max_total_lag is not None and total_lag > self.max_total_lag:
            self.waiting_for = f"total lag {total_lag} > max_total_lag {self.max_total_lag}"
            return None
        if any(low[tp] is None for tp in low):
            self.waiting_for = "a group without a committed offset on a watched partition"
            return None
        ending = {tp: max(low[tp], self.start.get(tp, 0)) for tp in low}
        if ending == {tp: max(o, 0) for tp, o in self.start.items()}:
            self.waiting_for = "new records (the range is empty)"
            return None
        self.opened_at_ms = self.opened_at_ms or now_ms
        return self._finish(ending, total_lag, now_ms)

    def _finish(self, ending: dict[TopicPartition, int], total_lag: int, now_ms: int) -> FinishedRange:
        assert self.start is not None
        finished = FinishedRange(self.group_ids, dict(self.start), ending, self.mode, total_lag,
                                 self.opened_at_ms or now_ms, now_ms)
        self.start, self.barrier, self.opened_at_ms = dict(ending), None, None
        self.waiting_for = "the next range"
        return finished
