"""The embedded broker (Tansu) behind a virtual multi-broker cluster, in a process of its own, for
whole-process benchmarks: the same protocol as ``fake_server.py``, so ``bench_cli.py`` runs the
same commands against it.

Tansu (a real Kafka-protocol broker, one node) holds the data; ``proxy.VirtualCluster`` shows
it as ``--brokers`` brokers, each request delayed by ``--latency`` (leaders, coordinators and
listings spread over the virtual brokers as a real cluster spreads them). Seeded through Tansu
itself with kafka-python (``demo/seed.py``): ``--topics`` x ``--partitions``, each partition
``--records`` + (partition % 3) records, one per batch (Tansu's end offsets are exact only so);
``acc-g*`` groups committing ``--group-partitions`` partitions of one topic each, plus 2 % other
groups the pattern leaves out.

Protocol: the first stdout line is ``{"bootstrap": ..., "groups": N, "total_lag": L, "seconds":
seeding}``; then ``reset``, ``stats`` (requests per API as the proxy saw them, round trips on the
critical path, the broker side's CPU: Tansu's and the proxy's), ``quit``.

    python benchmarks/tansu_server.py --brokers 9 --groups 3000 --latency 0.010
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def end_offset(records: int, partition: int) -> int:
    return records + partition % 3


def seed(
    bootstrap: str, groups: int, topics: int, partitions: int, records: int, group_partitions: int
) -> int:
    """Seed the broker; returns the sum of the ``acc-g*`` groups' total lags."""
    from demo.seed import Seeder

    names = [f"acc-topic-{t:03d}" for t in range(topics)]
    commits: dict[str, dict[tuple[str, int], int]] = {}
    total = 0
    for g in range(groups):
        topic = names[g % topics]
        first = (g // topics) % partitions
        parts = [(first + i) % partitions for i in range(min(group_partitions, partitions))]
        commits[f"acc-g{g:06d}"] = {(topic, p): g % records for p in parts}
        total += sum(end_offset(records, p) - g % records for p in parts)
    for g in range(max(1, groups // 50)):
        commits[f"other-{g:05d}"] = {(names[g % topics], 0): 1}
    with Seeder(bootstrap, timeout=120) as seeder:
        seeder.create_topics({name: partitions for name in names})
        for name in names:
            for p in range(partitions):
                seeder.produce(name, p, end_offset(records, p))
        seeder.commit_many(commits)
    return total


def main() -> None:
    from benchmarks.fake_server import path_of, serve_commands, wave_groups, world_parser

    parser = world_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--group-partitions", type=int, default=12, help="partitions each group commits")
    parser.add_argument("--records", type=int, default=4)
    args = parser.parse_args()
    from benchmarks.proxy import VirtualCluster
    from demo.tansu import TansuBroker

    started = time.monotonic()
    with TansuBroker() as broker:
        total = seed(
            broker.bootstrap, args.groups, args.topics, args.partitions, args.records, args.group_partitions
        )
        with VirtualCluster(broker.port, brokers=args.brokers, latency_s=args.latency) as cluster:
            print(
                json.dumps(
                    {
                        "bootstrap": cluster.bootstrap,
                        "groups": args.groups,
                        "total_lag": total,
                        "seconds": round(time.monotonic() - started, 1),
                    }
                ),
                flush=True,
            )
            cpu = process_cpu_s(broker.pid) + time.process_time()

            def reset() -> None:
                nonlocal cpu
                cluster.reset()
                cpu = process_cpu_s(broker.pid) + time.process_time()

            def stats() -> dict:
                log = cluster.requests()
                return {
                    "requests": cluster.counts(),
                    "round_trips": len(wave_groups([(at, api) for at, api, _ in log], args.latency)),
                    "critical_path": path_of([(at, api) for at, api, _ in log], args.latency),
                    "nodes": {api: sorted({n for _, a, n in log if a == api}) for _, api, _ in log},
                    "fake_cpu_s": process_cpu_s(broker.pid) + time.process_time() - cpu,
                }

            serve_commands(reset, stats)


if __name__ == "__main__":
    main()
