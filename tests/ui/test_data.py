"""The page's data: rollups per closed date and per newest file, saved beside the history and
read back by the next process, and the overview they give equal to the engine's answers over
the same window of stored snapshots."""

from __future__ import annotations

import json
import logging
import random

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_kgroups.history.rollup_cache import CACHE_DIR
from airflow_provider_kgroups.history.store import HistoryStore, snapshot_table, table_snapshots
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.observation import history_points, last_progress
from airflow_provider_kgroups.lag.seconds import interpolate_produce_time
from airflow_provider_kgroups.lag.verdicts import VerdictRules, group_verdicts
from airflow_provider_kgroups.ui.data import PageData
from airflow_provider_kgroups.ui.judging import history_report
from airflow_provider_kgroups.ui.overview import build_overview
from airflow_provider_kgroups.ui.settings import PageSettings
from tests.support.builders import HOUR, MINUTE
from tests.support.ui_histories import idle_history, random_history, write

DAY = 24 * HOUR


def _store(tmp_path, seed: int, points: int = 80, step_ms: int = 2 * HOUR) -> tuple[HistoryStore, list]:
    store = HistoryStore(str(tmp_path / "h"))
    snapshots = (random_history if seed % 2 else idle_history)(seed, groups=7, points=points, step_ms=step_ms)
    write(store, snapshots, random.Random(seed))
    return store, table_snapshots(pa.concat_tables([snapshot_table(s) for s in snapshots]))


def _overview(data: PageData, window_ms: int) -> dict[str, dict]:
    return {
        g["group_id"]: g for g in json.loads(build_overview(data, "w", window_ms, None, "name"))["groups"]
    }


def _seconds(window, latest, at: int) -> tuple[float | None, bool]:
    """The worst partition's lag in seconds by the engine's interpolation in the window's log ends."""
    worst, bound = None, False
    for p in latest.partitions:
        if p.committed is None or p.lag is None:
            return None, False
        if p.lag == 0:
            worst = max(worst or 0.0, 0.0)
            continue
        ends = {}
        for s in window:
            for g in s.groups.values():
                for q in g.partitions:
                    if (
                        (q.topic, q.partition) == (p.topic, p.partition)
                        and q.log_end is not None
                        and s.taken_at_ms <= at
                    ):
                        ends[s.taken_at_ms] = max(ends.get(s.taken_at_ms, q.log_end), q.log_end)
        found = interpolate_produce_time(sorted(ends.items()), p.committed)
        if found is None:
            return None, False
        seconds = max(0.0, (at - (found[0] if found[0] is not None else found[1])) / 1000)
        bound = bound or found[0] is None
        worst = max(worst or 0.0, seconds)
    return (None, False) if worst is None else (round(worst, 1), bound)


@pytest.mark.parametrize("seed", range(8))
def test_the_overview_is_the_engines_answer_over_the_window(tmp_path, seed):
    store, stored = _store(tmp_path, seed)
    data = PageData(PageSettings(history_url=store.url, idle_hours=4.0))
    window_ms = random.Random(seed).choice([3 * DAY, 20 * DAY, 12 * HOUR])
    rows = _overview(data, window_ms)
    as_of = stored[-1].taken_at_ms
    window = [s for s in stored if s.taken_at_ms >= as_of - window_ms]
    verdicts = group_verdicts([s for s in window if s.taken_at_ms >= as_of - VerdictRules().window_ms])
    assert set(rows) == {g for s in window for g in s.groups}
    for group_id, row in rows.items():
        points = history_points(window, group_id)
        latest = next(s for s in window if s.taken_at_ms == points[-1].at_ms).groups[group_id]
        assert (row["last_seen_ms"], row["state"], row["members"], row["total_lag"]) == (
            points[-1].at_ms,
            latest.state.value,
            latest.members,
            latest.total_lag,
        ), group_id
        assert row["last_progress_ms"] == last_progress(points), group_id
        assert row["in_latest"] is (points[-1].at_ms == as_of)
        verdict = verdicts.get(group_id) if row["in_latest"] else None
        assert row["verdict"] == (verdict.verdict.value if verdict else "UNKNOWN"), group_id
        if row["in_latest"] and latest.state.value == "Empty":
            report = history_report(window, group_id, DeadGroupRules(idle_hours=4.0))
            assert (row["dead"]["health"], row["dead"]["evidence"]) == (
                report.health.value,
                list(report.evidence),
            )
        else:
            assert row["dead"] is None
        assert (row["lag_seconds"], row["lag_seconds_at_least"]) == _seconds(
            window, latest, points[-1].at_ms
        ), group_id
        totals = [s.groups[group_id].total_lag for s in window if group_id in s.groups]
        assert max((v for _, v in row["sparkline"] if v is not None), default=None) == max(
            (v for v in totals if v is not None), default=None
        ), group_id
        assert len(row["sparkline"]) == len(
            {
                min((s.taken_at_ms - as_of + window_ms) * 48 // window_ms, 47)
                for s in window
                if group_id in s.groups
            }
        ), group_id


def test_rollups_are_saved_beside_the_history_and_read_back_by_the_next_process(tmp_path):
    store, _ = _store(tmp_path, 3)
    first = PageData(PageSettings(history_url=store.url))
    answer = _overview(first, 30 * DAY)
    dates = store.dates()
    saved = {p.rsplit("/", 1)[-1] for p in store.filesystem.find(f"{store.root}/{CACHE_DIR}")}
    assert {
        f"date={d}.arrow" for d in dates[:-1] if len(store.date_files(d)) > 1
    } <= saved  # closed dates: one file
    assert {
        p.rsplit("/", 1)[-1] + ".arrow" for p, _ in store.date_files(dates[-1])
    } <= saved  # the newest: per file
    merged = [d for d in dates[:-1] if len(store.date_files(d)) > 1]
    assert merged and not [
        p
        for p in store.filesystem.find(f"{store.root}/{CACHE_DIR}")
        if any(f"date={d}/" in p for d in merged)
    ]  # a merged date's per-file rollups are gone
    second = PageData(PageSettings(history_url=store.url))
    assert _overview(second, 30 * DAY) == answer
    assert second.rollups.computed == 0  # everything read back, nothing rolled up again
    # a new snapshot: one more file, one more rollup; a damaged saved rollup is computed again
    damaged = next(p for p in store.filesystem.find(f"{store.root}/{CACHE_DIR}") if p.endswith(".arrow"))
    store.filesystem.pipe(damaged, b"not an arrow file")
    third = PageData(PageSettings(history_url=store.url))
    assert _overview(third, 30 * DAY) == answer and third.rollups.computed == 1


def test_with_no_place_to_save_rollups_the_page_is_served_from_memory(tmp_path, caplog):
    store, _ = _store(tmp_path, 4)
    expected = _overview(PageData(PageSettings(history_url=store.url), save_rollups=False), 30 * DAY)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would be: nothing can be saved under it")
    (tmp_path / "h" / "_rollups").write_text("likewise beside the history")
    with caplog.at_level(logging.WARNING):
        data = PageData(PageSettings(history_url=store.url, rollup_cache=str(blocked)))
        assert _overview(data, 30 * DAY) == expected
    assert sum("kept in memory only" in r.message for r in caplog.records) == 1  # said once, not per file
    assert data.rollups.place.describe() == "memory only (no writable place)"


def test_a_new_snapshot_is_one_more_small_rollup_and_a_backfill_is_rolled_up_with_what_it_overlaps(tmp_path):
    store, stored = _store(tmp_path, 5, points=30, step_ms=30 * MINUTE)
    data = PageData(PageSettings(history_url=store.url))
    _overview(data, 3 * DAY)
    computed = data.rollups.computed
    later = stored[-1].taken_at_ms + 30 * MINUTE
    moved = pa.concat_tables([snapshot_table(stored[-1])]).set_column(
        0, "snapshot_ms", pa.array([later] * len(snapshot_table(stored[-1])), pa.int64())
    )
    store.append_table(moved)
    rows = _overview(data, 3 * DAY)
    assert data.rollups.computed == computed + 1
    assert {r["last_seen_ms"] for r in rows.values() if r["in_latest"]} == {later}
    # a backfill overlapping the stored snapshots: the overlapping files are rolled up together
    backfill = stored[len(stored) // 2]
    store.append_table(
        snapshot_table(backfill).set_column(
            0, "snapshot_ms", pa.array([backfill.taken_at_ms + 1] * len(snapshot_table(backfill)), pa.int64())
        )
    )
    window = data.window(3 * DAY)
    assert window is not None and np.all(np.diff([r.min_ms for r in window.rollups]) > 0)
    assert all(a.max_ms < b.min_ms for a, b in zip(window.rollups, window.rollups[1:]))
