"""Consecutive offset ranges that a set of consumer groups has finished reading: what an
event-driven downstream job (an Airflow asset event) processes one after another. Pure: the
caller polls, this decides.

A range watch is a lag gate (:class:`~.gate.LagGate`, the same modes, verdicts and missing-group
checks as the sensor and its trigger) that re-arms after each range: the gate of the next range
starts where the previous one ended (its ``previous_barrier``). The first range starts where
the groups' committed offsets were when watching began (the lowest over the groups; earliest
where a group has none), or where a stored previous range ended. A range ends where its gate
opened:

* ``barrier`` mode: at the topics' log-end offsets fixed when the range opened (from the poll:
  :meth:`~.gate_modes.GateMode.prepare_from`); the range is finished when every group has
  committed at least that far on every partition (the target does not move while producers
  keep writing);
* ``threshold`` mode (``max_total_lag``): at the lowest committed offset over the groups per
  partition, at the first poll where every group's total lag over the topics is at most
  ``max_total_lag``.

An empty range (nothing new was written) is never reported; its barrier is fixed again at the
next poll. A poll in which a group or a partition could not be read decides nothing and says
which (:attr:`RangeWatch.waiting`, :attr:`RangeWatch.unread`): unknown is never taken as caught
up. A gate that fails (a Dead group, a fail-fast verdict such as ABANDONED) reports no range and
keeps its decision in :attr:`RangeWatch.last` for the caller to log; the watch goes on polling.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..client.errors import Failure
from ..client.offset_map import OffsetKind, OffsetMap
from ..client.results import TopicPartition
from .gate import LagGate
from .gate_decision import Decision, GateStatus
from .gate_spec import GateSpec, GateState, LagMode
from .model import LagSnapshot
from .offset_range import OffsetRange

__all__ = ["EARLIEST", "FinishedRange", "RangeWatch", "Waiting", "nested_offsets"]

EARLIEST = -2  # no committed offset yet: the range starts at the log start (Spark's -2)
#: A watch has no deadline: it waits for the next range as long as the asset is watched.
_NO_DEADLINE_MS = 2**62


class Waiting(str, Enum):
    """Why the last poll finished no range."""

    FIRST_POLL = "first_poll"  # nothing polled yet
    UNREADABLE = "unreadable"  # a group or a partition could not be read (``unread`` says which)
    GATE_CLOSED = "gate_closed"  # the range's gate waits (``pending_groups``, ``last``)
    GATE_FAILED = "gate_failed"  # the range's gate failed (``last``: a missing group, a verdict)
    EMPTY_RANGE = "empty_range"  # every group is there, but nothing new was written
    NEXT_RANGE = "next_range"  # a range just finished


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
        return {
            **OffsetRange(self.starting, self.ending).to_xcom(),
            "group_ids": list(self.group_ids),
            "mode": LagMode(self.mode).value,
            "total_lag": self.total_lag,
            "opened_at_ms": self.opened_at_ms,
            "finished_at_ms": self.finished_at_ms,
        }


def nested_offsets(offsets: object) -> dict[TopicPartition, int] | None:
    """Where a previous range ended, ``{"topic": {"0": 5}}`` as stored -> ``{TopicPartition: 5}``
    (actual offsets: a range ends at committed offsets). ``offsets`` is whatever the store holds:
    empty or None is no start; anything but such a map (or its JSON text) is a ConfigurationError."""
    return (
        dict(OffsetMap.parse(offsets, OffsetKind.COMMITTED, name="the stored range end")) if offsets else None
    )


class RangeWatch:
    """The ranges ``group_ids`` finish on ``topics``, poll after poll (:meth:`observe`)."""

    def __init__(
        self,
        group_ids: Iterable[str],
        topics: Iterable[str],
        max_total_lag: int | None = None,
        start: Mapping[TopicPartition, int] | None = None,
        *,
        read_committed: bool = False,
    ) -> None:
        self.group_ids = tuple(group_ids)
        self.topics = tuple(topics)
        self.max_total_lag = max_total_lag  # None: barrier mode
        self.read_committed = read_committed
        self.start: dict[TopicPartition, int] | None = dict(start) if start else None
        self.waiting = Waiting.FIRST_POLL
        self.unread: tuple[str, TopicPartition | None, Failure | None] | None = None  # with UNREADABLE
        self.last: Decision | None = None  # the range gate's last decision
        self._gate: LagGate | None = None

    @property
    def mode(self) -> LagMode:
        return LagMode.BARRIER if self.max_total_lag is None else LagMode.THRESHOLD

    @property
    def pending_groups(self) -> tuple[str, ...]:
        """The groups the range's gate waited for at the last poll."""
        return (self._gate.pending_groups or ()) if self._gate is not None else ()

    @property
    def waiting_for(self) -> str:
        """The last poll's outcome as a log line."""
        if self.waiting is Waiting.UNREADABLE and self.unread is not None:
            group_id, tp, failure = self.unread
            where = f"{tp} of {group_id!r}" if tp is not None else f"group {group_id!r}"
            return f"{where} could not be read" + (f": {failure}" if failure is not None else "")
        if self.waiting in (Waiting.GATE_CLOSED, Waiting.GATE_FAILED) and self.last is not None:
            return self.last.message
        return {
            Waiting.FIRST_POLL: "the first poll",
            Waiting.EMPTY_RANGE: "new records (the range is empty)",
            Waiting.NEXT_RANGE: "the next range",
        }.get(self.waiting, self.waiting.value)

    def observe(self, snapshot: LagSnapshot) -> FinishedRange | None:
        """One poll: the range it finished, if any."""
        self.unread = self._unread(snapshot)
        if self.unread is not None:
            self.waiting = Waiting.UNREADABLE
            return None
        mine = [p for g in self.group_ids for p in snapshot.groups[g].partitions if p.topic in self.topics]
        if self.start is None:
            lowest: dict[TopicPartition, int | None] = {}
            for p in mine:  # the lowest commit over the groups; None where a group has none
                before = lowest.get(p.tp, p.committed)
                lowest[p.tp] = None if before is None or p.committed is None else min(before, p.committed)
            self.start = {tp: EARLIEST if low is None else low for tp, low in lowest.items()}
        for p in mine:  # a partition added to a topic since: from its log start
            self.start.setdefault(p.tp, EARLIEST)
        gate = self._gate if self._gate is not None else self._arm(snapshot.taken_at_ms)
        gate.mode.prepare_from(gate, snapshot)
        decision = self.last = gate.evaluate(snapshot)
        if decision.status is not GateStatus.DONE or decision.opened is None:
            self.waiting = Waiting.GATE_FAILED if decision.status is GateStatus.FAIL else Waiting.GATE_CLOSED
            return None
        self._gate = None  # the next poll arms the next range's gate (and fixes its barrier again)
        start = self.start
        ending = {tp: max(end, max(start.get(tp, 0), 0)) for tp, end in decision.opened.range.ending.items()}
        if all(end <= max(start.get(tp, 0), 0) for tp, end in ending.items()):
            self.waiting = Waiting.EMPTY_RANGE
            return None
        self.start, self.waiting = dict(ending), Waiting.NEXT_RANGE
        return FinishedRange(
            self.group_ids,
            dict(start),
            ending,
            self.mode,
            _total_lag(mine),
            gate.state.started_ms,
            snapshot.taken_at_ms,
        )

    def _arm(self, now_ms: int) -> LagGate:
        """The gate of the next range: from where the last one ended."""
        assert self.start is not None
        spec = GateSpec(
            group_ids=self.group_ids,
            topics=self.topics,
            lag_mode=self.mode,
            max_total_lag=self.max_total_lag,
            read_committed=self.read_committed,
            previous_barrier=OffsetMap(self.start, OffsetKind.STARTING).nested(),
        )
        self._gate = LagGate(spec, GateState(started_ms=now_ms), _NO_DEADLINE_MS)
        return self._gate

    def _unread(self, snapshot: LagSnapshot) -> tuple[str, TopicPartition | None, Failure | None] | None:
        """The first group or watched partition this poll could not read, or None: nothing is
        decided from a poll with a hole."""
        for group_id in self.group_ids:
            if group_id in snapshot.failures or group_id not in snapshot.groups:
                return group_id, None, snapshot.failures.get(group_id)
            mine = [p for p in snapshot.groups[group_id].partitions if p.topic in self.topics]
            if not mine:
                return group_id, None, None  # none of the topics' partitions in its snapshot
            for p in mine:
                if p.error is not None or p.log_end is None:
                    return group_id, p.tp, p.error
        return None


def _total_lag(partitions: Iterable[Any]) -> int:
    """Records left over the groups and watched partitions: a commit past the end read (it raced
    ahead of ListOffsets) counts 0, never a negative part; no commit: the whole log."""
    return sum(
        max(0, p.log_end - (p.committed if p.committed is not None else p.log_start or 0)) for p in partitions
    )
