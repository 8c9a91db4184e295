"""Consecutive offset ranges that a set of consumer groups has finished reading: what an
event-driven downstream job (an Airflow asset event) processes one after another. Pure: the
caller polls, this decides.

A range watch is a lag gate (:class:`~.gate.LagGate`, the same spec, modes, verdicts and
missing-group checks as the sensor and its trigger) that re-arms after each range: the gate of the
next range starts where the previous one ended (its ``previous_barrier``). The first range starts
where a stored previous range ended, else at the spec's ``previous_barrier``, else where the
groups' committed offsets were when watching began (the lowest over the groups; earliest where a
group has none). A range ends where its gate opened:

* ``barrier`` mode: at the topics' log-end offsets fixed when the range opened (from the poll:
  :meth:`~.gate_modes.GateMode.prepare_from`); the range is finished when every group has
  committed at least that far on every partition (the target does not move while producers
  keep writing). With ``barrier_timestamp`` the first range ends at the offsets of that time
  instead (read with a client), the ranges after it at the log end;
* ``threshold`` mode: at the lowest committed offset over the groups per partition, at the first
  poll where every group is provably within the thresholds.

A spec whose checks read more than the poll (``max_lag_seconds``, AT_RISK in
``fail_on_verdicts``, ``barrier_timestamp``: :func:`~.gate.reads_wanted`) is observed with a
client (:meth:`RangeWatch.aobserve`); :meth:`RangeWatch.observe` is the pure way for the others.

An empty range (nothing new was written) is never reported; its barrier is fixed again at the
next poll. A poll in which a group or a partition could not be read decides nothing and says
which (:attr:`RangeWatch.waiting`, :attr:`RangeWatch.unread`: :func:`~.totals.first_unread`): unknown
is never taken as caught up. A range's ``total_lag`` is the gate's total
(:func:`~.totals.total_lag`), None when a partition's lag is unknown. A gate that fails (a Dead group, a fail-fast verdict such as ABANDONED) reports no range and
keeps its decision in :attr:`RangeWatch.last` for the caller to log; the watch goes on polling.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..client.errors import ConfigurationError
from ..client.offset_map import OffsetKind, OffsetMap
from ..client.results import TopicPartition
from .gate import LagGate, gate_reads, reads_wanted
from .gate_decision import Decision, GateStatus
from .gate_spec import BarrierParams, GateSpec, LagMode
from .gate_state import GateState
from .model import LagSnapshot
from .offset_range import OffsetRange
from .retention_reads import Margins
from .seconds import GroupLagSeconds
from .totals import Unread, first_unread, total_lag

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

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
    total_lag: int | None  # the gate's total over the groups and topics (None: a lag is unknown)
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
    """The ranges the spec's groups finish on its topics, poll after poll (:meth:`observe`,
    :meth:`aobserve`). ``start``: where a stored previous range ended (before the spec's
    ``previous_barrier``)."""

    def __init__(self, spec: GateSpec, start: Mapping[TopicPartition, int] | None = None) -> None:
        if not spec.bound or spec.topics is None:
            raise ConfigurationError(
                "a range watch needs its groups by id and its topics (group_ids=[...], topics=[...])."
            )
        self.spec = spec
        self.group_ids, self.topics = spec.group_ids, spec.topics
        first = start or spec.previous_barrier
        self.start: dict[TopicPartition, int] | None = dict(first) if first else None
        self.waiting = Waiting.FIRST_POLL
        self.unread: Unread | None = None  # with UNREADABLE
        self.last: Decision | None = None  # the range gate's last decision
        self._gate: LagGate | None = None

    @property
    def mode(self) -> LagMode:
        return self.spec.lag_mode

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
        """One poll: the range it finished, if any (pure: for a spec that reads nothing more).
        A shared poll's snapshot may hold other watchers' topics: the gate sees only this watch's."""
        if reads_wanted(self.spec):
            raise ConfigurationError(
                "this watch's spec reads more than the poll (max_lag_seconds, AT_RISK or "
                "barrier_timestamp): observe it with a client, await aobserve(client, snapshot)."
            )
        snapshot = _on_topics(snapshot, self.topics)
        gate = self._gate_for(snapshot)
        return None if gate is None else self._judged(gate, snapshot)

    async def aobserve(self, client: AsyncGroupsClient, snapshot: LagSnapshot) -> FinishedRange | None:
        """One poll, with what the spec reads beside it (the gate's own reads, :func:`~.gate.gate_reads`)."""
        snapshot = _on_topics(snapshot, self.topics)
        gate = self._gate_for(snapshot)
        if gate is None:
            return None
        if gate.mode.needs_client(gate.spec) and gate.missing(snapshot) is None:
            await gate.mode.prepare(client, gate, snapshot)  # a barrier at a time: offsets read for it
        seconds, margins = await gate_reads(client, gate, snapshot)
        return self._judged(gate, snapshot, seconds, margins)

    def _gate_for(self, snapshot: LagSnapshot) -> LagGate | None:
        """The gate of the range open now (armed at its first poll), or None when this poll has a
        hole: nothing is decided from it."""
        self.unread = first_unread(snapshot, self.group_ids, self.topics)
        if self.unread is not None:
            self.waiting = Waiting.UNREADABLE
            return None
        if self.start is None:
            lowest: dict[TopicPartition, int | None] = {}
            for p in self._mine(snapshot):  # the lowest commit over the groups; None where a group has none
                before = lowest.get(p.tp, p.committed)
                lowest[p.tp] = None if before is None or p.committed is None else min(before, p.committed)
            self.start = {tp: EARLIEST if low is None else low for tp, low in lowest.items()}
        for p in self._mine(snapshot):  # a partition added to a topic since: from its log start
            self.start.setdefault(p.tp, EARLIEST)
        return self._gate if self._gate is not None else self._arm(snapshot.taken_at_ms)

    def _mine(self, snapshot: LagSnapshot) -> list[Any]:
        return [p for g in self.group_ids for p in snapshot.groups[g].partitions]

    def _judged(
        self,
        gate: LagGate,
        snapshot: LagSnapshot,
        seconds: Mapping[str, GroupLagSeconds] | None = None,
        margins: Margins | None = None,
    ) -> FinishedRange | None:
        assert self.start is not None  # set by _gate_for
        gate.mode.prepare_from(gate, snapshot)  # nothing when prepare fixed the target already
        decision = self.last = gate.evaluate(snapshot, seconds, margins)
        if decision.status is not GateStatus.DONE or decision.opened is None:
            self.waiting = Waiting.GATE_FAILED if decision.status is GateStatus.FAIL else Waiting.GATE_CLOSED
            return None
        self._gate = None  # the next poll arms the next range's gate (and fixes its barrier again)
        if isinstance(self.spec.mode, BarrierParams) and self.spec.mode.barrier_timestamp_ms is not None:
            self.spec = replace(self.spec, mode=BarrierParams())  # only the first range ends at the time
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
            total_lag(snapshot.groups[g] for g in self.group_ids),
            gate.state.started_ms,
            snapshot.taken_at_ms,
        )

    def _arm(self, now_ms: int) -> LagGate:
        """The gate of the next range: from where the last one ended."""
        assert self.start is not None
        spec = replace(self.spec, previous_barrier=OffsetMap(self.start, OffsetKind.STARTING))
        self._gate = LagGate(spec, GateState(started_ms=now_ms), _NO_DEADLINE_MS)
        return self._gate


def _on_topics(snapshot: LagSnapshot, topics: tuple[str, ...]) -> LagSnapshot:
    """The snapshot without the partitions of other topics (a shared poll reads every watcher's)."""
    groups = {
        g: lag
        if all(p.topic in topics for p in lag.partitions)
        else replace(lag, partitions=tuple(p for p in lag.partitions if p.topic in topics))
        for g, lag in snapshot.groups.items()
    }
    return replace(snapshot, groups=groups)
