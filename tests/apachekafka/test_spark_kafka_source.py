"""Spark's own Kafka source as the oracle for the ``kgroups`` source, on Apache Kafka itself.

Both read the same ranges in one Spark session (demo/spark_oracle.py: Spark 4.2.0,
the newest whose ``spark-sql-kafka-0-10`` Maven Central serves; the venv's pyspark 4.3.0 has no
connector there), with the same options, and each test checks that

- the ``kgroups`` rows equal Spark's ``format("kafka")`` rows column by column (schema too), and
- both equal the producer's truth: what confluent-kafka produced and where it landed
  (tests/support/production.py: every codec, one idempotent and one transactional producer with an
  aborted transaction, headers with duplicate keys and null values, null and empty keys and
  values, a 1 MiB record);

and that every option a Spark user passes for a batch read either behaves the same or is refused
by ``kgroups`` with an error naming the difference (docs/spark.rst lists them).
"""

from __future__ import annotations

import json
import re
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient

from demo.report import sources
from demo.source_check import NotCompared, SourceComparison, compare, difference, differing_columns
from tests.support.production import CODECS, MIB, Seeded, create_topics, seed_partition
from tests.support.spark_kafka_oracle import OracleReadError, SparkOracle

TIMESTAMP_CREATE_TIME = 0  # Kafka's TimestampType.CREATE_TIME.id, what Spark's timestampType holds
#: The records are stamped in 2023 (production.py) and transaction markers now, so Kafka rolls a
#: segment at the first marker and its 7-day retention would delete the records under the test
#: (checked every 5 minutes); a 1 MiB record needs more than the default 1 MiB message size.
TOPIC_CONFIG = {"retention.ms": "-1", "max.message.bytes": str(4 * MIB)}
REFUSED = "of Spark's Kafka source is not taken by the kgroups source"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """Spark's source; its Spark starts while the broker starts and the topics are seeded."""
    spark = SparkOracle(tmp_path_factory.mktemp("spark-oracle")).launch()
    try:
        yield spark
    finally:
        spark.close()


@pytest.fixture(scope="module")
def seeded(kafka) -> dict[str, Seeded]:
    """One single-partition topic per codec, seeded as production producers write (in parallel)."""
    tag = uuid.uuid4().hex[:6]
    topics = {codec: f"oracle-{tag}-{codec}" for codec in CODECS}
    create_topics(kafka.bootstrap, {topic: 1 for topic in topics.values()}, config=TOPIC_CONFIG)
    with ThreadPoolExecutor(len(CODECS)) as pool:
        futures = {
            codec: pool.submit(seed_partition, kafka.bootstrap, topic, 0, codec, big_batch=300)
            for codec, topic in topics.items()
        }
        return {codec: future.result() for codec, future in futures.items()}


def options(bootstrap: str, ranges: dict[str, tuple[int, int]], **extra: str) -> dict[str, str]:
    """A batch read of ``[start, end)`` of partition 0 of each topic, as a Spark user writes it."""
    return {
        "kafka.bootstrap.servers": bootstrap,
        "assign": json.dumps({topic: [0] for topic in ranges}),
        "startingOffsets": json.dumps({topic: {"0": start} for topic, (start, _) in ranges.items()}),
        "endingOffsets": json.dumps({topic: {"0": end} for topic, (_, end) in ranges.items()}),
        **extra,
    }


def truth(
    seeded: Seeded, start: int, end: int, *, committed: bool = False, headers: bool = True
) -> list[tuple]:
    """The rows the producer's records make in ``[start, end)`` (-2: the log's start, -1: its end)."""
    start, end = (0 if start == -2 else start), (seeded.end if end == -1 else end)
    return [
        (r.key, r.value, seeded.topic, seeded.partition, r.offset, r.timestamp_ms, TIMESTAMP_CREATE_TIME)
        + ((list(r.headers) or None,) if headers else ())
        for r in seeded.records
        if start <= r.offset < end and not (committed and r.aborted)
    ]


def both(oracle: SparkOracle, opts: dict[str, str], *, partitions: bool = False):
    return oracle.read("kafka", opts, partitions=partitions), oracle.read(
        "kgroups", opts, partitions=partitions
    )


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_every_codec_reads_the_producers_records_as_sparks_source_does(oracle, seeded, kafka, isolation):
    """Ranges start inside a 300-record batch (or at earliest, -2) and end at the log end (or at
    latest, -1: the last stable offset with read_committed); headers included."""
    committed = isolation == "read_committed"
    ranges = {s.topic: (s.batch_middle().offset, s.end) for s in seeded.values()}
    ranges[seeded["none"].topic] = (-2, -1)
    spark, ours = both(
        oracle,
        options(kafka.bootstrap, ranges, includeHeaders="true", **{"kafka.isolation.level": isolation}),
    )
    expected = sorted(
        (row for s in seeded.values() for row in truth(s, *ranges[s.topic], committed=committed)),
        key=lambda r: (r[2], r[3], r[4]),
    )
    assert (
        ours.schema
        == spark.schema
        == (
            "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
            "timestamp:timestamp,timestampType:int,"
            "headers:array<struct<key:string,value:binary>>>"
        )
    )
    assert not difference(spark.rows, expected), "Spark's source vs the producer: " + difference(
        spark.rows, expected
    )
    assert not difference(ours.rows, spark.rows), "kgroups vs Spark's source: " + difference(
        ours.rows, spark.rows
    )
    # what the comparison covered
    assert {row[2] for row in ours.rows} == {s.topic for s in seeded.values()}
    assert any(r[0] is None for r in ours.rows) and any(r[1] is None for r in ours.rows)
    assert any(r[7] is None for r in ours.rows) and any(
        r[7] and (r[7][0][0], r[7][1][0]) == ("trace", "trace") for r in ours.rows
    )
    assert sum(len(r[1] or b"") == MIB for r in ours.rows) == len(CODECS)
    aborted = [r for r in ours.rows if r[0] == b"tx" and r[1].startswith(b"a")]  # 20 a topic, all in range
    assert len(aborted) == (0 if committed else 20 * len(CODECS))


def test_without_include_headers_both_leave_the_column_out(oracle, seeded, kafka):
    s = seeded["zstd"]
    spark, ours = both(oracle, options(kafka.bootstrap, {s.topic: (0, s.end)}))
    assert ours.schema == spark.schema and "headers" not in spark.schema
    assert not difference(spark.rows, truth(s, 0, s.end, headers=False))
    assert not difference(ours.rows, spark.rows)


@pytest.mark.parametrize(
    "split",
    [
        {"maxRecordsPerPartition": "100"},
        {"minPartitions": "7"},
        {"minPartitions": "12", "maxRecordsPerPartition": "250"},
    ],
    ids=["maxRecordsPerPartition", "minPartitions", "both"],
)
def test_splitting_options_plan_as_many_tasks_and_read_the_same_rows(oracle, seeded, kafka, split):
    ranges = {
        s.topic: (s.batch_middle().offset, s.end) for s in seeded.values() if s.codec in ("lz4", "gzip")
    }
    ranges[seeded["snappy"].topic] = (0, 5)  # a small range among large ones: Spark leaves it whole
    spark, ours = both(oracle, options(kafka.bootstrap, ranges, **split), partitions=True)
    assert ours.partitions == spark.partitions and spark.partitions > len(ranges)
    assert not difference(ours.rows, spark.rows)
    assert len(spark.rows) == sum(
        len(truth(s, *ranges[s.topic])) for s in seeded.values() if s.topic in ranges
    )


@pytest.fixture(scope="module")
def lossy(kafka) -> Seeded:
    """The production layout without transactions (a 1 MiB record included), its first 10 offsets
    deleted (DeleteRecords: the log start moves to 10, as retention moves it)."""
    topic = f"oracle-loss-{uuid.uuid4().hex[:6]}"
    create_topics(kafka.bootstrap, {topic: 1}, config=TOPIC_CONFIG)
    seeded = seed_partition(kafka.bootstrap, topic, 0, "none", big_batch=18, transactions=False)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([CTP(topic, 0, 10)]).values():
        future.result(30)
    return seeded


def test_fail_on_data_loss_true_fails_both_and_false_reads_what_is_left(oracle, lossy, kafka):
    """Offsets 0-9 deleted: ``true`` fails both; ``false`` reads from the log start on."""
    assert lossy.end > 10
    strict = options(kafka.bootstrap, {lossy.topic: (0, lossy.end)})
    with pytest.raises(OracleReadError, match=r"(?i)lost|loss|out of range"):
        oracle.read("kafka", strict)
    with pytest.raises(
        OracleReadError,
        match=re.escape(
            f"{lossy.topic}[0]: offsets 0..9 of the range [0, "
            f"{lossy.end}) are deleted by retention (the log now starts "
            "at 10); set failOnDataLoss=false"
        ),
    ):
        oracle.read("kgroups", strict)
    spark, ours = both(oracle, {**strict, "failOnDataLoss": "false"})
    assert not difference(ours.rows, truth(lossy, 10, lossy.end, headers=False))
    # The one difference: the batch holding offset 10 starts below it and is still served whole;
    # Spark's source returns its deleted records too (offsets 1-9 here), kgroups none of them.
    deleted = [row for row in spark.rows if row[4] < 10]
    assert spark.rows == deleted + ours.rows
    assert (
        deleted == [row for row in truth(lossy, 0, 10, headers=False) if row[4] >= deleted[0][4]]
        if deleted
        else True
    )


def _first_at(seeded: Seeded, ms: int) -> int:
    return next(r.offset for r in seeded.records if r.timestamp_ms >= ms)


@pytest.mark.parametrize(
    "option",
    ["startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp"],
)
def test_timestamp_options_are_refused_by_kgroups_and_read_by_time_in_spark(oracle, seeded, kafka, option):
    s = seeded["lz4"]
    at = s.records[len(s.records) // 2].timestamp_ms
    value = json.dumps({s.topic: {"0": at}}) if option.endswith("ByTimestamp") else str(at)
    opts = options(kafka.bootstrap, {s.topic: (0, s.end)}, **{option: value})
    with pytest.raises(OracleReadError, match=f"option {option} {REFUSED}: .*offsets_for_timestamp"):
        oracle.read("kgroups", opts)
    start, end = (_first_at(s, at), s.end) if option.startswith("starting") else (0, _first_at(s, at))
    assert not difference(oracle.read("kafka", opts).rows, truth(s, start, end, headers=False))


def test_timestamp_strategy_is_refused_by_kgroups(oracle, seeded, kafka):
    s = seeded["lz4"]
    opts = options(
        kafka.bootstrap,
        {s.topic: (0, s.end)},
        startingTimestamp=str(s.records[-1].timestamp_ms + 1),
        startingOffsetsByTimestampStrategy="latest",
    )
    with pytest.raises(OracleReadError, match=f"option startingTimestamp {REFUSED}"):
        oracle.read("kgroups", opts)
    # No record is that late, but the transaction markers carry the coordinator's clock (now), so
    # Kafka's lookup by time lands on the first marker after the committed transaction: Spark
    # reads the log from there on. What a time means is Kafka's business; kgroups takes offsets.
    rows = oracle.read("kafka", opts).rows
    assert rows and rows == truth(s, rows[0][4], s.end, headers=False)


@pytest.mark.parametrize("option", ["subscribe", "subscribePattern"])
def test_subscribing_with_the_offsets_of_every_partition_reads_the_same_rows(oracle, seeded, kafka, option):
    s = seeded["gzip"]
    opts = options(kafka.bootstrap, {s.topic: (0, s.end)})
    del opts["assign"]
    opts[option] = s.topic if option == "subscribe" else re.escape(s.topic)
    assert (
        oracle.read("kgroups", opts).rows
        == oracle.read("kafka", opts).rows
        == truth(s, 0, s.end, headers=False)
    )
    other = seeded["snappy"]
    opts[option] = (
        f"{s.topic},{other.topic}"
        if option == "subscribe"
        else f"{re.escape(s.topic)}|{re.escape(other.topic)}"
    )
    with pytest.raises(
        OracleReadError, match=f"must name every partition of .*not named {re.escape(other.topic)}\\[0\\]"
    ):
        oracle.read("kgroups", opts)
    with pytest.raises(OracleReadError, match="start offsets don't match what are assigned"):
        oracle.read("kafka", opts)


def test_assign_must_name_the_offsets_partitions_in_both(oracle, seeded, kafka):
    s, other = seeded["gzip"], seeded["snappy"]
    opts = {**options(kafka.bootstrap, {s.topic: (0, s.end)}), "assign": json.dumps({other.topic: [0]})}
    with pytest.raises(OracleReadError):
        oracle.read("kafka", opts)
    with pytest.raises(
        OracleReadError,
        match=f"option assign must name the partitions.*only in assign: {re.escape(other.topic)}",
    ):
        oracle.read("kgroups", opts)


@pytest.mark.parametrize(
    "offsets", [{}, {"startingOffsets": "earliest", "endingOffsets": "latest"}], ids=["defaults", "global"]
)
def test_global_offsets_are_refused_by_kgroups_which_needs_per_partition_json(oracle, seeded, kafka, offsets):
    """Spark reads earliest..latest of the assigned partitions by default or with the global
    words; kgroups reads only the offsets it is given (the gate's range), so it refuses both."""
    s = seeded["snappy"]
    opts = {"kafka.bootstrap.servers": kafka.bootstrap, "assign": json.dumps({s.topic: [0]}), **offsets}
    with pytest.raises(
        OracleReadError, match="startingOffsets.*(is required|global form).*per-partition JSON"
    ):
        oracle.read("kgroups", opts)
    assert not difference(oracle.read("kafka", opts).rows, truth(s, 0, s.end, headers=False))


def _plan(ranges: dict[str, tuple[int, int]], per_chunk: int = 1_000_000, min_partitions: int | None = None):
    from airflow_provider_kgroups.client.results import TopicPartition
    from airflow_provider_kgroups.spark.datasource import split_ranges

    return [
        (c.topic, c.start, c.end)
        for c in split_ranges(
            {TopicPartition(topic, 1): offsets for topic, offsets in ranges.items()},
            per_chunk,
            min_partitions,
        )
    ]


@pytest.mark.parametrize(
    "ranges, min_partitions, expected",
    [
        # spark-sql-kafka-0-10's KafkaOffsetRangeCalculatorSuite: the same plans, case by case
        ({"t1": (1, 5)}, 4, [("t1", 1, 2), ("t1", 2, 3), ("t1", 3, 4), ("t1", 4, 5)]),
        ({"t1": (1, 5), "t2": (1, 21)}, 4, [("t1", 1, 5), ("t2", 1, 7), ("t2", 7, 14), ("t2", 14, 21)]),
        ({"t1": (1, 1), "t2": (1, 21)}, 4, [("t2", 1, 6), ("t2", 6, 11), ("t2", 11, 16), ("t2", 16, 21)]),
        (
            {"t1": (1, 2), "t2": (1, 1001)},
            4,
            [("t1", 1, 2), ("t2", 1, 334), ("t2", 334, 667), ("t2", 667, 1001)],
        ),
        ({"t1": (1, 5), "t2": (1, 21)}, 1, [("t1", 1, 5), ("t2", 1, 21)]),
        (
            {"t1": (0, 10), "t2": (0, 10), "t3": (0, 1)},
            6,
            [
                ("t1", 0, 3),
                ("t1", 3, 6),
                ("t1", 6, 10),
                ("t2", 0, 3),
                ("t2", 3, 6),
                ("t2", 6, 10),
                ("t3", 0, 1),
            ],
        ),
        (
            {"t1": (0, 500), "t2": (0, 12000), "t3": (0, 15001)},
            6,
            [
                ("t1", 0, 500),
                ("t2", 0, 6000),
                ("t2", 6000, 12000),
                ("t3", 0, 5000),
                ("t3", 5000, 10000),
                ("t3", 10000, 15001),
            ],
        ),
        (
            {"t1": (0, 1), "t2": (0, 1), "t3": (0, 10000)},
            6,
            [
                ("t1", 0, 1),
                ("t2", 0, 1),
                ("t3", 0, 2500),
                ("t3", 2500, 5000),
                ("t3", 5000, 7500),
                ("t3", 7500, 10000),
            ],
        ),
    ],
)
def test_min_partitions_plans_as_sparks_range_calculator(ranges, min_partitions, expected):
    assert _plan(ranges, min_partitions=min_partitions) == expected


def test_max_records_per_partition_cuts_near_equal_parts_as_spark_does():
    assert _plan({"t1": (0, 250)}, per_chunk=100) == [("t1", 0, 83), ("t1", 83, 166), ("t1", 166, 250)]
    assert _plan({"t1": (0, 200)}, per_chunk=100) == [("t1", 0, 100), ("t1", 100, 200)]
    assert _plan({"t1": (7, 7)}, per_chunk=100) == []


def test_refusals_happen_at_load_naming_the_option_as_spark_spells_it():
    from airflow_provider_kgroups.client.errors import ConfigurationError
    from airflow_provider_kgroups.spark.datasource import REFUSED_OPTIONS, parse_options

    base = options("kafka-1:9092", {"orders": (0, 5)})
    for name in REFUSED_OPTIONS:
        with pytest.raises(ConfigurationError, match=f"^option {name} {REFUSED}: "):
            parse_options(
                {key.lower(): value for key, value in {**base, name: "1"}.items()}
            )  # as Spark hands them
    with pytest.raises(ConfigurationError, match=r"option minPartitions must be an integer >= 1, got '0'"):
        parse_options({**base, "minPartitions": "0"})
    with pytest.raises(
        ConfigurationError, match=r"option assign must map each topic to a list of partitions"
    ):
        parse_options({**base, "assign": '{"orders": 0}'})
    assert parse_options({**base, "minPartitions": "3"}).min_partitions == 3


async def test_a_batch_straddling_the_log_start_gives_no_deleted_record():
    """What the Apache Kafka comparison found: after DeleteRecords (or retention) moves the log
    start into a batch, the batch is still served whole; the records below the log start are
    deleted, so the reader counts them as a gap and returns none (Spark's source returns them)."""
    import asyncio

    from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition
    from airflow_provider_kgroups.client.records import RangeReader
    from airflow_provider_kgroups.spark.datasource import OffsetChunk, to_record_batches
    from tests.support.fakekafka import FakeCluster
    from tests.support.fakeutil import config

    async with asyncio.timeout(20), FakeCluster(brokers=1) as c:
        c.add_topic("t", 1)
        c.append_batch("t", 0, [b"v%d" % i for i in range(10)], codec="lz4")  # one batch: offsets 0-9
        c.set_offsets("t", 0, start=6)
        async with AsyncGroupsClient(config(c)) as client:
            reader = RangeReader(client, TopicPartition("t", 0), 2, 8, allow_gaps=True, decode=False)
            offsets = [
                o
                for page in [p async for p in reader.pages()]
                for arrow in to_record_batches(OffsetChunk("t", 0, 2, 8), page, False, reader.floor)
                for o in arrow.column("offset").to_pylist()
            ]
    assert offsets == [6, 7] and reader.records == 2
    assert reader.gaps == [(2, 5, "deleted by retention (the log now starts at 6)")]


def test_the_demos_comparison_reads_the_recorded_range_with_both_sources(
    oracle, seeded, kafka, tmp_path, capsys
):
    """``make demo``'s last check (demo/source_check.py): the range a run's manifest records, read by
    both sources with headers; equal, and as many records as the producer wrote there."""
    s = seeded["lz4"]
    start = s.batch_middle().offset
    manifest = tmp_path / "_manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "startingOffsets": json.dumps({s.topic: {"0": start}}),
                "endingOffsets": json.dumps({s.topic: {"0": s.end}}),
            }
        )
    )
    found = compare(oracle, kafka.bootstrap, manifest)
    assert found.equal, found
    assert found.kafka_records == found.kgroups_records == len(truth(s, start, s.end)) > 0
    assert sources(found)
    assert "equal: yes" in capsys.readouterr().out


def test_the_demo_words_a_difference_as_not_equal_and_fails(capsys):
    row = (b"k", b"v", "orders", 0, 7, 1_700_000_000_000, 0, [("trace", b"1")])
    changed = (*row[:1], b"w", *row[2:7], None)
    assert differing_columns([changed], [row]) == ("value", "headers")
    found = SourceComparison(
        spark="4.2.0",
        manifest="m.json",
        starting='{"orders": {"0": -2}}',
        ending='{"orders": {"0": 8}}',
        kafka_records=1,
        kgroups_records=1,
        schema_equal=True,
        differing_columns=differing_columns([changed], [row]),
        difference=difference([changed], [row]),
    )
    assert not found.equal and not sources(found)
    out = capsys.readouterr().out
    assert "equal: NO" in out and "columns differing: value, headers" in out and "[earliest, 8)" in out
    assert sources(NotCompared("Maven (mvn) is not installed", failed=False))
    assert not sources(NotCompared("the oracle worker exited", failed=True))
    lines = [line for line in capsys.readouterr().out.splitlines() if line]  # one line each
    assert len(lines) == 2 and "not compared here: Maven (mvn) is not installed" in lines[0]
    assert "the comparison FAILED: the oracle worker exited" in lines[1]
