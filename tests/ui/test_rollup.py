"""Rollups of the history store against the engine: each (group, snapshot) fact a rollup keeps is
what the lag engine reads from the same stored snapshot, and the rollups of consecutive files
merge into exactly the rollup of all their rows."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from airflow_provider_kgroups.history.rollup import (
    compare_points,
    first_changes,
    merge_rollups,
    rollup_table,
    with_first_changes,
)
from airflow_provider_kgroups.history.store import HISTORY_SCHEMA, HistoryStore, table_snapshots
from airflow_provider_kgroups.lag.observation import history_points
from tests.support.ui_histories import random_history, write


def _facts(snapshots) -> dict[tuple[str, int], dict]:
    """The engine's view of every (group, snapshot): what a rollup must agree with."""
    out = {}
    for group_id in {g for s in snapshots for g in s.groups}:
        points = history_points(snapshots, group_id)
        for i, point in enumerate(points):
            lag = next(s for s in snapshots if s.taken_at_ms == point.at_ms).groups[group_id]
            out[(group_id, point.at_ms)] = {
                "total_lag": lag.total_lag,
                "group_state": lag.state.value,
                "members": lag.members,
                "committed": len(point.committed),
                "unreadable": bool(point.unreadable),
                "to_read": point.has_records_to_read,
                "ends_known": all(tp in point.log_end for tp in point.committed),
                "changed": None if i == 0 else dict(point.committed) != dict(points[i - 1].committed),
            }
    return out


def _rows(groups: pa.Table) -> dict[tuple[str, int], dict]:
    names = [
        "total_lag",
        "group_state",
        "members",
        "committed",
        "unreadable",
        "to_read",
        "ends_known",
        "changed",
    ]
    return {(r["group_id"], r["snapshot_ms"]): {n: r[n] for n in names} for r in groups.to_pylist()}


@pytest.mark.parametrize("seed", range(12))
def test_a_rollup_keeps_the_engines_facts_of_every_stored_snapshot(tmp_path, seed):
    store = HistoryStore(str(tmp_path / "h"))
    write(store, random_history(seed), random.Random(seed))
    table = store.read_table()
    rows = table.drop_columns(["date"]) if "date" in table.schema.names else table
    rollup = rollup_table(
        rows.take(pa.array(random.Random(seed).sample(range(rows.num_rows), rows.num_rows)))
    )
    assert _rows(rollup.groups) == _facts(table_snapshots(rows))
    assert rollup.groups.column("group_id").to_pylist() == sorted(
        rollup.groups.column("group_id").to_pylist()
    )


@pytest.mark.parametrize("seed", range(12))
def test_rollups_of_consecutive_files_merge_into_the_rollup_of_all_rows(tmp_path, seed):
    store = HistoryStore(str(tmp_path / "h"))
    write(store, random_history(seed, points=30), random.Random(seed))
    strings = ["group_id", "group_state", "protocol_type", "topic", "flags"]  # as the page reads files
    files = sorted(
        (store.read_file(path, read_dictionary=strings if seed % 2 else None) for path, _ in store.files()),
        key=lambda t: t["snapshot_ms"][0].as_py(),
    )
    parts = [rollup_table(t, key=f"f{i}", sources=((f"f{i}", i),)) for i, t in enumerate(files)]
    whole = rollup_table(pa.concat_tables([store.read_file(path) for path, _ in store.files()]))
    merged = merge_rollups(parts)
    assert _rows(merged.groups) == _rows(whole.groups)
    assert merged.sources == tuple((f"f{i}", i) for i in range(len(files)))
    for name in ("first", "last", "tail"):
        order = [
            ("group_id", "ascending"),
            ("snapshot_ms", "ascending"),
            ("topic", "ascending"),
            ("partition", "ascending"),
        ]
        assert getattr(merged, name).sort_by(order).equals(getattr(whole, name).sort_by(order)), name
    order = [("topic", "ascending"), ("partition", "ascending"), ("snapshot_ms", "ascending")]
    assert merged.log_ends.sort_by(order).equals(whole.log_ends.sort_by(order))
    # the newest file's first points, settled against the files before it, as the whole knows them
    settled = with_first_changes(parts[-1].groups, first_changes(parts[-1], parts[:-1]))
    assert _rows(settled).items() <= _rows(whole.groups).items()


@pytest.mark.parametrize("seed", range(20))
def test_comparing_two_points_finds_exactly_the_groups_whose_committed_offsets_differ(seed):
    rng = random.Random(seed)
    snapshots = random_history(seed, groups=10, points=rng.randint(2, 6))
    earlier, later = snapshots[rng.randint(0, len(snapshots) - 2)], snapshots[-1]
    before, after = (pa.Table.from_pylist(s.rows(), schema=HISTORY_SCHEMA) for s in (earlier, later))
    got = compare_points(after.take(pa.array(rng.sample(range(after.num_rows), after.num_rows))), before)
    expected = {
        g: {p.tp: p.committed for p in later.groups[g].partitions if p.committed is not None}
        != {p.tp: p.committed for p in earlier.groups[g].partitions if p.committed is not None}
        for g in set(later.groups) & set(earlier.groups)
    }
    assert dict(zip(got["group_id"].to_pylist(), got["changed"].to_pylist())) == expected
