"""``spark.readStream.format("kgroups")`` on ``local[2]`` against Apache Kafka (the session broker):
AvailableNow runs split by maxOffsetsPerTrigger, a rerun reads only what is new, endingOffsets
ends a query exactly there, the progress group follows the sink and never leads it, and
``startingOffsets=group`` starts where it says. Spark's own source as the oracle for the same
queries: tests/apachekafka/test_spark_kafka_stream.py."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.client.config import ClientConfig
from airflow_provider_kgroups.client.sync import GroupsClient
from airflow_provider_kgroups.spark.datasource import register
from airflow_provider_kgroups.spark.stream_progress import is_stream_progress


@pytest.fixture
def orders(seed, name_prefix):
    """Two partitions of 50 and 20 records (values "p<partition>-<i>")."""
    topic = f"{name_prefix}orders"
    seed.create_topic(topic, 2)
    for partition, count in ((0, 50), (1, 20)):
        seed.produce(topic, partition, count, value=lambda i, p=partition: b"p%d-%d" % (p, i))
    return topic


def run_available_now(spark, options: dict[str, str], checkpoint: str) -> list[list[tuple]]:
    """One AvailableNow run to a foreachBatch sink: each batch's (partition, offset) rows, in order."""
    register(spark)
    batches: dict[int, list[tuple]] = {}

    def collect(df, batch_id: int) -> None:
        batches[batch_id] = sorted(
            (r.partition, r.offset) for r in df.select("partition", "offset").collect()
        )

    query = (
        spark.readStream.format("kgroups")
        .options(**options)
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the AvailableNow run did not finish within 120 s"
    assert query.exception() is None
    return [batches[b] for b in sorted(batches)]


def committed(broker, group: str) -> dict[int, int]:
    with GroupsClient(ClientConfig.create(broker.bootstrap)) as client:
        found = client.fetch_committed_offsets([group]).values[group]
    return {tp.partition: c.offset for tp, c in found.partitions.items() if c.offset is not None}


def test_an_available_now_run_reads_everything_in_limited_batches_and_a_rerun_only_the_new(
    spark, broker, seed, orders, tmp_path
):
    options = {
        "kafka.bootstrap.servers": broker.bootstrap,
        "subscribe": orders,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "30",
    }
    first = run_available_now(spark, options, str(tmp_path / "cp"))
    # Spark's share of 30: 50:20 -> 21 + 8 (rounded down), then 29:12 -> 21 + 8, then the rest
    assert [len(b) for b in first] == [29, 29, 12]
    read = [row for batch in first for row in batch]
    assert sorted(read) == [(0, o) for o in range(50)] + [(1, o) for o in range(20)]
    seed.produce(orders, 1, 5)
    second = run_available_now(spark, options, str(tmp_path / "cp"))
    assert second == [[(1, o) for o in range(20, 25)]]


def test_ending_offsets_end_the_query_exactly_there(spark, broker, orders, tmp_path):
    options = {
        "kafka.bootstrap.servers": broker.bootstrap,
        "subscribe": orders,
        "startingOffsets": "earliest",
        "endingOffsets": json.dumps({orders: {"0": 12, "1": 7}}),
    }
    batches = run_available_now(spark, options, str(tmp_path / "cp"))
    assert [row for b in batches for row in b] == [(0, o) for o in range(12)] + [(1, o) for o in range(7)]


def test_the_progress_group_reaches_the_end_of_the_run_and_a_new_query_starts_there(
    spark, broker, seed, orders, tmp_path, name_prefix
):
    group = f"{name_prefix}spark-job"
    options = {
        "kafka.bootstrap.servers": broker.bootstrap,
        "subscribe": orders,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "25",
        "commitToGroup": group,
    }
    run_available_now(spark, options, str(tmp_path / "cp"))
    assert committed(broker, group) == {0: 50, 1: 20}
    with GroupsClient(ClientConfig.create(broker.bootstrap)) as client:
        offsets = client.fetch_committed_offsets([group]).values[group].partitions
    assert all(is_stream_progress(c.metadata) for c in offsets.values())
    seed.produce(orders, 0, 3)
    fresh = run_available_now(spark, {**options, "startingOffsets": "group"}, str(tmp_path / "other-cp"))
    assert [row for b in fresh for row in b] == [(0, 50), (0, 51), (0, 52)]
    assert committed(broker, group) == {0: 53, 1: 20}
