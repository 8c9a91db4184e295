"""``ConsumerLagTrigger``: the deferrable half of :class:`~..sensors.lag.ConsumerLagSensor`.

It polls with the asyncio client and decides with the same :class:`~..lag.gate.LagGate`
as poke mode. It takes the gate's :class:`~..lag.gate_spec.GateSpec` (or its JSON, as its kwargs
carry it: read back once, here). Its kwargs are plain JSON: the connection *id* (never the
connection, never a secret), the gate's spec and state (the barrier fixed by the sensor's first
check), the deadline and the poll interval. The connection is resolved inside ``run()`` with Airflow's
async lookup, so nothing synchronous touches the triggerer's event loop.

A triggerer restart re-creates the trigger from these kwargs: the barrier is kept (it was
fixed before deferring); rate checkpoints and streaks go back to what the sensor handed over,
and the verdict window starts empty. A hand-over made before the worker could bind the spec's
group patterns or fix the barrier (its check failed and will be retried) leaves both to the
trigger's first check.

Events (:meth:`~..lag.gate_decision.Decision.to_event`, the enums' values):
``{"status": "done", "result": {...}}``, ``{"status": "fail", "kind": ..., "message": ...}``
(kind ``not_retriable`` for bad input, authentication and authorization errors: the task fails
at once instead of waiting for its timeout), or ``{"status": "timeout", "message": ...}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ..lag.gate_spec import GateSpec
from .loading import load_engine

if TYPE_CHECKING:
    from ..hooks.groups import KafkaGroupsHook
    from ..lag.gate import LagGate


class ConsumerLagTrigger(BaseTrigger):
    def __init__(
        self,
        *,
        kafka_groups_conn_id: str,
        spec: GateSpec | Mapping[str, Any],
        state: dict[str, Any],
        deadline_ms: int,
        poll_interval: float = 30.0,
        deferred_at_ms: int | None = None,
    ) -> None:
        super().__init__()
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self.spec = spec if isinstance(spec, GateSpec) else GateSpec.from_dict(spec)
        self.state = state
        self.deadline_ms = int(deadline_ms)
        self.poll_interval = float(poll_interval)
        # Checks run on a fixed schedule from the hand-over (slot k at deferred_at + k * interval),
        # so a trigger re-created after a triggerer restart knows how many slots went by: its
        # kwargs are fixed at deferral and a deferred task's trigger has no state store.
        self.deferred_at_ms = int(deferred_at_ms) if deferred_at_ms is not None else int(time.time() * 1000)
        self._hook: KafkaGroupsHook | None = None

    @classmethod
    def for_gate(cls, gate: LagGate, kafka_groups_conn_id: str, poll_interval: float) -> ConsumerLagTrigger:
        """The hand-over of ``gate`` (spec, state, deadline) as it stands now."""
        return cls(
            kafka_groups_conn_id=kafka_groups_conn_id,
            spec=gate.spec,
            state=gate.state.to_dict(),
            deadline_ms=gate.deadline_ms,
            poll_interval=poll_interval,
            deferred_at_ms=int(time.time() * 1000),
        )

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "kafka_groups_conn_id": self.kafka_groups_conn_id,
                "spec": self.spec.to_dict(),
                "state": self.state,
                "deadline_ms": self.deadline_ms,
                "poll_interval": self.poll_interval,
                "deferred_at_ms": self.deferred_at_ms,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        await load_engine()  # off the event loop (see .loading)
        from ..hooks.groups import KafkaGroupsHook
        from ..lag.gate import Decision, GateState, GateStatus, LagGate
        from ..observability import metrics

        gate = LagGate(self.spec, GateState.from_dict(self.state), self.deadline_ms)
        self._hook = KafkaGroupsHook(self.kafka_groups_conn_id)
        interval_ms = self.poll_interval * 1000
        passed = int(max(0.0, time.time() * 1000 - self.deferred_at_ms) // interval_ms)
        if passed:  # re-created after a triggerer restart: the slots before now were checked by the last one
            gate.state.checks += passed
            self.log.info(
                "Resumed after a triggerer restart: %d check slot(s) since the hand-over counted "
                "(check %d next)",
                passed,
                gate.state.checks + 1,
            )
        slot = passed + 1  # the worker checked just before deferring: the next check is one interval later
        try:
            while True:
                wait_s = (self.deferred_at_ms + slot * interval_ms - time.time() * 1000) / 1000.0
                await asyncio.sleep(max(0.0, min(wait_s, (self.deadline_ms - time.time() * 1000) / 1000.0)))
                checks = gate.state.checks
                decision = await self._hook.acheck_gate(
                    gate
                )  # a client error is a decision (wait, or not_retriable)
                ti = self.task_instance
                metrics.gate_checked(
                    gate,
                    evaluated=gate.state.checks > checks,
                    dag_id=getattr(ti, "dag_id", None),
                    task_id=getattr(ti, "task_id", None),
                )
                for note in decision.notes:
                    self.log.info("%s", note)
                for warning in decision.warnings:
                    self.log.warning("%s", warning)
                self.log.info("%s", decision.message)
                if decision.finished:
                    yield TriggerEvent(decision.to_event())
                    return
                if self.deadline_ms - time.time() * 1000 <= 0:
                    yield TriggerEvent(Decision(GateStatus.TIMEOUT, decision.message).to_event())
                    return
                now_ms = time.time() * 1000
                slot = max(
                    slot + 1, int((now_ms - self.deferred_at_ms) // interval_ms) + 1
                )  # a slow check skips slots
        finally:
            await self.cleanup()

    async def cleanup(self) -> None:
        hook, self._hook = self._hook, None
        if hook is not None:
            await hook.aclose()
