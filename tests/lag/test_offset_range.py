"""``OffsetRange``: the one value for the range the gate (and the event trigger) hands to Spark.
Its XCom form is the sensor's ``startingOffsets``/``endingOffsets`` JSON, byte for byte; Spark's
rules (Spark's ``KafkaSourceProvider.validateBatchOptions``, ``JsonUtils.partitionOffsets``) are
checked on the way in; every producer and parser goes through it."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.client.results import TopicPartition as TP
from airflow_provider_kgroups.lag.offset_range import (
    EARLIEST,
    OffsetRange,
    SparkOffsetsError,
    nest_offsets,
    spark_offsets,
    unnest_offsets,
    validate_offset_range,
)
from airflow_provider_kgroups.lag.watch import FinishedRange
from airflow_provider_kgroups.spark.offsets import kafka_batch_options

XCOM = {
    "startingOffsets": '{"billing": {"2": -2}, "orders": {"0": 12, "1": 7, "10": -2}}',
    "endingOffsets": '{"billing": {"2": 0}, "orders": {"0": 40, "1": 7, "10": 3}}',
}
RANGE = OffsetRange(
    {TP("orders", 0): 12, TP("orders", 1): 7, TP("orders", 10): EARLIEST, TP("billing", 2): EARLIEST},
    {TP("orders", 0): 40, TP("orders", 1): 7, TP("orders", 10): 3, TP("billing", 2): 0},
)


def test_up_to_starts_where_the_previous_range_ended_and_writes_the_sensors_xcom():
    found = OffsetRange.up_to(
        {TP("orders", 0): 40, TP("orders", 1): 7, TP("orders", 10): 3, TP("billing", 2): 0},
        {"orders": {"0": 12, "1": 9}},
    )  # 9 > 7: that partition starts at its end
    assert found == RANGE
    assert found.to_xcom() == XCOM
    assert spark_offsets(found.ending, {"orders": {"0": 12, "1": 9}}) == (
        XCOM["startingOffsets"],
        XCOM["endingOffsets"],
    )


def test_from_xcom_reads_back_what_to_xcom_wrote_and_checks_sparks_rules():
    assert OffsetRange.from_xcom(XCOM) == RANGE
    assert OffsetRange.from_xcom(RANGE.to_xcom()).to_xcom() == XCOM
    assert validate_offset_range(XCOM["startingOffsets"], XCOM["endingOffsets"]) == RANGE.pairs()
    assert list(RANGE.pairs()) == [TP("billing", 2), TP("orders", 0), TP("orders", 1), TP("orders", 10)]
    with pytest.raises(SparkOffsetsError, match="no endingOffsets"):
        OffsetRange.from_xcom({"startingOffsets": XCOM["startingOffsets"]})
    with pytest.raises(SparkOffsetsError, match="must name the same partitions"):
        OffsetRange.from_xcom({**XCOM, "endingOffsets": '{"orders": {"0": 40}}'})
    with pytest.raises(SparkOffsetsError, match="startingOffsets 41 is after endingOffsets 40"):
        OffsetRange.from_json('{"orders": {"0": 41}}', '{"orders": {"0": 40}}')


def test_one_nest_and_one_unnest():
    nested = nest_offsets(RANGE.ending)
    assert nested == {"billing": {"2": 0}, "orders": {"0": 40, "1": 7, "10": 3}}
    assert unnest_offsets(nested) == dict(RANGE.ending)
    assert unnest_offsets(json.loads(json.dumps(nested))) == dict(RANGE.ending)


def test_spark_options_name_the_same_partitions_in_assign():
    assert RANGE.spark_options() == {"assign": '{"billing": [2], "orders": [0, 1, 10]}', **XCOM}
    assert kafka_batch_options(RANGE) == RANGE.spark_options()
    assert kafka_batch_options(XCOM) == RANGE.spark_options()
    with pytest.raises(SparkOffsetsError, match="must name the same partitions"):
        kafka_batch_options(OffsetRange({TP("orders", 0): 1}, {TP("orders", 1): 2}))
    with pytest.raises(SparkOffsetsError, match="not both"):
        kafka_batch_options(RANGE, starting=XCOM["startingOffsets"])


def test_the_event_triggers_range_is_the_same_value():
    finished = FinishedRange(
        group_ids=("g",),
        mode="barrier",
        starting=dict(RANGE.starting),
        ending=dict(RANGE.ending),
        total_lag=0,
        opened_at_ms=1,
        finished_at_ms=2,
    )
    payload = finished.to_payload()
    assert {k: payload[k] for k in XCOM} == XCOM
    assert OffsetRange.from_xcom(payload) == RANGE


def test_read_offset_range_takes_an_offset_range():
    """spark.datasource.read_offset_range accepts the value itself (issue 13); a stub session
    records what the reader was given."""
    from airflow_provider_kgroups.spark import datasource

    class Reader:
        def __init__(self):
            self.options = {}

        def format(self, name):
            self.options["format"] = name
            return self

        def option(self, key, value):
            self.options[key] = value
            return self

        def load(self):
            return self.options

    class Spark:
        def __init__(self):
            self.read = Reader()
            self.registered = []
            self.dataSource = self

        def register(self, cls):
            self.registered.append(cls)

    spark = Spark()
    options = datasource.read_offset_range(spark, "[::1]:9092", RANGE)
    assert options == {"format": "kgroups", "kafka.bootstrap.servers": "[::1]:9092", **XCOM}
    assert len(spark.registered) == 1
