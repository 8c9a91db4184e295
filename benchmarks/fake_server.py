"""The fake cluster in a process of its own, for whole-process benchmarks.

The brokers run on their own event loop (a thread of *this* process), so the benchmarked
process shares nothing with them but the sockets. Every request waits a fixed latency on
its response (``--latency``), answers are computed from in-memory state (no disk, no log
scan), so the client, not the broker, dominates; the fake's own CPU is reported separately.

Protocol: the first stdout line is ``{"bootstrap": ..., "groups": N, "total_lag": L}`` (L: the
sum of the ``acc-g*`` groups' total lags, what an exact client reports); then one command per
stdin line, one JSON answer per stdout line:

* ``reset``: forget the request log, start the CPU clock;
* ``stats``: requests per API, round trips on the critical path (see :func:`waves`; the waves
  themselves in ``critical_path``), the brokers each API went to, the largest request and
  response frames, and the fake's CPU seconds since the last reset;
* ``quit``.

``--cache``: answers of read-only APIs are kept by request bytes (correlation id aside) and
replayed for the same request: after a warm-up run the fake neither decodes the request nor
encodes the answer, so what is left of its CPU is framing and the request log (the state
never changes in a benchmark: nothing commits). Every request is still logged and delayed.

    python benchmarks/fake_server.py --brokers 9 --groups 3000 --latency 0.010
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OLD_BROKER = {"FindCoordinator": 3, "OffsetFetch": 7}
#: ApiVersions, Metadata, FindCoordinator, ListGroups, DescribeGroups, OffsetFetch, ListOffsets,
#: ConsumerGroupDescribe: nothing in a benchmark changes what they answer
READ_ONLY_APIS = frozenset({18, 3, 10, 16, 15, 9, 2, 69})


def cache_answers() -> None:
    """Replay the answer to a request already seen (see ``--cache``): ``receive`` logs the request
    without decoding it, ``respond`` sends the kept frame with this request's correlation id."""
    import struct

    from tests.support.fakekafka import connection
    from tests.support.fakekafka.codec import api_name, parse_request_prefix
    from tests.support.fakekafka.dispatch import Incoming, Reply
    from tests.support.fakekafka.reqlog import LoggedRequest, RequestLog

    receive, respond = connection.receive, connection.respond
    kept: dict[tuple[int, bytes], bytes] = {}
    correlation = struct.Struct(">i")

    def cached_receive(broker, body, request_log, arrived=None):
        key = (broker.node_id, body[:4] + body[8:])
        frame = kept.get(key)
        if frame is None:
            incoming = receive(broker, body, request_log, arrived)
            incoming.key = key
            return incoming
        prefix = parse_request_prefix(body)
        request_log.record(
            LoggedRequest(
                node=broker.node_id,
                api=api_name(prefix.api_key),
                api_key=prefix.api_key,
                api_version=prefix.api_version,
                correlation_id=prefix.correlation_id,
                client_id=None,
                request=None,
                at=RequestLog.now(),
                arrived=arrived,
                size=len(body),
            )
        )
        incoming = Incoming(prefix, None, "cached")
        incoming.key = key
        return incoming

    def cached_respond(cluster, broker, session, incoming):
        if incoming.verdict == "cached":
            frame = kept[incoming.key]
            return Reply(frame[:4] + correlation.pack(incoming.prefix.correlation_id) + frame[8:])
        reply = respond(cluster, broker, session, incoming)
        if (
            incoming.verdict == "handle"
            and incoming.prefix.api_key in READ_ONLY_APIS
            and reply.frame is not None
            and not reply.close_after
            and reply.throttle is None
            and not cluster.handler_errors
        ):
            kept[incoming.key] = reply.frame
        return reply

    connection.receive, connection.respond = cached_receive, cached_respond


def seed(cluster, groups: int, topics: int, partitions: int, prefix: str = "acc-g") -> None:
    """``groups`` groups named ``acc-g00000``.., each committed on every partition of one topic
    (round robin over ``topics`` topics), plus 2 % other groups the pattern must leave out."""
    for t in range(topics):
        cluster.add_topic(
            f"acc-topic-{t:03d}", partitions, end_offsets=[10_000 + p for p in range(partitions)]
        )
    for g in range(groups):
        topic = f"acc-topic-{g % topics:03d}"
        cluster.add_group(
            f"{prefix}{g:06d}", offsets={(topic, p): 9_000 + g % 1000 for p in range(partitions)}
        )
    for g in range(max(1, groups // 50)):
        cluster.add_group(f"other-{g:05d}", offsets={(f"acc-topic-{g % topics:03d}", 0): 1})


#: The mixed world's topics (issue 31's shape): 5 topics of 1 to 6 partitions.
MIXED_TOPICS = {"acc-orders": 6, "acc-payments": 5, "acc-shipments": 3, "acc-refunds": 2, "acc-audit": 1}


def seed_mixed(
    cluster, groups: int, prefix: str = "acc-g", end_base: int = 50_000, end_step: int = 1_000
) -> tuple[int, int]:
    """Groups as production has them: each committed on about a third of the topics (at least
    one), and not on about a fifth of those topics' partitions (at least one committed), lags
    from 0 to 999; plus 2 % other groups. Returns the ``acc-g*`` groups' total lag (an exact
    client's sum) and their committed partitions. A fixed seed: the same world every run.
    Partition p's log ends at ``end_base + end_step * p`` (a real broker is seeded with fewer
    records; above 999 every lag fits)."""
    import random

    rng = random.Random(31)
    ends = {t: [end_base + end_step * p for p in range(n)] for t, n in MIXED_TOPICS.items()}
    for topic, topic_ends in ends.items():
        cluster.add_topic(topic, len(topic_ends), end_offsets=topic_ends)
    total = committed = 0
    names = list(MIXED_TOPICS)
    for g in range(groups):
        topics = [t for t in names if rng.random() < 1 / 3] or [rng.choice(names)]
        offsets = {}
        for topic in topics:
            for p, end in enumerate(ends[topic]):
                if rng.random() >= 0.2:
                    lag = rng.randrange(1_000)
                    offsets[(topic, p)] = end - lag
                    total += lag
        if not offsets:
            topic = topics[0]
            offsets[(topic, 0)] = ends[topic][0]
        cluster.add_group(f"{prefix}{g:06d}", offsets=offsets)
        committed += len(offsets)
    for g in range(max(1, groups // 50)):
        cluster.add_group(f"other-{g:05d}", offsets={(names[g % len(names)], 0): 1})
    return total, committed


def seeded_total_lag(groups: int, partitions: int) -> int:
    """The sum of every ``acc-g*`` group's total lag as :func:`seed` made them: what an exact
    client reports (log end 10,000 + p, committed 9,000 + g % 1,000)."""
    return sum(10_000 + p - (9_000 + g % 1000) for g in range(groups) for p in range(partitions))


def waves(arrivals: list[float], latency_s: float) -> int:
    """Round trips on the critical path, from the brokers' side: requests that arrive within
    one latency of the first request of a wave were sent before that wave's answers could
    arrive, so they overlap; a request arriving later waited for an answer (or for work that
    followed one). A lower bound of the sequential depth when the client stalls between."""
    return len(wave_groups([(at, "") for at in arrivals], latency_s))


def wave_groups(requests: list[tuple[float, str]], latency_s: float) -> list[list[str]]:
    """The waves of :func:`waves`, each as the names (APIs) of its requests."""
    groups: list[list[str]] = []
    start = None
    for at, name in sorted(requests):
        if start is None or at - start >= latency_s * 0.9:
            groups.append([])
            start = at
        groups[-1].append(name)
    return groups


def critical_path(log, latency_s: float) -> str:
    """The waves as ``ApiVersions | Metadata+FindCoordinator | ...`` (``x9``: nine requests)."""
    return path_of([(r.at, r.api) for r in log], latency_s)


def path_of(requests: list[tuple[float, str]], latency_s: float) -> str:
    """:func:`critical_path` of ``(arrival time, api)`` pairs."""

    def wave(names: list[str]) -> str:
        counts = {n: names.count(n) for n in dict.fromkeys(names)}
        return "+".join(f"{n}x{c}" if c > 1 else n for n, c in counts.items())

    return " | ".join(wave(g) for g in wave_groups(requests, latency_s))


def serve_commands(reset, stats) -> None:
    """The protocol's command loop on stdin/stdout: ``reset`` and ``stats`` answer with what the
    callables return (a dict), ``quit`` ends it."""
    for line in sys.stdin:
        command = line.strip()
        if command == "quit":
            break
        if command == "reset":
            answer = reset() or {}
        elif command == "stats":
            answer = stats()
        else:
            answer = {"error": f"unknown command {command!r}"}
        print(json.dumps(answer), flush=True)


def world_parser(description: str) -> argparse.ArgumentParser:
    """The options of the benchmark world both servers build (this one, ``tansu_server.py``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--brokers", type=int, default=9)
    parser.add_argument("--groups", type=int, default=3000)
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--latency", type=float, default=0.010, help="seconds added to every request")
    return parser


def main() -> None:
    parser = world_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--old",
        action="store_true",
        help="every broker below FindCoordinator v4 / OffsetFetch v8 (Kafka before 2.8/3.0)",
    )
    parser.add_argument("--cache", action="store_true", help="replay the answers to requests already seen")
    parser.add_argument(
        "--mixed",
        action="store_true",
        help="the mixed world (seed_mixed): 5 topics of 1-6 partitions, groups on a subset of them",
    )
    args = parser.parse_args()
    if args.cache:
        cache_answers()

    from tests.support.fakekafka import FakeCluster

    with FakeCluster.running_in_thread(
        brokers=args.brokers, latency_s=args.latency, api_versions=OLD_BROKER if args.old else None
    ) as cluster:
        if args.mixed:
            total_lag, group_partitions = seed_mixed(cluster, args.groups)
        else:
            seed(cluster, args.groups, args.topics, args.partitions)
            total_lag = seeded_total_lag(args.groups, args.partitions)
            group_partitions = args.groups * args.partitions
        print(
            json.dumps(
                {
                    "bootstrap": cluster.bootstrap,
                    "groups": args.groups,
                    "total_lag": total_lag,
                    "group_partitions": group_partitions,
                }
            ),
            flush=True,
        )
        cpu = time.process_time()

        def reset() -> None:
            nonlocal cpu
            cluster.reset_counts()
            cpu = time.process_time()

        def stats() -> dict:
            log = cluster.requests()
            return {
                "requests": cluster.requests_by_api(),
                "round_trips": waves([r.at for r in log], args.latency),
                "critical_path": critical_path(log, args.latency),
                "first_node": log[0].node if log else None,
                "nodes": {api: sorted({r.node for r in log if r.api == api}) for api in {r.api for r in log}},
                "fake_cpu_s": time.process_time() - cpu,
                "largest_request": cluster.request_log.largest_request(),
                "largest_response": cluster.request_log.largest_response(),
                "handler_errors": [repr(e) for e in cluster.handler_errors],
            }

        serve_commands(reset, stats)


if __name__ == "__main__":
    main()
