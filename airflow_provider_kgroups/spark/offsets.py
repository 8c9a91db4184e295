"""The Spark Kafka source bridge: ``startingOffsets`` / ``endingOffsets`` (and ``assign``)
exactly as Spark's Kafka batch source (the ``spark-sql-kafka-0-10`` package) takes them.
No pyspark import except in :func:`read_kafka_range`.

The format, from Spark's Structured Streaming + Kafka integration guide and the connector's
source (``JsonUtils.partitionOffsets``, ``KafkaSourceProvider.validateBatchOptions`` and
``checkOffsetLimitValidity``)::

    startingOffsets / endingOffsets   {"topicA": {"0": 23, "1": -2}, "topicB": {"0": 5}}
    assign                            {"topicA": [0, 1], "topicB": [0]}

* a JSON object: topic name -> object of partition -> offset; the partition is a JSON
  *string* holding an int (``"0"``), the offset a JSON integer;
* ``-2`` means earliest, ``-1`` latest;
* batch reads: ``-1`` (latest) is not allowed in ``startingOffsets`` ("startingOffsets for
  <tp> can't be latest for batch queries on Kafka"), ``-2`` (earliest) is not allowed in
  ``endingOffsets`` ("ending offset for <tp> can't be earliest ...");
* when both are given per partition they must name the same partitions, and a start may not
  be after its end (where both are actual offsets);
* the ending offset is exclusive: records with ``offset < end`` are read, which is exactly a
  committed offset (the next record the group will read).

Spark's own parser is lenient (Jackson coerces ``"23"`` and ``23.0`` to a long); the
validator here is strict, so what passes it is what Spark documents.

The sensor's XCom (:mod:`..sensors.gate`) builds its ``startingOffsets``/``endingOffsets``
with :func:`spark_offsets`; a PySpark task turns that XCom into reader options with
:func:`kafka_batch_options`, or reads the range with :func:`read_kafka_range`::

    @task.pyspark(conn_id="spark_default")
    def process(gate: dict, spark):
        df = read_kafka_range(spark, "kafka-1:9092", gate)  # exactly the offsets the gate covered
        ...
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from ..client.errors import ConfigurationError
from ..client.results import TopicPartition

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["EARLIEST", "LATEST", "SparkOffsetsError", "nest_offsets", "offsets_json", "spark_offsets",
           "parse_offsets_json", "validate_offset_range", "assign_json", "kafka_batch_options", "read_kafka_range"]

EARLIEST = -2
LATEST = -1
STARTING = "startingOffsets"
ENDING = "endingOffsets"
_EXAMPLE = '{"orders": {"0": 23, "1": -2}}'


class SparkOffsetsError(ConfigurationError):
    """Offsets that Spark's Kafka batch source would refuse (or misread); the message names
    the option, the topic, the partition and the rule."""


def nest_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{TopicPartition: offset}`` -> ``{"topic": {"0": offset}}``, topics and partitions in
    order (partitions numerically, as Spark writes them)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def _flat(name: str, offsets: Mapping[Any, Any]) -> dict[TopicPartition, int]:
    """Either shape (``{TopicPartition: int}`` or ``{topic: {partition: int}}``) -> flat."""
    flat: dict[TopicPartition, int] = {}
    for key, value in offsets.items():
        if isinstance(key, TopicPartition):
            flat[key] = value
        elif isinstance(value, Mapping):
            for partition, offset in value.items():
                flat[TopicPartition(key, _partition(name, key, partition))] = offset
        else:
            raise SparkOffsetsError(f"{name}: {key!r} -> {value!r} is neither TopicPartition -> offset nor "
                                    f"topic -> {{partition: offset}}; expected e.g. {_EXAMPLE}.")
    return flat


def offsets_json(offsets: Mapping[Any, Any], *, option: str = ENDING, batch: bool = True) -> str:
    """The JSON text of ``offsets`` (``{TopicPartition: int}`` or ``{topic: {partition: int}}``),
    validated for ``option`` (``startingOffsets`` or ``endingOffsets``) first."""
    flat = _flat(option, offsets)
    text = json.dumps(nest_offsets(flat))
    parse_offsets_json(text, option=option, batch=batch)
    return text


def spark_offsets(ending: Mapping[TopicPartition, int],
                  previous: Mapping[str, Mapping[str, int]] | None) -> tuple[str, str]:
    """``startingOffsets``/``endingOffsets`` JSON for the records in [previous barrier or
    earliest, ending): every partition of ``ending`` is listed in both; a start is never after
    its end (a previous barrier beyond this one starts at the end: nothing to read)."""
    starting = {}
    for tp, end in ending.items():
        start = (previous or {}).get(tp.topic, {}).get(str(tp.partition), EARLIEST)
        starting[tp] = min(start, end) if start >= 0 else EARLIEST
    starting_json, ending_json = json.dumps(nest_offsets(starting)), json.dumps(nest_offsets(ending))
    if ending:  # nothing to read is '{}' (the sensor's result for no partitions), not an error
        validate_offset_range(starting_json, ending_json)
    return starting_json, ending_json


def _partition(option: str, topic: Any, partition: Any) -> int:
    if isinstance(partition, bool) or not isinstance(partition, (str, int)):
        raise SparkOffsetsError(f"{option}: topic {topic!r} has partition key {partition!r}; a partition is an "
                                f"int written as a JSON string, e.g. {_EXAMPLE}.")
    text = str(partition)
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0") or int(text) > 2**31 - 1:
        raise SparkOffsetsError(f"{option}: topic {topic!r} has partition {partition!r}, which is not a partition "
                                f"number (a non-negative int such as \"0\"); expected e.g. {_EXAMPLE}.")
    return int(text)


def parse_offsets_json(text: str, *, option: str = STARTING, batch: bool = True) -> dict[TopicPartition, int]:
    """Parse and check one option's JSON text against Spark's documented format; returns
    ``{TopicPartition: offset}``. Raises :class:`SparkOffsetsError` naming what is wrong."""
    if option not in (STARTING, ENDING):
        raise SparkOffsetsError(f"option must be {STARTING!r} or {ENDING!r}, got {option!r}.")
    if not isinstance(text, str):
        raise SparkOffsetsError(f"{option} must be a JSON string such as {_EXAMPLE}, got {type(text).__name__}.")
    if text.strip() in ("earliest", "latest"):
        raise SparkOffsetsError(f"{option}={text.strip()!r} is Spark's global form; this bridge passes per-partition "
                                f"JSON such as {_EXAMPLE}.")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SparkOffsetsError(f"{option} is not valid JSON ({exc}); expected e.g. {_EXAMPLE}.") from None
    if not isinstance(data, dict):
        raise SparkOffsetsError(f"{option} must be a JSON object of topic -> {{partition: offset}}, got "
                                f"{type(data).__name__}; expected e.g. {_EXAMPLE}.")
    if not data:
        raise SparkOffsetsError(f"{option} names no topic: Spark would read nothing; expected e.g. {_EXAMPLE}.")
    out: dict[TopicPartition, int] = {}
    for topic, parts in data.items():
        if not topic:
            raise SparkOffsetsError(f"{option} has an empty topic name.")
        if not isinstance(parts, dict) or not parts:
            raise SparkOffsetsError(f"{option}: topic {topic!r} must map to a non-empty object of partition -> "
                                    f"offset, got {parts!r}; expected e.g. {_EXAMPLE}.")
        for partition, offset in parts.items():
            number = _partition(option, topic, partition)
            where = f"{option}: {topic}[{number}]"
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise SparkOffsetsError(f"{where} is {offset!r}; an offset is a JSON integer (>= 0, -2 earliest, "
                                        "-1 latest).")
            if offset < EARLIEST:
                raise SparkOffsetsError(f"{where} is {offset}; offsets are >= 0, or -2 (earliest) / -1 (latest).")
            if offset >= 2**63:
                raise SparkOffsetsError(f"{where} is {offset}, beyond a Kafka offset (int64).")
            if batch and option == STARTING and offset == LATEST:
                raise SparkOffsetsError(f"{where} is -1 (latest), which Spark's Kafka source refuses in "
                                        "startingOffsets for batch queries; use -2 (earliest) or an offset >= 0.")
            if batch and option == ENDING and offset == EARLIEST:
                raise SparkOffsetsError(f"{where} is -2 (earliest), which Spark's Kafka source refuses in "
                                        "endingOffsets for batch queries; use -1 (latest) or an offset >= 0 "
                                        "(exclusive).")
            out[TopicPartition(topic, number)] = offset
    return out


def validate_offset_range(starting: str, ending: str, *, batch: bool = True) -> dict[TopicPartition, tuple[int, int]]:
    """Both options together, as Spark checks them: each valid, the same partitions in both,
    no start after its end. Returns ``{TopicPartition: (start, end)}``."""
    start = parse_offsets_json(starting, option=STARTING, batch=batch)
    end = parse_offsets_json(ending, option=ENDING, batch=batch)
    if set(start) != set(end):
        only_start = sorted(set(start) - set(end))
        only_end = sorted(set(end) - set(start))
        parts = []
        if only_start:
            parts.append(f"only in startingOffsets: {', '.join(map(str, only_start))}")
        if only_end:
            parts.append(f"only in endingOffsets: {', '.join(map(str, only_end))}")
        raise SparkOffsetsError("startingOffsets and endingOffsets must name the same partitions (Spark refuses "
                                f"the read otherwise); {'; '.join(parts)}.")
    for tp in sorted(start):
        if start[tp] >= 0 and end[tp] >= 0 and start[tp] > end[tp]:
            raise SparkOffsetsError(f"{tp}: startingOffsets {start[tp]} is after endingOffsets {end[tp]} (the end is "
                                    "exclusive; equal offsets read nothing).")
    return {tp: (start[tp], end[tp]) for tp in sorted(start)}


def assign_json(partitions: Any) -> str:
    """Spark's ``assign`` option (``{"topic": [0, 1]}``) for the partitions of an offsets
    mapping or an iterable of TopicPartitions."""
    tps = sorted(_flat("assign", partitions)) if isinstance(partitions, Mapping) else sorted(partitions)
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return json.dumps(out)


def kafka_batch_options(source: Mapping[str, Any] | None = None, *, starting: str | None = None,
                        ending: str | None = None) -> dict[str, str]:
    """Reader options for exactly one offset range: ``assign``, ``startingOffsets``,
    ``endingOffsets``, validated. ``source`` is the sensor's XCom (any mapping with
    ``startingOffsets`` and ``endingOffsets``), or give ``starting``/``ending`` yourself.
    ``assign`` lists the same partitions, so the read neither needs nor picks up others."""
    if source is not None:
        if starting is not None or ending is not None:
            raise SparkOffsetsError("give either the sensor's result or starting=/ending=, not both.")
        missing = [k for k in (STARTING, ENDING) if not isinstance(source, Mapping) or k not in source]
        if missing:
            raise SparkOffsetsError(f"the sensor's result has no {' / '.join(missing)}; pass the ConsumerLagSensor "
                                    "XCom (e.g. gate.output) or starting=/ending= JSON.")
        starting, ending = source[STARTING], source[ENDING]
    if starting is None or ending is None:
        raise SparkOffsetsError("both startingOffsets and endingOffsets are needed for a batch read.")
    ranges = validate_offset_range(starting, ending)
    return {"assign": assign_json(list(ranges)), STARTING: starting, ENDING: ending}


def read_kafka_range(spark: "SparkSession", bootstrap_servers: str, source: Mapping[str, Any] | None = None, *,
                     starting: str | None = None, ending: str | None = None,
                     kafka_options: Mapping[str, str] | None = None) -> "DataFrame":
    """``spark.read.format("kafka")`` over exactly that range (needs the spark-sql-kafka-0-10
    package on the Spark classpath, e.g. ``--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>``).
    ``kafka_options`` are Kafka client settings, passed as ``kafka.<name>`` (security etc.).
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
