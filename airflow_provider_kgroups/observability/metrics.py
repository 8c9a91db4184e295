"""Airflow metrics from the gate and the cleanup, through Airflow's own ``Stats``.

``Stats`` comes through common-compat: ``airflow.sdk.observability.stats`` on Airflow 3.3 (the
old ``airflow.stats`` is a deprecated shim there), ``airflow.stats`` before. Its backend is
whatever ``[metrics]`` configures (StatsD, DogStatsD or OpenTelemetry), built by the process that
runs the code (the task runner on a worker, the triggerer for a deferred gate), with Airflow's
allow/block lists and prefix.

Metrics (names after Airflow's ``[metrics] statsd_prefix``):

================================  ========  ==================================================
``kgroups.gate.checks``           counter   one per gate check that read the groups
``kgroups.gate.check_errors``     counter   one per check that could not read them (retried)
``kgroups.gate.total_lag``        gauge     records the gated groups have left, summed; not
                                            sent when any counted partition's lag is unknown
``kgroups.gate.max_lag_seconds``  gauge     the worst lag in seconds, when the check measured
                                            it (``max_lag_seconds`` gates) and every measured
                                            value is exact: an estimate, a lower bound or an
                                            unmeasured partition sends nothing
``kgroups.gate.groups_pending``   gauge     groups the gate still waits for
``kgroups.gate.lag``              gauge     per (group, topic), with tags only (see below)
``kgroups.gate.wait``             timer     from the first check to the gate opening (ms)
``kgroups.retention_margin_seconds``  gauge  with AT_RISK in ``fail_on_verdicts``: the shortest
                                            retention margin (at least this long before retention
                                            may delete a first unread record); per (group, topic)
                                            with tags, else the gate's shortest
``kgroups.lag.eta_seconds``       gauge     the longest catch-up time over the gate's window, per
                                            (group, topic) with tags, else the gate's longest; not
                                            sent while unknown (one check) or "never" (the AT_RISK
                                            verdict says that)
``kgroups.cleanup.candidates``    gauge     per cleanup run: groups judged deletable
``kgroups.cleanup.deleted``       counter   groups deleted (a real run)
``kgroups.cleanup.would_delete``  counter   groups a dry run would have deleted
``kgroups.cleanup.skipped``       counter   deletable but not deleted (cap, changed, refused)
``kgroups.cleanup.failed``        counter   deletions (or their backups) that failed
``kgroups.cleanup.held``          counter   deletable groups kept because a configured Kafka
                                            Connect cluster could not be read (the run's
                                            ``held``; its ``connect_unreadable`` names them)
================================  ========  ==================================================

Tags: where Airflow's metrics carry tags (``statsd_influxdb_enabled``, DogStatsD with
``statsd_datadog_tags``, OpenTelemetry), every metric is tagged ``dag_id`` and ``task_id``, and
``kgroups.gate.lag`` is sent per (``group``, ``topic``) for at most ``[kgroups] metrics_tag_limit``
pairs per check, the most lagging first, the rest summed under ``group=_other,topic=_other``:
a gate over thousands of groups does not become thousands of series. Without tags, the names
end in ``.<dag_id>.<task_id>`` (as Airflow's own per-task metrics do) and no per-group series
is sent.

A metric never fails a task: errors are logged at debug level and dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import settings
from ..client.numbers import is_int, is_number

if TYPE_CHECKING:
    from ..lag.gate import LagGate

log = logging.getLogger(__name__)

OTHER = "_other"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")  # StatsD names and tag values: Airflow's allowed characters


def _stats():
    from airflow.providers.common.compat.sdk import Stats

    return Stats


def tags_enabled() -> bool:
    """Whether the configured backend sends tags, decided in the order Airflow's
    ``get_stats_factory`` picks the backend (DogStatsD, StatsD, OpenTelemetry)."""
    from airflow.providers.common.compat.sdk import conf

    if conf.getboolean("metrics", "statsd_datadog_enabled", fallback=False):
        return conf.getboolean("metrics", "statsd_datadog_tags", fallback=False)
    if conf.getboolean("metrics", "statsd_on", fallback=False):
        return conf.getboolean("metrics", "statsd_influxdb_enabled", fallback=False)
    return conf.getboolean("metrics", "otel_on", fallback=False)


def _safe(value: Any) -> str:
    """A group id may hold any character; a metric name or tag value may not (Airflow drops the
    whole metric on a ',' or '=' in an InfluxDB tag)."""
    return _UNSAFE.sub("_", str(value))[:200] or "_"


class _Emitter:
    """One task's metrics: tags on, or the task's ids in the name."""

    def __init__(self, dag_id: str | None, task_id: str | None) -> None:
        self.tagged = tags_enabled()
        self.base = {"dag_id": _safe(dag_id or "unknown"), "task_id": _safe(task_id or "unknown")}
        self.stats = _stats()

    def _name(self, stat: str) -> str:
        return stat if self.tagged else f"{stat}.{self.base['dag_id']}.{self.base['task_id']}"

    def _tags(self, extra: Mapping[str, str] | None = None) -> dict[str, str] | None:
        return {**self.base, **(extra or {})} if self.tagged else None

    def gauge(self, stat: str, value: float, extra: Mapping[str, str] | None = None) -> None:
        self.stats.gauge(self._name(stat), value, tags=self._tags(extra))

    def incr(self, stat: str, count: int = 1) -> None:
        self.stats.incr(self._name(stat), count, tags=self._tags())

    def timing(self, stat: str, ms: float) -> None:
        self.stats.timing(self._name(stat), ms, tags=self._tags())


def _quietly(fn):
    def wrapper(*args, **kwargs):
        try:
            fn(*args, **kwargs)
        except Exception:  # a metric never fails a task
            log.debug("kgroups metrics: %s failed", fn.__name__, exc_info=True)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


# -- the gate -----------------------------------------------------------------------------------


def lag_by_group_topic(snapshot) -> dict[tuple[str, str], int | None]:
    """(group, topic) -> records left on the partitions that count in the group's totals;
    None when any of them is unknown (unknown is never 0)."""
    out: dict[tuple[str, str], int | None] = {}
    for group_id, group in snapshot.groups.items():
        for p in group.partitions:
            if not group.counts_in_totals(p):
                continue
            key = (group_id, p.topic)
            if p.lag is None or (key in out and out[key] is None):
                out[key] = None
            else:
                out[key] = out.get(key, 0) + p.lag
    return out


def exact_max_seconds(seconds: Mapping[str, Any]) -> float | None:
    """The worst lag in seconds over the groups, or None unless every group's figure is exact:
    measured (not unknown), not an estimate, not a lower bound, no lagging partition left
    unmeasured (its age is unknown, so the maximum would only be a lower bound)."""
    if not seconds:
        return None
    worst = 0.0
    for group in seconds.values():
        if getattr(group, "unmeasured", 0):
            return None
        for p in group.partitions:
            if p.seconds is None or p.estimate or getattr(p, "at_least", False):
                return None
            worst = max(worst, p.seconds)
    return worst


@_quietly
def gate_checked(gate: LagGate, *, evaluated: bool, dag_id: str | None, task_id: str | None) -> None:
    """After one check (sensor poke or trigger): ``evaluated`` is False when the check could not
    read the groups (it is retried: counted as an error, no values sent)."""
    emit = _Emitter(dag_id, task_id)
    if not evaluated or not gate.window:
        emit.incr("kgroups.gate.check_errors")
        return
    emit.incr("kgroups.gate.checks")
    snapshot = gate.window[-1]
    lags = lag_by_group_topic(snapshot)
    missing_groups = [g for g in gate.spec.group_ids if g not in snapshot.groups]
    if lags and not missing_groups and all(v is not None for v in lags.values()):
        emit.gauge("kgroups.gate.total_lag", sum(lags.values()))  # type: ignore[arg-type]  # none is None (checked above)
    worst_s = exact_max_seconds(getattr(gate, "seconds", None) or {})
    if worst_s is not None:
        emit.gauge("kgroups.gate.max_lag_seconds", worst_s)
    pending = getattr(gate, "pending_groups", None)
    if pending is not None:
        emit.gauge("kgroups.gate.groups_pending", len(pending))
    if emit.tagged:
        _per_group_topic(emit, lags)
    _risk(emit, gate)


def _risk(emit: _Emitter, gate: LagGate) -> None:
    """The retention margins the check read and the catch-up times over the gate's window."""
    from ..lag.retention import catch_up
    from ..lag.verdicts import partition_series

    margins: dict[tuple[str, str], float] = {}
    for group, per in (getattr(gate, "margins", None) or {}).items():
        for (topic, _), margin in per.items():
            if margin.seconds is not None:
                margins[(group, topic)] = min(margin.seconds, margins.get((group, topic), margin.seconds))
    etas: dict[tuple[str, str], float] = {}
    for group_id in {g for snapshot in gate.window for g in snapshot.groups}:
        for (topic, _), points in partition_series(gate.window, group_id).items():
            eta = catch_up(points)
            if eta.seconds is not None and not eta.never:
                etas[(group_id, topic)] = max(eta.seconds, etas.get((group_id, topic), 0.0))
    for stat, values, pick in (
        ("kgroups.retention_margin_seconds", margins, min),
        ("kgroups.lag.eta_seconds", etas, max),
    ):
        if not values:
            continue
        if not emit.tagged:
            emit.gauge(stat, pick(values.values()))
            continue
        limit = max(0, settings.get_int("metrics_tag_limit"))
        ordered = sorted(values.items(), key=lambda kv: kv[1], reverse=pick is max)
        for (group, topic), value in ordered[:limit]:
            emit.gauge(stat, value, {"group": _safe(group), "topic": _safe(topic)})


def _per_group_topic(emit: _Emitter, lags: Mapping[tuple[str, str], int | None]) -> None:
    limit = max(0, settings.get_int("metrics_tag_limit"))
    known = sorted(((lag, key) for key, lag in lags.items() if lag is not None), key=lambda x: (-x[0], x[1]))
    for lag, (group, topic) in known[:limit]:
        emit.gauge("kgroups.gate.lag", lag, {"group": _safe(group), "topic": _safe(topic)})
    rest = known[limit:]
    if rest:
        emit.gauge("kgroups.gate.lag", sum(lag for lag, _ in rest), {"group": OTHER, "topic": OTHER})


@_quietly
def gate_opened(result: Mapping[str, Any], *, dag_id: str | None, task_id: str | None) -> None:
    """The gate opened: how long it waited (``waited_s`` of its result)."""
    waited = result.get("waited_s")
    if is_number(waited):
        _Emitter(dag_id, task_id).timing("kgroups.gate.wait", waited * 1000.0)


# -- the cleanup --------------------------------------------------------------------------------


@_quietly
def cleanup_ran(summary: Mapping[str, Any], *, dag_id: str | None, task_id: str | None) -> None:
    """One cleanup run, from its summary (``CleanupResult.summary()``)."""
    emit = _Emitter(dag_id, task_id)
    if is_int(summary.get("candidates")):
        emit.gauge("kgroups.cleanup.candidates", summary["candidates"])
    if summary.get("dry_run"):
        emit.incr("kgroups.cleanup.would_delete", len(summary.get("would_delete") or []))
    else:
        emit.incr("kgroups.cleanup.deleted", len(summary.get("deleted") or []))
    emit.incr("kgroups.cleanup.skipped", len(summary.get("skipped") or []))
    emit.incr("kgroups.cleanup.refused", len(summary.get("refused") or []))
    emit.incr("kgroups.cleanup.failed", len(summary.get("failed") or []))
    emit.incr("kgroups.cleanup.held", len(summary.get("held") or []))


__all__ = [
    "tags_enabled",
    "gate_checked",
    "gate_opened",
    "cleanup_ran",
    "lag_by_group_topic",
    "exact_max_seconds",
    "OTHER",
]
