"""A group's page reads a closed date's rows from its date rows (one file sorted by group) and
gives exactly the answer it gave reading the store's files; date rows that no longer stand for
the date's files are not used (and are written again)."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

from airflow_provider_kgroups.history.rollup_place import VERSION
from airflow_provider_kgroups.history.store import HistoryStore, day_of, snapshot_table
from airflow_provider_kgroups.ui.data import PageData
from airflow_provider_kgroups.ui.group import build_group
from airflow_provider_kgroups.ui.settings import PageSettings
from tests.support.builders import HOUR
from tests.support.ui_histories import idle_history, random_history, write

DAY = 24 * HOUR
WINDOWS = (("20d", 20 * DAY), ("3d", 3 * DAY), ("12h", 12 * HOUR))


def _store(tmp_path, seed: int) -> tuple[HistoryStore, list]:
    store = HistoryStore(str(tmp_path / "h"))
    snapshots = (random_history if seed % 2 else idle_history)(seed, groups=7, points=90, step_ms=2 * HOUR)
    write(store, snapshots, random.Random(seed))
    return store, snapshots


def _pages(data: PageData, groups) -> dict:
    return {
        (g, w, per): json.dumps(
            build_group(data, g, w, ms, per_partition=per, points=200, gates=[], cleanups=[]), sort_keys=True
        )
        for g in groups
        for w, ms in WINDOWS
        for per in (False, True)
    }


def _as_before(store: HistoryStore) -> PageData:
    """A page whose group rows come from the store's files, as the page read them before date rows."""
    data = PageData(PageSettings(history_url=store.url, idle_hours=4.0), save_rollups=False)
    data.rollups.group_rows = lambda ids, since, until: store.read_table(ids, since_ms=since, until_ms=until)
    return data


def _read_files(data: PageData) -> list[str]:
    """Spy: the history files the group page opens from now on."""
    opened, footers = [], data.rollups._footers
    original = footers.history_file
    footers.history_file = lambda path, size: opened.append(path) or original(path, size)
    return opened


@pytest.mark.parametrize("seed", range(4))
def test_a_group_page_from_date_rows_is_the_page_read_from_the_files(tmp_path, seed):
    store, snapshots = _store(tmp_path, seed)
    groups = sorted({g for s in snapshots for g in s.groups}) + ["never-seen"]
    expected = _pages(_as_before(store), groups)
    data = PageData(PageSettings(history_url=store.url, idle_hours=4.0))
    data.window(20 * DAY)  # the dates close: their date rows are written in the background
    data.rollups.wait_background(60)
    dates = store.dates()
    compacted = [d for d in dates[:-1] if len(store.date_files(d)) > 1]
    cache = tmp_path / "h" / "_rollups" / VERSION
    assert compacted and all((cache / f"date={d}.parquet").exists() for d in compacted)
    opened = _read_files(data)
    assert _pages(data, groups) == expected
    assert opened and not [
        p for p in opened if any(f"date={d}/" in p for d in compacted)
    ]  # only the newest date's

    # a late file for a closed date: its date rows stand for other files now, so the date's files are read
    late = snapshot_table(snapshots[3]).set_column(
        0,
        "snapshot_ms",
        pa.array([snapshots[3].taken_at_ms + 1] * snapshot_table(snapshots[3]).num_rows, pa.int64()),
    )
    store.append_table(late)
    expected = _pages(_as_before(store), groups)
    fresh = PageData(PageSettings(history_url=store.url, idle_hours=4.0))
    opened = _read_files(fresh)
    assert _pages(fresh, groups) == expected
    late_date = day_of(snapshots[3].taken_at_ms)
    assert late_date in compacted and [p for p in opened if f"date={late_date}/" in p]
    fresh.rollups.wait_background(60)  # written again for the date's files as they are now
    later = PageData(PageSettings(history_url=store.url, idle_hours=4.0))
    again = _read_files(later)
    assert _pages(later, groups) == expected and not [p for p in again if f"date={late_date}/" in p]
