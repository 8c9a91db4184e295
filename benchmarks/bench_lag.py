"""The lag engine at scale. Prints tables; asserts nothing.

  snapshot   lag + state of 3,000 groups on the 9-broker fake cluster (30 topics x 12
             partitions, 2 ms per request; a third of the groups have a live member)
  seconds    exact lag in seconds of the worst partition of each of 500 lagging groups
             (records with values of 100 bytes behind every committed offset)
  history    the history store: append and window reads of 7 days of 15-minute snapshots
             of 1,000 groups x 10 partitions (~6.7 million rows), local directory

The client side runs in a fresh subprocess per measurement (the fake cluster stays in this
process): one run for wall time, one more with tracemalloc on for the peak of Python
allocations. Requests are counted by the client (``client.stats``) per phase.

    python benchmarks/bench_lag.py [--parts snapshot,seconds,history] [--groups 3000]
                                   [--lagging 500] [--history-groups 1000] [--days 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BROKERS, TOPICS, PARTITIONS, LATENCY_S = 9, 30, 12, 0.002
FIRST_RECORD, RECORD_VALUE = 9_000, b"x" * 100
BASE_MS = 1_700_000_000_000
API_COLUMNS = (
    "Metadata",
    "FindCoordinator",
    "ConsumerGroupDescribe",
    "DescribeGroups",
    "OffsetFetch",
    "ListOffsets",
    "Fetch",
)


# -- the fake cluster ---------------------------------------------------------------------------


def seed_fake(cluster, groups: int, lagging: int) -> list[str]:
    """Topics whose partitions hold records from FIRST_RECORD to their end (10,000 + p), with
    timestamps BASE_MS + offset s; group g reads topic g % 30. The first ``lagging`` groups
    are behind (at 9,000 + g % 1,000), the others caught up; every third group has a member."""
    from tests.support.fakekafka import Member

    for t in range(TOPICS):
        topic = f"topic-{t:02d}"
        cluster.add_topic(topic, PARTITIONS, end_offsets=FIRST_RECORD, start_offsets=0)
        for p in range(PARTITIONS):
            cluster.append(
                topic,
                p,
                10_000 + p - FIRST_RECORD,
                timestamp_ms=lambda o: BASE_MS + o * 1000,
                value=RECORD_VALUE,
            )
    ids = [f"group-{g:05d}" for g in range(groups)]
    for g, group_id in enumerate(ids):
        topic = f"topic-{g % TOPICS:02d}"
        offsets = {
            (topic, p): (FIRST_RECORD + g % 1000 if g < lagging else 10_000 + p) for p in range(PARTITIONS)
        }
        members = (
            [Member(f"{group_id}-m", assignment={topic: list(range(PARTITIONS))})] if g % 3 == 0 else None
        )
        cluster.add_group(group_id, offsets=offsets, members=members)
    return ids


def run_worker(part: str, bootstrap: str, groups: list[str], traced: bool) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", part, "--bootstrap", bootstrap]
        + (["--traced"] if traced else []),
        input=json.dumps(groups),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:160]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def worker_main(part: str, bootstrap: str, traced: bool) -> None:
    from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
    from airflow_provider_kgroups.lag.seconds import lag_seconds
    from airflow_provider_kgroups.lag.snapshot import take_snapshot

    groups = json.loads(sys.stdin.read())

    async def work() -> dict:
        async with AsyncGroupsClient(ClientConfig.create(bootstrap, call_timeout_s=120)) as client:
            if part == "seconds":
                snapshot = await take_snapshot(client, groups)  # not measured: the input
                client.stats.reset()
            if traced:
                tracemalloc.start()
            started, cpu = time.perf_counter(), time.process_time()
            if part == "snapshot":
                snapshot = await take_snapshot(client, groups)
                out = {
                    "groups": len(snapshot.groups),
                    "failures": len(snapshot.failures),
                    "partitions": sum(len(g.partitions) for g in snapshot.groups.values()),
                }
            else:
                result = await lag_seconds(client, snapshot, worst_n=1)
                measured = [g.worst for g in result.values() if g.partitions]
                out = {
                    "groups": len(measured),
                    "exact": sum(1 for w in measured if w and not w.estimate),
                    "failures": sum(1 for g in result.values() if g.partitions and g.max_seconds is None),
                }
            out.update(
                seconds=time.perf_counter() - started,
                cpu_s=time.process_time() - cpu,
                requests=dict(client.stats.by_api),
            )
            if traced:
                out["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
            return out

    print(json.dumps(asyncio.run(work())))


def client_parts(parts: list[str], groups: int, lagging: int) -> list[dict]:
    from tests.support.fakekafka import FakeCluster

    rows = []
    with FakeCluster.running_in_thread(brokers=BROKERS, latency_s=LATENCY_S) as cluster:
        print(f"  seeding {groups} groups, {TOPICS * PARTITIONS} partitions with records...", file=sys.stderr)
        ids = seed_fake(cluster, groups, lagging)
        for part in parts:
            timed = run_worker(part, cluster.bootstrap, ids, traced=False)
            traced = run_worker(part, cluster.bootstrap, ids, traced=True)
            timed["peak_mb"] = traced.get("peak_mb")
            timed["part"] = part
            rows.append(timed)
            print(f"  {part} done", file=sys.stderr)
    return rows


def print_client_table(rows: list[dict], groups: int, lagging: int) -> None:
    header = (
        ("measurement", "groups", "wall s", "client CPU s", "peak MB (tracemalloc)")
        + API_COLUMNS
        + ("total req",)
    )
    lines = []
    for r in rows:
        label = (
            f"snapshot of {groups} groups"
            if r["part"] == "snapshot"
            else f"lag in seconds, worst partition of {lagging} lagging groups"
        )
        if "error" in r:
            lines.append((label, "failed: " + r["error"]) + ("",) * (len(header) - 2))
            continue
        req = r["requests"]
        ok = f"{r['groups']} ({r['failures']} failed" + (f", {r['exact']} exact)" if "exact" in r else ")")
        lines.append(
            (
                label,
                ok,
                f"{r['seconds']:.3f}",
                f"{r['cpu_s']:.3f}",
                f"{r['peak_mb']:.1f}",
                *(req.get(api, 0) for api in API_COLUMNS),
                sum(req.values()),
            )
        )
    _print(header, lines)


# -- the history store --------------------------------------------------------------------------


def history_table(snapshot_ms: int, group_ids, topics, partitions, rng):
    """One snapshot's rows (groups x partitions) as Arrow columns, no Python row objects."""
    import numpy as np
    import pyarrow as pa

    n = len(group_ids)
    log_end = 1_000_000 + (snapshot_ms - BASE_MS) // 1000 + np.arange(n, dtype=np.int64)
    lag = rng.integers(0, 5_000, n, dtype=np.int64)
    return pa.table(
        {
            "snapshot_ms": pa.array(np.full(n, snapshot_ms, dtype=np.int64)),
            "group_id": group_ids,
            "group_state": pa.array(["Stable"] * n),
            "protocol_type": pa.array(["consumer"] * n),
            "members": pa.array(np.ones(n, dtype=np.int32)),
            "topic": topics,
            "partition": partitions,
            "committed": pa.array(log_end - lag),
            "log_start": pa.array(np.zeros(n, dtype=np.int64)),
            "log_end": pa.array(log_end),
            "lag": pa.array(lag),
            "flags": pa.array([""] * n),
        }
    )


def history_part(groups: int, days: int, partitions_per_group: int = 10) -> list[tuple]:
    import numpy as np
    import pyarrow as pa

    from airflow_provider_kgroups.history.store import HistoryStore

    rng = np.random.default_rng(7)
    group_ids = pa.array([f"group-{g:05d}" for g in range(groups) for _ in range(partitions_per_group)])
    topics = pa.array([f"topic-{g % 100:03d}" for g in range(groups) for _ in range(partitions_per_group)])
    partitions = pa.array(np.tile(np.arange(partitions_per_group, dtype=np.int32), groups))
    times = [BASE_MS + i * 15 * 60_000 for i in range(days * 96)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgroups-bench-history-") as directory:
        store = HistoryStore(directory)
        generate_s = append_s = 0.0
        for at in times:
            t0 = time.perf_counter()
            table = history_table(at, group_ids, topics, partitions, rng)
            t1 = time.perf_counter()
            store.append_table(table)
            generate_s += t1 - t0
            append_s += time.perf_counter() - t1
        total_rows = len(times) * groups * partitions_per_group
        size_mb = sum(f.stat().st_size for f in Path(directory).rglob("*.parquet")) / 2**20
        rows.append(
            (
                f"append {len(times)} snapshots ({total_rows:,} rows, {size_mb:.0f} MB zstd)",
                f"{append_s:.2f}",
                f"{append_s / len(times) * 1000:.1f} ms per snapshot "
                f"(+{generate_s:.2f} s generating the Arrow tables)",
            )
        )
        end = times[-1] + 1
        for label, kwargs in [
            (f"read_table: all groups, {days} days", {"since_ms": times[0], "until_ms": end}),
            ("read_table: all groups, last 24 h", {"since_ms": end - 86_400_000, "until_ms": end}),
            (
                f"read_table: 10 groups, {days} days",
                {
                    "group_ids": [f"group-{g:05d}" for g in range(0, groups, 100)],
                    "since_ms": times[0],
                    "until_ms": end,
                },
            ),
            (
                f"read_table: 1 group, {days} days",
                {"group_ids": ["group-00001"], "since_ms": times[0], "until_ms": end},
            ),
        ]:
            pool = pa.default_memory_pool()
            t0 = time.perf_counter()
            table = store.read_table(**kwargs)
            elapsed = time.perf_counter() - t0
            rows.append(
                (
                    label,
                    f"{elapsed:.2f}",
                    f"{table.num_rows:,} rows, {table.nbytes / 2**20:.0f} MB in Arrow "
                    f"(pool peak {pool.max_memory() / 2**20:.0f} MB)",
                )
            )
            del table
        t0 = time.perf_counter()
        window = store.read_window(["group-00001"], since_ms=end - 86_400_000, until_ms=end)
        rows.append(
            (
                "read_window: 1 group, last 24 h, as snapshots",
                f"{time.perf_counter() - t0:.2f}",
                f"{len(window)} snapshots",
            )
        )
    return rows


def _print(header: tuple, lines: list[tuple]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*header))
    for line in lines:
        print(fmt.format(*map(str, line)))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="snapshot,seconds,history")
    parser.add_argument("--groups", type=int, default=3000)
    parser.add_argument("--lagging", type=int, default=500)
    parser.add_argument("--history-groups", type=int, default=1000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--worker")
    parser.add_argument("--bootstrap")
    parser.add_argument("--traced", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return worker_main(args.worker, args.bootstrap, args.traced)
    parts = args.parts.split(",")
    client = [p for p in parts if p in ("snapshot", "seconds")]
    if client:
        print_client_table(client_parts(client, args.groups, args.lagging), args.groups, args.lagging)
    if "history" in parts:
        _print(
            ("history store (local directory)", "seconds", "notes"),
            history_part(args.history_groups, args.days),
        )


if __name__ == "__main__":
    main()
