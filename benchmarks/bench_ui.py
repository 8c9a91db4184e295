"""The Consumer groups page's answers on a 14-day history of 1,000 groups: how long the overview
and a group's page take to compute, cold and as the api-server keeps running. Prints a table;
asserts nothing.

The history: bench_spark's generator (15-minute snapshots of 1,000 groups x 10 partitions,
groups keeping up, falling behind, stopped, stalled, paused, rewound), 14 days: 13,440,000 rows,
written once and cached under the temp directory, in one of two layouts (``--files-per-day``):
one file per day (1), or one file per snapshot (96), as the snapshot DAG writes it.

Measured once:

* ``first open``: a page on a store whose rollups were never saved (``_rollups/`` removed): every
  file's rows read and rolled up, the rollups saved, then the overview;
* ``  background``: what the page's background thread then still does: each closed date's rows
  written in one file sorted by group (date rows), the newest date's rollups merged and saved.

Per round, interleaved, from the same state (the newest date still open, its rollups saved per file):

* ``cold``: a new page (a restarted api-server) reading the saved rollups back, then the overview;
* ``new date``: the snapshot DAG appended the first snapshot of a new date: the date before
  closes (its per-file rollups merged into one and saved), the overview again;
* ``  background``: the closed date's date rows written by the background thread (waited for);
* ``new snapshot``: one more snapshot of that date, the overview again;
* ``repeat``: the same overview again (nothing changed: served from the derived cache);
* ``group``: one group's page (a stopped group, 14 days, one line per partition).

Each is the build call plus its JSON encoding (what the API sends), wall and CPU time of this
process (the background thread's CPU included while it runs); median of the rounds. The load
average is printed: the machine is shared.

    python benchmarks/bench_ui.py                       # 3 rounds, one file per day
    python benchmarks/bench_ui.py --files-per-day 96    # one file per snapshot
    python benchmarks/bench_ui.py --rounds 5 --groups 200
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DAY_MS = 24 * 3_600_000
BACKGROUND = ("  background", " background")  # after the first open / after a new date


def history(groups: int, days: int, files_per_day: int) -> tuple[str, int, int]:
    from benchmarks.bench_spark import START_MS, STEP_MS, generate

    daily = Path(tempfile.gettempdir()) / f"kgroups-bench-ui-{groups}g-{days}d"
    if not (daily / "_generated").exists():
        shutil.rmtree(daily, ignore_errors=True)
        rows = generate(str(daily), groups=groups, partitions=10, days=days)
        (daily / "_generated").write_text(str(rows))
    url = daily if files_per_day == 1 else Path(f"{daily}-{files_per_day}f")
    for store in {daily, url}:
        remove_appended(store)
    if files_per_day != 1 and not (url / "_generated").exists():
        split(daily, url)
    return str(url), START_MS + days * DAY_MS - STEP_MS, STEP_MS


def remove_appended(store: Path) -> None:
    """The snapshots this benchmark appended (``part-9...``), their saved rollups, and the date
    folders they leave empty (an empty newest date would close the date before it)."""
    for extra in [*store.glob("date=*/part-9*"), *store.glob("_rollups/*/date=*/part-9*")]:
        extra.unlink()
    for folder in [*store.glob("date=*"), *store.glob("_rollups/*/date=*")]:
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def split(daily: Path, url: Path) -> None:
    """The daily store rewritten one file per snapshot, as the snapshot DAG appends it."""
    import pyarrow.compute as pc

    from airflow_provider_kgroups.history.store import HistoryStore

    shutil.rmtree(url, ignore_errors=True)
    source, target = HistoryStore(str(daily)), HistoryStore(str(url))
    for path, _ in source.files():
        table = source.read_file(path)
        for at in pc.unique(table["snapshot_ms"]).to_pylist():
            target.append_table(table.filter(pc.equal(table["snapshot_ms"], at)))
    (url / "_generated").write_text(str((daily / "_generated").read_text()))


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    body = out if isinstance(out, bytes) else json.dumps(out).encode()
    return time.perf_counter() - wall, time.process_time() - cpu, len(body)


def append_snapshot(url: str, at_ms: int, previous_ms: int) -> None:
    """One more snapshot of every group, as the snapshot DAG would append it (the last one, moved on)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from airflow_provider_kgroups.history.store import HistoryStore

    store = HistoryStore(url)
    last = store.read_table(since_ms=previous_ms)
    latest = pc.max(last["snapshot_ms"]).as_py()
    last = (
        last.filter(pc.equal(last["snapshot_ms"], latest)).drop_columns(["date"])
        if "date" in last.schema.names
        else last.filter(pc.equal(last["snapshot_ms"], latest))
    )
    moved = last.set_column(
        last.schema.get_field_index("snapshot_ms"),
        "snapshot_ms",
        pa.array([at_ms] * last.num_rows, pa.int64()),
    )
    path = store.append_table(moved)[0]
    os.rename(path, path.replace("/part-", "/part-9"))  # marked, so the next run removes it


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files-per-day", type=int, choices=(1, 96), default=1)
    args = parser.parse_args()
    from airflow_provider_kgroups.history.rollup_cache import CACHE_DIR
    from airflow_provider_kgroups.history.store import day_of
    from airflow_provider_kgroups.ui.data import PageData
    from airflow_provider_kgroups.ui.group import build_group
    from airflow_provider_kgroups.ui.overview import build_overview
    from airflow_provider_kgroups.ui.settings import PageSettings

    url, newest, step = history(args.groups, args.days, args.files_per_day)
    window = args.days * DAY_MS
    results: dict[str, list[tuple[float, float, int]]] = {
        name: []
        for name in (
            "first open",
            BACKGROUND[0],
            "cold",
            "new date",
            BACKGROUND[1],
            "new snapshot",
            "repeat",
            "group",
        )
    }

    def overview(data):
        return lambda: build_overview(data, f"{args.days}d", window, None, "lag")

    def background(data):
        return lambda: data.rollups.wait_background() or b""

    saved = Path(url) / CACHE_DIR
    shutil.rmtree(saved.parent, ignore_errors=True)
    first = PageData(PageSettings(history_url=url))
    results["first open"].append(timed(overview(first)))
    results[BACKGROUND[0]].append(timed(background(first)))
    del first  # as the old code's first page was: its memory is not held through the rounds
    last_date = f"date={day_of(newest)}"
    kept = Path(tempfile.mkdtemp()) / last_date  # the open date's per-file rollups, as before it closes
    shutil.copytree(saved / last_date, kept)
    for _ in range(args.rounds):
        remove_appended(Path(url))
        (saved / f"{last_date}.arrow").unlink(missing_ok=True)
        (saved / f"{last_date}.parquet").unlink(missing_ok=True)
        shutil.rmtree(saved / last_date, ignore_errors=True)
        shutil.copytree(kept, saved / last_date)
        data = PageData(PageSettings(history_url=url))
        results["cold"].append(timed(overview(data)))
        append_snapshot(url, newest + step, newest)
        results["new date"].append(timed(overview(data)))
        results[BACKGROUND[1]].append(timed(background(data)))
        append_snapshot(url, newest + 2 * step, newest + step)
        results["new snapshot"].append(timed(overview(data)))
        results["repeat"].append(timed(overview(data)))
        results["group"].append(
            timed(
                lambda data=data: build_group(
                    data,
                    "group-0002",
                    f"{args.days}d",
                    window,
                    per_partition=True,
                    points=50_000,
                    gates=[],
                    cleanups=[],
                )
            )
        )
    shutil.rmtree(kept.parent, ignore_errors=True)
    load = os.getloadavg()
    layout = "one file per day" if args.files_per_day == 1 else "one file per snapshot"
    print(
        f"Consumer groups page, {args.groups} groups x 10 partitions, {args.days} days of 15-minute snapshots "
        f"({args.groups * 10 * args.days * 96:,} rows, {layout}); median of {args.rounds} interleaved rounds; "
        f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores"
    )
    print(f"{'answer':<16}{'wall s':>9}{'cpu s':>9}{'JSON kB':>10}")
    for name, runs in results.items():
        size = statistics.median(r[2] for r in runs) / 1000
        print(
            f"{'  background' if name in BACKGROUND else name:<16}{statistics.median(r[0] for r in runs):>9.2f}"
            f"{statistics.median(r[1] for r in runs):>9.2f}{f'{size:.0f}' if size else '-':>10}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
