"""Apache Kafka (the real broker, one node, from Maven Central's jars: ``demo/apache_kafka.py``)
behind a virtual multi-broker cluster, in a process of its own, for whole-process benchmarks:
the same protocol as ``fake_server.py``, so ``bench_cli.py`` runs the same commands against it.

Kafka holds and answers the data; ``proxy.VirtualCluster`` shows it as ``--brokers`` brokers,
each request delayed by ``--latency`` (leaders, coordinators and listings spread over the
virtual brokers as a real cluster spreads them). Seeded with the fake's mixed world
(``fake_server.seed_mixed``: 5 topics of 1-6 partitions, ``--groups`` groups each committed on
about a third of them, 2 % other groups) through Kafka itself with kafka-python
(``demo/seed.py``); partition p's log ends at 1,000 + 100 p (one batch of records each).

Protocol: the first stdout line is ``{"bootstrap": ..., "groups": N, "total_lag": L,
"group_partitions": C, "seconds": starting and seeding, "version": Kafka's}``; then ``reset``,
``stats`` (requests per API as the proxy saw them, round trips on the critical path, the broker
side's CPU: Kafka's JVM and the proxy's), ``quit``.

    python benchmarks/kafka_server.py --brokers 9 --groups 3000 --latency 0.010
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class MixedWorld:
    """What ``fake_server.seed_mixed`` makes, kept to be seeded into a real broker."""

    def __init__(self) -> None:
        self.topics: dict[str, list[int]] = {}  # topic -> each partition's log end
        self.groups: dict[str, dict[tuple[str, int], int]] = {}

    def add_topic(self, name: str, partitions: int, end_offsets: list[int]) -> None:
        self.topics[name] = list(end_offsets)

    def add_group(self, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
        self.groups[group_id] = dict(offsets)


def seed(bootstrap: str, groups: int) -> tuple[int, int]:
    """Seed the broker with the mixed world; returns the ``acc-g*`` groups' total lag and their
    committed partitions."""
    from benchmarks.fake_server import seed_mixed
    from demo.seed import Seeder

    world = MixedWorld()
    total, committed = seed_mixed(world, groups, end_base=1_000, end_step=100)
    with Seeder(bootstrap, timeout=120) as seeder:
        seeder.create_topics({name: len(ends) for name, ends in world.topics.items()})
        for name, ends in world.topics.items():
            for p, end in enumerate(ends):
                seeder.produce_batch(name, p, end)
        seeder.commit_many(world.groups)
    return total, committed


def main() -> None:
    from benchmarks.fake_server import path_of, serve_commands, wave_groups, world_parser
    from benchmarks.proxy import VirtualCluster
    from benchmarks.tansu_server import process_cpu_s
    from demo.apache_kafka import NEWEST, KafkaCluster

    parser = world_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=NEWEST, help="Apache Kafka's version (KRaft: 4.x, 3.x)")
    args = parser.parse_args()
    started = time.monotonic()
    with KafkaCluster(version=args.version, nodes=1) as kafka:
        node = kafka.node_list[0]
        total, committed = seed(kafka.bootstrap, args.groups)
        port = int(node.address().rsplit(":", 1)[1])
        with VirtualCluster(port, brokers=args.brokers, latency_s=args.latency) as cluster:
            print(
                json.dumps(
                    {
                        "bootstrap": cluster.bootstrap,
                        "groups": args.groups,
                        "total_lag": total,
                        "group_partitions": committed,
                        "seconds": round(time.monotonic() - started, 1),
                        "version": args.version,
                    }
                ),
                flush=True,
            )
            pid = node.process.popen.pid
            cpu = process_cpu_s(pid) + time.process_time()

            def reset() -> None:
                nonlocal cpu
                cluster.reset()
                cpu = process_cpu_s(pid) + time.process_time()

            def stats() -> dict:
                log = cluster.requests()
                return {
                    "requests": cluster.counts(),
                    "round_trips": len(wave_groups([(at, api) for at, api, _ in log], args.latency)),
                    "critical_path": path_of([(at, api) for at, api, _ in log], args.latency),
                    "nodes": {api: sorted({n for _, a, n in log if a == api}) for _, api, _ in log},
                    "fake_cpu_s": process_cpu_s(pid) + time.process_time() - cpu,
                }

            serve_commands(reset, stats)


if __name__ == "__main__":
    main()
