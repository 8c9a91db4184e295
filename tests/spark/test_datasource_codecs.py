"""The ``kgroups`` data source and the landing zone over every codec, on topics written as
production producers write them (tests/support/production.py on Apache Kafka; the fake cluster's
stored batches for aborted transactions as well).

Spark parity on Tansu (tests/apachekafka/test_spark_kafka_source.py compares with Spark's own
Kafka source on Apache Kafka): the reference rows are built by Spark's own rules applied to what
an independent client reads: confluent-kafka (librdkafka)
consumes the same range, and each record becomes a row as ``KafkaRecordToRowConverter``
(spark/connector/kafka-0-10-sql) builds it: key and value as given (NULL for null), topic,
partition, offset, ``timestamp`` from the record's epoch milliseconds, ``timestampType`` as
Kafka's ``TimestampType.id`` (0 create time, 1 log-append time), and ``headers`` an array of
(key, value) structs in record order, or NULL when the record has none
(``if (cr.headers.iterator().hasNext) ... else null``). Rows are the records a consumer returns
for ``[start, end)``: ``KafkaDataConsumer.fetchRecord`` skips invisible offsets (transaction
markers; aborted records with read_committed) without a row.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTP

from airflow_provider_kgroups.landing import read_offset_range as read_landing
from airflow_provider_kgroups.landing import write_file
from airflow_provider_kgroups.spark.datasource import read_offset_range
from tests.support.production import CODECS

COLUMNS = (
    "key, value, topic, partition, offset, unix_millis(timestamp) as timestamp_ms, timestampType, headers"
)
#: confluent-kafka's TIMESTAMP_* -> Kafka's TimestampType.id (what Spark's timestampType column holds)
TIMESTAMP_TYPE_ID = {0: -1, 1: 0, 2: 1}
BY_TOPIC_OFFSET = lambda row: (row[2], row[4])


def offsets(per_topic: dict[str, int]) -> str:
    return json.dumps({topic: {"0": offset} for topic, offset in per_topic.items()})


def consume(bootstrap: str, ranges: dict[str, tuple[int, int]], isolation: str = "read_uncommitted") -> list:
    """librdkafka's records of ``topic[0]`` in ``[start, end)`` for every topic of ``ranges``, by
    one consumer assigned them all."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reference",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "fetch.message.max.bytes": 8 << 20,
            "log_level": 3,
        }
    )
    consumer.assign([CTP(topic, 0, start) for topic, (start, _) in ranges.items()])
    got = []
    try:
        while any(
            position.offset < ranges[position.topic][1]
            for position in consumer.position([CTP(topic, 0) for topic in ranges])
        ):
            message = consumer.poll(10)
            assert message is not None, f"librdkafka read nothing more of {ranges} after {len(got)} records"
            assert message.error() is None, message.error()
            if message.offset() < ranges[message.topic()][1]:
                got.append(message)
    finally:
        consumer.close()
    return got


def spark_row(message) -> tuple:
    """KafkaRecordToRowConverter.toInternalRowWithHeaders, as Python values."""
    kind, ms = message.timestamp()
    headers = message.headers()
    return (
        message.key(),
        message.value(),
        message.topic(),
        message.partition(),
        message.offset(),
        ms,
        TIMESTAMP_TYPE_ID[kind],
        [(k, v) for k, v in headers] if headers else None,
    )


def collected(df) -> list[tuple]:
    rows = df.selectExpr(*COLUMNS.split(", ")).collect()
    return sorted(
        (
            (
                r.key,
                r.value,
                r.topic,
                r.partition,
                r.offset,
                r.timestamp_ms,
                r.timestampType,
                None if r.headers is None else [(h.key, h.value) for h in r.headers],
            )
            for r in rows
        ),
        key=BY_TOPIC_OFFSET,
    )


def test_rows_equal_what_sparks_kafka_source_gives_for_every_codec(spark, broker, production):
    """Every column, NULLs included, of every record of every codec's topic; the range starts
    inside the 500-record batch (a committed offset) and ends at the log end."""
    starts = {s.topic: s.batch_middle().offset for s in production.values()}
    ends = {s.topic: s.end for s in production.values()}
    reference = sorted(
        (spark_row(m) for m in consume(broker.bootstrap, {t: (starts[t], ends[t]) for t in starts})),
        key=BY_TOPIC_OFFSET,
    )
    df = read_offset_range(
        spark,
        broker.bootstrap,
        starting=offsets(starts),
        ending=offsets(ends),
        options={"includeHeaders": "true", "maxRecordsPerPartition": "300"},
    )
    got = collected(df)
    assert (
        len(got)
        == len(reference)
        == sum(len([r for r in s.records if r.offset >= starts[s.topic]]) for s in production.values())
    )
    assert got == reference
    assert (
        any(row[7] is None for row in got)
        and any(row[0] is None for row in got)
        and any(row[1] is None for row in got)
    )  # the NULLs the comparison covered
    no_headers = read_offset_range(spark, broker.bootstrap, starting=offsets(starts), ending=offsets(ends))
    assert "headers" not in no_headers.columns and no_headers.count() == len(reference)


def _fake_world(c, codec: str) -> tuple[str, dict[int, bytes], set[int]]:
    """A topic of stored batches in ``codec``: plain, idempotent, committed and aborted
    transactions of two producers interleaved, then one record. Returns (topic, offset ->
    value of every data record, offsets of aborted records)."""
    topic = f"fake-{codec}"
    c.add_topic(topic, 1)
    c.append_batch(topic, 0, [b"p%d" % i for i in range(40)], codec=codec)  # 0-39
    c.append_batch(
        topic, 0, [(b"k", b"i%d" % i, [("h", None)]) for i in range(10)], codec=codec, producer_id=5
    )  # 40-49
    c.append_batch(
        topic, 0, [b"c%d" % i for i in range(8)], codec=codec, producer_id=7, transactional=True
    )  # 50-57
    c.append_batch(
        topic, 0, [b"a%d" % i for i in range(6)], codec=codec, producer_id=8, transactional=True
    )  # 58-63
    c.end_transaction(topic, 0, producer_id=8, commit=False)  # 64
    c.end_transaction(topic, 0, producer_id=7, commit=True)  # 65
    c.append_batch(topic, 0, [b"last"], codec=codec)  # 66
    values = {
        **{i: b"p%d" % i for i in range(40)},
        **{40 + i: b"i%d" % i for i in range(10)},
        **{50 + i: b"c%d" % i for i in range(8)},
        **{58 + i: b"a%d" % i for i in range(6)},
        66: b"last",
    }
    return topic, values, set(range(58, 64))


def test_fake_read_committed_every_codec(spark):
    """Aborted transactions in compressed batches (the fake lists them as Kafka does:
    UnifiedLog.collectAbortedTransactions) are left out with read_committed, kept without; the
    range starts and ends inside batches and chunks cut through them."""
    from tests.support.fakekafka import FakeCluster

    with FakeCluster.running_in_thread(brokers=1) as c:
        worlds = {codec: _fake_world(c, codec) for codec in CODECS}
        starts, ends = {t: 20 for t, _, _ in worlds.values()}, {t: 60 for t, _, _ in worlds.values()}
        for isolation in ("read_committed", "read_uncommitted"):
            df = read_offset_range(
                spark,
                c.bootstrap,
                starting=offsets(starts),
                ending=offsets(ends),
                options={
                    "kafka.isolation.level": isolation,
                    "maxRecordsPerPartition": "7",
                    "includeHeaders": "true",
                },
            )
            got = sorted((r.topic, r.offset, r.value, r.headers) for r in df.collect())
            expected = sorted(
                (topic, o, v, [("h", None)] if 40 <= o < 50 else None)
                for topic, values, aborted in worlds.values()
                for o, v in values.items()
                if 20 <= o < 60 and not (isolation == "read_committed" and o in aborted)
            )
            assert [(t, o, v, h and [(x.key, x.value) for x in h]) for t, o, v, h in got] == expected, (
                isolation
            )


def test_landing_zone_of_every_codec_reads_back_the_gated_range(spark, broker, production, tmp_path):
    """A landing consumer (librdkafka) lands each poll as a file named by its positions before and
    after, so files tile the log across transaction markers; the gate's range read back from the
    landing zone is exactly the records a consumer reads in it."""
    root = str(tmp_path / "landing")
    everything = consume(broker.bootstrap, {s.topic: (0, s.end) for s in production.values()})
    for seeded in production.values():
        messages = sorted((m for m in everything if m.topic() == seeded.topic), key=lambda m: m.offset())
        for i in range(0, len(messages), 100):  # a poll of up to 100 records: one file, committed at `after`
            polled = messages[i : i + 100]
            before = polled[0].offset() if i == 0 else messages[i - 1].offset() + 1
            after = messages[i + 100].offset() if i + 100 < len(messages) else seeded.end  # the next position
            write_file(
                root,
                seeded.topic,
                0,
                before,
                after,
                [
                    {
                        "topic": seeded.topic,
                        "partition": 0,
                        "offset": m.offset(),
                        "timestamp_ms": m.timestamp()[1],
                        "key": m.key().decode("latin-1") if m.key() is not None else None,
                        "value": m.value().decode("latin-1") if m.value() is not None else None,
                    }
                    for m in polled
                ],
            )
    gate = {
        "startingOffsets": offsets({s.topic: s.batch_middle().offset for s in production.values()}),
        "endingOffsets": offsets({s.topic: s.end - 1 for s in production.values()}),
    }
    got = sorted((r.topic, r.offset, r.value) for r in read_landing(spark, root, gate).collect())
    assert got == sorted(
        (s.topic, r.offset, r.value.decode("latin-1") if r.value is not None else None)
        for s in production.values()
        for r in s.records
        if s.batch_middle().offset <= r.offset < s.end - 1
    )


def test_an_undecodable_batch_fails_the_task_naming_codec_library_and_partition(spark):
    from tests.support.fakekafka import FakeCluster

    with FakeCluster.running_in_thread(brokers=1) as c:
        c.add_topic("broken", 2)
        c.append_batch("broken", 1, [b"fine"], codec="zstd")
        c.append_batch("broken", 1, [b"a", b"b"], codec="zstd", payload=b"\x28\xb5\x2f\xfd truncated frame")
        df = read_offset_range(
            spark, c.bootstrap, starting='{"broken": {"1": 0}}', ending='{"broken": {"1": 3}}'
        )
        with pytest.raises(
            Exception,
            match=r"zstd record batch could not be decoded with cramjam: broken\[1\]: the "
            r"batch at offset 1: ",
        ):
            df.collect()
