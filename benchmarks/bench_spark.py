"""The lag-history Spark job on a generated history: input rows per second, wall time and
peak driver memory in local mode, from 10 % to 100 % of the input. Prints a table; asserts
nothing.

The history: 7 days of 15-minute snapshots of 1,000 groups x 10 partitions (6,720,000 rows),
written with ``HistoryStore.append_table`` (one Arrow table per day, zstd Parquet, the store's
own layout). Groups follow one of a few behaviours (keeping up, slowly falling behind, stopped
while the log grows, stalled, paused for days, no partition read), so every rule of the job
has work to do. The fractions are time ranges ending at the last snapshot (``--since``), so
each run reads the newest N % of the rows, as a daily job over the last hours would.

Each fraction runs in a fresh Python process with its own Spark JVM (``local[2]``, 2 GB driver
heap, 4 shuffle partitions per core), so that the JVM's peak resident set (``VmHWM`` in
``/proc/<pid>/status``, read when the job is done) belongs to that run alone; the JVM heap in
use is also sampled every 250 ms through ``java.lang.Runtime``, and the JVM's CPU time during
the run is read from ``/proc/<pid>/stat`` (at most cores x wall time; less means other
processes competed for the cores). Dead-group rules use ``idle_hours=48`` so that the paused
groups that stopped early in the week become candidates. The wall time is the call to
``run_lag_history`` (JVM start-up excluded), including its four Parquet writes and the
read-back of small summaries.

    python benchmarks/bench_spark.py                # generate (once, cached) and run all fractions
    python benchmarks/bench_spark.py --groups 100   # a smaller history
    python benchmarks/bench_spark.py --fractions 1.0 --repeat 3 --before 77cb36e^
                                                    # this tree and an older one, interleaved
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DAY_MS = 24 * 3_600_000
STEP_MS = 15 * 60_000
START_MS = 1_714_521_600_000  # 2024-05-01 00:00 UTC
FRACTIONS = (0.10, 0.25, 0.50, 1.00)


def generate(url: str, *, groups: int, partitions: int, days: int, seed: int = 1) -> int:
    """Write the history; returns its row count."""
    import numpy as np
    import pyarrow as pa

    from airflow_provider_kgroups.history.store import HISTORY_SCHEMA, HistoryStore

    rng = np.random.default_rng(seed)  # same seed, same history
    steps = days * DAY_MS // STEP_MS
    n = groups * partitions
    # per group: 0 keeps up, 1 falls behind, 2 stopped (log grows), 3 stalled (log stops too), 4 paused
    # (Empty, no member), 5 rewound once
    behaviour = rng.choice(6, size=groups, p=[0.55, 0.15, 0.1, 0.05, 0.1, 0.05])
    b = np.repeat(behaviour, partitions)
    produced = rng.integers(0, 400, size=(steps, n)).cumsum(axis=0) + rng.integers(0, 10**6, size=n)
    produced[steps // 2 :, b == 3] = produced[steps // 2, b == 3]  # stalled: the log end stops half way
    lag = rng.integers(0, 50, size=(steps, n))
    lag[:, b == 1] += (np.arange(steps)[:, None] * rng.integers(1, 30, size=(b == 1).sum())).astype(np.int64)
    committed = np.maximum(produced - lag, 0)
    stop_at = np.repeat(rng.integers(steps // 4, steps, size=groups), partitions)  # one moment per group
    stopped = (b == 2) | (b == 3) | (b == 4)
    for col in np.flatnonzero(stopped):  # stopped / stalled / paused groups: the commit freezes
        committed[stop_at[col] :, col] = committed[stop_at[col], col]
    committed = np.minimum(np.maximum.accumulate(committed, axis=0), produced)  # commits never go back
    rewind = np.flatnonzero(b == 5)  # ... except in the groups that reset their offsets once
    at = rng.integers(steps // 2, steps, size=len(rewind))
    for col, i in zip(rewind, at):
        committed[i:, col] = np.maximum(committed[i:, col] - 10_000, 0)
    lags = produced - committed
    group_ids = np.repeat(np.array([f"group-{g:04d}" for g in range(groups)], dtype=object), partitions)
    topics = np.repeat(np.array([f"topic-{g % 100:03d}" for g in range(groups)], dtype=object), partitions)
    parts = np.tile(np.arange(partitions, dtype=np.int32), groups)
    members = np.repeat(np.where(behaviour == 4, 0, 1 + behaviour % 3).astype(np.int32), partitions)
    states = np.where(members == 0, "Empty", "Stable").astype(object)
    store = HistoryStore(url)
    per_day = DAY_MS // STEP_MS
    rows = 0
    for day in range(days):
        chunks = []
        for i in range(day * per_day, (day + 1) * per_day):
            at = START_MS + i * STEP_MS
            chunks.append(
                pa.table(
                    {
                        "snapshot_ms": pa.array(np.full(n, at, dtype=np.int64)),
                        "group_id": pa.array(group_ids, pa.string()),
                        "group_state": pa.array(states, pa.string()),
                        "protocol_type": pa.array(np.full(n, "consumer", object)),
                        "members": pa.array(members),
                        "topic": pa.array(topics, pa.string()),
                        "partition": pa.array(parts),
                        "committed": pa.array(committed[i]),
                        "log_start": pa.array(np.zeros(n, dtype=np.int64)),
                        "log_end": pa.array(produced[i]),
                        "lag": pa.array(lags[i]),
                        "flags": pa.array(np.full(n, "", object), pa.string()),
                    },
                    schema=HISTORY_SCHEMA,
                )
            )
        table = pa.concat_tables(chunks)
        store.append_table(table)
        rows += table.num_rows
    return rows


def run_one(history: str, output: str, since_ms: int, cores: int) -> dict:
    """In this (child) process: a fresh local Spark, one run of the job, its numbers."""
    from pyspark.sql import SparkSession

    from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
    from airflow_provider_kgroups.spark.lag_history import run_lag_history

    os.environ.setdefault(
        "PYSPARK_PYTHON", sys.executable
    )  # the job's Python workers judge with this package
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("bench-lag-history")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(4 * cores))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    rows_in = spark.read.parquet(history).where(f"snapshot_ms >= {since_ms}").count()
    peak_heap = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_heap
        while not done.is_set():
            peak_heap = max(peak_heap, runtime.totalMemory() - runtime.freeMemory())
            done.wait(0.25)

    def cpu_s() -> float:  # the JVM's user + system CPU time so far
        fields = Path(f"/proc/{jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    sampler = threading.Thread(target=sample, daemon=True)
    cpu_before = cpu_s()
    started = time.perf_counter()
    sampler.start()
    try:  # idle 48 h: paused groups that stopped early in the week become dead candidates
        result = run_lag_history(
            spark,
            history,
            output,
            window_minutes=60,
            since=since_ms,
            dead_rules=DeadGroupRules(idle_hours=48),
        )
    finally:
        done.set()
        sampler.join()
    seconds = time.perf_counter() - started
    cpu = cpu_s() - cpu_before
    hwm_kb = next(
        int(line.split()[1])
        for line in Path(f"/proc/{jvm_pid}/status").read_text().splitlines()
        if line.startswith("VmHWM:")
    )
    version = spark.version
    spark.stop()
    return {
        "rows": rows_in,
        "seconds": seconds,
        "peak_rss_mb": hwm_kb / 1024,
        "peak_heap_mb": peak_heap / 2**20,
        "outputs": result.rows,
        "verdicts": result.verdicts,
        "dead_candidates": len(result.dead_candidates),
        "steps": result.seconds,
        "cpu_s": cpu,
        "spark": version,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=1000)
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--days", type=int, default=7)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "kgroups-bench-spark"))
    p.add_argument(
        "--fractions",
        default=",".join(str(f) for f in FRACTIONS),
        help="input fractions to run, comma-separated (default: %(default)s)",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs per fraction and tree; the median is shown")
    p.add_argument("--before", metavar="REV", help="also run the package as of REV, interleaved run by run")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:  # one measured run, in a fresh process
        spec = json.loads(args.child)
        if spec.get("tree"):  # the older package first, for this process and (PYTHONPATH) its Python workers
            sys.path.insert(0, spec["tree"])
        print(
            "RESULT " + json.dumps(run_one(spec["history"], spec["output"], spec["since_ms"], spec["cores"]))
        )
        return 0

    work = Path(args.workdir)
    history = (
        work / f"history-v2-{args.groups}x{args.partitions}x{args.days}d"
    )  # bump when generate() changes
    if not history.exists():
        started = time.perf_counter()
        tmp = history.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        rows = generate(str(tmp), groups=args.groups, partitions=args.partitions, days=args.days)
        tmp.rename(history)
        print(f"generated {rows:,} rows in {time.perf_counter() - started:.1f} s -> {history}")
    end_ms = START_MS + args.days * DAY_MS
    trees: dict[str, Path | None] = {"this tree": None}
    if args.before:
        from benchmarks.bench_cli import before_tree

        trees[f"before ({args.before})"] = before_tree(args.before)
    fractions = [float(f) for f in args.fractions.split(",")]
    runs: dict[tuple[str, float], list[dict]] = {}
    for round_no in range(args.repeat):
        for fraction in fractions:
            for label, tree in trees.items():  # interleaved: every tree in every round
                since_ms = end_ms - round(fraction * args.days * DAY_MS / STEP_MS) * STEP_MS
                spec = {
                    "history": str(history),
                    "output": str(work / f"out-{fraction:.2f}"),
                    "since_ms": since_ms,
                    "cores": args.cores,
                    "tree": str(tree) if tree else None,
                }
                env = dict(os.environ, PYTHONPATH=str(tree)) if tree else None
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", json.dumps(spec)],
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                    env=env,
                )
                line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
                if proc.returncode != 0 or line is None:
                    print(proc.stdout[-2000:], proc.stderr[-4000:], file=sys.stderr)
                    return 1
                out = json.loads(line[len("RESULT ") :])
                out["fraction"], out["tree"] = fraction, label
                runs.setdefault((label, fraction), []).append(out)
                print(
                    f"  round {round_no + 1} {label} {fraction:>4.0%}: {out['rows']:,} rows in "
                    f"{out['seconds']:.1f} s",
                    file=sys.stderr,
                )
    results = [sorted(group, key=lambda r: r["seconds"])[len(group) // 2] for group in runs.values()]
    print(
        f"\nlag-history job, Spark {results[0]['spark']} local[{args.cores}] on {os.cpu_count()} cores, "
        f"2 GB driver, {args.groups} groups x {args.partitions} partitions, 15-min snapshots, 60-min windows, "
        f"fresh JVM per run, median of {args.repeat} interleaved run(s)"
    )
    head = (
        f"{'tree':<22} {'input':>6} {'rows':>11} {'wall s':>8} {'rows/s':>10} {'s per 1M rows':>14} {'peak RSS MB':>12} "
        f"{'peak heap MB':>13} {'JVM CPU s':>10} {'verdict rows':>13} {'window rows':>12}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        print(
            f"{r['tree']:<22} {r['fraction']:>6.0%} {r['rows']:>11,} {r['seconds']:>8.1f} {r['rows'] / r['seconds']:>10,.0f} "
            f"{r['seconds'] / (r['rows'] / 1e6):>14.2f} {r['peak_rss_mb']:>12,.0f} {r['peak_heap_mb']:>13,.0f} "
            f"{r['cpu_s']:>10.1f} {r['outputs']['partition_verdicts']:>13,} {r['outputs']['lag_windows']:>12,}"
        )
    last = next(r for r in reversed(results) if r["tree"] == "this tree")
    print(f"\n100 %: seconds per step {last['steps']}")
    print(f"100 %: group verdicts {last['verdicts']}, dead candidates {last['dead_candidates']}")
    print(
        f"JVM CPU s: the Spark JVM's CPU time during the run; at most {args.cores} x wall s, less when other "
        "processes competed for the cores"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
