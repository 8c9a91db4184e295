"""The offset range handed from the lag gate (and the event trigger) to Spark: one value,
:class:`OffsetRange`, with one nest/unnest (:func:`nest_offsets`, :func:`unnest_offsets`), its
XCom form (:meth:`~OffsetRange.to_xcom` / :meth:`~OffsetRange.from_xcom`: the sensor's
``startingOffsets`` / ``endingOffsets`` JSON) and Spark's reader options
(:meth:`~OffsetRange.spark_options`). Pure: no pyspark, no Airflow; :mod:`..spark.offsets`
and :mod:`..spark.datasource` read a range with Spark.

The format, from Spark's Structured Streaming + Kafka integration guide and the connector's
source (``JsonUtils.partitionOffsets``, ``KafkaSourceProvider.validateBatchOptions`` and
``checkOffsetLimitValidity``)::

    startingOffsets / endingOffsets   {"topicA": {"0": 23, "1": -2}, "topicB": {"0": 5}}

* a JSON object: topic name -> object of partition -> offset; the partition is a JSON
  *string* holding an int (``"0"``), the offset a JSON integer;
* ``-2`` means earliest, ``-1`` latest;
* batch reads: ``-1`` (latest) is not allowed in ``startingOffsets``, ``-2`` (earliest) is not
  allowed in ``endingOffsets``;
* when both are given per partition they must name the same partitions, and a start may not
  be after its end (where both are actual offsets);
* the ending offset is exclusive: records with ``offset < end`` are read, which is exactly a
  committed offset (the next record the group will read).

Spark's own parser is lenient (Jackson coerces ``"23"`` and ``23.0`` to a long); the
validator here is strict, so what passes it is what Spark documents.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from ..client.errors import ConfigurationError
from ..client.results import TopicPartition

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


def unnest_offsets(nested: Mapping[str, Mapping[Any, int]]) -> dict[TopicPartition, int]:
    """``{"topic": {"0": 5}}`` -> ``{TopicPartition("topic", 0): 5}`` (no checks: see
    :func:`parse_offsets_json` for Spark's rules); the inverse of :func:`nest_offsets`."""
    return {TopicPartition(str(topic), int(partition)): int(offset)
            for topic, parts in nested.items() for partition, offset in parts.items()}


@dataclass(frozen=True)
class OffsetRange:
    """The records ``[starting, ending)`` of each partition: what the lag gate (and the event
    trigger) hands to Spark. ``starting`` is ``EARLIEST`` (-2) where the range starts at the
    log's beginning. Its XCom form is the sensor's ``startingOffsets``/``endingOffsets`` JSON."""

    starting: Mapping[TopicPartition, int]
    ending: Mapping[TopicPartition, int]

    @classmethod
    def up_to(cls, ending: Mapping[TopicPartition, int],
              previous: Mapping[str, Mapping[str, int]] | None = None) -> "OffsetRange":
        """The range ending at ``ending`` and starting where ``previous`` (a nested previous
        ending) ended, else at earliest: every partition of ``ending`` is in both; a start is
        never after its end (a previous end beyond this one starts at the end: nothing to read)."""
        starting = {}
        for tp, end in ending.items():
            start = (previous or {}).get(tp.topic, {}).get(str(tp.partition), EARLIEST)
            starting[tp] = min(start, end) if start >= 0 else EARLIEST
        found = cls(starting, dict(ending))
        if ending:  # nothing to read is '{}' (the sensor's result for no partitions), not an error
            found.check()
        return found

    @classmethod
    def from_json(cls, starting: str, ending: str, *, batch: bool = True) -> "OffsetRange":
        """Both options' JSON text, checked as Spark checks them (:meth:`check`)."""
        start = parse_offsets_json(starting, option=STARTING, batch=batch)
        end = parse_offsets_json(ending, option=ENDING, batch=batch)
        found = cls(start, end)
        found.check(parsed=True)
        return found

    @classmethod
    def from_xcom(cls, source: Mapping[str, Any]) -> "OffsetRange":
        """The sensor's XCom (or an asset event's extra): any mapping with ``startingOffsets``
        and ``endingOffsets`` JSON; checked."""
        missing = [k for k in (STARTING, ENDING) if not isinstance(source, Mapping) or k not in source]
        if missing:
            raise SparkOffsetsError(f"the sensor's result has no {' / '.join(missing)}; pass the ConsumerLagSensor "
                                    "XCom (e.g. gate.output) or starting=/ending= JSON.")
        return cls.from_json(source[STARTING], source[ENDING])

    def to_xcom(self) -> dict[str, str]:
        """``{"startingOffsets": JSON, "endingOffsets": JSON}``, the format the sensor's XCom has."""
        return {STARTING: json.dumps(nest_offsets(self.starting)), ENDING: json.dumps(nest_offsets(self.ending))}

    @property
    def partitions(self) -> list[TopicPartition]:
        return sorted(self.ending)

    def pairs(self) -> dict[TopicPartition, tuple[int, int]]:
        """``{TopicPartition: (start, end)}``, partitions in order."""
        return {tp: (self.starting[tp], self.ending[tp]) for tp in self.partitions}

    def spark_options(self) -> dict[str, str]:
        """Spark Kafka batch reader options for exactly this range: ``assign`` (the same
        partitions, so the read neither needs nor picks up others), ``startingOffsets``, ``endingOffsets``."""
        assign: dict[str, list[int]] = {}
        for tp in self.partitions:
            assign.setdefault(tp.topic, []).append(tp.partition)
        return {"assign": json.dumps(assign), **self.to_xcom()}

    def check(self, *, parsed: bool = False) -> None:
        """Spark's rules: each option valid, the same partitions in both, no start after its end."""
        if not parsed:
            xcom = self.to_xcom()
            parse_offsets_json(xcom[STARTING], option=STARTING)
            parse_offsets_json(xcom[ENDING], option=ENDING)
        start, end = self.starting, self.ending
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
                raise SparkOffsetsError(f"{tp}: startingOffsets {start[tp]} is after endingOffsets {end[tp]} (the end "
                                        "is exclusive; equal offsets read nothing).")


def flat_offsets(name: str, offsets: Mapping[Any, Any]) -> dict[TopicPartition, int]:
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
    flat = flat_offsets(option, offsets)
    text = json.dumps(nest_offsets(flat))
    parse_offsets_json(text, option=option, batch=batch)
    return text


def spark_offsets(ending: Mapping[TopicPartition, int],
                  previous: Mapping[str, Mapping[str, int]] | None) -> tuple[str, str]:
    """``startingOffsets``/``endingOffsets`` JSON of :meth:`OffsetRange.up_to` (kept for its callers)."""
    xcom = OffsetRange.up_to(ending, previous).to_xcom()
    return xcom[STARTING], xcom[ENDING]


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
    """Both options together, as Spark checks them (:meth:`OffsetRange.from_json`): each valid,
    the same partitions in both, no start after its end. Returns ``{TopicPartition: (start, end)}``."""
    return OffsetRange.from_json(starting, ending, batch=batch).pairs()
