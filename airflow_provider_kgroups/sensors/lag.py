"""``ConsumerLagSensor``: wait until consumer groups have caught up, then hand Spark the range.

Two ways to decide (``lag_mode``):

* ``"barrier"`` (default): at the first check, fix per partition a target that never moves:
  the log-end offset now, or with ``barrier_timestamp`` (e.g. ``"{{ data_interval_end }}"``)
  the first offset at or after that time. Succeed when every group's committed offset has
  reached the target on every partition. Producers writing on do not move it.
* ``"threshold"``: succeed when every group's lag is within ``max_lag_per_partition``,
  ``max_total_lag`` and/or ``max_lag_seconds``.

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
import time
from datetime import timedelta
from functools import cached_property
from typing import Any, Sequence

from airflow.sdk import Asset, BaseSensorOperator, Context, PokeReturnValue
from airflow.sdk.configuration import conf
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSensorTimeout

from ..client.errors import ConfigurationError, KafkaGroupsError
from ..hooks.failures import fail_fast
from ..hooks.groups import KafkaGroupsHook
from ..observability import lineage, metrics
from ..triggers.lag import ConsumerLagTrigger
from ..arguments import (
    check_arguments, is_templated, parse_bool, parse_conn_id, parse_deferrable, parse_lag_mode, parse_offset_count,
    parse_offsets_map, parse_seconds, parse_selector, parse_str_list, parse_timestamp_ms, parse_topics,
)
from ..lag.gate import DEFAULT_FAIL_ON, NOT_RETRIABLE, Decision, GateSpec, GateState, LagGate


class ConsumerLagSensor(BaseSensorOperator):
    """Wait until Kafka consumer groups have caught up (barrier) or are within lag thresholds.

    :param group_ids: exact group ids.
    :param group_patterns: globs (``orders-*``) or ``re:`` regexes; matched against ListGroups
        once, at the first check.
    :param exclude_patterns: patterns removed from the pattern matches.
    :param topics: only these topics (all their partitions); default: each group's committed
        and assigned partitions.
    :param lag_mode: ``"barrier"`` or ``"threshold"``.
    :param barrier_timestamp: barrier at the offsets of this time instead of the log end:
        a timezone-aware datetime, an ISO-8601 string (``"{{ data_interval_end }}"``) or epoch ms.
    :param previous_barrier: where Spark's range starts (see the module docstring).
    :param max_lag_per_partition: threshold mode: max lag of any partition, in records.
    :param max_total_lag: threshold mode: max total lag of each group, in records.
    :param max_lag_seconds: threshold mode: max age of each group's oldest unread record.
    :param unknown_lag: a partition without a committed offset: ``"fail"`` (cannot pass:
        wait), ``"ignore"`` (left out), ``"from_earliest"`` (counts the whole log),
        ``"from_latest"`` (counts as caught up).
    :param read_committed: log end = last stable offset (transactional topics).
    :param fail_on_verdicts: verdicts that fail the sensor when they persist (``[]``: never).
    :param verdict_checks: consecutive checks a verdict or a too-slow projection must persist.
    :param stuck_after: a committed offset unchanged this long while lagging is STOP/STALL
        (seconds or timedelta).
    :param kafka_groups_conn_id: a ``kgroups`` or ``kafka`` connection.
    :param deferrable: wait in the triggerer instead of a worker slot (default: the
        ``[operators] default_deferrable`` setting).
    """

    template_fields: Sequence[str] = (
        "group_ids", "group_patterns", "exclude_patterns", "topics", "lag_mode", "barrier_timestamp",
        "previous_barrier", "max_lag_per_partition", "max_total_lag", "max_lag_seconds", "unknown_lag",
        "read_committed", "fail_on_verdicts", "verdict_checks", "stuck_after", "kafka_groups_conn_id",
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
        kafka_groups_conn_id: str = KafkaGroupsHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poke_interval: float | timedelta = 30,
        timeout: float | timedelta = 3600,
        **kwargs: Any,
    ) -> None:
        for name, value in (("timeout", timeout), ("poke_interval", poke_interval)):
            seconds = value.total_seconds() if isinstance(value, timedelta) else value
            if isinstance(seconds, (int, float)) and not math.isfinite(seconds):  # Airflow would overflow on inf
                raise ValueError(f"{kwargs.get('task_id', 'ConsumerLagSensor')}: {name} must be finite, a number of "
                                 f"seconds or a timedelta, got {value!r}.")
        super().__init__(poke_interval=poke_interval, timeout=timeout, **kwargs)
        self.group_ids = list(group_ids) if isinstance(group_ids, (list, tuple)) else group_ids
        self.group_patterns = list(group_patterns) if isinstance(group_patterns, (list, tuple)) else group_patterns
        self.exclude_patterns = list(exclude_patterns) if isinstance(exclude_patterns, (list, tuple)) \
            else exclude_patterns
        self.topics = list(topics) if isinstance(topics, (list, tuple)) else topics
        self.lag_mode = lag_mode
        self.barrier_timestamp = barrier_timestamp
        self.previous_barrier = previous_barrier
        self.max_lag_per_partition = max_lag_per_partition
        self.max_total_lag = max_total_lag
        self.max_lag_seconds = max_lag_seconds
        self.unknown_lag = unknown_lag
        self.read_committed = read_committed
        self.fail_on_verdicts = list(fail_on_verdicts) if isinstance(fail_on_verdicts, (list, tuple)) \
            else fail_on_verdicts
        self.verdict_checks = verdict_checks
        self.stuck_after = stuck_after.total_seconds() if isinstance(stuck_after, timedelta) else stuck_after
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self.deferrable = check_arguments(self.task_id, {"deferrable": deferrable}, {"deferrable": parse_deferrable},
                                          rendered=True)["deferrable"]
        if self.mode == "reschedule":
            raise ValueError(f"{self.task_id}: mode='reschedule' is not supported by ConsumerLagSensor (the barrier "
                             "and the verdict window live in memory between checks); use deferrable=True to "
                             "free the worker slot while waiting.")
        if self.timeout <= 0:
            raise ValueError(f"{self.task_id}: timeout must be > 0 seconds (a catch-up projection needs a deadline).")
        self._validate(rendered=False)
        self._gate: LagGate | None = None

    # -- validation -------------------------------------------------------------------------

    def _validate(self, *, rendered: bool) -> GateSpec | None:
        """Check every argument that is not (still) a template; once nothing is templated
        (always after rendering), build the spec. Raises ValueError naming the argument."""
        values = {name: getattr(self, name) for name in self.template_fields}
        check_arguments(self.task_id, values, {
            "topics": parse_topics, "kafka_groups_conn_id": parse_conn_id,
            "lag_mode": parse_lag_mode, "barrier_timestamp": parse_timestamp_ms, "previous_barrier": parse_offsets_map,
            "max_lag_per_partition": parse_offset_count, "max_total_lag": parse_offset_count,
            "max_lag_seconds": parse_seconds,
            "read_committed": parse_bool, "fail_on_verdicts": parse_str_list}, rendered=rendered)
        selection = (self.group_ids, self.group_patterns, self.exclude_patterns)
        if not rendered and any(is_templated(v) for v in selection):
            return None
        selector = parse_selector(self.task_id, *selection, allow_all=False)
        if not rendered and any(is_templated(v) for v in values.values()):
            return None
        try:  # the spec checks the combination (e.g. thresholds only in threshold mode)
            return GateSpec(
                group_ids=selector.ids or ("(selected by pattern at the first check)",), lag_mode=self.lag_mode,
                topics=tuple(self.topics) if self.topics else None, barrier_timestamp_ms=self.barrier_timestamp,
                unknown_lag=self.unknown_lag, read_committed=parse_bool("read_committed", self.read_committed),
                max_lag_per_partition=self.max_lag_per_partition, max_total_lag=self.max_total_lag,
                max_lag_seconds=self.max_lag_seconds, fail_on_verdicts=tuple(self.fail_on_verdicts or ()),
                verdict_checks=self.verdict_checks, stuck_after_s=self.stuck_after,
                previous_barrier=self.previous_barrier)
        except ConfigurationError as exc:
            raise ValueError(f"{self.task_id}: {exc}") from None

    # -- running ----------------------------------------------------------------------------

    @cached_property
    def hook(self) -> KafkaGroupsHook:
        return KafkaGroupsHook(self.kafka_groups_conn_id)

    def _start(self, context: Context) -> LagGate:
        """Rendered arguments -> the gate, with patterns resolved against the cluster."""
        spec = self._validate(rendered=True)
        selector = parse_selector(self.task_id, self.group_ids, self.group_patterns, self.exclude_patterns,
                                  allow_all=False)
        assert spec is not None
        ids = selector.ids
        if selector.needs_listing:
            ids = tuple(self.hook.select_groups(selector))
            if not ids:
                raise AirflowFailException(f"no consumer group matches {list(selector.patterns)}: check the patterns.")
            self.log.info("Groups selected by %s: %s", list(selector.patterns), ", ".join(ids))
        spec = GateSpec(**{**spec.to_dict(), "group_ids": ids})
        started_ms = int(time.time() * 1000)
        return LagGate(spec, GateState(started_ms=started_ms), deadline_ms=started_ms + int(self.timeout * 1000))

    def _check(self, context: Context) -> Decision:
        gate = self._gate
        assert gate is not None
        had_target = not gate.needs_target
        checks = gate.state.checks
        try:
            with fail_fast("ConsumerLagSensor"):
                decision = self.hook.check_gate(gate)
        except KafkaGroupsError as exc:  # no broker, a timeout, a target not readable yet: try again later
            decision = Decision("wait", f"check failed, will retry: {type(exc).__name__}: {exc}")
        metrics.gate_checked(gate, evaluated=gate.state.checks > checks, dag_id=self.dag_id, task_id=self.task_id)
        if not had_target and not gate.needs_target:
            target = gate.state.target
            context["ti"].xcom_push(key="barrier_target", value=target)
            self.log.info("Barrier fixed (%s) for %d group(s): %s", target["kind"], len(target["groups"]),
                          _short(target["groups"]))
        self.log.info("%s", decision.message)
        return decision

    def _finish(self, decision: Decision) -> Any:
        if decision.status == "fail":
            raise AirflowFailException(f"ConsumerLagSensor failed fast ({decision.kind}): {decision.message}")
        return decision.result

    def execute(self, context: Context) -> Any:
        try:
            with fail_fast("ConsumerLagSensor"):
                self._gate = self._start(context)
            if not self.deferrable:
                return self._announce(context, super().execute(context))
            decision = self._check(context)
            if decision.finished:
                return self._announce(context, self._finish(decision))
            gate = self._gate
            left_s = max(1.0, (gate.deadline_ms - time.time() * 1000) / 1000.0)
            self.defer(
                trigger=ConsumerLagTrigger(
                    kafka_groups_conn_id=self.kafka_groups_conn_id, spec=gate.spec.to_dict(),
                    state=gate.state.to_dict(), deadline_ms=gate.deadline_ms,
                    poll_interval=self.poke_interval, deferred_at_ms=int(time.time() * 1000)),
                method_name="execute_complete",
                timeout=timedelta(seconds=left_s),
            )
        finally:
            self.hook.close()

    def poke(self, context: Context) -> PokeReturnValue:
        decision = self._check(context)
        if decision.status == "done":
            return PokeReturnValue(is_done=True, xcom_value=decision.result)
        self._finish(decision)  # raises on "fail"
        return PokeReturnValue(is_done=False)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        status = event.get("status")
        if status == "timeout":
            raise AirflowSensorTimeout(f"ConsumerLagSensor timed out: {event.get('message')}")
        if status not in ("done", "fail"):
            raise AirflowException(f"ConsumerLagSensor trigger error: {event.get('message')}")
        if event.get("kind") == NOT_RETRIABLE:
            raise AirflowFailException(f"ConsumerLagSensor: {event.get('message')}")
        decision = Decision(status, event.get("message", ""), event.get("result"), event.get("kind"))
        self.log.info("%s", decision.message)
        return self._announce(context, self._finish(decision))

    def _announce(self, context: Context, result: Any) -> Any:
        """One summary line, and the range handed on as the extra of this task's asset events
        (outlets), in the shape ConsumerLagEventTrigger's events have, so a DAG scheduled on the
        asset reads it the same way (``triggers.events.range_from_events``)."""
        if not isinstance(result, dict) or "endingOffsets" not in result:
            return result
        self.log.info("Gate opened after %s s and %s check(s); range handed on: %s -> %s", result.get("waited_s"),
                      result.get("checks"), result.get("startingOffsets"), result.get("endingOffsets"))
        metrics.gate_opened(result, dag_id=self.dag_id, task_id=self.task_id)
        self._handed_on = result  # for get_openlineage_facets_on_complete
        extra = {"startingOffsets": result["startingOffsets"], "endingOffsets": result["endingOffsets"],
                 "group_ids": result.get("group_ids", []), "mode": result.get("lag_mode")}
        for outlet in self.outlets or ():
            if isinstance(outlet, Asset):
                context["outlet_events"][outlet].extra = extra
        return result

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the gated topics as inputs, with the range handed on (observability/lineage.py)."""
        result = getattr(self, "_handed_on", None)
        return lineage.gate_lineage(self.hook.client_config.bootstrap_servers, result) if result else None


def _short(groups: dict[str, Any], limit: int = 3) -> str:
    items = list(groups.items())
    text = "; ".join(f"{g} {offsets}" for g, offsets in items[:limit])
    return text + (f"; ... {len(items) - limit} more" if len(items) > limit else "")
