"""The Spark Kafka source bridge against Spark's documented format: a JSON object of topic ->
{partition as a string holding an int: offset as an int}, -2 earliest, -1 latest; for batch
reads no -1 in startingOffsets and no -2 in endingOffsets; both naming the same partitions,
no start after its end; ``assign`` as {topic: [partitions]}."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.client.results import TopicPartition
from airflow_provider_kgroups.lag import gate
from airflow_provider_kgroups.spark import offsets
from airflow_provider_kgroups.spark.offsets import (
    EARLIEST,
    LATEST,
    SparkOffsetsError,
    kafka_batch_options,
    offsets_json,
    parse_offsets_json,
    read_kafka_range,
    spark_offsets,
    validate_offset_range,
)


def assert_spark_format(text: str, *, option: str) -> dict:
    """What Spark's JsonUtils.partitionOffsets reads, checked by hand: an object of objects,
    partition keys strings of ints, offsets ints, and the batch rules for -1 / -2."""
    data = json.loads(text)
    assert isinstance(data, dict) and data
    for topic, parts in data.items():
        assert isinstance(topic, str) and topic and isinstance(parts, dict) and parts
        for partition, offset in parts.items():
            assert isinstance(partition, str) and partition == str(int(partition)) and int(partition) >= 0
            assert type(offset) is int and offset >= EARLIEST
            assert offset != (LATEST if option == "startingOffsets" else EARLIEST)
    return data


def test_the_sensor_uses_this_module_and_its_output_is_spark_format():
    assert gate.spark_offsets is offsets.spark_offsets  # one implementation
    tp = TopicPartition
    starting, ending = spark_offsets(
        {tp("orders", 0): 40, tp("orders", 1): 7, tp("orders", 10): 3, tp("billing", 2): 0},
        {"orders": {"0": 12, "1": 9}},
    )
    assert assert_spark_format(starting, option="startingOffsets") == {
        "billing": {"2": -2},
        "orders": {"0": 12, "1": 7, "10": -2},
    }  # -2: earliest; a start never passes its end
    assert assert_spark_format(ending, option="endingOffsets") == {
        "billing": {"2": 0},
        "orders": {"0": 40, "1": 7, "10": 3},
    }
    assert (
        ending == '{"billing": {"2": 0}, "orders": {"0": 40, "1": 7, "10": 3}}'
    )  # partitions in numeric order
    assert spark_offsets({}, None) == ("{}", "{}")  # nothing to read: no range, no error


def test_offsets_json_takes_both_shapes_and_validates():
    assert offsets_json({TopicPartition("t", 1): 5, TopicPartition("t", 0): -1}) == '{"t": {"0": -1, "1": 5}}'
    assert offsets_json({"t": {0: 4, "2": -2}}, option="startingOffsets") == '{"t": {"0": 4, "2": -2}}'
    with pytest.raises(SparkOffsetsError, match=r"endingOffsets: t\[2\] is -2 \(earliest\)"):
        offsets_json({"t": {"2": -2}})


@pytest.mark.parametrize(
    "text, option, named",
    [
        (
            '{"orders": {"0": -1}}',
            "startingOffsets",
            r"orders\[0\] is -1 \(latest\), which Spark's Kafka source refuses "
            r"in startingOffsets",
        ),
        (
            '{"orders": {"0": -2}}',
            "endingOffsets",
            r"orders\[0\] is -2 \(earliest\), which Spark's Kafka source refuses "
            r"in endingOffsets",
        ),
        (
            '{"orders": {"0": -3}}',
            "endingOffsets",
            r"is -3; offsets are >= 0, or -1 for latest\.",
        ),  # not -2: refused there
        ('{"orders": {"0": "23"}}', "endingOffsets", r"is '23'; an offset is a JSON integer"),
        ('{"orders": {"0": 23.0}}', "endingOffsets", r"is 23.0; an offset is a JSON integer"),
        ('{"orders": {"0": true}}', "endingOffsets", r"is True; an offset is a JSON integer"),
        ('{"orders": {"x": 1}}', "endingOffsets", r"partition 'x', which is not a partition number"),
        ('{"orders": {"-1": 1}}', "endingOffsets", r"partition '-1', which is not a partition number"),
        ('{"orders": {"01": 1}}', "endingOffsets", r"partition '01'"),
        ('{"orders": [0, 1]}', "endingOffsets", r"topic 'orders' must map to a non-empty object"),
        ('{"orders": {}}', "endingOffsets", r"topic 'orders' must map to a non-empty object"),
        ("{}", "startingOffsets", r"names no topic"),
        ("[1]", "startingOffsets", r"must be a JSON object"),
        ('{"orders": {"0": 1}', "startingOffsets", r"is not valid JSON"),
        ("latest", "endingOffsets", r"Spark's global form"),
    ],
)
def test_parse_refuses_what_spark_would_refuse_or_misread(text, option, named):
    with pytest.raises(SparkOffsetsError, match=named):
        parse_offsets_json(text, option=option)


def test_streaming_rules_allow_latest_start():
    assert parse_offsets_json('{"t": {"0": -1}}', option="startingOffsets", batch=False) == {
        TopicPartition("t", 0): -1
    }


def test_range_needs_the_same_partitions_and_no_start_after_its_end():
    assert validate_offset_range('{"t": {"0": 3, "1": -2}}', '{"t": {"0": 9, "1": -1}}') == {
        TopicPartition("t", 0): (3, 9),
        TopicPartition("t", 1): (-2, -1),
    }
    with pytest.raises(
        SparkOffsetsError, match=r"only in startingOffsets: t\[1\]; only in endingOffsets: u\[0\]"
    ):
        validate_offset_range('{"t": {"0": 3, "1": 0}}', '{"t": {"0": 9}, "u": {"0": 1}}')
    with pytest.raises(SparkOffsetsError, match=r"t\[0\]: startingOffsets 10 is after endingOffsets 9"):
        validate_offset_range('{"t": {"0": 10}}', '{"t": {"0": 9}}')
    validate_offset_range('{"t": {"0": 9}}', '{"t": {"0": 9}}')  # equal: an empty range, allowed


def test_batch_options_from_the_sensor_xcom():
    xcom = {
        "startingOffsets": '{"orders": {"0": 12, "1": -2}}',
        "endingOffsets": '{"orders": {"0": 40, "1": 7}}',
        "offsets": {"orders": {"0": 40, "1": 7}},
    }
    options = kafka_batch_options(xcom)
    assert options == {
        "assign": '{"orders": [0, 1]}',
        "startingOffsets": xcom["startingOffsets"],
        "endingOffsets": xcom["endingOffsets"],
    }
    assert json.loads(options["assign"]) == {"orders": [0, 1]}  # Spark's assign: {"topicA":[0,1]}
    with pytest.raises(SparkOffsetsError, match="has no startingOffsets"):
        kafka_batch_options({"endingOffsets": "{}"})
    with pytest.raises(SparkOffsetsError, match="not both"):
        kafka_batch_options(xcom, starting="{}")


def test_read_kafka_range_passes_exactly_these_options():
    class Reader:
        def __init__(self):
            self.options, self.fmt = {}, None

        def format(self, fmt):
            self.fmt = fmt
            return self

        def option(self, key, value):
            self.options[key] = value
            return self

        def load(self):
            return self

    class Spark:
        read = Reader()

    got = read_kafka_range(
        Spark(),
        "k1:9092",
        starting='{"t": {"0": -2}}',
        ending='{"t": {"0": 5}}',
        kafka_options={"security.protocol": "SASL_SSL"},
    )
    assert got.fmt == "kafka" and got.options == {
        "kafka.bootstrap.servers": "k1:9092",
        "assign": '{"t": [0]}',
        "startingOffsets": '{"t": {"0": -2}}',
        "endingOffsets": '{"t": {"0": 5}}',
        "kafka.security.protocol": "SASL_SSL",
    }


def test_spark_kafka_options_carry_the_connection_security(tmp_path):
    """A ClientConfig as Spark's JVM Kafka source takes it (the Java client's names: Kafka's
    SaslConfigs.SASL_JAAS_CONFIG with PlainLoginModule / ScramLoginModule, SslConfigs'
    truststore type PEM); the password is JSON-quoted inside the JAAS line."""
    from airflow_provider_kgroups.client.config import ClientConfig
    from airflow_provider_kgroups.spark.offsets import kafka_bootstrap, spark_kafka_options
    from tests.support.fakekafka import make_self_signed_cert

    ca = make_self_signed_cert(tmp_path).cert
    plain = ClientConfig.create("k1:9092,k2:9093")
    assert spark_kafka_options(plain) == {"security.protocol": "PLAINTEXT"}
    assert kafka_bootstrap(plain) == "k1:9092,k2:9093"
    sasl = ClientConfig.create(
        "k1:9093",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="etl",
        sasl_password="pw",
    )
    assert spark_kafka_options(sasl) == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="etl" '
        'password="pw";',
    }
    scram = ClientConfig.create(
        "k1:9093",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="etl",
        sasl_password='p"w',
        ssl_cafile=str(ca),
        ssl_check_hostname=False,
    )
    assert spark_kafka_options(scram) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="etl" '
        'password="p\\"w";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca),
        "ssl.endpoint.identification.algorithm": "",
    }


def test_kafka_bootstrap_keeps_ipv6_hosts_in_brackets():
    from airflow_provider_kgroups.client.config import ClientConfig
    from airflow_provider_kgroups.spark.offsets import kafka_bootstrap

    assert (
        kafka_bootstrap(ClientConfig.create("[::1]:9092,[2001:db8::5]:9093,k1:9094"))
        == "[::1]:9092,[2001:db8::5]:9093,k1:9094"
    )
