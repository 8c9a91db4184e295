"""The groups overview: every group in the history window with its latest numbers.

Per group: the state, members and total lag of its latest snapshot, the lag in seconds then
(the worst partition's history estimate, :mod:`.series`), the verdict over the latest
snapshots, how long its committed offsets have not moved (the engine's ``last_progress`` over
the window), a sparkline of its total lag over the window (``[slice, maximum]`` of each of
:data:`SPARK_BUCKETS` equal slices holding a snapshot of it; null: its lag was unknown there),
for a group that is Empty in the newest snapshot the dead-group report
(:func:`.judging.facts_report`: why it is, or is not, a candidate), and for a group a cleanup
deleted, that run (the audit record). Unknown numbers stay ``null``, never 0.

Everything per group is computed at once over the window's columns (:class:`.data.Window`),
once per window and set of history files; each row is JSON-encoded then, so a request only
filters by pattern, sorts and joins the encoded rows.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..cleanup.evidence_text import format_time
from ..client.results import GroupState, TopicPartition
from ..history.store import table_snapshots
from ..lag.deadgroups import DeadGroupRules, GroupHealth
from ..lag.verdicts import VerdictRules
from .data import PageData, Window, floats, partition_names
from .judging import facts_report, latest_verdicts
from .trail import deletions

__all__ = ["build_overview", "overview_rows", "SPARK_BUCKETS"]

SPARK_BUCKETS = 48
_SORT_KEYS = {"lag": "total_lag", "seconds": "lag_seconds", "idle": "idle_ms"}
_NEVER = np.iinfo(np.int64).max


def overview_rows(data: PageData, window_ms: int) -> dict[str, Any]:
    """The window's rows (cached per window and history files) and the cleanup runs' deletions."""
    window = data.window(window_ms)
    audits = data.audit_names()
    if window is None:
        return {"as_of_ms": None, "since_ms": None, "groups": [], "encoded": [], "files": 0}
    return data.cached(
        "overview",
        (*window.key, audits),
        lambda: _rows(
            data, window, window_ms, data.cached("deletions", (audits,), lambda: deletions(data.store.url))
        ),
    )


class _GroupTimes(NamedTuple):
    """Per group code over the window: its first and last snapshot time (``_NEVER``/-1: none),
    the row of its last snapshot (-1: none) and the last time its offsets moved (-1: never)."""

    first_t: np.ndarray
    last_t: np.ndarray
    last_row: np.ndarray
    progress: np.ndarray


def _rows(data: PageData, w: Window, window_ms: int, deleted: dict[str, dict[str, Any]]) -> dict[str, Any]:
    size = len(data.groups)
    times = _group_times(w, size)
    spark, sampled = _sparklines(w, size, window_ms)
    latest = _latest_rows(data, w, times.last_t)
    seconds = _latest_seconds(data, w, latest)
    verdicts = _verdicts(w)
    states = [GroupState.parse(name) for name in data.states.names]
    empty_now = [
        int(c)
        for c in np.flatnonzero((times.last_t == w.as_of_ms) & (times.last_row >= 0))
        if states[w.state[times.last_row[c]]] is GroupState.EMPTY
    ]
    reports = _dead_reports(data, w, empty_now, latest, states)
    rows = []
    for code in np.flatnonzero(times.last_t >= 0):
        group_id = data.groups.names[code]
        sparkline = [
            [int(b), None if np.isnan(spark[code, b]) else int(spark[code, b])]
            for b in np.flatnonzero(sampled[code])
        ]
        rows.append(
            _row(
                data,
                w,
                code,
                times,
                verdicts,
                seconds,
                sparkline,
                reports.get(group_id),
                deleted.get(group_id),
            )
        )
    return {
        "as_of_ms": w.as_of_ms,
        "since_ms": w.since_ms,
        "groups": rows,
        "encoded": [json.dumps(r, separators=(",", ":")).encode() for r in rows],
        "files": len(w.rollups),
        "idle_hours": data.settings.idle_hours,
        "rollup_cache": data.rollups.place.describe(),
    }


def _group_times(w: Window, size: int) -> _GroupTimes:
    g, t = w.group, w.t
    first_t = np.full(size, _NEVER)
    np.minimum.at(first_t, g, t)
    last_t = np.full(size, -1)
    np.maximum.at(last_t, g, t)
    at_last = t == last_t[g]
    last_row = np.full(size, -1)
    last_row[g[at_last]] = np.flatnonzero(at_last)
    moved = (w.changed == 1) & (t > first_t[g])  # the window's first point of a group is never progress
    progress = np.full(size, -1)
    np.maximum.at(progress, g[moved], t[moved])
    return _GroupTimes(first_t, last_t, last_row, progress)


def _sparklines(w: Window, size: int, window_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group (a row) and slice of the window (a column): the largest total lag (NaN: unknown)
    and whether the slice holds a snapshot of the group."""
    # flat while filled, then one row per group
    spark: np.ndarray = np.full(size * SPARK_BUCKETS, np.nan)
    sampled: np.ndarray = np.zeros(size * SPARK_BUCKETS, dtype=bool)
    cell = w.group * SPARK_BUCKETS + np.minimum(
        (w.t - w.since_ms) * SPARK_BUCKETS // max(1, window_ms), SPARK_BUCKETS - 1
    )
    np.fmax.at(spark, cell, w.total)
    sampled[cell] = True
    return spark.reshape(size, SPARK_BUCKETS), sampled.reshape(size, SPARK_BUCKETS)


def _row(
    data: PageData,
    w: Window,
    code: Any,
    times: _GroupTimes,
    verdicts: dict[str, Any],
    seconds: dict[str, tuple[float | None, bool]],
    sparkline: list[list[Any]],
    dead: dict[str, Any] | None,
    removal: dict[str, Any] | None,
) -> dict[str, Any]:
    """One group's row of the overview."""
    group_id, i, seen = data.groups.names[code], times.last_row[code], int(times.last_t[code])
    in_newest = seen == w.as_of_ms
    verdict = verdicts.get(group_id) if in_newest else None
    progressed = int(times.progress[code]) if times.progress[code] >= 0 else None
    lag_seconds, at_least = seconds.get(group_id, (None, False))
    return {
        "group_id": group_id,
        "last_seen_ms": seen,
        "in_latest": in_newest,
        "state": data.states.names[w.state[i]],
        "members": int(w.members[i]),
        "total_lag": None if np.isnan(w.total[i]) else int(w.total[i]),
        "lag_seconds": lag_seconds,
        "lag_seconds_at_least": at_least,
        "verdict": verdict.verdict.value if verdict else "UNKNOWN",
        "verdict_reason": verdict.reason
        if verdict
        else f"not in the latest snapshot (last seen at {format_time(seen)})",
        "last_progress_ms": progressed,
        "idle_ms": w.as_of_ms - (progressed if progressed is not None else int(times.first_t[code])),
        "idle_at_least": progressed is None,
        "sparkline": sparkline,
        "dead": dead,
        "deleted": None
        if removal is None
        else {**removal, "seen_since": removal["at_ms"] is not None and seen > removal["at_ms"]},
    }


def _latest_rows(data: PageData, w: Window, last_t: np.ndarray) -> pa.Table:
    """Each group's rows at its latest snapshot in the window, with its group code."""
    last = pa.concat_tables([r.last for r in w.rollups])
    codes = data.groups.encode(last["group_id"])
    times = last["snapshot_ms"].to_numpy()
    keep = times == last_t[codes]
    return last.filter(pa.array(keep)).append_column("code", pa.array(codes[keep]))


def _latest_seconds(data: PageData, w: Window, latest: pa.Table) -> dict[str, tuple[float | None, bool]]:
    """Per group, at its latest snapshot: the worst partition's lag in seconds (None when a
    lagging partition cannot be estimated) and whether that is a lower bound."""
    rows = latest.filter(pc.is_valid(latest["topic"]))
    partitions = data.partitions.encode(partition_names(rows["topic"], rows["partition"]))
    seconds, bound = data.log_end_index(w.rollups, w.since_ms).seconds(
        partitions, rows["snapshot_ms"].to_numpy(), floats(rows["committed"]), floats(rows["lag"]), w.since_ms
    )
    codes = rows["code"].to_numpy()
    size = len(data.groups)
    unknown, at_least, worst = np.zeros(size, bool), np.zeros(size, bool), np.full(size, np.nan)
    np.logical_or.at(unknown, codes, np.isnan(seconds))
    np.logical_or.at(at_least, codes, bound)
    np.fmax.at(worst, codes, seconds)
    return {
        data.groups.names[c]: (None, False) if unknown[c] else (round(float(worst[c]), 1), bool(at_least[c]))
        for c in np.unique(codes)
    }


def _verdicts(w: Window) -> dict[str, Any]:
    tails = [r.tail for r in w.rollups if r.tail.num_rows]
    if not tails:
        return {}
    tail = pa.concat_tables(tails)
    tail = tail.filter(pc.greater_equal(tail["snapshot_ms"], w.as_of_ms - VerdictRules().window_ms))
    return latest_verdicts(table_snapshots(tail)) if tail.num_rows else {}


def _dead_reports(
    data: PageData, w: Window, codes: list[int], latest: pa.Table, states: list[GroupState]
) -> dict[str, dict[str, Any]]:
    """The dead-group report of each group that is Empty in the newest snapshot."""
    if not codes:
        return {}
    wanted = np.zeros(len(data.groups), bool)
    wanted[codes] = True
    rows = np.flatnonzero(wanted[w.group])
    rows = rows[np.lexsort((w.t[rows], w.group[rows]))]
    bounds = np.flatnonzero(np.r_[True, w.group[rows][1:] != w.group[rows][:-1], True])
    mine = latest.filter(pa.array(wanted[latest["code"].to_numpy()]))
    committed: dict[int, dict[TopicPartition, int]] = {c: {} for c in codes}
    unreadable: dict[int, set[TopicPartition]] = {c: set() for c in codes}
    for code, topic, partition, offset, flags in zip(
        *(mine[n].to_pylist() for n in ("code", "topic", "partition", "committed", "flags"))
    ):
        if topic is not None and offset is not None:
            committed[code][TopicPartition(topic, partition)] = offset
        elif topic is not None and "error" in (flags or "").split(","):
            unreadable[code].add(TopicPartition(topic, partition))
    rules = DeadGroupRules(idle_hours=data.settings.idle_hours)
    out = {}
    for a, b in itertools.pairwise(bounds):
        part = rows[a:b]
        code = int(w.group[part[0]])
        facts = {
            "at": w.t[part],
            "state": w.state[part],
            "members": w.members[part],
            "changed": w.changed[part],
            "unreadable": w.unreadable[part],
            "to_read": w.to_read[part],
            "ends_known": w.ends_known[part],
        }
        report = facts_report(
            data.groups.names[code],
            facts,
            states,
            data.protocols.names[w.protocol[part[-1]]],
            committed[code],
            frozenset(unreadable[code]),
            rules,
        )
        out[data.groups.names[code]] = {
            "health": report.health.value,
            "candidate": report.health is GroupHealth.DEAD,
            "deletable_by_patterns": report.permitted,
            "dead_reasons": list(report.dead_reasons),
            "evidence": list(report.evidence),
        }
    return out


def build_overview(
    data: PageData,
    window: str,
    window_ms: int,
    pattern: re.Pattern | None,
    sort: str,
    descending: bool = True,
) -> bytes:
    """The overview's JSON: the window's rows, filtered by ``pattern``, sorted; unknowns last."""
    base = overview_rows(data, window_ms)
    picked = [i for i, r in enumerate(base["groups"]) if pattern is None or pattern.match(r["group_id"])]
    rows = base["groups"]
    if sort == "name":
        picked.sort(key=lambda i: rows[i]["group_id"], reverse=descending)
    else:
        key = _SORT_KEYS[sort]
        known = sorted(
            (i for i in picked if rows[i][key] is not None),
            key=lambda i: (rows[i][key], rows[i]["group_id"]),
            reverse=descending,
        )
        picked = known + sorted(
            (i for i in picked if rows[i][key] is None), key=lambda i: rows[i]["group_id"]
        )
    head = {k: v for k, v in base.items() if k not in ("groups", "encoded")}
    head.update(
        {
            "window": window,
            "window_ms": window_ms,
            "sort": sort,
            "descending": descending,
            "total_groups": len(rows),
            "shown": len(picked),
            "spark_buckets": SPARK_BUCKETS,
        }
    )
    encoded = base["encoded"]
    return (
        json.dumps(head, separators=(",", ":"))[:-1].encode()
        + b',"groups":['
        + b",".join(encoded[i] for i in picked)
        + b"]}"
    )
