"""One group's page: its lag and lag in seconds over the window, one line per topic (or per
partition on demand) plus the group's total, downsampled to the chart's point budget; its
verdict changes and cleanup events on the same time axis; the gate thresholds of the DAGs
that gate on it; its latest snapshot, partition by partition; the dead-group report.

The group's rows are read for the window only, a closed date's from its date rows (one file
sorted by group: :mod:`..history.date_rows`) and the newest date's from its files, skipping the
other groups' row groups by their statistics; the log-end samples the seconds
are estimated from come from every group reading the same partitions (:class:`.series.LogEndIndex`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..cleanup.report import GroupHealthReport
from ..history.store import table_snapshots
from ..lag.deadgroups import DeadGroupRules
from ..lag.model import GroupLag
from .data import PageData, floats, partition_names
from .judging import history_report, verdict_changes
from .series import budget_per_series, downsample_indices

__all__ = ["build_group"]


def _matrix(
    times: np.ndarray,
    keys: list[tuple[str, int]],
    rows: dict[str, np.ndarray],
    seconds: np.ndarray,
    at_least: np.ndarray,
) -> dict[str, Any]:
    """Per partition over the group's snapshot times: lag, seconds, at-least flags, presence."""
    shape = (len(keys), len(times))
    lag, secs = np.full(shape, np.nan), np.full(shape, np.nan)
    bound, present = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
    where = {key: k for k, key in enumerate(keys)}
    k = np.array([where[(t, int(p))] for t, p in zip(rows["topic"], rows["partition"])], dtype=np.int64)
    col = np.searchsorted(times, rows["snapshot_ms"])
    present[k, col] = True
    lag[k, col], secs[k, col], bound[k, col] = rows["lag"], seconds, at_least
    return {"lag": lag, "seconds": secs, "at_least": bound, "present": present}


def _combine(m: dict[str, Any], which: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over the partitions ``which``: the summed lag and the worst seconds at each time (NaN when
    a partition there is unknown, or none is there), and whether that worst is a lower bound."""
    present = m["present"][which]
    lag, seconds, at_least = m["lag"][which], m["seconds"][which], m["at_least"][which]
    any_present = present.any(axis=0)
    unknown_lag = (present & np.isnan(lag)).any(axis=0)
    total = np.where(any_present & ~unknown_lag, np.where(present, lag, 0).sum(axis=0), np.nan)
    unknown_s = (present & np.isnan(seconds)).any(axis=0)
    worst = np.where(present & ~np.isnan(seconds), seconds, -1.0).max(
        axis=0, initial=-1.0
    )  # none: a group without partitions
    worst = np.where(any_present & ~unknown_s, worst, np.nan)
    bound = (present & at_least).any(axis=0) & ~np.isnan(worst)
    return total, worst, bound


def _series(
    name: str, times: np.ndarray, values: np.ndarray, budget: int, flags: np.ndarray | None = None
) -> dict[str, Any]:
    keep = downsample_indices(times.astype(np.float64), values, budget)
    data = []
    for i in keep:
        value = (
            None
            if np.isnan(values[i])
            else (round(float(values[i]), 1) if flags is not None else int(values[i]))
        )
        data.append(
            [int(times[i]), value, 1]
            if flags is not None and flags[i] and value is not None
            else [int(times[i]), value]
        )
    return {
        "name": name,
        "data": data,
        "points": sum(1 for d in data if d[1] is not None),
        "raw_points": int((~np.isnan(values)).sum()),
    }


def build_group(
    data: PageData,
    group_id: str,
    window: str,
    window_ms: int,
    *,
    per_partition: bool,
    points: int,
    gates: list[dict[str, Any]],
    cleanups: list[dict[str, Any]],
) -> dict[str, Any]:
    since, as_of, rollups = data.rollups.latest(window_ms)
    out: dict[str, Any] = {
        "group_id": group_id,
        "window": window,
        "window_ms": window_ms,
        "as_of_ms": as_of,
        "since_ms": since,
        "per_partition": per_partition,
        "points_budget": points,
        "gates": gates,
        "cleanups": cleanups,
        "found": False,
    }
    if as_of is None or since is None:  # both or neither: an empty store
        return out
    table = data.rollups.group_rows([group_id], since, as_of + 1)
    if table.num_rows == 0:
        return out
    snapshots = table_snapshots(table)
    rows_table = table.filter(pc.is_valid(table["topic"]))
    rows = _partition_rows(rows_table)
    times = np.array(sorted(s.taken_at_ms for s in snapshots), dtype=np.int64)
    keys = sorted({(t, int(p)) for t, p in zip(rows["topic"], rows["partition"])})
    partitions = data.partitions.encode(partition_names(rows_table["topic"], rows_table["partition"]))
    seconds, at_least = data.log_end_index(rollups, since).seconds(
        partitions, rows["snapshot_ms"], rows["committed"], rows["lag"], since
    )
    m = _matrix(times, keys, rows, seconds, at_least)
    changes, judged, of = verdict_changes(snapshots, group_id)
    report = history_report(snapshots, group_id, DeadGroupRules(idle_hours=data.settings.idle_hours))
    out.update(
        {
            "found": True,
            "last_seen_ms": int(times[-1]),
            "in_latest": int(times[-1]) == as_of,
            "snapshots": len(times),
            "charts": _charts(m, times, _lines(keys, per_partition), points),
            "verdicts": {"changes": changes, "judged": judged, "snapshots": of},
            "latest": _latest(snapshots[-1].groups[group_id], m, keys, times),
            "dead": _dead(report, data.settings.idle_hours),
        }
    )
    return out


def _partition_rows(rows_table: pa.Table) -> dict[str, Any]:
    """The columns of the group's partition rows that the charts are made of."""
    return {
        "snapshot_ms": rows_table["snapshot_ms"].to_numpy(),
        "topic": rows_table["topic"].to_pylist(),
        "partition": rows_table["partition"].to_numpy(),
        "committed": floats(rows_table["committed"]),
        "lag": floats(rows_table["lag"]),
    }


def _lines(keys: list[tuple[str, int]], per_partition: bool) -> list[tuple[str, np.ndarray]]:
    """The charts' lines: the total, then one per topic (or per partition), each with the indexes
    of its partitions in ``keys``; a single topic's line is the total."""
    lines: list[tuple[str, np.ndarray]] = [("total", np.arange(len(keys)))]
    if per_partition:
        lines += [(f"{t}[{p}]", np.array([k])) for k, (t, p) in enumerate(keys)]
    else:
        topics = sorted({t for t, _ in keys})
        lines += [(t, np.array([k for k, (kt, _) in enumerate(keys) if kt == t])) for t in topics]
    if len(lines) == 2 and not per_partition:
        lines = lines[:1]  # one topic: its line is the total
    return lines


def _charts(
    m: dict[str, Any], times: np.ndarray, lines: list[tuple[str, np.ndarray]], points: int
) -> dict[str, Any]:
    """The lag and seconds charts: each line downsampled to its share of the point budget."""
    budget = budget_per_series(points, len(lines))
    lag_series, seconds_series = [], []
    for name, which in lines:
        total, worst, bound = _combine(m, which)
        lag_series.append(_series(name, times, total, budget))
        seconds_series.append(_series(name, times, worst, budget, bound))
    return {
        "lag": {
            "series": lag_series,
            "points": sum(s["points"] for s in lag_series),
            "raw_points": sum(s["raw_points"] for s in lag_series),
        },
        "seconds": {
            "series": seconds_series,
            "points": sum(s["points"] for s in seconds_series),
            "raw_points": sum(s["raw_points"] for s in seconds_series),
        },
    }


def _latest(
    latest: GroupLag, m: dict[str, Any], keys: list[tuple[str, int]], times: np.ndarray
) -> dict[str, Any]:
    """The group's latest snapshot, partition by partition."""
    last = {(t, p): k for k, (t, p) in enumerate(keys)}
    return {
        "at_ms": int(times[-1]),
        "state": latest.state.value,
        "members": latest.members,
        "protocol_type": latest.protocol_type,
        "total_lag": latest.total_lag,
        "partitions": [
            _partition(p, m, last.get((p.topic, p.partition)), len(times) - 1) for p in latest.partitions
        ],
    }


def _dead(report: GroupHealthReport | None, idle_hours: float) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "health": report.health.value,
        "evidence": list(report.evidence),
        "dead_reasons": list(report.dead_reasons),
        "deletable_by_patterns": report.permitted,
        "cannot_tell": list(report.cannot_tell),
        "idle_hours": idle_hours,
    }


def _partition(p, m: dict[str, Any], k: int | None, col: int) -> dict[str, Any]:
    seconds = None if k is None or np.isnan(m["seconds"][k, col]) else round(float(m["seconds"][k, col]), 1)
    return {
        "topic": p.topic,
        "partition": p.partition,
        "committed": p.committed,
        "log_start": p.log_start,
        "log_end": p.log_end,
        "lag": p.lag,
        "flags": sorted(f.value for f in p.flags),
        "lag_seconds": seconds,
        "lag_seconds_at_least": bool(k is not None and m["at_least"][k, col]),
    }
