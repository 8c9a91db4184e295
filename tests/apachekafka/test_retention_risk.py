"""The retention margin, the catch-up time and AT_RISK judged by Apache Kafka itself: a broker that
checks retention every second, a topic keeping records 15 s in 1 s segments, a producer at 20
records/s and a group committing 5 records/s (issue 37's scenario).

- the margin is never later than the moment Kafka deleted the first unread record it was measured
  for (the log start polled every 50 ms with ListOffsets earliest);
- the group's verdict is AT_RISK before it is LOST, and the gate with ``fail_on_verdicts=["AT_RISK"]``
  fails naming the margin and the catch-up time;
- a group reading faster than the producers gets a catch-up time within 20 % of the time it took.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from airflow_provider_kgroups.cli import main as kgroups_main
from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from airflow_provider_kgroups.client.results import TopicPartition
from airflow_provider_kgroups.lag.gate import GateSpec, GateStatus, LagGate, check_gate
from airflow_provider_kgroups.lag.retention import catch_up
from airflow_provider_kgroups.lag.retention_reads import retention_margins
from airflow_provider_kgroups.lag.snapshot import take_snapshot
from airflow_provider_kgroups.lag.verdicts import LagPoint, Verdict, VerdictRules, group_verdicts
from demo.apache_kafka import NEWEST, KafkaCluster
from tests.support.production import create_topics
from tests.support.pytest_kafka import _start

RETENTION_MS = 15_000
PRODUCE_PER_S = 20


@pytest.fixture(scope="module")
def fast_retention(tmp_path_factory) -> Iterator[KafkaCluster]:
    """Kafka checking retention every second (the default is every 5 minutes)."""
    cluster = KafkaCluster(
        version=NEWEST,
        nodes=1,
        properties={"log.retention.check.interval.ms": 1000},
        workdir=tmp_path_factory.mktemp("kafka-retention"),
    )
    yield from _start("kafka-retention", cluster)


def create_topic(bootstrap: str, name: str, config: dict[str, str]) -> None:
    create_topics(bootstrap, {name: 1}, config=config)


class Writer(threading.Thread):
    """A producer at a steady rate (CreateTime: now), until stopped."""

    def __init__(self, bootstrap: str, topic: str, per_s: float) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.topic, self.per_s, self.stop = topic, per_s, threading.Event()

    def run(self) -> None:
        started, sent = time.monotonic(), 0
        while not self.stop.is_set():
            due = int((time.monotonic() - started) * self.per_s) + 1
            for _ in range(due - sent):
                self.producer.produce(self.topic, b"x" * 100, partition=0)
            sent = max(sent, due)
            self.producer.poll(0)
            self.stop.wait(1 / self.per_s)
        self.producer.flush(10)


class LogStartWatch(threading.Thread):
    """When Kafka moved the log start past each offset (ListOffsets earliest every 50 ms)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.tp, self.stop = bootstrap, TopicPartition(topic, 0), threading.Event()
        self.moves: list[tuple[float, int]] = []  # (epoch s, new log start)

    def run(self) -> None:
        async def watch() -> None:
            async with AsyncGroupsClient(ClientConfig.create(self.bootstrap)) as client:
                last = 0
                while not self.stop.is_set():
                    start = (await client.log_start_offsets([self.tp])).values[self.tp].offset
                    if start > last:
                        self.moves.append((time.time(), start))
                        last = start
                    await asyncio.sleep(0.05)

        asyncio.run(watch())

    def deleted_at(self, offset: int) -> float | None:
        """The first time the log start was seen past ``offset`` (the record was gone)."""
        return next((t for t, start in self.moves if start > offset), None)


async def commit_at(client: AsyncGroupsClient, group: str, topic: str, offset: int) -> None:
    await client.commit_offsets(group, {TopicPartition(topic, 0): offset})


def test_the_margin_comes_before_deletion_and_at_risk_before_lost(fast_retention):
    bootstrap = fast_retention.bootstrap
    topic, group = f"risk-{uuid.uuid4().hex[:6]}", f"risk-slow-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, {"retention.ms": str(RETENTION_MS), "segment.ms": "1000"})
    writer, watch = Writer(bootstrap, topic, PRODUCE_PER_S), LogStartWatch(bootstrap, topic)
    writer.start(), watch.start()
    rules = VerdictRules(window_ms=60_000, stuck_after_ms=20_000, margin_floor_ms=2_000)
    spec = GateSpec.parse(
        group_ids=(group,),
        lag_mode="threshold",
        max_total_lag=0,
        fail_on_verdicts=("AT_RISK",),
        verdict_checks=2,
        stuck_after=20,
        retention_margin_floor=2,
    )
    measured: list[tuple[float, int, float]] = []  # (check time, first unread offset, margin s)
    verdicts: list[tuple[float, Verdict]] = []
    gate_failed: str | None = None

    async def run() -> None:
        nonlocal gate_failed
        gate = LagGate.start(spec, timeout_s=120)
        window = []
        async with AsyncGroupsClient(ClientConfig.create(bootstrap)) as client:
            started = time.monotonic()
            while time.monotonic() - started < 60:
                committed = int((time.monotonic() - started) * 5)  # the slow group: 5 records/s
                await commit_at(client, group, topic, committed)
                snapshot = await take_snapshot(client, [group])
                window.append(snapshot)
                margins = await retention_margins(client, snapshot)
                margin = margins[group].get((topic, 0))
                if margin is not None and margin.seconds is not None:
                    measured.append((snapshot.taken_at_ms / 1000, committed, margin.seconds))
                found = group_verdicts(window, rules, margins=margins)[group].verdict
                verdicts.append((time.time(), found))
                if gate_failed is None:
                    decision = await check_gate(client, gate)
                    if decision.status is GateStatus.FAIL:
                        gate_failed = decision.message
                if found is Verdict.LOST and gate_failed:
                    return
                await asyncio.sleep(0.5)

    try:
        asyncio.run(run())
    finally:
        writer.stop.set(), watch.stop.set()
        writer.join(15), watch.join(15)
    assert measured, "no margin was ever known"
    checked = 0
    for at, offset, margin in measured:
        gone = watch.deleted_at(offset)
        if gone is not None:  # Kafka deleted this first unread record: never before the margin said
            assert at + margin <= gone, (at, offset, margin, gone)
            checked += 1
    assert checked > 0, "Kafka deleted none of the records whose margin was measured within the test"
    first = {
        v: next((t for t, found in verdicts if found is v), None) for v in (Verdict.AT_RISK, Verdict.LOST)
    }
    assert first[Verdict.LOST] is not None, verdicts[-5:]
    assert first[Verdict.AT_RISK] is not None and first[Verdict.AT_RISK] < first[Verdict.LOST]
    assert gate_failed is not None and "AT_RISK" in gate_failed
    assert "retention may delete its first unread record in" in gate_failed
    assert "never catches up" in gate_failed


def test_the_catch_up_time_of_a_faster_group_is_within_a_fifth_of_the_truth(fast_retention):
    bootstrap = fast_retention.bootstrap
    topic, group = f"eta-{uuid.uuid4().hex[:6]}", f"eta-fast-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, {"retention.ms": "-1"})
    backlog = Producer({"bootstrap.servers": bootstrap})
    for _ in range(300):
        backlog.produce(topic, b"x", partition=0)
    backlog.flush(10)
    writer = Writer(bootstrap, topic, PRODUCE_PER_S)
    writer.start()

    async def run() -> tuple[float, float]:
        tp = TopicPartition(topic, 0)
        points: list[LagPoint] = []
        async with AsyncGroupsClient(ClientConfig.create(bootstrap)) as client:
            started = time.monotonic()
            eta = None
            while time.monotonic() - started < 60:
                elapsed = time.monotonic() - started
                end = (await client.log_end_offsets([tp])).values[tp].offset
                committed = min(int(elapsed * 60), end)  # the fast group: 60 records/s, never past the end
                await commit_at(client, group, topic, committed)
                points.append(LagPoint(int(time.time() * 1000), committed, 0, end, end - committed))
                if eta is None and elapsed >= 2:
                    estimate = catch_up(points)
                    assert estimate.seconds is not None and not estimate.never
                    eta = (elapsed, estimate.seconds)
                if eta is not None and committed >= end:
                    return eta[1], elapsed - eta[0]
                await asyncio.sleep(0.2)
        raise AssertionError("the fast group did not catch up within 60 s")

    try:
        predicted, actual = asyncio.run(run())
    finally:
        writer.stop.set()
        writer.join(15)
    assert abs(predicted - actual) <= 0.2 * actual, (predicted, actual)


def test_kgroups_lag_risk_shows_the_margin_the_catch_up_and_at_risk(fast_retention, capsys):
    """The CLI's view of the same rules: --risk reads the margin (retention.ms 10 min here, so the
    first unread record, written a moment ago, has at least about 10 min), --sample the catch-up
    time (a group that does not move while the producers write never catches up), --margin-floor
    the floor; table and JSON say the same."""
    bootstrap = fast_retention.bootstrap
    topic, group = f"cli-risk-{uuid.uuid4().hex[:6]}", f"cli-risk-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, {"retention.ms": "600000"})
    backlog = Producer({"bootstrap.servers": bootstrap})
    for _ in range(50):
        backlog.produce(topic, b"x", partition=0)
    backlog.flush(10)
    asyncio.run(commit_once(bootstrap, group, topic, 10))
    written_by = time.time()

    def lag(*extra: str) -> tuple[int, str]:
        capsys.readouterr()
        code = kgroups_main(["-b", bootstrap, "lag", group, *extra])
        return code, capsys.readouterr().out

    code, out = lag("--format", "json")
    assert code == 0 and '"risk":' not in out  # without the options: as before
    writer = Writer(bootstrap, topic, PRODUCE_PER_S)
    writer.start()
    try:
        code, out = lag("--format", "json", "--risk", "--sample", "2s", "--margin-floor", "20m")
        taken = time.time()
        _, table = lag("--risk", "--sample", "1s", "--margin-floor", "5m")
    finally:
        writer.stop.set()
        writer.join(15)
    risk = json.loads(out)["groups"][group]["risk"]
    margin = risk["margin_seconds"]
    assert 600 - (taken - written_by) - 5 <= margin <= 600, margin
    assert risk["never_catches_up"] and risk["at_risk"]  # under the 20 min floor, and never catching up
    partition = risk["partitions"][0]
    assert partition["margin"]["basis"] == "retention_ms" and partition["catch_up"]["produce_per_s"] > 0
    header, row = (
        table.splitlines()[0].split(),
        next(line for line in table.splitlines() if "TOTAL" not in line and topic in line),
    )
    assert header[-3:] == ["MARGIN", "CATCH-UP", "NOTE"]
    assert ">=9." in row and "never" in row and "AT_RISK" in row  # never catching up: at risk over any floor


async def commit_once(bootstrap: str, group: str, topic: str, offset: int) -> None:
    async with AsyncGroupsClient(ClientConfig.create(bootstrap)) as client:
        await commit_at(client, group, topic, offset)


def _risk_of(capsys, bootstrap: str, group: str, *extra: str) -> dict:
    capsys.readouterr()
    code = kgroups_main(["-b", bootstrap, "lag", group, "--format", "json", "--risk", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)["groups"][group]["risk"]


def _topic_with_backlog(bootstrap: str, config: dict[str, str], group: str, committed: int) -> str:
    topic = f"doc-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, config)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(topic, b"v", key=b"k%d" % i, partition=0)
    producer.flush(10)
    asyncio.run(commit_once(bootstrap, group, topic, committed))
    return topic


@pytest.mark.parametrize(
    "config, basis, says",
    [
        ({"cleanup.policy": "compact"}, "compacted", "cleanup.policy=compact"),
        ({"retention.ms": "-1"}, "no_time_limit", "retention.ms=-1"),
        # a size limit may delete before the time one, by an amount no offset tells: no safe number
        ({"retention.bytes": "1048576"}, "unknown", "retention.bytes=1048576 also deletes by size"),
    ],
)
def test_a_topic_without_a_safe_time_has_no_margin_and_says_why(fast_retention, capsys, config, basis, says):
    group = f"doc-{uuid.uuid4().hex[:6]}"
    _topic_with_backlog(fast_retention.bootstrap, config, group, committed=5)
    risk = _risk_of(capsys, fast_retention.bootstrap, group)
    margin = risk["partitions"][0]["margin"]
    assert margin["seconds"] is None and margin["basis"] == basis and says in margin["reason"]
    assert risk["margin_seconds"] is None and not risk["at_risk"]


def test_an_idle_partition_has_nothing_at_risk_when_read_and_never_catches_up_when_not(
    fast_retention, capsys
):
    caught_up, behind = f"idle-a-{uuid.uuid4().hex[:6]}", f"idle-b-{uuid.uuid4().hex[:6]}"
    topic = _topic_with_backlog(fast_retention.bootstrap, {"retention.ms": "600000"}, caught_up, committed=20)
    asyncio.run(commit_once(fast_retention.bootstrap, behind, topic, 5))
    assert _risk_of(capsys, fast_retention.bootstrap, caught_up)["partitions"] == []  # nothing unread
    risk = _risk_of(capsys, fast_retention.bootstrap, behind, "--sample", "1s")
    eta = risk["partitions"][0]["catch_up"]
    assert eta["never"] and eta["consume_per_s"] == 0 and eta["produce_per_s"] == 0  # no one moves
    assert 0 < risk["margin_seconds"] <= 600 and risk["at_risk"]  # never reading it: it will be taken


def test_a_record_without_a_timestamp_gives_no_margin(kafka_old, capsys):
    """Kafka 2.8 writing the 0.9 message format (magic 0: no timestamps): unknown, never a number."""
    group = f"old-{uuid.uuid4().hex[:6]}"
    _topic_with_backlog(
        kafka_old.bootstrap, {"message.format.version": "0.9.0", "retention.ms": "600000"}, group, committed=5
    )
    margin = _risk_of(capsys, kafka_old.bootstrap, group)["partitions"][0]["margin"]
    assert margin["seconds"] is None and margin["basis"] == "unknown", margin
    assert "without a timestamp" in margin["reason"] and margin["retention_ms"] == 600_000, margin
