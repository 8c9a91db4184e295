"""``ConsumerLagSensor``: wait until consumer groups have caught up, then hand Spark the range.

Two ways to decide (``lag_mode``):

* ``"barrier"`` (default): at the first check, fix per partition a target that never moves:
  the log-end offset now, or with ``barrier_timestamp`` (e.g. ``"{{ data_interval_end }}"``)
  the first offset at or after that time. Succeed when every group's committed offset has
  reached it on every partition. Producers writing on do not move it.
* ``"threshold"``: succeed when every group is provably within ``max_lag_per_partition``,
  ``max_total_lag`` and/or ``max_lag_seconds``; a lag known only from below (an age that is "at
  least" so much, a total with unknown partitions) or not known at all keeps it waiting.

It fails fast instead of waiting for the timeout when a group is missing or Dead, when a
fail-fast verdict (STOP, STALL, LOST) persists on a partition that still has to move, or when
the projected catch-up time exceeds the time left (see :mod:`..lag.gate`).

On success the XCom (return value) is plain JSON::

    {"lag_mode": "barrier", "group_ids": [...], "checks": 3, "waited_s": 41.2,
     "reached": {"group": {"topic": {"0": 130}}},       # committed offsets seen at success
     "offsets": {"topic": {"0": 120}},                   # the barrier (end of the covered range)
     "startingOffsets": '{"topic": {"0": -2}}',          # Spark Kafka source options, ending exclusive
     "endingOffsets": '{"topic": {"0": 120}}',
     "target": {...}}                                    # the barrier as fixed (BarrierTarget.to_dict())

``previous_barrier`` (a previous success XCom, or ``{"topic": {"0": 100}}``) starts the range
where the last run ended; otherwise it starts at earliest (-2). The fixed barrier is also
pushed at the first check under the XCom key ``barrier_target``.

``deferrable=True`` hands the waiting to :class:`~..triggers.lag.ConsumerLagTrigger` (no worker
slot held); ``mode="reschedule"`` is refused, because the barrier and the verdict window live
in memory between checks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    Asset,
    BaseSensorOperator,
    Context,
    PokeReturnValue,
    conf,
)

from ..arguments import check_arguments, is_templated, parse_conn_id, parse_deferrable, parse_selector
from ..client.errors import ConfigurationError
from ..client.numbers import is_number
from ..hooks.failures import fail_fast
from ..hooks.groups import KafkaGroupsHook
from ..lag.gate import DEFAULT_FAIL_ON, Decision, FailureKind, GateSpec, GateStatus, LagGate
from ..lag.gate_spec import all_params, param_docs
from ..observability import lineage, metrics
from ..triggers.lag import ConsumerLagTrigger

#: the gate's arguments, from its spec's fields (lag.gate_spec): the sensor's own are the selection
#: and the connection
GATE_ARGUMENTS = tuple(p.name for p in all_params())
#: each argument's one parser, used before rendering on the arguments that are not templates alone;
#: once nothing is templated GateSpec.parse runs them (and the rules between them)
_PARSERS = {**{p.name: p.parse for p in all_params()}, "kafka_groups_conn_id": parse_conn_id}


class ConsumerLagSensor(BaseSensorOperator):
    """Wait until Kafka consumer groups have caught up (barrier) or are within lag thresholds.

    :param group_ids: exact group ids.
    :param group_patterns: globs (``orders-*``) or ``re:`` regexes; matched against ListGroups
        once, at the first check.
    :param exclude_patterns: patterns removed from the pattern matches.
    {gate_params}
    :param kafka_groups_conn_id: a ``kgroups`` or ``kafka`` connection.
    :param deferrable: wait in the triggerer instead of a worker slot (default: the
        ``[operators] default_deferrable`` setting).
    """

    template_fields: Sequence[str] = (
        "group_ids",
        "group_patterns",
        "exclude_patterns",
        *GATE_ARGUMENTS,
        "kafka_groups_conn_id",
    )
    ui_color = "#d9e8f5"

    def __init__(
        self,
        *,
        group_ids: Sequence[str] | str | None = None,
        group_patterns: Sequence[str] | None = None,
        exclude_patterns: Sequence[str] | None = None,
        topics: Sequence[str] | None = None,
        lag_mode: str = "barrier",
        barrier_timestamp: Any = None,
        previous_barrier: Any = None,
        max_lag_per_partition: int | str | None = None,
        max_total_lag: int | str | None = None,
        max_lag_seconds: float | str | None = None,
        unknown_lag: str = "fail",
        read_committed: bool = False,
        fail_on_verdicts: Sequence[str] = DEFAULT_FAIL_ON,
        verdict_checks: int = 2,
        stuck_after: float | timedelta = 600,
        retention_margin_floor: float | timedelta = 3600,
        kafka_groups_conn_id: str = KafkaGroupsHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poke_interval: float | timedelta = 30,
        timeout: float | timedelta = 3600,
        **kwargs: Any,
    ) -> None:
        given = dict(locals())  # the gate's arguments are kept as given, by name (lag.gate_params)
        for name, value in (("timeout", timeout), ("poke_interval", poke_interval)):
            seconds = value.total_seconds() if isinstance(value, timedelta) else value
            if is_number(seconds) and not math.isfinite(seconds):  # Airflow would overflow on inf
                raise ValueError(
                    f"{kwargs.get('task_id', 'ConsumerLagSensor')}: {name} must be finite, a number of "
                    f"seconds or a timedelta, got {value!r}."
                )
        super().__init__(poke_interval=poke_interval, timeout=timeout, **kwargs)
        self.group_ids, self.group_patterns = _listed(group_ids), _listed(group_patterns)
        self.exclude_patterns = _listed(exclude_patterns)
        for name in GATE_ARGUMENTS:  # as given (templates render in place)
            value = given[name]
            setattr(self, name, _listed(value.total_seconds() if isinstance(value, timedelta) else value))
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self.deferrable = check_arguments(
            self.task_id, {"deferrable": deferrable}, {"deferrable": parse_deferrable}, rendered=True
        )["deferrable"]
        if self.mode == "reschedule":
            raise ValueError(
                f"{self.task_id}: mode='reschedule' is not supported by ConsumerLagSensor (the barrier "
                "and the verdict window live in memory between checks); use deferrable=True to "
                "free the worker slot while waiting."
            )
        if self.timeout <= 0:
            raise ValueError(
                f"{self.task_id}: timeout must be > 0 seconds (a catch-up projection needs a deadline)."
            )
        self._validate(rendered=False)
        self._gate: LagGate | None = None

    def _validate(self, *, rendered: bool) -> GateSpec | None:
        """Once nothing is templated (always after rendering): the gate's spec
        (:meth:`~..lag.gate_spec.GateSpec.parse`: each argument by its parser, and their
        combination, e.g. thresholds only in threshold mode). Before, every argument that is not a
        template, alone, by the same parser. Raises ValueError naming it."""
        values = {name: getattr(self, name) for name in self.template_fields}
        selection = (self.group_ids, self.group_patterns, self.exclude_patterns)
        if not rendered and any(map(is_templated, values.values())):
            check_arguments(self.task_id, values, _PARSERS, rendered=False)
            if not any(map(is_templated, selection)):
                parse_selector(self.task_id, *selection, allow_all=False)
            return None
        check_arguments(self.task_id, values, {"kafka_groups_conn_id": parse_conn_id}, rendered=True)
        try:
            return GateSpec.parse(
                group_ids=self.group_ids,
                group_patterns=self.group_patterns,
                exclude_patterns=self.exclude_patterns,
                **{name: values[name] for name in GATE_ARGUMENTS},
            )
        except ConfigurationError as exc:
            raise ValueError(f"{self.task_id}: {exc}") from None

    @cached_property
    def hook(self) -> KafkaGroupsHook:
        return KafkaGroupsHook(self.kafka_groups_conn_id)

    def execute(self, context: Context) -> Any:
        self._gate = LagGate.start(self._validate(rendered=True), self.timeout)  # type: ignore[arg-type]  # BaseSensorOperator keeps timeout as a float
        try:
            if not self.deferrable:
                return super().execute(context)
            done = self.poke(context)  # the first check on the worker: a gate open at once needs no trigger
            if done:
                return done.xcom_value
            self.defer(
                trigger=ConsumerLagTrigger.for_gate(
                    self._gate, self.kafka_groups_conn_id, self.poke_interval
                ),
                method_name="execute_complete",
                timeout=timedelta(seconds=self._gate.seconds_left()),
            )
        finally:
            self.hook.close()

    def poke(self, context: Context) -> PokeReturnValue:
        assert self._gate is not None
        checks = self._gate.state.checks
        with fail_fast("ConsumerLagSensor"):  # a bug in a check ends the task now, without its retries
            decision = self.hook.check_gate(self._gate)
        metrics.gate_checked(
            self._gate, evaluated=self._gate.state.checks > checks, dag_id=self.dag_id, task_id=self.task_id
        )
        for note in decision.notes:
            self.log.info("%s", note)
        for warning in decision.warnings:
            self.log.warning("%s", warning)
        if decision.fixed is not None:
            context["ti"].xcom_push(key="barrier_target", value=decision.fixed)
        self.log.info("%s", decision.message)
        if decision.status is GateStatus.WAIT:
            return PokeReturnValue(is_done=False)
        return PokeReturnValue(is_done=True, xcom_value=self._finish(context, decision))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        try:
            decision = Decision.from_event(event)
        except ConfigurationError as exc:
            raise AirflowException(f"ConsumerLagSensor trigger error: {exc}") from None
        self.log.info("%s", decision.message)
        return self._finish(context, decision)

    def _finish(self, context: Context, decision: Decision) -> Any:
        """The gate's last word: the XCom (and the asset events) if it opened, else the failure."""
        if decision.status is GateStatus.TIMEOUT:
            raise AirflowSensorTimeout(f"ConsumerLagSensor timed out: {decision.message}")
        if decision.kind is FailureKind.NOT_RETRIABLE:
            raise AirflowFailException(f"ConsumerLagSensor: {decision.message}")
        if decision.status is GateStatus.FAIL:
            kind = decision.kind.value if decision.kind is not None else "no kind"  # a FAIL has one
            raise AirflowFailException(f"ConsumerLagSensor failed fast ({kind}): {decision.message}")
        return _announce(self, context, decision.result)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the gated topics as inputs, with the range handed on (observability/lineage.py)."""
        result = getattr(self, "_handed_on", None)
        return lineage.gate_lineage(self.hook.client_config.bootstrap_servers, result) if result else None


def _listed(value: Any) -> Any:
    """Lists and tuples as lists (what Airflow renders and serializes); anything else as given."""
    return list(value) if isinstance(value, (list, tuple)) else value


ConsumerLagSensor.__doc__ = (ConsumerLagSensor.__doc__ or "").replace(
    "{gate_params}", param_docs().replace("\n", "\n    ")
)


def _announce(sensor: ConsumerLagSensor, context: Context, result: Any) -> Any:
    """One summary line, and the range handed on as the extra of the task's asset events
    (outlets), in the shape ConsumerLagEventTrigger's events have, so a DAG scheduled on the
    asset reads it the same way (``triggers.events.range_from_events``)."""
    if not isinstance(result, dict) or "endingOffsets" not in result:
        return result
    sensor.log.info(
        "Gate opened after %s s and %s check(s); range handed on: %s -> %s",
        result.get("waited_s"),
        result.get("checks"),
        result.get("startingOffsets"),
        result.get("endingOffsets"),
    )
    metrics.gate_opened(result, dag_id=sensor.dag_id, task_id=sensor.task_id)
    sensor._handed_on = result  # for get_openlineage_facets_on_complete
    extra = {
        "startingOffsets": result["startingOffsets"],
        "endingOffsets": result["endingOffsets"],
        "group_ids": result.get("group_ids", []),
        "mode": result.get("lag_mode"),
    }
    for outlet in sensor.outlets or ():
        if isinstance(outlet, Asset):
            context["outlet_events"][outlet].extra = extra
    return result
