"""The interface of a gate's way of deciding (``lag_mode``): :class:`GateMode`.

:class:`~.gate.LagGate` does what every mode shares (the check count, the verdict window,
missing groups, fail-fast verdicts, the XCom result); a mode says whether the groups are there.
At each check the gate asks its mode, in this order:

1. :meth:`GateMode.prepare` (with the client, before judging; a group already missing skips
   it): fix what must be fixed once, e.g. the barrier's target at the first check (a gate fed
   snapshots without a client, :mod:`.watch`, calls :meth:`GateMode.prepare_from` instead);
2. :meth:`GateMode.judge` (pure): a :class:`Judgement`, what still has to move, or, when
   nothing does, the range the groups covered;
3. :meth:`GateMode.give_up` (pure, only while waiting and after the verdicts): a failure
   that waiting cannot fix, e.g. a catch-up projected past the deadline.

Modes: :class:`~.barrier_mode.BarrierMode` and :class:`~.threshold_mode.ThresholdMode`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..client.results import TopicPartition
from .gate_decision import Decision
from .gate_spec import GateSpec, LagMode
from .gate_state import GateState
from .model import LagSnapshot

if TYPE_CHECKING:
    from .barrier import BarrierTarget
    from .seconds import GroupLagSeconds

__all__ = ["Gate", "GateMode", "Judgement", "Fixed", "Pending"]

#: What still has to move: (group, partition), or (group, None) for a whole group not known yet.
Pending = frozenset[tuple[str, TopicPartition | None]]


class Gate(Protocol):
    """What a mode may use of the gate it decides for (:class:`~.gate.LagGate`)."""

    spec: GateSpec
    state: GateState
    deadline_ms: int

    def set_target(self, target: BarrierTarget) -> None: ...

    def streak(self, key: str, hit: bool) -> int: ...


@dataclass(frozen=True)
class Fixed:
    """What a mode fixed once, at one check: its log line and its JSON (the barrier's target)."""

    note: str
    value: dict[str, Any]


@dataclass(frozen=True)
class Judgement:
    """What a mode found at one check. ``pending`` empty: the groups are there, and ``ending``
    (the covered range's end per partition), ``reached`` (committed offsets seen) and ``extra``
    (the mode's own result keys) make the XCom."""

    summary: str  # the progress line (or, when done, the success line)
    pending: Pending = frozenset()
    ending: Mapping[TopicPartition, int] = field(default_factory=dict)
    reached: Mapping[str, Mapping[TopicPartition, int]] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    eta_s: float | None = None  # projected seconds until done (None: no projection)
    #: what keeps the gate closed that the user can fix, by a key: each logged once per gate
    warnings: Mapping[str, str] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return not self.pending


class GateMode(ABC):
    lag_mode: ClassVar[LagMode]

    def wants_seconds(self, spec: GateSpec) -> bool:
        """Whether a check must measure the groups' lag in seconds before judging."""
        return False

    def needs_client(self, spec: GateSpec) -> bool:
        """Whether this mode reads with a client beside the snapshot (:meth:`prepare_from` cannot
        stand in for :meth:`prepare`, or the seconds are measured)."""
        return self.wants_seconds(spec)

    async def prepare(self, client: Any, gate: Gate, snapshot: LagSnapshot) -> Fixed | None:
        return None

    def prepare_from(self, gate: Gate, snapshot: LagSnapshot) -> Fixed | None:
        """What :meth:`prepare` fixes, from the snapshot alone: for a gate fed by a poll it does not
        own (the event trigger's shared poll, :mod:`.watch`), which has no client to read with."""
        return None

    @abstractmethod
    def judge(
        self, gate: Gate, snapshot: LagSnapshot, seconds: Mapping[str, GroupLagSeconds]
    ) -> Judgement: ...

    def give_up(self, gate: Gate, judgement: Judgement, now_ms: int) -> Decision | None:
        return None
