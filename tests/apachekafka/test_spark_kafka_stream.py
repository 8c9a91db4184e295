"""Spark's own Kafka source as the oracle for the streaming ``kgroups`` source, on Apache Kafka.

Each test runs one query twice in the oracle's Spark (demo/spark_oracle.py: Spark 4.2.0 with
spark-sql-kafka-0-10 and the ``kgroups`` source registered): ``readStream.format("kafka")`` and
``readStream.format("kgroups")`` with the same options, each from its own fresh checkpoint, under
Trigger.AvailableNow into ``foreachBatch``; and checks that both give the same schema, the same
micro-batches (as many, each with the same rows) and the same batch boundaries (each batch's
``startOffset``/``endOffset`` and the last ``latestOffset`` of the query's progress). Where the
producer's truth is known (tests/support/production.py), Spark's rows are checked against it too,
so that "equal" cannot mean "equally wrong".

Both sources report offsets as ``{"topic": {"0": offset}}`` and a fresh query's first batch
without a start (None), so the maps compare as parsed JSON with no normalising: Spark's
``JsonUtils.partitionOffsets`` writes them from a mutable HashMap, in hash order, and dict
equality ignores order.

Where the sources differ on purpose, the test says so and pins both behaviours
(``minOffsetsPerTrigger`` under AvailableNow, docs/spark.rst).
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, NewPartitions

from demo.source_check import difference
from tests.apachekafka.test_spark_kafka_source import TOPIC_CONFIG, oracle, seeded, truth
from tests.support.consumer_groups_tool import ConsumerGroupsTool
from tests.support.production import Seeded, append_young, create_topics, seed_partition
from tests.support.spark_kafka_oracle import OracleReadError, SparkOracle, StreamResult

FIRST_MS = 1_700_000_000_000  # the records' CreateTime (the topics keep records forever: TOPIC_CONFIG)
TIMEOUT = 30.0


# -- the comparison ------------------------------------------------------------------------------


def run_both(
    oracle: SparkOracle, opts: dict[str, str], checkpoints: Path
) -> tuple[StreamResult, StreamResult]:
    """The query with format kafka, then kgroups, each continuing its own checkpoint folder."""
    spark = oracle.stream("kafka", opts, checkpoint=checkpoints / "kafka", timeout=120)
    return spark, oracle.stream("kgroups", opts, checkpoint=checkpoints / "kgroups", timeout=120)


def boundaries(result: StreamResult) -> list[tuple[int, dict | None, dict | None, int]]:
    return [(b.batch_id, b.start, b.end, b.input_rows) for b in result.batches]


def assert_same(spark: StreamResult, ours: StreamResult) -> None:
    """Same schema, as many batches, each with the same offsets and rows; same last latestOffset."""
    assert ours.schema == spark.schema
    assert boundaries(ours) == boundaries(spark), "batches differ (id, start, end, rows)"
    for theirs, mine in zip(spark.batches, ours.batches):
        assert mine.input_rows == len(mine.rows) and theirs.input_rows == len(theirs.rows)
        assert not difference(mine.rows, theirs.rows), f"batch {theirs.batch_id}, kgroups vs Spark: " + (
            difference(mine.rows, theirs.rows)
        )
    assert ours.latest == spark.latest


def log_position(oracle: SparkOracle) -> int:
    path = oracle.workdir / "worker.out"
    return path.stat().st_size if path.exists() else 0


def log_since(oracle: SparkOracle, position: int) -> str:
    """What the oracle's worker (its Spark) logged since ``position``."""
    with open(oracle.workdir / "worker.out", "rb") as log:
        log.seek(position)
        return log.read().decode(errors="replace")


def all_rows(result: StreamResult) -> list[tuple]:
    return sorted((row for b in result.batches for row in b.rows), key=lambda r: (r[2], r[3], r[4]))


def expected(*parts: list[tuple]) -> list[tuple]:
    return sorted((row for part in parts for row in part), key=lambda r: (r[2], r[3], r[4]))


def batch_ends(result: StreamResult) -> list[dict | None]:
    return [b.end for b in result.batches]


# -- data ----------------------------------------------------------------------------------------


def topic_name(what: str) -> str:
    return f"stream-{what}-{uuid.uuid4().hex[:6]}"


def append(bootstrap: str, seeded: Seeded, count: int) -> list[tuple]:
    """``count`` records at the end of ``seeded``'s partition, as a producer lingers them (a batch
    of ``count - 1`` and one alone: production.append_young); their rows (no headers column)."""
    before = seeded.end
    append_young(bootstrap, seeded, FIRST_MS + 10 * before, count=count - 1)
    return truth(seeded, before, seeded.end, headers=False)


def partitions_of(bootstrap: str, topic: str, counts: list[int]) -> tuple[list[Seeded], list[tuple]]:
    """A topic of ``len(counts)`` partitions holding that many records each; and their rows."""
    create_topics(bootstrap, {topic: len(counts)}, config=TOPIC_CONFIG)
    seeded = [Seeded(topic, partition, "lz4") for partition in range(len(counts))]
    rows = [row for s, count in zip(seeded, counts) if count for row in append(bootstrap, s, count)]
    return seeded, expected(rows)


def options(bootstrap: str, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, "startingOffsets": "earliest", **extra}


# -- the tests -----------------------------------------------------------------------------------


def test_every_codec_in_limited_batches_with_headers(oracle, seeded, kafka, tmp_path):
    """Five topics, one per codec (436 offsets each: a 300-record batch, headers, null and empty
    keys and values, a 1 MiB record, idempotent and transactional batches with an aborted one);
    maxOffsetsPerTrigger=1000 shares 200 a topic per batch: three batches."""
    opts = options(
        kafka.bootstrap,
        subscribe=",".join(s.topic for s in seeded.values()),
        maxOffsetsPerTrigger="1000",
        includeHeaders="true",
    )
    spark, ours = run_both(oracle, opts, tmp_path)
    assert_same(spark, ours)
    assert "headers:array<struct<key:string,value:binary>>" in spark.schema
    assert not difference(all_rows(spark), expected(*(truth(s, 0, s.end) for s in seeded.values())))
    assert [{t: p["0"] for t, p in end.items()} for end in batch_ends(spark)] == [
        {s.topic: offset for s in seeded.values()} for offset in (200, 400, 436)
    ]


@pytest.fixture(scope="module")
def in_flight(kafka):
    """The production layout (transactions: 30 committed, 20 aborted, 10 committed), then a
    transaction of 12 records left open while the module runs: the last stable offset stays
    where it starts, below the log end."""
    topic = topic_name("txn")
    create_topics(kafka.bootstrap, {topic: 1}, config=TOPIC_CONFIG)
    seeded = seed_partition(kafka.bootstrap, topic, 0, "zstd", big_batch=40)
    producer = Producer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "transactional.id": f"{topic}-open",
            "transaction.timeout.ms": 900_000,  # the broker's most: the coordinator must not abort it mid-module
            "log_level": 3,
        }
    )
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for i in range(12):
        producer.produce(topic, key=b"open", value=b"o%d" % i, partition=0, timestamp=FIRST_MS + i)
    assert producer.flush(TIMEOUT) == 0
    try:
        yield seeded
    finally:
        producer.abort_transaction(TIMEOUT)


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_transactions_with_each_isolation_level(oracle, in_flight, kafka, tmp_path, isolation):
    """read_committed: up to the last stable offset (the open transaction's first offset), the
    aborted records left out; read_uncommitted: to the log end, every record."""
    committed = isolation == "read_committed"
    opts = options(
        kafka.bootstrap,
        assign=json.dumps({in_flight.topic: [0]}),
        maxOffsetsPerTrigger="60",
        **{"kafka.isolation.level": isolation},
    )
    spark, ours = run_both(oracle, opts, tmp_path)
    assert_same(spark, ours)
    rows = all_rows(spark)
    open_rows = [r for r in rows if r[0] == b"open"]
    assert rows[: len(rows) - len(open_rows)] == truth(
        in_flight, 0, in_flight.end, committed=committed, headers=False
    )
    assert len(open_rows) == (0 if committed else 12)
    assert spark.batches[-1].end == {in_flight.topic: {"0": in_flight.end + (0 if committed else 12)}}
    assert len(spark.batches) == (3 if committed else 4)  # 176 or 188 offsets, 60 a batch


def test_uneven_backlogs_split_alike_by_subscribe_pattern_and_assign(oracle, kafka, tmp_path):
    """maxOffsetsPerTrigger=100 over backlogs 500/37/2/0 (and 5 in a second topic): shares of one
    offset or more are rounded down, a share below one is rounded up (the 2-record partition
    moves every batch), an empty partition stays at its end. Each subscription names the same
    five partitions (the pattern leaves out a third topic), so all six queries run alike."""
    tag = uuid.uuid4().hex[:6]
    a, b, c = (f"stream-uneven-{tag}-{name}" for name in "abc")
    _, rows_a = partitions_of(kafka.bootstrap, a, [500, 37, 2, 0])
    _, rows_b = partitions_of(kafka.bootstrap, b, [5])
    partitions_of(kafka.bootstrap, c, [3])
    subscriptions = {
        "subscribe": f"{a},{b}",
        "subscribePattern": re.escape(f"stream-uneven-{tag}-") + "[ab]",
        "assign": json.dumps({a: [0, 1, 2, 3], b: [0]}),
    }
    results = {}
    for kind, value in subscriptions.items():
        opts = options(kafka.bootstrap, maxOffsetsPerTrigger="100", **{kind: value})
        spark, ours = results[kind] = run_both(oracle, opts, tmp_path / kind)
        assert_same(spark, ours)
        assert not difference(all_rows(spark), expected(rows_a, rows_b))
    spark = results["subscribe"][0]
    assert all(boundaries(s) == boundaries(spark) for s, _ in results.values())
    # Spark's rateLimit by hand for the first batch: 100 * size / 544, floor, or ceil below one
    assert spark.batches[0].end == {a: {"0": 91, "1": 6, "2": 1, "3": 0}, b: {"0": 1}}
    assert len(spark.batches) == 6


def test_partitions_added_between_runs_are_read_from_earliest_or_are_data_loss(oracle, kafka, tmp_path):
    """A second AvailableNow run of the same checkpoint finds a third partition (created and
    written after the first run) and reads it from its first offset, within the same limits.
    Then a fourth partition whose log no longer starts at 0 (DeleteRecords to 5, a batch
    boundary): records were lost before the query could read them. failOnDataLoss=true fails
    both when the batch is planned; the same checkpoints rerun with false read it from 5."""
    topic = topic_name("grown")
    seeded, first_rows = partitions_of(kafka.bootstrap, topic, [40, 10])
    opts = options(kafka.bootstrap, subscribe=topic, maxOffsetsPerTrigger="20")
    spark, ours = run_both(oracle, opts, tmp_path)
    assert_same(spark, ours)
    assert not difference(all_rows(spark), first_rows)
    assert spark.batches[-1].end == {topic: {"0": 40, "1": 10}}

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_partitions([NewPartitions(topic, 3)], operation_timeout=TIMEOUT).values():
        future.result(TIMEOUT)
    new_rows = append(kafka.bootstrap, Seeded(topic, 2, "lz4"), 25) + append(kafka.bootstrap, seeded[0], 5)
    spark, ours = run_both(oracle, opts, tmp_path)
    assert_same(spark, ours)
    assert not difference(all_rows(spark), expected(new_rows))
    assert spark.batches[0].start == {topic: {"0": 40, "1": 10}}
    assert spark.batches[-1].end == {topic: {"0": 45, "1": 10, "2": 25}}
    assert len(spark.batches) == 2

    for future in admin.create_partitions([NewPartitions(topic, 4)], operation_timeout=TIMEOUT).values():
        future.result(TIMEOUT)
    added = Seeded(topic, 3, "lz4")
    append(kafka.bootstrap, added, 5)
    kept = append(kafka.bootstrap, added, 15)
    for future in admin.delete_records([CTP(topic, 3, 5)]).values():
        future.result(TIMEOUT)
    strict = {**opts, "failOnDataLoss": "true"}
    with pytest.raises(
        OracleReadError, match=re.escape(f"Added partition {topic}-3 starts from 5 instead of 0")
    ):
        oracle.stream("kafka", strict, checkpoint=tmp_path / "kafka")
    with pytest.raises(
        OracleReadError,
        match=re.escape(
            f"DataLossError: {topic}[3]: the partition appeared after the query started and its log "
            "starts at 5, not 0: offsets 0..4 were deleted before the query could read them. "
            "Set failOnDataLoss=false"
        ),
    ):
        oracle.stream("kgroups", strict, checkpoint=tmp_path / "kgroups")

    spark, ours = run_both(oracle, {**opts, "failOnDataLoss": "false"}, tmp_path)
    assert_same(spark, ours)
    assert all_rows(spark) == kept
    old = {"0": 45, "1": 10, "2": 25}
    assert boundaries(spark) == [(5, {topic: old}, {topic: {**old, "3": 20}}, 15)]  # batches 0-2, 3-4, 5


def test_the_initial_offsets_are_resolved_once_as_sparks_source_writes_them_down(kafka):
    """Spark asks a new query's source for its initial offset twice (for the first batch's
    latestOffset, then to plan the batch); Spark's source writes the first answer to the
    checkpoint (sources/0/0) and answers it again, so ``latest`` cannot move in between."""
    from airflow_provider_kgroups.spark.stream_options import parse_stream_options
    from airflow_provider_kgroups.spark.stream_planner import StreamPlanner

    topic = topic_name("initial")
    (seeded,), _ = partitions_of(kafka.bootstrap, topic, [5])
    planner = StreamPlanner(
        parse_stream_options({"kafka.bootstrap.servers": kafka.bootstrap, "subscribe": topic})
    )
    try:
        first = planner.initial_offset()
        append(kafka.bootstrap, seeded, 3)
        assert planner.initial_offset() == first == {topic: {"0": 5}}
    finally:
        planner.stop()


def test_records_deleted_under_the_checkpoint_fail_both_or_are_skipped_by_both(oracle, kafka, tmp_path):
    """A run reads offsets 0-19; then 20-79 are written and DeleteRecords moves the log start to
    50 (a batch boundary: within a batch Spark serves the deleted records of the batch, see
    test_spark_kafka_source.py). failOnDataLoss=true fails both runs' first batch [20, 45);
    the same checkpoints rerun with false run that batch again (nothing left in it) and go on."""
    topic = topic_name("loss")
    (seeded,), first_rows = partitions_of(kafka.bootstrap, topic, [20])
    opts = options(kafka.bootstrap, assign=json.dumps({topic: [0]}), maxOffsetsPerTrigger="25")
    spark, ours = run_both(oracle, opts, tmp_path)
    assert_same(spark, ours)
    assert all_rows(spark) == first_rows

    append(kafka.bootstrap, seeded, 30)
    kept = append(kafka.bootstrap, seeded, 30)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([CTP(topic, 0, 50)]).values():
        future.result(TIMEOUT)

    failures = {}
    for source in ("kafka", "kgroups"):
        logged = log_position(oracle)
        with pytest.raises(OracleReadError) as raised:
            oracle.stream(source, {**opts, "failOnDataLoss": "true"}, checkpoint=tmp_path / source)
        failures[source] = (raised.value.message, log_since(oracle, logged))
    message, _ = failures["kafka"]
    assert f"Could not read records in offset [20, 45) for topic partition {topic}-0" in message, message
    assert "failOnDataLoss" in message
    # kgroups' task error ends a Python traceback longer than the oracle's answer keeps (4,000
    # characters of FOREACH_BATCH_USER_FUNCTION_ERROR): it is read where Spark logged the task
    message, log = failures["kgroups"]
    assert "FOREACH_BATCH_USER_FUNCTION_ERROR" in message
    assert (
        f"RecordsUnavailable: {topic}[0]: offsets 20..44 of the range [20, 45) are deleted by "
        "retention (the log now starts at 50); set failOnDataLoss=false"
    ) in log, log[-3000:]

    spark, ours = run_both(oracle, {**opts, "failOnDataLoss": "false"}, tmp_path)
    assert_same(spark, ours)
    assert all_rows(spark) == kept
    assert [(b.batch_id, b.start, b.end, len(b.rows)) for b in spark.batches] == [
        (1, {topic: {"0": 20}}, {topic: {"0": 45}}, 0),
        (2, {topic: {"0": 45}}, {topic: {"0": 70}}, 20),
        (3, {topic: {"0": 70}}, {topic: {"0": 80}}, 10),
    ]


def test_a_second_run_reads_only_what_is_new(oracle, kafka, tmp_path):
    """Run, write more to both partitions, run again from the same checkpoint: only the new
    records, from where the first run ended; a third run with nothing new runs no batch."""
    topic = topic_name("rerun")
    seeded, first_rows = partitions_of(kafka.bootstrap, topic, [30, 12])
    opts = options(kafka.bootstrap, subscribe=topic, maxOffsetsPerTrigger="25")
    first = run_both(oracle, opts, tmp_path)
    assert_same(*first)
    assert not difference(all_rows(first[0]), first_rows)

    new_rows = append(kafka.bootstrap, seeded[0], 7) + append(kafka.bootstrap, seeded[1], 4)
    spark, ours = run_both(oracle, opts, tmp_path)
    assert_same(spark, ours)
    assert not difference(all_rows(spark), expected(new_rows))
    assert spark.batches[0].start == first[0].batches[-1].end == {topic: {"0": 30, "1": 12}}
    assert spark.batches[0].batch_id == first[0].batches[-1].batch_id + 1

    spark, ours = run_both(oracle, opts, tmp_path)
    assert spark.batches == ours.batches == []
    assert ours.latest == spark.latest == {topic: {"0": 37, "1": 16}}


@pytest.mark.parametrize(
    "limits, ends",
    [
        # Without a maximum the first batch takes everything, fewer offsets than the minimum or not
        # (a source's first trigger never waits: its last trigger is at time 0).
        ({"minOffsetsPerTrigger": "150"}, [100]),
        # maxTriggerDelay=0: the delay has always passed, no trigger waits.
        ({"minOffsetsPerTrigger": "40", "maxOffsetsPerTrigger": "45", "maxTriggerDelay": "0"}, [45, 90, 100]),
    ],
    ids=["min-only", "no-delay"],
)
def test_min_offsets_per_trigger_that_never_waits(oracle, kafka, tmp_path, limits, ends):
    topic = topic_name("min")
    _, rows = partitions_of(kafka.bootstrap, topic, [100])
    spark, ours = run_both(oracle, options(kafka.bootstrap, subscribe=topic, **limits), tmp_path)
    assert_same(spark, ours)
    assert [end[topic]["0"] for end in batch_ends(spark)] == ends
    assert all_rows(spark) == rows


def test_min_offsets_per_trigger_ends_sparks_available_now_run_early_and_not_ours(oracle, kafka, tmp_path):
    """The one deliberate difference (docs/spark.rst): Spark's first batch never waits, the second
    finds 55 >= 40 offsets, then 10 < 40 are left within maxTriggerDelay: the trigger waits, which
    under AvailableNow ends the run with them unread; its next run starts the timer again and
    reads them. kgroups does not wait under AvailableNow (PySpark's SupportsTriggerAvailableNow:
    the run must reach its target): one run, the same batches."""
    topic = topic_name("min")
    _, rows = partitions_of(kafka.bootstrap, topic, [100])
    opts = options(kafka.bootstrap, subscribe=topic, minOffsetsPerTrigger="40", maxOffsetsPerTrigger="45")
    spark, ours = run_both(oracle, opts, tmp_path)
    assert [end[topic]["0"] for end in batch_ends(spark)] == [45, 90]
    assert [end[topic]["0"] for end in batch_ends(ours)] == [45, 90, 100]
    assert spark.latest == ours.latest == {topic: {"0": 100}}
    spark_again, ours_again = run_both(oracle, opts, tmp_path)
    assert ours_again.batches == []
    assert boundaries(ours) == boundaries(spark) + boundaries(spark_again)
    assert all_rows(ours) == all_rows(spark) + all_rows(spark_again) == rows
    assert [b.rows for b in ours.batches] == [b.rows for b in spark.batches + spark_again.batches]


def test_a_minimum_above_the_maximum_is_refused_by_both(oracle, kafka, tmp_path):
    topic = topic_name("minmax")
    create_topics(kafka.bootstrap, {topic: 1}, config=TOPIC_CONFIG)
    opts = options(kafka.bootstrap, subscribe=topic, minOffsetsPerTrigger="50", maxOffsetsPerTrigger="30")
    with pytest.raises(
        OracleReadError,
        match=re.escape("minOffsetPerTrigger(50) is higher than the maxOffsetsPerTrigger(30)"),
    ):
        oracle.stream("kafka", opts, checkpoint=tmp_path / "kafka")
    with pytest.raises(
        OracleReadError,
        match=re.escape("option minOffsetsPerTrigger (50) is higher than maxOffsetsPerTrigger (30)"),
    ):
        oracle.stream("kgroups", opts, checkpoint=tmp_path / "kgroups")


def test_trigger_once_reads_everything_in_one_batch_whatever_the_limits(oracle, kafka, tmp_path):
    """Trigger.Once hands every source ReadAllAvailable: no maxOffsetsPerTrigger split, no wait."""
    topic = topic_name("once")
    _, rows = partitions_of(kafka.bootstrap, topic, [30, 12])
    opts = options(kafka.bootstrap, subscribe=topic, maxOffsetsPerTrigger="10", minOffsetsPerTrigger="5")
    spark = oracle.stream("kafka", opts, checkpoint=tmp_path / "kafka", trigger="once")
    ours = oracle.stream("kgroups", opts, checkpoint=tmp_path / "kgroups", trigger="once")
    assert_same(spark, ours)
    assert batch_ends(spark) == [{topic: {"0": 30, "1": 12}}]
    assert all_rows(spark) == rows


def test_the_progress_group_shows_in_kafka_consumer_groups(oracle, kafka, tmp_path):
    """commitToGroup (Spark's source ignores an option it does not know, so both get it): after
    the kgroups run, kafka-consumer-groups.sh --describe shows the group at the last batch's end,
    no lag; Spark's run committed nothing."""
    topic, group = topic_name("group"), topic_name("job")
    _, rows = partitions_of(kafka.bootstrap, topic, [25, 8])
    opts = options(kafka.bootstrap, subscribe=topic, maxOffsetsPerTrigger="20", commitToGroup=group)
    tool = ConsumerGroupsTool(kafka)
    spark = oracle.stream("kafka", opts, checkpoint=tmp_path / "kafka")
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(TIMEOUT).valid}
    ours = oracle.stream("kgroups", opts, checkpoint=tmp_path / "kgroups")
    assert_same(spark, ours)
    assert not difference(all_rows(ours), rows)
    last = ours.batches[-1].end
    assert last == {topic: {"0": 25, "1": 8}}
    described = {
        int(row["PARTITION"]): (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"])
        for row in tool.table("--describe", "--group", group)
        if row["TOPIC"] == topic
    }
    assert described == {int(p): (str(o), str(o), "0") for p, o in last[topic].items()}
