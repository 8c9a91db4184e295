"""Which DAGs gate on a consumer group, and at what thresholds: read from the serialized DAGs
in Airflow's metadata database (what the scheduler runs), never by importing a DAG file.

A gate is a ``ConsumerLagSensor`` task whose ``group_ids`` name the group or whose
``group_patterns`` match it (and no ``exclude_patterns`` does). Its thresholds are the
sensor's ``max_total_lag`` (records, the group's total), ``max_lag_per_partition`` (records)
and ``max_lag_seconds``, as the DAG author wrote them: a templated value (``{{ ... }}``) is
known only when a run renders it, so the page shows the template, never a guessed number.
Only DAGs the user may read are looked at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..client.errors import ConfigurationError
from ..client.numbers import is_number
from ..client.selection import compile_pattern
from ..lag.gate_spec import LagMode, threshold_names

__all__ = ["SENSOR_MODULE", "SENSOR_TYPE", "gates_in", "gating_dags"]

SENSOR_MODULE = "airflow_provider_kgroups.sensors.lag"
SENSOR_TYPE = "ConsumerLagSensor"
#: the gate's arguments shown as thresholds (lag.gate_spec: every mode's limits)
THRESHOLDS = threshold_names()


def _strings(value: Any) -> list[str] | None:
    """A list of strings, one string (a single id), or None when templated / absent."""
    if value is None:
        return []
    if isinstance(value, str):
        return None if "{{" in value else [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _matches(patterns: Iterable[str], group_id: str) -> str | None:
    for pattern in patterns:
        try:
            if compile_pattern(pattern).match(group_id):
                return pattern
        except ConfigurationError:
            continue  # the sensor refuses it at parse time; nothing gates through it
    return None


def _threshold(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if is_number(value):
        return {"value": value}
    if isinstance(value, str):
        text = value.strip()
        if "{{" in text:
            return {"template": text}
        try:
            return {"value": float(text) if "." in text else int(text)}
        except ValueError:
            return {"template": text}
    return {"template": str(value)}


def gates_in(dags: Mapping[str, Mapping[str, Any] | None], group_id: str) -> list[dict[str, Any]]:
    """The gates on ``group_id`` in serialized DAGs (``{dag_id: serialized data}``), sorted."""
    out = []
    for dag_id, data in dags.items():
        tasks = ((data or {}).get("dag") or {}).get("tasks") or []
        for task in tasks:
            var = task.get("__var", task) if isinstance(task, dict) else {}
            if (
                var.get("_task_module") != SENSOR_MODULE
                or var.get("task_type", var.get("_task_type")) != SENSOR_TYPE
            ):
                continue
            ids, patterns = _strings(var.get("group_ids")), _strings(var.get("group_patterns"))
            excludes = _strings(var.get("exclude_patterns")) or []
            if ids is not None and group_id in ids:
                how = "named in group_ids"
            else:
                pattern = _matches(patterns or [], group_id)
                if pattern is None or _matches(excludes, group_id):
                    if ids is None or patterns is None:  # templated selection: may gate on it, cannot tell
                        out.append(_gate(dag_id, var, "templated group selection: may include this group"))
                    continue
                how = f"matches group_patterns {pattern!r}"
            out.append(_gate(dag_id, var, how))
    return sorted(out, key=lambda g: (g["dag_id"], g["task_id"]))


def _gate(dag_id: str, var: Mapping[str, Any], how: str) -> dict[str, Any]:
    mode = var.get("lag_mode", LagMode.BARRIER.value)
    return {
        "dag_id": dag_id,
        "task_id": var.get("task_id"),
        "lag_mode": mode if isinstance(mode, str) else LagMode.BARRIER.value,
        "selected": how,
        "thresholds": {name: t for name in THRESHOLDS if (t := _threshold(var.get(name)))},
    }


def gating_dags(group_id: str, readable_dag_ids: Iterable[str]) -> list[dict[str, Any]]:
    """:func:`gates_in` over the latest serialized version of each DAG in ``readable_dag_ids``."""
    from airflow.models.serialized_dag import SerializedDagModel

    ids = sorted(set(readable_dag_ids))
    if not ids:
        return []
    rows = SerializedDagModel.get_latest_serialized_dags(dag_ids=ids)
    return gates_in({row.dag_id: row.data for row in rows}, group_id)
