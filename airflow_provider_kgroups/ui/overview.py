"""The groups overview: every group in the history window with its latest numbers.

Per group: the state, members and total lag of its latest snapshot, the lag in seconds then
(the worst partition's history estimate, :mod:`.series`), the verdict over the latest
snapshots, how long its committed offsets have not moved, a sparkline of its total lag over
the window (the maximum of each of :data:`SPARK_BUCKETS` equal slices), and for a group that
is Empty in the newest snapshot the dead-group report of :mod:`.judging` (why it is, or is
not, a candidate). Unknown numbers stay ``null``, never 0.

The per-group rows are computed once per window and set of history files (:class:`.data.PageData`);
a request then only filters by pattern and sorts.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..history.rollup import FileRollup, groups_in, lasts_in, tails_in, total_lag
from ..history.store import table_snapshots
from ..lag.deadgroups import DeadGroupRules, GroupHealth, format_time
from ..lag.verdicts import VerdictRules
from .data import PageData, floats, generation
from .judging import history_report, latest_verdicts

__all__ = ["build_overview", "overview_rows", "SPARK_BUCKETS"]

SPARK_BUCKETS = 48
_SORT_KEYS = {"lag": "total_lag", "seconds": "lag_seconds", "idle": "idle_ms"}


def overview_rows(data: PageData, window_ms: int) -> dict[str, Any]:
    since, as_of, rollups = data.window(window_ms)
    if as_of is None:
        return {"as_of_ms": None, "since_ms": None, "groups": [], "files": 0}
    return data.cached("overview", (generation(rollups), since, as_of),
                       lambda: _rows(data, rollups, since, as_of, window_ms))


def _rows(data: PageData, rollups: list[FileRollup], since: int, as_of: int, window_ms: int) -> dict[str, Any]:
    groups = groups_in(rollups, since, as_of + 1)
    groups = groups.append_column("total", total_lag(groups)).sort_by(
        [("group_id", "ascending"), ("snapshot_ms", "ascending")])
    ids = groups["group_id"].to_pylist()
    times = groups["snapshot_ms"].to_numpy()
    totals = floats(groups["total"])
    sums = floats(groups["committed_sum"])
    counts = groups["committed"].to_numpy()
    states, members = groups["group_state"].to_pylist(), groups["members"].to_pylist()
    bounds = [0] + [i for i in range(1, len(ids)) if ids[i] != ids[i - 1]] + [len(ids)]
    latest = lasts_in(rollups)
    index = data.log_end_index(rollups, since, as_of + 1)
    seconds = _latest_seconds(latest, index)
    tail = tails_in(rollups, as_of - VerdictRules().window_ms)
    verdicts = latest_verdicts(table_snapshots(tail)) if tail.num_rows else {}
    rows = []
    empty_now = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if a == b:
            continue
        g = ids[a]
        last = b - 1
        moved = np.flatnonzero((sums[a + 1:b] != sums[a:b - 1]) | (counts[a + 1:b] != counts[a:b - 1]))
        progressed_at = int(times[a + 1 + moved[-1]]) if len(moved) else None
        verdict = verdicts.get(g)
        in_newest = int(times[last]) == as_of
        row = {"group_id": g, "last_seen_ms": int(times[last]), "in_latest": in_newest, "state": states[last],
               "members": members[last], "total_lag": None if np.isnan(totals[last]) else int(totals[last]),
               "lag_seconds": seconds.get(g, (None, False))[0], "lag_seconds_at_least": seconds.get(g, (None, False))[1],
               "verdict": verdict.verdict.value if verdict and in_newest else "UNKNOWN",
               "verdict_reason": verdict.reason if verdict and in_newest else
               f"not in the latest snapshot (last seen at {format_time(int(times[last]))})",
               "last_progress_ms": progressed_at,
               "idle_ms": as_of - (progressed_at if progressed_at is not None else int(times[a])),
               "idle_at_least": progressed_at is None,
               "sparkline": _sparkline(times[a:b], totals[a:b], since, window_ms), "dead": None}
        rows.append(row)
        if in_newest and states[last] == "Empty":
            empty_now.append(g)
    reports = _dead_reports(data, empty_now, since, as_of)
    for row in rows:
        row["dead"] = reports.get(row["group_id"])
    return {"as_of_ms": as_of, "since_ms": since, "groups": rows, "files": len(rollups),
            "idle_hours": data.settings.idle_hours}


def _sparkline(times: np.ndarray, totals: np.ndarray, since: int, window_ms: int) -> list[int | None]:
    bucket = np.minimum(((times - since) * SPARK_BUCKETS) // max(1, window_ms), SPARK_BUCKETS - 1).astype(np.int64)
    out: list[int | None] = [None] * SPARK_BUCKETS
    known = ~np.isnan(totals)
    for b, value in zip(bucket[known], totals[known]):
        if out[b] is None or value > out[b]:
            out[b] = int(value)
    return out


def _latest_seconds(latest: pa.Table, index) -> dict[str, tuple[float | None, bool]]:
    """Per group, at its latest snapshot: the worst partition's lag in seconds (None when a
    lagging partition cannot be estimated) and whether that is a lower bound."""
    rows = latest.filter(pc.is_valid(latest["topic"]))
    out: dict[str, tuple[float | None, bool]] = {}
    unknown: set[str] = set()
    at_least: set[str] = set()
    for r in rows.select(["group_id", "snapshot_ms", "topic", "partition", "committed", "lag"]).to_pylist():
        committed = np.array([np.nan if r["committed"] is None else r["committed"]], dtype=np.float64)
        lag = np.array([np.nan if r["lag"] is None else r["lag"]], dtype=np.float64)
        seconds, bound = index.seconds(r["topic"], r["partition"], np.array([r["snapshot_ms"]], dtype=np.float64),
                                       committed, lag)
        g = r["group_id"]
        if np.isnan(seconds[0]):
            unknown.add(g)
            continue
        if bound[0]:
            at_least.add(g)
        best = out.get(g, (0.0, False))[0] or 0.0
        out[g] = (max(best, float(seconds[0])), False)
    for g in out:
        out[g] = (None, False) if g in unknown else (round(out[g][0], 1), g in at_least)
    for g in unknown - set(out):
        out[g] = (None, False)
    return out


def _dead_reports(data: PageData, group_ids: list[str], since: int, as_of: int) -> dict[str, dict[str, Any]]:
    if not group_ids:
        return {}
    rules = DeadGroupRules(idle_hours=data.settings.idle_hours)
    snapshots = table_snapshots(data.store.read_table(group_ids, since_ms=since, until_ms=as_of + 1))
    out = {}
    for g in group_ids:
        report = history_report(snapshots, g, rules)
        if report is not None:
            out[g] = {"health": report.health.value, "candidate": report.health is GroupHealth.DEAD,
                      "deletable_by_patterns": report.permitted, "dead_reasons": list(report.dead_reasons),
                      "evidence": list(report.evidence)}
    return out


def build_overview(data: PageData, window: str, window_ms: int, pattern: re.Pattern | None, sort: str,
                   descending: bool = True) -> dict[str, Any]:
    """The overview's JSON: the window's rows, filtered by ``pattern``, sorted; unknowns last."""
    base = overview_rows(data, window_ms)
    rows = [r for r in base["groups"] if pattern is None or pattern.match(r["group_id"])]
    if sort == "name":
        rows.sort(key=lambda r: r["group_id"], reverse=descending)
    else:
        key = _SORT_KEYS[sort]
        known = sorted((r for r in rows if r[key] is not None), key=lambda r: (r[key], r["group_id"]),
                       reverse=descending)
        rows = known + sorted((r for r in rows if r[key] is None), key=lambda r: r["group_id"])
    return {**base, "window": window, "window_ms": window_ms, "sort": sort, "descending": descending,
            "groups": rows, "total_groups": len(base["groups"]), "shown": len(rows),
            "spark_buckets": SPARK_BUCKETS}
