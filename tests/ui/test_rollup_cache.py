"""Where the page saves the history's rollups (beside the history, a configured place, or a local
one when the history is read-only), what a restarted page reads back (the newest date's saved
merge), and what is cleaned when rollups are written."""

from __future__ import annotations

import json
import logging
import tempfile

import pyarrow as pa
import pytest

from airflow_provider_kgroups.history.rollup_cache import MERGE_EVERY, MERGED
from airflow_provider_kgroups.history.rollup_place import VERSION, PlaceKind
from airflow_provider_kgroups.history.store import HistoryStore, snapshot_table
from airflow_provider_kgroups.ui.data import PageData
from airflow_provider_kgroups.ui.group import build_group
from airflow_provider_kgroups.ui.overview import build_overview
from airflow_provider_kgroups.ui.settings import PageSettings
from tests.support import readonly_fs
from tests.support.builders import HOUR, MINUTE
from tests.support.ui_histories import random_history

DAY = 24 * HOUR


@pytest.fixture
def local_temp(tmp_path, monkeypatch):
    """The system temp directory the local fallback goes under, for this test only."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _history(
    tmp_path, seed: int = 7, points: int = 60, step_ms: int = 45 * MINUTE
) -> tuple[HistoryStore, list]:
    """One file per snapshot, as the snapshot DAG writes it (the newest date has many files)."""
    store = HistoryStore(str(tmp_path / "h"))
    snapshots = random_history(seed, groups=6, points=points, step_ms=step_ms)
    for s in snapshots:
        store.append(s)
    return store, snapshots


def _answers(data: PageData, groups) -> tuple:
    overview = json.loads(build_overview(data, "w", 3 * DAY, None, "name"))
    return (
        overview["groups"],
        [
            build_group(data, g, "3d", 3 * DAY, per_partition=True, points=500, gates=[], cleanups=[])
            for g in groups
        ],
    )


def test_a_read_only_history_has_its_rollups_saved_in_a_local_directory(tmp_path, local_temp, caplog):
    store, snapshots = _history(tmp_path)
    groups = sorted({g for s in snapshots for g in s.groups})
    expected = _answers(PageData(PageSettings(history_url=store.url), save_rollups=False), groups)
    readonly_fs.register()
    settings = PageSettings(history_url=f"readonly://{store.root}")
    with caplog.at_level(logging.INFO):
        first = PageData(settings)
        assert _answers(first, groups) == expected
        first.rollups.wait_background(60)
    place = first.rollups.place
    assert place.kind is PlaceKind.LOCAL and place.root.startswith(str(local_temp / "kgroups-rollups"))
    assert [r.message for r in caplog.records if "saved local" in r.message]  # the log says which place
    assert "PermissionError" in next(r.message for r in caplog.records if "saved local" in r.message)
    assert json.loads(build_overview(first, "w", 3 * DAY, None, "name"))["rollup_cache"].startswith("local")
    assert not (tmp_path / "h" / "_rollups").exists()
    saved = {p.name for p in (local_temp / "kgroups-rollups").rglob("*") if p.is_file()}
    assert any(n.endswith(".parquet") and n.startswith("date=") for n in saved) and MERGED in saved
    second = PageData(settings)  # a restarted api-server reads them back
    assert _answers(second, groups) == expected and second.rollups.computed == 0


def test_a_configured_place_holds_the_rollups_and_one_that_cannot_be_written_is_not_routed_around(
    tmp_path, local_temp
):
    store, _snapshots = _history(tmp_path)
    cache = tmp_path / "cache"
    data = PageData(PageSettings(history_url=store.url, rollup_cache=str(cache)))
    _answers(data, ["g1"])
    data.rollups.wait_background(60)
    assert data.rollups.place.kind is PlaceKind.CONFIGURED
    assert list(cache.glob(f"store-*/{VERSION}/date=*.arrow")) and not (tmp_path / "h" / "_rollups").exists()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would be")
    data = PageData(PageSettings(history_url=store.url, rollup_cache=str(blocked)))
    _answers(data, ["g1"])
    assert data.rollups.place.kind is PlaceKind.MEMORY and not list(local_temp.iterdir())


def test_a_restarted_page_starts_the_newest_date_from_its_saved_merge_with_the_same_answers(tmp_path):
    store, snapshots = _history(tmp_path, points=70, step_ms=20 * MINUTE)
    newest = store.dates()[-1]
    assert len(store.date_files(newest)) >= MERGE_EVERY + 3
    groups = sorted({g for s in snapshots for g in s.groups})
    first = PageData(PageSettings(history_url=store.url))
    expected = _answers(first, groups)
    first.rollups.wait_background(60)
    assert (tmp_path / "h" / "_rollups" / VERSION / f"date={newest}" / MERGED).exists()
    # two more snapshots: the restarted page reads the merge and the newer files' rollups
    for i, at in enumerate((1, 2)):
        later = snapshots[-1].taken_at_ms + at * 20 * MINUTE
        table = snapshot_table(snapshots[-1 - i])
        store.append_table(table.set_column(0, "snapshot_ms", pa.array([later] * table.num_rows, pa.int64())))
    running = _answers(first, groups)  # the running page: one more rollup per file
    restarted = PageData(PageSettings(history_url=store.url))
    assert _answers(restarted, groups) == running != expected
    held = {key for key, _ in restarted.rollups.held()}
    assert f"date={newest}/{MERGED}" in held and restarted.rollups.computed == 0
    assert len([k for k in held if newest in k or "part-" in k]) < len(store.date_files(newest)) // 2


def test_writing_rollups_removes_other_versions_and_dates_the_store_no_longer_has(tmp_path):
    store, snapshots = _history(tmp_path, points=90, step_ms=HOUR)
    data = PageData(PageSettings(history_url=store.url))
    data.window(30 * DAY)
    data.rollups.wait_background(60)
    cache = tmp_path / "h" / "_rollups"
    oldest = store.dates()[0]
    dated = sorted(p.name for p in (cache / VERSION).iterdir())
    assert {f"date={oldest}.arrow", f"date={oldest}.parquet"} <= set(dated)
    (cache / "v0" / "date=2020-01-01").mkdir(parents=True)  # an older version's rollups
    (cache / "v0" / "date=2020-01-01" / "x.arrow").write_bytes(b"old")
    for path, _ in store.date_files(oldest):  # history retention deletes the oldest date
        store.filesystem.rm(path)
    store.filesystem.rmdir(f"{store.root}/date={oldest}")
    kept = [p for p in dated if oldest not in p]
    # a new date: the date before closes, its rollup is written, and the place is swept
    later = snapshots[-1].taken_at_ms + DAY
    table = snapshot_table(snapshots[-1])
    store.append_table(table.set_column(0, "snapshot_ms", pa.array([later] * table.num_rows, pa.int64())))
    data.window(30 * DAY)
    data.rollups.wait_background(60)
    assert sorted(p.name for p in cache.iterdir()) == [VERSION]
    now = sorted(p.name for p in (cache / VERSION).iterdir())
    assert not [p for p in now if oldest in p] and set(kept) - {f"date={store.dates()[-2]}"} <= set(now)
