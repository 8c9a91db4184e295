"""Barrier mode: at the first check, fix per partition a target that never moves (the log end,
or the first offset at ``barrier_timestamp``); the groups are there when every committed offset
has reached it. Producers writing on do not move it. Gives up when the catch-up, projected at the
rate of the last few checks, ends after the deadline in ``verdict_checks`` checks in a row.

A partition without a commit that the unknown-lag policy says not to wait for (``ignore``,
``from_latest``) is left out of the target (and listed as ``ignored`` in the result).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..client.offset_map import OffsetKind, OffsetMap
from ..client.results import TopicPartition
from .barrier import BarrierStatus, BarrierTarget, TargetKind, evaluate_barrier, fix_target
from .gate_decision import Decision, FailureKind, GateStatus
from .gate_modes import Fixed, Gate, GateMode, Judgement
from .gate_spec import BarrierParams, GateSpec, LagMode
from .model import LagSnapshot, UnknownLagPolicy

__all__ = ["BarrierMode", "RATE_CHECKPOINTS"]

#: How many past checkpoints the catch-up rate is measured over (smooths a slow first interval).
RATE_CHECKPOINTS = 5


class BarrierMode(GateMode):
    lag_mode = LagMode.BARRIER

    async def prepare(self, client: Any, gate: Gate, snapshot: LagSnapshot) -> Fixed | None:
        if gate.state.target is not None:
            return None
        spec = gate.spec
        target = await fix_target(
            client,
            spec.group_ids,
            topics=spec.topics,
            timestamp_ms=spec.params(BarrierParams).barrier_timestamp_ms,
            read_committed=spec.read_committed,
        )
        gate.set_target(target)
        fixed = target.to_dict()  # the XCom barrier_target (the sensor pushes it as is)
        groups = list(fixed["groups"].items())
        shown = "; ".join(f"{g} {offsets}" for g, offsets in groups[:3])
        more = f"; ... {len(groups) - 3} more" if len(groups) > 3 else ""
        return Fixed(f"Barrier fixed ({fixed['kind']}) for {len(groups)} group(s): {shown}{more}", fixed)

    def needs_client(self, spec: GateSpec) -> bool:
        return spec.params(BarrierParams).barrier_timestamp_ms is not None  # offsets at a time: a read

    def prepare_from(self, gate: Gate, snapshot: LagSnapshot) -> Fixed | None:
        """The target at the snapshot's log ends (the highest any group's read saw), never below
        where the previous range ended (``previous_barrier``): the same for every group."""
        if gate.state.target is not None:
            return None
        spec = gate.spec
        log_end: dict[TopicPartition, int] = {}
        for group_id in spec.group_ids:
            group = snapshot.groups.get(group_id)
            for p in group.partitions if group is not None else ():
                if p.log_end is not None and (spec.topics is None or p.topic in spec.topics):
                    log_end[p.tp] = max(log_end.get(p.tp, 0), p.log_end)
        floor = spec.previous_barrier
        offsets = {tp: max(end, floor.get(tp, 0) if floor else 0) for tp, end in log_end.items()}
        target = BarrierTarget(
            {g: dict(offsets) for g in spec.group_ids},
            TargetKind.LOG_END,
            snapshot.taken_at_ms,
            read_committed=spec.read_committed,
        )
        gate.set_target(target)
        return Fixed(
            f"Barrier fixed (log_end, from the poll) for {len(spec.group_ids)} group(s): "
            f"{OffsetMap(offsets, OffsetKind.COMMITTED).nested()}",
            target.to_dict(),
        )

    def judge(self, gate: Gate, snapshot: LagSnapshot, seconds: Mapping[str, Any]) -> Judgement:
        fixed = gate.state.target
        if fixed is None:
            raise ValueError("a barrier gate judges after its target is fixed (prepare)")
        target, ignored = _counted_target(fixed, gate.spec, snapshot)
        status = _status(gate, target, snapshot)
        pending: set[tuple[str, TopicPartition | None]] = {
            (p.group_id, TopicPartition(p.topic, p.partition)) for p in status.partitions if not p.reached
        }
        pending |= {(g, None) for g in status.failures}
        if pending:
            return Judgement(status.summary(), frozenset(pending), eta_s=status.eta_s())
        ending: dict[TopicPartition, int] = {}
        for targets in fixed.offsets.values():
            for tp, offset in targets.items():
                ending[tp] = min(offset, ending.get(tp, offset))
        reached: dict[str, dict[TopicPartition, int]] = {}
        for p in status.partitions:
            if p.committed is not None:
                reached.setdefault(p.group_id, {})[TopicPartition(p.topic, p.partition)] = p.committed
        return Judgement(
            status.summary(),
            ending=ending,
            reached=reached,
            extra={"target": fixed.to_dict(), "ignored": ignored},
        )

    def give_up(self, gate: Gate, judgement: Judgement, now_ms: int) -> Decision | None:
        eta, left_s = judgement.eta_s, (gate.deadline_ms - now_ms) / 1000.0
        too_slow = eta is not None and eta > left_s
        if gate.streak("projection", too_slow) >= gate.spec.verdict_checks:
            return Decision(
                GateStatus.FAIL,
                f"projected catch-up in {eta:.0f} s exceeds the {max(left_s, 0):.0f} s "
                f"left before the timeout ({judgement.summary})",
                kind=FailureKind.PROJECTION,
            )
        return None


def _counted_target(
    target: BarrierTarget, spec: GateSpec, snapshot: LagSnapshot
) -> tuple[BarrierTarget, list[str]]:
    """The target without the partitions the policy says not to wait for, and those left out."""
    if spec.unknown_lag not in (UnknownLagPolicy.IGNORE, UnknownLagPolicy.FROM_LATEST):
        return target, []
    ignored, offsets = [], {}
    for group_id, targets in target.offsets.items():
        group = snapshot.groups.get(group_id)
        committed = {p.tp: p.committed for p in group.partitions} if group else {}
        kept = {}
        for tp, offset in targets.items():
            if group is not None and committed.get(tp) is None:
                ignored.append(f"{group_id}:{tp}")
            else:
                kept[tp] = offset
        offsets[group_id] = kept
    return BarrierTarget(
        offsets, target.kind, target.fixed_at_ms, target.timestamp_ms, target.read_committed
    ), ignored


def _status(gate: Gate, target: BarrierTarget, snapshot: LagSnapshot) -> BarrierStatus:
    """Progress toward the target; the checkpoint joins the last few the rate is measured over."""
    committed = {g: {p.tp: p.committed for p in lag.partitions} for g, lag in snapshot.groups.items()}
    log_starts = {
        p.tp: p.log_start
        for lag in snapshot.groups.values()
        for p in lag.partitions
        if p.log_start is not None
    }
    checkpoints = gate.state.checkpoints
    previous = checkpoints[0] if checkpoints else None
    status = evaluate_barrier(
        target, committed, snapshot.taken_at_ms, log_starts=log_starts, previous=previous
    )
    gate.state.checkpoints = [*checkpoints, status.checkpoint()][-RATE_CHECKPOINTS:]
    return status
