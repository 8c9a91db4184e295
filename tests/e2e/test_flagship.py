"""The flagship DAG end to end: gate, clean, Spark, twice, for consecutive intervals.

The world (demo/landing.py): a producer that keeps writing order records the whole
time and remembers exactly what the broker acknowledged, and a landing consumer group that
lands files keyed by topic, partition and position range and commits after each file.

Each run: the landing consumer is paused while it is behind; the DAG starts; the gate fixes
its barrier (log end at the first check: Tansu 0.6.0 cannot answer ListOffsets by timestamp);
a spy sees that, waits until the producer has written past the barrier on every partition,
and resumes the consumer, whose catching-up batch then crosses the barrier: a landing file
straddles it on every partition, so records after the barrier are in the landing zone when
Spark reads it. The Spark result must equal, key by key, the records the producer wrote in
[previous barrier, barrier), and the two runs must partition the records exactly.
"""

from __future__ import annotations

import json
import threading

import pyarrow.parquet as pq
import pytest

from airflow_provider_kgroups.client.results import TopicPartition
from airflow_provider_kgroups.lag.gate import LagGate
from airflow_provider_kgroups.landing import list_files
from demo.history import backfill_history
from demo.landing import LandingConsumer, OrderProducer, expected_totals
from tests.support.airflow_env import events_of as lineage_events

pytestmark = pytest.mark.realbroker

PARTITIONS = 3
AHEAD = 3  # records the producer writes past the barrier, per partition, before the consumer resumes


class BarrierSpy:
    """Sees the gate fix its barrier (dag.test runs tasks and triggers in this process) and then
    lets the consumer catch up, once the producer has written past the barrier."""

    def __init__(self, monkeypatch, producer: OrderProducer, landing: LandingConsumer, topic: str) -> None:
        self.fixed = threading.Event()
        self.target: dict[int, int] = {}
        self.failures: list[BaseException] = []
        self._producer, self._landing, self._topic = producer, landing, topic
        original = LagGate.set_target

        def spy(gate, target):
            original(gate, target)
            self.target = {
                tp.partition: offset
                for offsets in target.offsets.values()
                for tp, offset in offsets.items()
                if tp.topic == topic
            }
            self.fixed.set()

        monkeypatch.setattr(LagGate, "set_target", spy)

    def arm(self) -> threading.Thread:
        self.fixed.clear()

        def release():
            try:
                if not self.fixed.wait(120):
                    raise TimeoutError("the gate never fixed a barrier")
                self._producer.wait_past({p: end + AHEAD - 1 for p, end in self.target.items()})
                self._landing.resume()
            except BaseException as exc:  # reported by the test
                self.failures.append(exc)

        thread = threading.Thread(target=release, name="barrier-spy", daemon=True)
        thread.start()
        return thread


def fall_behind(producer: OrderProducer, landing: LandingConsumer, topic: str) -> None:
    """Pause the landing consumer and let the producer get ahead of it on every partition."""
    landing.pause()
    committed = {p: landing.committed.get(TopicPartition(topic, p), 0) for p in range(PARTITIONS)}
    producer.wait_past({p: c + AHEAD - 1 for p, c in committed.items()})


def result_totals(directory: str) -> dict[str, tuple[int, int]]:
    table = pq.read_table(directory).to_pylist()
    return {r["key"]: (r["records"], r["qty"]) for r in sorted(table, key=lambda r: r["key"])}


def manifest(directory: str) -> dict:
    with open(f"{directory}/_manifest.json") as f:
        return json.load(f)


def test_gate_clean_spark_twice_reads_exactly_the_covered_ranges(
    flagship, run_dag, seed, broker, monkeypatch
):
    w = flagship
    p = w.prefix
    seed.create_topic(w.topic, partitions=PARTITIONS)
    dead, paused, system = f"{p}tmp-backfill", f"{p}weekly-report", f"connect-{p}sink"

    with (
        OrderProducer(broker.bootstrap, w.topic, PARTITIONS, rate_per_s=60) as producer,
        LandingConsumer(broker.bootstrap, w.landing_group, [w.topic], str(w.landing_root)) as landing,
    ):
        producer.produce(10 * PARTITIONS)
        producer.start()
        landing.start()
        landing.wait_committed({(w.topic, q): 5 for q in range(PARTITIONS)})
        for group_id in (dead, paused, system):
            seed.commit(group_id, {(w.topic, 0): 4})
        backfill_history(
            str(w.history),
            broker.bootstrap,
            {
                dead: [(240, 0), (120, 0), (1, 0)],  # no commit progress for 10 days
                system: [(240, 0), (1, 0)],  # the same, but a system group
                paused: [(240, 2), (48, 0)],  # progress two days ago: paused, not dead
            },
        )
        spy = BarrierSpy(monkeypatch, producer, landing, w.topic)
        conf = {"cleanup_dry_run": False, "barrier": "log_end"}

        # -- run 1: first interval, from earliest --------------------------------------------
        fall_behind(producer, landing, w.topic)
        helper = spy.arm()
        first = run_dag(w.dag_id, conf, folder=w.folder)
        helper.join(60)
        assert not spy.failures, spy.failures
        assert first.state == "success", first
        barrier1 = dict(spy.target)

        # -- run 2: the next interval, from where run 1's barrier ended -----------------------
        fall_behind(producer, landing, w.topic)
        helper = spy.arm()
        second = run_dag(w.dag_id, conf, folder=w.folder)
        helper.join(60)
        assert not spy.failures, spy.failures
        assert second.state == "success", second
        barrier2 = dict(spy.target)
        landing.wait_committed({(w.topic, q): barrier2[q] + 1 for q in range(PARTITIONS)})
        records = producer.snapshot()

    # the gate: the barrier it fixed is the range's end; run 2 starts where run 1 ended
    gate1, gate2 = first.xcoms["wait_for_landing"], second.xcoms["wait_for_landing"]
    assert json.loads(gate1["endingOffsets"]) == {w.topic: {str(q): e for q, e in barrier1.items()}}
    assert json.loads(gate1["startingOffsets"]) == {w.topic: {str(q): -2 for q in range(PARTITIONS)}}
    assert gate2["startingOffsets"] == gate1["endingOffsets"]  # previous_barrier from run 1's XCom
    assert json.loads(gate2["endingOffsets"]) == {w.topic: {str(q): e for q, e in barrier2.items()}}
    assert gate1["checks"] >= 2 and gate2["checks"] >= 2, "the gate should have waited for the consumer"
    assert all(barrier2[q] > barrier1[q] for q in range(PARTITIONS))

    # the cleanup (run 1): the dead group deleted after a backup, the others kept
    clean = first.xcoms["clean_dead_groups"]
    assert clean["dry_run"] is False and clean["deleted"] == [dead] and clean["failed"] == []
    assert clean["examined"] == 4 and clean["kept"] == {"active": 1, "paused": 1, "dead": 1}
    assert seed.committed(dead) == {} and seed.committed(paused) and seed.committed(system)
    assert clean["backup_url"] and second.xcoms["clean_dead_groups"]["deleted"] == []

    # The same ranges read from Kafka itself (spark-sql-kafka is not installable here, so with the
    # kgroups Python data source): the totals equal the landing zone's, key by key
    for run in (first, second):
        assert (
            run.tasks["totals_from_kafka"] == "success"
            and run.xcoms["totals_from_kafka"]["source"] == "kgroups"
        )
        from_kafka, from_landing = run.xcoms["totals_from_kafka"], run.xcoms["totals_from_landing"]
        assert result_totals(from_kafka["output"]) == result_totals(from_landing["output"])
        assert (
            from_kafka["partitions"] == from_landing["partitions"]
            and from_kafka["rows"] == from_landing["rows"]
        )

    # OpenLineage (file transport, tests/support/airflow_env.py): the gate and both Spark reads
    # report the landing topic with the range; the reads add the records they read
    for run in (first, second):
        gate = run.xcoms["wait_for_landing"]
        ending = json.loads(gate["endingOffsets"])[w.topic]
        for task_id in ("wait_for_landing", "totals_from_landing", "totals_from_kafka"):
            (dataset,) = lineage_events(w.dag_id, run.run_id, task_id)["inputs"]
            assert (dataset["namespace"], dataset["name"]) == (f"kafka://{broker.bootstrap}", w.topic), (
                task_id
            )
            offsets = dataset["inputFacets"]["kgroups_offsetRange"]["partitions"]
            assert {q: o["endingOffset"] for q, o in offsets.items()} == ending, task_id
            if task_id != "wait_for_landing":
                assert dataset["inputFacets"]["inputStatistics"]["rowCount"] == run.xcoms[task_id]["rows"]

    # Spark: exactly the records of each range, key by key; the two ranges partition the records
    ranges1 = {(w.topic, q): (None, barrier1[q]) for q in range(PARTITIONS)}
    ranges2 = {(w.topic, q): (barrier1[q], barrier2[q]) for q in range(PARTITIONS)}
    out1, out2 = first.xcoms["totals_from_landing"], second.xcoms["totals_from_landing"]
    assert result_totals(out1["output"]) == expected_totals(records, ranges1)
    assert result_totals(out2["output"]) == expected_totals(records, ranges2)
    both = expected_totals(records, {(w.topic, q): (None, barrier2[q]) for q in range(PARTITIONS)})
    merged = {
        k: tuple(
            a + b
            for a, b in zip(
                result_totals(out1["output"]).get(k, (0, 0)), result_totals(out2["output"]).get(k, (0, 0))
            )
        )
        for k in both
    }
    assert merged == both
    for out, (lows, highs) in (
        (out1, ({q: 0 for q in range(PARTITIONS)}, barrier1)),
        (out2, (barrier1, barrier2)),
    ):
        for q in range(PARTITIONS):  # Tansu: offsets are dense, so "exactly" is also first/last/count
            stats = out["partitions"][w.topic][str(q)]
            assert stats == {
                "records": highs[q] - lows[q],
                "distinct_offsets": highs[q] - lows[q],
                "first_offset": lows[q],
                "last_offset": highs[q] - 1,
            }, (q, stats)
        assert out["rows"] == sum(highs[q] - lows[q] for q in range(PARTITIONS))
    assert sum(r.offset >= barrier2[r.partition] for r in records) > 0, (
        "the producer wrote on after the barrier"
    )

    # the records after each barrier were in the landing zone when Spark read it: on every
    # partition a chosen file straddles the barrier, and the filter kept only its rows below it
    for out, barrier in ((out1, barrier1), (out2, barrier2)):
        chosen = manifest(out["output"])["landing"]["partitions"][w.topic]
        for q in range(PARTITIONS):
            last = chosen[str(q)]["files"][-1]
            start, end = (int(x) for x in last.split(".")[0].split("-"))
            assert start < barrier[q] < end, (q, last, barrier[q])
    landed = list_files(str(w.landing_root), [TopicPartition(w.topic, q) for q in range(PARTITIONS)])
    assert all(files[-1].end > barrier2[tp.partition] for tp, files in landed.items())
