"""The Spark Kafka source bridge: ``startingOffsets`` / ``endingOffsets`` (and ``assign``)
exactly as Spark's Kafka batch source (the ``spark-sql-kafka-0-10`` package) takes them.
No pyspark import except in :func:`read_kafka_range`.

Spark's options::

    startingOffsets / endingOffsets   {"topicA": {"0": 23, "1": -2}, "topicB": {"0": 5}}
    assign                            {"topicA": [0, 1], "topicB": [0]}

The format and which offsets each option takes live in :mod:`..client.offset_map` (one
offset map), the pairing of the two in :mod:`..lag.offset_range`. The sensor's XCom
(:mod:`..lag.gate`) builds its ``startingOffsets``/``endingOffsets``
with :func:`spark_offsets`; a PySpark task turns that XCom into reader options with
:func:`kafka_batch_options`, or reads the range with :func:`read_kafka_range`::

    @task.pyspark(conn_id="spark_default")
    def process(gate: dict, spark):
        df = read_kafka_range(spark, "kafka-1:9092", gate)  # exactly the offsets the gate covered
        ...
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..lag.offset_range import (  # the range's one home; re-exported here, where Spark users look
    EARLIEST,
    ENDING,
    LATEST,
    STARTING,
    OffsetRange,
    SparkOffsetsError,
    flat_offsets,
    nest_offsets,
    offsets_json,
    parse_offsets_json,
    spark_offsets,
    unnest_offsets,
    validate_offset_range,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from ..client.config import ClientConfig

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetRange",
    "SparkOffsetsError",
    "nest_offsets",
    "unnest_offsets",
    "offsets_json",
    "spark_offsets",
    "parse_offsets_json",
    "validate_offset_range",
    "assign_json",
    "kafka_batch_options",
    "kafka_bootstrap",
    "spark_kafka_options",
    "read_kafka_range",
]


def assign_json(partitions: Any) -> str:
    """Spark's ``assign`` option (``{"topic": [0, 1]}``) for the partitions of an offsets
    mapping or an iterable of TopicPartitions."""
    tps = (
        sorted(flat_offsets("assign", partitions)) if isinstance(partitions, Mapping) else sorted(partitions)
    )
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return json.dumps(out)


def kafka_batch_options(
    source: Mapping[str, Any] | OffsetRange | None = None,
    *,
    starting: str | None = None,
    ending: str | None = None,
) -> dict[str, str]:
    """Reader options for exactly one offset range: ``assign``, ``startingOffsets``,
    ``endingOffsets``, validated. ``source`` is an :class:`OffsetRange` or the sensor's XCom (any
    mapping with ``startingOffsets`` and ``endingOffsets``), or give ``starting``/``ending`` yourself.
    ``assign`` lists the same partitions, so the read neither needs nor picks up others. JSON
    text given is passed on as given (Spark reads what the XCom says)."""
    if source is not None and (starting is not None or ending is not None):
        raise SparkOffsetsError("give either the sensor's result or starting=/ending=, not both.")
    if isinstance(source, OffsetRange):
        source.check()
        return source.spark_options()
    if source is not None:
        offset_range = OffsetRange.from_xcom(source)
        starting, ending = source[STARTING], source[ENDING]
    elif starting is None or ending is None:
        raise SparkOffsetsError("both startingOffsets and endingOffsets are needed for a batch read.")
    else:
        offset_range = OffsetRange.from_json(starting, ending)
    return {"assign": assign_json(offset_range.partitions), STARTING: starting, ENDING: ending}


def kafka_bootstrap(config: ClientConfig) -> str:
    """``kafka.bootstrap.servers`` for Spark: the config's servers as ``host:port`` (IPv6 in brackets)."""
    return ",".join(str(b) for b in config.bootstrap_servers)


def spark_kafka_options(config: ClientConfig) -> dict[str, str]:
    """Kafka client settings for Spark's JVM Kafka source (Java client names, without the
    ``kafka.`` prefix; :func:`read_kafka_range` adds it) from a :class:`ClientConfig`: security
    protocol, SASL PLAIN/SCRAM as a ``sasl.jaas.config`` line, a PEM CA file, hostname checking.
    Holds the password: pass it to the reader, never to a log."""
    options = {"security.protocol": config.security_protocol}
    if config.sasl_mechanism:
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if config.sasl_mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        options["sasl.mechanism"] = config.sasl_mechanism
        options["sasl.jaas.config"] = (
            f"{module} required username={json.dumps(config.sasl_username)} "
            f"password={json.dumps(config.sasl_password)};"
        )
    if config.ssl_cafile:
        options["ssl.truststore.type"] = "PEM"
        options["ssl.truststore.location"] = config.ssl_cafile
    if config.security_protocol in ("SSL", "SASL_SSL") and not config.ssl_check_hostname:
        options["ssl.endpoint.identification.algorithm"] = ""
    return options


def read_kafka_range(
    spark: SparkSession,
    bootstrap_servers: str,
    source: Mapping[str, Any] | OffsetRange | None = None,
    *,
    starting: str | None = None,
    ending: str | None = None,
    kafka_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """``spark.read.format("kafka")`` over exactly that range (needs the spark-sql-kafka-0-10
    package on the Spark classpath, e.g. ``--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>``).
    ``kafka_options`` are Kafka client settings, passed as ``kafka.<name>`` (security etc.;
    :func:`spark_kafka_options` builds them from a connection's ClientConfig).
    ``failOnDataLoss`` stays Spark's default (true): a range that retention already deleted
    fails the read instead of silently returning less."""
    if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
        raise SparkOffsetsError("bootstrap_servers must be 'host:port[,host:port...]'.")
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
    for key, value in kafka_batch_options(source, starting=starting, ending=ending).items():
        reader = reader.option(key, value)
    for key, value in (kafka_options or {}).items():
        reader = reader.option(key if key.startswith("kafka.") else f"kafka.{key}", value)
    return reader.load()
