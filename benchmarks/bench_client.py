"""Committed offsets + log-end offsets for many groups: this client vs kafka-python vs
confluent-kafka, on the same cluster in the same run. Prints a table; asserts nothing.

Scenarios:
  a  fake cluster, 9 brokers, 3,000 groups, 30 topics x 12 partitions, 2 ms per request
  b  the same, every broker below FindCoordinator v4 and OffsetFetch v8 (no batching)
  c  the real Tansu broker, 1,000 groups

Each client runs in a fresh subprocess (so peak RSS is its own); requests are counted on
the broker side (the fake's request log; a counting proxy in front of Tansu).

    python benchmarks/bench_client.py [--scenarios a,b,c] [--groups N] [--tansu-groups N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLIENTS = ("kgroups", "kafka-python", "confluent-kafka")
TOPICS, PARTITIONS, LATENCY_S, BROKERS = 30, 12, 0.002, 9
OLD_BROKER = {"FindCoordinator": 3, "OffsetFetch": 7}
#: One Tansu call lasts ~70 ms and Tansu's own time for it swings 35-70 ms: more runs for a stable median.
TANSU_MIN_REPEAT = 9
API_COLUMNS = ("Metadata", "FindCoordinator", "OffsetFetch", "ListOffsets")
LIBRARIES = {
    "kgroups": ("airflow_provider_kgroups.client",),
    "floor": ("airflow_provider_kgroups.client",),
    "kafka-python": ("kafka.admin", "kafka.protocol.consumer"),
    "confluent-kafka": ("confluent_kafka.admin",),
}


def run_worker(client: str, bootstrap: str, groups: list[str]) -> dict:
    """Run one client in a subprocess; returns its numbers plus its peak RSS."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker", client, "--bootstrap", bootstrap],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    proc.stdin.write(json.dumps(groups))
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        return {"error": (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:120]}
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    return result


def worker_main(client: str, bootstrap: str) -> None:
    import time

    from benchmarks.floor import run_floor
    from benchmarks.peers import RUNNERS

    groups = json.loads(sys.stdin.read())
    runner = run_floor if client == "floor" else RUNNERS[client]
    for module in LIBRARIES.get(client, ()):
        __import__(module)  # import time is not the work being measured
    cpu = time.process_time()
    result = runner(bootstrap, groups)
    result["cpu_s"] = time.process_time() - cpu  # all threads of the process (librdkafka's too)
    print(json.dumps(result))


def seed_fake(cluster, groups: int) -> list[str]:
    for t in range(TOPICS):
        cluster.add_topic(f"topic-{t:02d}", PARTITIONS, end_offsets=[10_000 + p for p in range(PARTITIONS)])
    ids = [f"group-{g:05d}" for g in range(groups)]
    for g, group_id in enumerate(ids):
        topic = f"topic-{g % TOPICS:02d}"
        cluster.add_group(group_id, offsets={(topic, p): 9_000 + g % 1000 for p in range(PARTITIONS)})
    return ids


def measure(
    label: str, bootstrap: str, groups: list[str], count_requests, reset_counts, clients, repeat: int
) -> list[dict]:
    """Each client ``repeat`` times, interleaved; the row is the run with the median wall time."""
    runs: dict[str, list[dict]] = {client: [] for client in clients}
    for round_ in range(repeat):
        for client in clients:
            reset_counts()
            result = run_worker(client, bootstrap, groups)
            result.update(scenario=label, client=client, requests=count_requests())
            runs[client].append(result)
            print(f"  {label} {client:16s} run {round_ + 1}/{repeat}", file=sys.stderr, flush=True)
    rows = []
    for results in runs.values():
        ok = sorted((r for r in results if "error" not in r), key=lambda r: r["seconds"])
        rows.append(ok[len(ok) // 2] if ok else results[0])
    return rows


def fake_scenario(label: str, groups: int, old_brokers: bool, clients, repeat: int) -> list[dict]:
    from tests.support.fakekafka import FakeCluster

    versions = {node: OLD_BROKER for node in range(BROKERS)} if old_brokers else None
    with FakeCluster.running_in_thread(
        brokers=BROKERS, latency_s=LATENCY_S, broker_api_versions=versions
    ) as cluster:
        ids = seed_fake(cluster, groups)
        return measure(
            label,
            cluster.bootstrap,
            ids,
            cluster.requests_by_api,
            cluster.reset_counts,
            clients + (("floor",) if not old_brokers else ()),
            repeat,
        )


def tansu_scenario(label: str, groups: int, clients, repeat: int) -> list[dict]:
    from benchmarks.proxy import CountingProxy
    from demo.seed import Seeder
    from demo.tansu import TansuBroker

    with CountingProxy() as proxy, TansuBroker(advertised_port=proxy.port) as broker:
        proxy.forward_to(broker.port)
        topics = [f"bench-{t}" for t in range(10)]
        with Seeder(proxy.bootstrap) as seeder:
            seeder.create_topics({topic: 3 for topic in topics})
            for topic in topics:
                for partition in range(3):
                    seeder.produce(topic, partition, 5)  # one record per batch: exact end offsets on Tansu
            ids = [f"tgroup-{g:05d}" for g in range(groups)]
            seeder.commit_many(
                {g: {(topics[i % 10], p): 1 + i % 4 for p in range(3)} for i, g in enumerate(ids)}
            )
        return measure(label, proxy.bootstrap, ids, proxy.counts, proxy.reset, clients, repeat)


def print_table(rows: list[dict]) -> None:
    header = (
        (
            "scenario",
            "client",
            "median wall s",
            "client CPU s",
            "peak RSS MB",
            "groups ok/err",
            "offsets",
            "ends",
        )
        + API_COLUMNS
        + ("total req",)
    )
    lines = []
    for r in rows:
        if "error" in r:
            lines.append((r["scenario"], r["client"], "failed: " + r["error"]) + ("",) * (len(header) - 3))
            continue
        req = r["requests"]
        lines.append(
            (
                r["scenario"],
                r["client"],
                f"{r['seconds']:.3f}",
                f"{r['cpu_s']:.3f}",
                f"{r['peak_rss_mb']:.0f}",
                f"{r['groups_ok']}/{r['group_errors']}",
                r["offsets"],
                r["ends"] if r["client"] != "floor" else "-",
                *(req.get(api, 0) for api in API_COLUMNS),
                sum(req.values()),
            )
        )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*header))
    for line in lines:
        print(fmt.format(*map(str, line)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="a,b,c")
    parser.add_argument("--groups", type=int, default=3000)
    parser.add_argument("--tansu-groups", type=int, default=1000)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per client; the median is shown")
    parser.add_argument("--worker")
    parser.add_argument("--bootstrap")
    args = parser.parse_args()
    if args.worker:
        return worker_main(args.worker, args.bootstrap)
    clients = tuple(args.clients.split(","))
    rows = []
    for scenario in args.scenarios.split(","):
        if scenario == "a":
            rows += fake_scenario("a:fake-9x-batched", args.groups, False, clients, args.repeat)
        elif scenario == "b":
            rows += fake_scenario("b:fake-9x-old", args.groups, True, clients, args.repeat)
        elif scenario == "c":
            rows += tansu_scenario("c:tansu", args.tansu_groups, clients, max(args.repeat, TANSU_MIN_REPEAT))
    print_table(rows)


if __name__ == "__main__":
    main()
