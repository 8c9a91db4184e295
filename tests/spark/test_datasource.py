"""The ``kgroups`` Spark data source on ``local[2]`` against Apache Kafka (the session broker): records
seeded by kafka-python, read back exactly for the range, in chunks, transactional topics with
read_committed, and bad options refused before any task starts."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.spark.datasource import read_offset_range, register
from airflow_provider_kgroups.spark.offsets import SparkOffsetsError


def offsets(topic: str, per_partition: dict[int, int]) -> str:
    return json.dumps({topic: {str(p): o for p, o in per_partition.items()}})


@pytest.fixture
def orders(seed, name_prefix):
    """Three partitions of 30, 5 and 0 records (values "p<partition>-<i>", key "k<i % 3>")."""
    topic = f"{name_prefix}orders"
    seed.create_topic(topic, 3)
    for partition, count in ((0, 30), (1, 5)):
        seed.produce(topic, partition, count, value=lambda i, p=partition: b"p%d-%d" % (p, i))
    return topic


def rows(df) -> list[tuple]:
    return sorted((r.topic, r.partition, r.offset, r.value.decode()) for r in df.collect())


def test_reads_exactly_the_range_and_nothing_outside_it(spark, broker, orders):
    df = read_offset_range(
        spark,
        broker.bootstrap,
        starting=offsets(orders, {0: 3, 1: 0, 2: 0}),
        ending=offsets(orders, {0: 27, 1: 5, 2: 0}),
    )
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    got = rows(df)
    assert got == sorted(
        [(orders, 0, o, f"p0-{o}") for o in range(3, 27)] + [(orders, 1, o, f"p1-{o}") for o in range(5)]
    )
    first = df.where("partition = 0 and offset = 3").collect()[0]
    assert first.timestampType == 0 and first.timestamp is not None


def test_a_range_in_several_chunks_is_one_task_per_chunk(spark, broker, orders):
    df = read_offset_range(
        spark,
        broker.bootstrap,
        starting=offsets(orders, {0: 0}),
        ending=offsets(orders, {0: 30}),
        options={"maxRecordsPerPartition": "7"},
    )
    assert df.rdd.getNumPartitions() == 5  # 7 + 7 + 7 + 7 + 2 offsets
    assert [o for _, _, o, _ in rows(df)] == list(range(30))


def test_earliest_and_latest_are_resolved_once_on_the_driver(spark, broker, orders):
    register(spark)
    df = (
        spark.read.format("kgroups")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("startingOffsets", offsets(orders, {1: -2}))
        .option("endingOffsets", offsets(orders, {1: -1}))
        .load()
    )
    assert [o for _, _, o, _ in rows(df)] == [0, 1, 2, 3, 4]


def test_an_empty_range_reads_no_rows(spark, broker, orders):
    df = read_offset_range(
        spark,
        broker.bootstrap,
        starting=offsets(orders, {0: 10, 2: 0}),
        ending=offsets(orders, {0: 10, 2: 0}),
    )
    assert df.count() == 0


def test_a_range_past_the_log_end_fails_naming_the_partition(spark, broker, orders):
    df = read_offset_range(
        spark, broker.bootstrap, starting=offsets(orders, {1: 0}), ending=offsets(orders, {1: 9})
    )
    with pytest.raises(
        Exception,
        match=r"\[1\]: the range ends at 9 \(exclusive\), beyond the partition's high "
        r"watermark 5",
    ):
        df.collect()


def test_transaction_markers_are_never_rows_and_read_committed_leaves_out_the_aborted(
    spark, broker, seed, name_prefix
):
    from tests.support.production import wait_for_log_end

    topic = f"{name_prefix}tx"
    seed.create_topic(topic, 1)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, transactional_id=f"{name_prefix}tx", linger_ms=0
    )
    try:
        producer.init_transactions()
        for value, commit in ((b"a", True), (b"b", False), (b"c", True)):
            producer.begin_transaction()
            producer.send(topic, value, partition=0).get(10)
            producer.commit_transaction() if commit else producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    wait_for_log_end(
        broker.bootstrap, topic, 0, 6
    )  # the coordinator writes the last marker after EndTxn answers
    assert seed.end_offset(topic, 0) == 6  # a, marker, b, marker, c, marker
    uncommitted = read_offset_range(
        spark, broker.bootstrap, starting=offsets(topic, {0: 0}), ending=offsets(topic, {0: 6})
    )
    assert [(o, v) for _, _, o, v in rows(uncommitted)] == [(0, "a"), (2, "b"), (4, "c")]
    # Apache Kafka lists the aborted transactions in a read_committed Fetch (UnifiedLog.collectAbortedTransactions):
    # the aborted "b" is left out. (Tansu 0.6.0 lists none: tests/realbroker/test_tansu_facts.py.)
    committed = read_offset_range(
        spark,
        broker.bootstrap,
        starting=offsets(topic, {0: 0}),
        ending=offsets(topic, {0: 6}),
        options={"kafka.isolation.level": "read_committed"},
    )
    assert [(o, v) for _, _, o, v in rows(committed)] == [(0, "a"), (4, "c")]


def test_read_committed_leaves_out_aborted_transactions(spark):
    """On the fake cluster (in a thread, reachable from Spark's Python workers), which lists
    aborted transactions as Kafka does (UnifiedLog.collectAbortedTransactions)."""
    from tests.support.fakekafka import FakeCluster

    with FakeCluster.running_in_thread(brokers=2) as c:
        c.add_topic("tx", 1)
        c.append_transaction("tx", 0, [b"a"], producer_id=1, commit=True)  # 0 + marker 1
        c.append_transaction("tx", 0, [b"b", b"b2"], producer_id=2, commit=False)  # 2, 3 + marker 4
        c.append("tx", 0, 1, value=b"plain")  # 5
        c.append_transaction("tx", 0, [b"c"], producer_id=1, commit=True)  # 6 + marker 7
        committed = read_offset_range(
            spark,
            c.bootstrap,
            starting=offsets("tx", {0: 0}),
            ending=offsets("tx", {0: 8}),
            options={"kafka.isolation.level": "read_committed", "maxRecordsPerPartition": "3"},
        )  # chunks cut through transactions
        assert [(o, v) for _, _, o, v in rows(committed)] == [(0, "a"), (5, "plain"), (6, "c")]
        uncommitted = read_offset_range(
            spark, c.bootstrap, starting=offsets("tx", {0: 0}), ending=offsets("tx", {0: 8})
        )
        assert [(o, v) for _, _, o, v in rows(uncommitted)] == [
            (0, "a"),
            (2, "b"),
            (3, "b2"),
            (5, "plain"),
            (6, "c"),
        ]


def test_a_compaction_gap_fails_the_read_unless_data_loss_is_allowed(spark):
    from tests.support.fakekafka import FakeCluster

    with FakeCluster.running_in_thread(brokers=1) as c:
        c.add_topic("compacted", 1)
        c.append("compacted", 0, 10, value=lambda o: b"v%d" % o)
        c.compact("compacted", 0, [4, 5])  # not the tail: the active segment is never cleaned
        range_ = {"starting": offsets("compacted", {0: 0}), "ending": offsets("compacted", {0: 10})}
        with pytest.raises(
            Exception,
            match=r"compacted\[0\]: offsets 4\.\.5 of the range \[0, 10\) are missing "
            r"from the log \(compacted\); set failOnDataLoss=false",
        ):
            read_offset_range(spark, c.bootstrap, **range_).collect()
        lenient = read_offset_range(spark, c.bootstrap, **range_, options={"failOnDataLoss": "false"})
        assert [o for _, _, o, _ in rows(lenient)] == [0, 1, 2, 3, 6, 7, 8, 9]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"kafka.sasl.password": "hunter2"}, "would show a secret in query plans"),
        ({"maxRecordsPerPartition": "0"}, "maxRecordsPerPartition must be an integer >= 1"),
        (
            {"kafka.isolation.level": "serializable"},
            "kafka.isolation.level must be read_uncommitted or read_committed",
        ),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss must be true or false"),
        ({"kafka.sasl.kerberos.service.name": "kafka"}, "unsupported Kafka client option"),
    ],
)
def test_bad_options_fail_at_load_naming_the_option(spark, options, message):
    register(spark)
    reader = (
        spark.read.format("kgroups")
        .option("kafka.bootstrap.servers", "127.0.0.1:1")
        .option("startingOffsets", '{"t": {"0": 0}}')
        .option("endingOffsets", '{"t": {"0": 1}}')
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    with pytest.raises(Exception, match=message):
        reader.load()  # no task runs: the broker address is not even reachable


def test_missing_or_invalid_offsets_fail_at_load(spark):
    register(spark)
    with pytest.raises(Exception, match="option endingOffsets is required"):
        spark.read.format("kgroups").option("kafka.bootstrap.servers", "127.0.0.1:1").option(
            "startingOffsets", '{"t": {"0": 0}}'
        ).load()
    with pytest.raises(SparkOffsetsError, match="can't|refuses"):
        read_offset_range(spark, "127.0.0.1:1", starting='{"t": {"0": -1}}', ending='{"t": {"0": 5}}')
    with pytest.raises(ConfigurationError):
        read_offset_range(spark, "127.0.0.1:1", starting='{"t": {"0": 5}}', ending='{"t": {"0": 2}}')


def test_sasl_secrets_come_from_a_file_and_never_show_in_the_plan(spark, tmp_path):
    """SASL/SCRAM against the fake cluster: the password lives in the properties file named by
    kgroups.command.config; the options, the query plan and its explain text never hold it."""
    from tests.support.fakekafka import FakeCluster

    secret = "s3cr3t-Passw0rd"
    with FakeCluster.running_in_thread(brokers=1, sasl={"SCRAM-SHA-512": {"etl": secret}}) as c:
        c.add_topic("orders", 1)
        c.append("orders", 0, 4, value=lambda o: b"v%d" % o)
        props = tmp_path / "client.properties"
        props.write_text(
            f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=etl\n"
            f"sasl.password={secret}\n"
        )
        df = read_offset_range(
            spark,
            c.bootstrap,
            starting=offsets("orders", {0: 0}),
            ending=offsets("orders", {0: 4}),
            command_config=str(props),
        )
        assert [o for _, _, o, _ in rows(df)] == [0, 1, 2, 3]
        plan = df._jdf.queryExecution().toString()
        assert "client.properties" in plan or "kgroups" in plan  # the plan is there to look at...
        assert secret not in plan  # ...and holds no secret
        wrong = tmp_path / "wrong.properties"
        wrong.write_text(props.read_text().replace(secret, "nope"))
        with pytest.raises(Exception, match="(?i)authentication"):
            read_offset_range(
                spark,
                c.bootstrap,
                starting=offsets("orders", {0: 0}),
                ending=offsets("orders", {0: 4}),
                command_config=str(wrong),
            ).collect()
