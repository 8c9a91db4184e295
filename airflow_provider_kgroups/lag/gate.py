"""The lag gate: what :class:`ConsumerLagSensor`, :class:`ConsumerLagTrigger` and (re-armed after
each range, :mod:`.watch`) :class:`ConsumerLagEventTrigger` decide at each check, written once. No Airflow import; :class:`LagGate` does no I/O (it decides), and
:func:`check_gate` is the one check over a client (read, then decide) that the hook offers
as its ``check_gate`` / ``acheck_gate`` verbs.

A check gives the gate one lag snapshot (plus, when its mode wants them, the groups' lag in
seconds) and gets back a :class:`~.gate_decision.Decision`: ``done`` (with the XCom result),
``wait`` (with a one-line progress message, or why nothing is known yet) or ``fail`` (with the
reason). How the groups count as there is the mode's business (:mod:`.gate_modes`:
:mod:`.barrier_mode`, :mod:`.threshold_mode`); the gate fails fast, whatever the mode, when:

* a group is missing: Dead, GROUP_ID_NOT_FOUND, or Empty with no member and no committed
  offset (what a group that never existed looks like on brokers that answer Empty for it; for a
  share group, no share-partition start offset); a share group's start offsets cannot be read
  because the broker lacks DescribeShareGroupOffsets (CLIENT_UNSUPPORTED, before Kafka 4.1);
  or no group matches the spec's patterns at the first check;
* a fail-fast verdict (default STOP, STALL, LOST; ABANDONED, a topic the group stopped
  consuming, whenever STOP or STALL is one; see :mod:`..lag.verdicts`) holds on a partition that
  still has to move, in ``verdict_checks`` consecutive checks (the decision carries it as a value,
  :class:`~.gate_decision.VerdictHeld`);
* its mode gives up (barrier: the projected catch-up ends after the deadline).

The spec and the state that must survive a hand-over from the sensor to its trigger are values
with one JSON form each (:mod:`.gate_spec`, :mod:`.gate_state`: the trigger's kwargs); an opened gate's result is a
:class:`~.gate_decision.GateOpened` whose ``to_xcom`` is the XCom. The window of snapshots for
the verdicts is kept in memory only (a trigger starts a new window).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ..client.errors import CLIENT_UNSUPPORTED, ConfigurationError, ErrorCode
from ..client.results import GroupState, TopicPartition
from ..client.selection import select_groups
from .barrier import BarrierTarget
from .barrier_mode import RATE_CHECKPOINTS, BarrierMode
from .gate_decision import NOT_RETRIABLE, Decision, FailureKind, GateOpened, GateStatus, VerdictHeld
from .gate_modes import GateMode, Judgement, Pending
from .gate_spec import DEFAULT_FAIL_ON, GateSpec, LagMode
from .gate_state import GateState
from .model import LagSnapshot
from .offset_range import OffsetRange, spark_offsets  # spark_offsets: re-exported
from .retention import duration
from .retention_reads import Margins, retention_margins
from .seconds import GroupLagSeconds, lag_seconds
from .threshold_mode import ThresholdMode
from .verdict_text import finding_text
from .verdicts import Verdict, group_verdicts

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

#: Group-level failures that no amount of waiting fixes.
_FATAL_GROUP_ERRORS = {
    ErrorCode.GROUP_ID_NOT_FOUND,
    ErrorCode.INVALID_GROUP_ID,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
    CLIENT_UNSUPPORTED,  # a share group on a broker without DescribeShareGroupOffsets (before Kafka 4.1)
}
#: Each lag mode's way of deciding.
MODES: dict[LagMode, GateMode] = {LagMode.BARRIER: BarrierMode(), LagMode.THRESHOLD: ThresholdMode()}


class LagGate:
    """Decides, check after check. ``deadline_ms``: when the sensor times out (epoch ms)."""

    def __init__(self, spec: GateSpec, state: GateState, deadline_ms: int) -> None:
        self.spec = spec
        self.state = state
        self.deadline_ms = deadline_ms
        self.window: list[LagSnapshot] = []
        self.pending_groups: tuple[str, ...] | None = None  # the last check's, for the metrics
        self.seconds: Mapping[str, GroupLagSeconds] = {}  # measured only for max_lag_seconds
        self.margins: Margins = {}  # the latest check's retention margins, when AT_RISK fails the gate
        self.notes: list[str] = []  # decided on the way, not yet in a decision (a check that failed later)

    @classmethod
    def start(cls, spec: GateSpec, timeout_s: float) -> LagGate:
        """A gate whose first check is now and whose deadline is ``timeout_s`` away."""
        started_ms = int(time.time() * 1000)
        return cls(spec, GateState(started_ms=started_ms), started_ms + int(timeout_s * 1000))

    def seconds_left(self) -> float:
        """Until the deadline (at least 1 s: what a deferral's timeout may be)."""
        return max(1.0, (self.deadline_ms - time.time() * 1000) / 1000.0)

    @property
    def mode(self) -> GateMode:
        return MODES[self.spec.lag_mode]

    def bind(self, group_ids: list[str]) -> None:
        self.spec = self.spec.bind(group_ids)

    @property
    def target(self) -> BarrierTarget | None:
        return self.state.target

    def set_target(self, target: BarrierTarget) -> None:
        self.state.target = target

    def streak(self, key: str, hit: bool) -> int:
        """Consecutive checks in which ``hit`` held for ``key`` (kept in the state)."""
        count = self.state.streaks.get(key, 0) + 1 if hit else 0
        self.state.streaks[key] = count
        return count

    # -- checks --------------------------------------------------------------------------------

    def evaluate(
        self,
        snapshot: LagSnapshot,
        seconds: Mapping[str, GroupLagSeconds] | None = None,
        margins: Margins | None = None,
    ) -> Decision:
        """One check. ``seconds`` is needed (and only used) when the mode wants it (``max_lag_seconds``);
        ``margins`` (the lagging partitions' retention margins) when AT_RISK may fail the gate."""
        if not self.spec.bound:
            raise ConfigurationError(
                "the gate's groups are not bound yet: check_gate binds the patterns first."
            )
        self.state.checks += 1
        self.window = [
            s for s in self.window if s.taken_at_ms >= snapshot.taken_at_ms - self.spec.rules.window_ms
        ]
        self.window.append(snapshot)
        self.seconds, self.pending_groups, self.margins = seconds or {}, None, margins or {}
        missing = self.missing(snapshot)
        if missing is not None:
            return missing
        judged = self.mode.judge(self, snapshot, seconds or {})
        self.pending_groups = tuple(sorted({g for g, _ in judged.pending}))
        if judged.done:
            opened = self._opened(snapshot, judged)
            return Decision(GateStatus.DONE, judged.summary, opened.to_xcom(), opened=opened)
        decision = (
            self._verdicts(judged.pending)
            or self.mode.give_up(self, judged, snapshot.taken_at_ms)
            or Decision(GateStatus.WAIT, f"check {self.state.checks}: {judged.summary}{self._margin_note()}")
        )
        return replace(decision, warnings=self._once(judged.warnings))

    def _margin_note(self) -> str:
        """The shortest retention margin of the groups this check measured ("" when none)."""
        shortest = [
            (m, g, key) for g, per in self.margins.items() for key, m in per.items() if m.seconds is not None
        ]
        if not shortest:
            return ""
        margin, group_id, (topic, partition) = min(shortest, key=lambda found: found[0].seconds or 0.0)
        return (
            f"; shortest retention margin: {group_id!r} on {topic}[{partition}], at least "
            f"{duration(max(margin.seconds or 0.0, 0.0))} before retention may delete its first unread record"
        )

    def _once(self, warnings: Mapping[str, str]) -> tuple[str, ...]:
        """The warnings not told yet in this gate's life (the state carries the keys across the
        sensor's hand-over to its trigger and a triggerer restart)."""
        new = [(key, line) for key, line in warnings.items() if key not in self.state.told]
        self.state.told.extend(key for key, _ in new)
        return tuple(line for _, line in new)

    def missing(self, snapshot: LagSnapshot) -> Decision | None:
        for group_id in self.spec.group_ids:
            failure = snapshot.failures.get(group_id)
            if failure is not None:
                if failure.code in _FATAL_GROUP_ERRORS:
                    return _fail(f"group {group_id!r} cannot be read: {failure}", FailureKind.MISSING)
                continue  # a transient failure (timeout, coordinator moving): wait
            group = snapshot.groups.get(group_id)
            if group is None:
                continue
            if group.state is GroupState.DEAD:
                return _fail(
                    f"group {group_id!r} is Dead: it does not exist (or its offsets expired); check the "
                    "group id, it can never catch up",
                    FailureKind.MISSING,
                )
            if (
                group.state is GroupState.EMPTY
                and group.members == 0
                and all(p.committed is None for p in group.partitions)
            ):
                where = f" on topic(s) {', '.join(self.spec.topics)}" if self.spec.topics else ""
                if group.is_share:
                    return _fail(
                        f"share group {group_id!r} has no member and no share-partition start offset{where}: "
                        "nothing of it can be measured (its lag is unknown, never 0); check the group id, "
                        "or start its consumers (kgroups share-lag shows its share-partitions)",
                        FailureKind.MISSING,
                    )
                return _fail(
                    f"group {group_id!r} does not exist: no members and no committed offset{where}; check "
                    "the group id",
                    FailureKind.MISSING,
                )
        return None

    def _verdicts(self, pending: Pending) -> Decision | None:
        fail_on = fail_fast_verdicts(self.spec.fail_on_verdicts)
        if not fail_on:
            return None
        verdicts = group_verdicts(
            self.window, self.spec.rules, group_ids=self.spec.group_ids, margins=self.margins
        )
        for group_id, verdict in verdicts.items():
            bad = [
                p
                for p in verdict.partitions
                if p.verdict in fail_on and (group_id, TopicPartition(p.topic, p.partition)) in pending
            ]
            if self.streak(f"verdict:{group_id}", bool(bad)) >= self.spec.verdict_checks:
                worst = max(bad, key=lambda p: p.verdict.severity)
                held = VerdictHeld(group_id, worst, self.spec.verdict_checks)
                return Decision(GateStatus.FAIL, held_text(held), kind=FailureKind.VERDICT, held=held)
        return None

    def _opened(self, snapshot: LagSnapshot, judged: Judgement) -> GateOpened:
        return GateOpened(
            self.spec.lag_mode.value,
            tuple(self.spec.group_ids),
            self.state.checks,
            round((snapshot.taken_at_ms - self.state.started_ms) / 1000.0, 3),
            judged.reached,
            OffsetRange.up_to(judged.ending, self.spec.previous_barrier),
            judged.extra,
        )


def fail_fast_verdicts(chosen: Iterable[Verdict]) -> frozenset[Verdict]:
    """The verdicts that fail a gate, from ``fail_on_verdicts``: ABANDONED refines STOP and STALL
    (a stuck commit on a topic no member is assigned), so failing on either fails on it too."""
    verdicts = set(chosen)
    if verdicts & {Verdict.STOP, Verdict.STALL}:
        verdicts.add(Verdict.ABANDONED)
    return frozenset(verdicts)


def held_text(held: VerdictHeld) -> str:
    v = held.partition
    return (
        f"group {held.group_id!r} is {v.verdict.value} on {v.topic}[{v.partition}] for {held.checks} checks in "
        f"a row: {finding_text(v.finding)}"
    )


def _fail(message: str, kind: FailureKind) -> Decision:
    return Decision(GateStatus.FAIL, message, kind=kind)


async def check_gate(client: AsyncGroupsClient, gate: LagGate) -> Decision:
    """One check of ``gate``: on the first one, the groups the patterns match; a snapshot; what the
    mode fixes once (the barrier's target), unless a group is already missing; the lag in seconds
    of every lagging partition if the mode wants it; then the decision, with a note per thing
    decided on the way."""
    from .snapshot import (
        take_snapshot,  # the client stack loads on the first check, not with the sensor module
    )

    if not gate.spec.bound:
        patterns = list(gate.spec.group_patterns)
        ids = await select_groups(client, gate.spec.selector)
        if not ids:
            return _fail(f"no consumer group matches {patterns}: check the patterns.", FailureKind.MISSING)
        gate.bind(ids)
        gate.notes.append(f"Groups selected by {patterns}: {', '.join(ids)}")
    spec = gate.spec
    snapshot = await take_snapshot(
        client,
        spec.group_ids,
        policy=spec.unknown_lag,
        topics=spec.topics,
        read_committed=spec.read_committed,
    )
    fixed = await gate.mode.prepare(client, gate, snapshot) if gate.missing(snapshot) is None else None
    if fixed is not None:
        gate.notes.append(fixed.note)
    seconds, margins = await gate_reads(client, gate, snapshot)
    decision = replace(
        gate.evaluate(snapshot, seconds, margins),
        notes=tuple(gate.notes),
        fixed=fixed.value if fixed is not None else None,
    )
    gate.notes.clear()  # told: a check that raises keeps them for the next decision
    return decision


def reads_wanted(spec: GateSpec) -> bool:
    """Whether a check of this spec reads more than the snapshot (records' ages, retention
    margins, offsets at a time): what a gate fed by a poll it does not own needs a client for."""
    return MODES[spec.lag_mode].needs_client(spec) or Verdict.AT_RISK in fail_fast_verdicts(
        spec.fail_on_verdicts
    )


async def gate_reads(
    client: AsyncGroupsClient, gate: LagGate, snapshot: LagSnapshot
) -> tuple[Mapping[str, GroupLagSeconds] | None, Margins | None]:
    """What a check reads beside the snapshot, when the spec wants it: the lag in seconds of every
    lagging partition (an unmeasured one may be the oldest) and the margins AT_RISK is judged on."""
    spec = gate.spec
    seconds = margins = None
    if gate.mode.wants_seconds(spec):
        seconds = await lag_seconds(client, snapshot, worst_n=None, read_committed=spec.read_committed)
    if Verdict.AT_RISK in fail_fast_verdicts(spec.fail_on_verdicts):
        margins = await retention_margins(
            client, snapshot, seconds=seconds, read_committed=spec.read_committed
        )
    return seconds, margins


__all__ = [
    "GateSpec",
    "GateState",
    "LagGate",
    "LagMode",
    "Decision",
    "GateStatus",
    "FailureKind",
    "check_gate",
    "gate_reads",
    "reads_wanted",
    "GateOpened",
    "VerdictHeld",
    "fail_fast_verdicts",
    "spark_offsets",
    "DEFAULT_FAIL_ON",
    "NOT_RETRIABLE",
    "RATE_CHECKPOINTS",
    "MODES",
]
