"""The offset range handed from the lag gate (and the event trigger) to Spark: one value,
:class:`OffsetRange`, two offset maps (:class:`~..client.offset_map.OffsetMap`: a
``STARTING`` one and an ``ENDING`` one, which own the nesting, the parsing and each option's
values), their XCom form (:meth:`~OffsetRange.to_xcom` / :meth:`~OffsetRange.from_xcom`: the
sensor's ``startingOffsets`` / ``endingOffsets`` JSON) and Spark's reader options
(:meth:`~OffsetRange.spark_options`); what a range adds is the pairing (the same partitions,
no start after its end). Pure: no pyspark, no Airflow; :mod:`..spark.offsets` and
:mod:`..spark.datasource` read a range with Spark. The functions below the class are the
earlier names of the same things, kept for their callers.

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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..client.offset_map import EARLIEST, LATEST, OffsetKind, OffsetMap, SparkOffsetsError
from ..client.results import TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "STARTING",
    "ENDING",
    "OffsetRange",
    "SparkOffsetsError",
    "nest_offsets",
    "unnest_offsets",
    "flat_offsets",
    "offsets_json",
    "spark_offsets",
    "parse_offsets_json",
    "validate_offset_range",
    "option_kind",
]

STARTING = "startingOffsets"
ENDING = "endingOffsets"


def option_kind(option: str, *, batch: bool = True) -> OffsetKind:
    """The kind of map a Spark option holds: ``STARTING`` / ``ENDING`` for batch reads (each
    refuses the other's sentinel), ``STREAMING`` (both sentinels) otherwise."""
    if option not in (STARTING, ENDING):
        raise SparkOffsetsError(f"option must be {STARTING!r} or {ENDING!r}, got {option!r}.")
    if not batch:
        return OffsetKind.STREAMING
    return OffsetKind.STARTING if option == STARTING else OffsetKind.ENDING


@dataclass(frozen=True)
class OffsetRange:
    """The records ``[starting, ending)`` of each partition: what the lag gate (and the event
    trigger) hands to Spark. ``starting`` is ``EARLIEST`` (-2) where the range starts at the
    log's beginning. Both are offset maps of their option's kind (checked when the range is
    made; plain mappings are read as such); :meth:`check` adds Spark's rules for the pair.
    Its XCom form is the sensor's ``startingOffsets``/``endingOffsets`` JSON. ``batch=False``:
    a streaming query's options (both sentinels on both sides)."""

    starting: Mapping[TopicPartition, int]
    ending: Mapping[TopicPartition, int]
    batch: bool = True

    def __post_init__(self) -> None:
        for option, field_name in ((STARTING, "starting"), (ENDING, "ending")):
            kind = option_kind(option, batch=self.batch)
            object.__setattr__(
                self, field_name, OffsetMap.parse(getattr(self, field_name), kind, name=option)
            )

    @classmethod
    def up_to(
        cls, ending: Mapping[TopicPartition, int], previous: Mapping[Any, Any] | None = None
    ) -> OffsetRange:
        """The range ending at ``ending`` (actual offsets) and starting where ``previous`` (where
        a previous range ended: a ``STARTING`` offset map, or its nesting; -2: earliest) ended, else at earliest: every partition of
        ``ending`` is in both; a start is never after its end (a previous end beyond this one
        starts at the end: nothing to read)."""
        end = OffsetMap.parse(ending, OffsetKind.COMMITTED, name=ENDING)
        before = OffsetMap.parse(previous or {}, OffsetKind.STARTING, name="the previous range's end")
        starting = {}
        for tp, offset in end.items():
            start = before.get(tp, EARLIEST)
            starting[tp] = min(start, offset) if start >= 0 else EARLIEST
        found = cls(starting, end)
        if end:  # nothing to read is '{}' (the sensor's result for no partitions), not an error
            found.check()
        return found

    @classmethod
    def parse(cls, starting: Any, ending: Any, *, batch: bool = True) -> OffsetRange:
        """Both options as given (JSON text, nested or flat mappings, offset maps), each read for
        its kind and naming at least one partition, then checked as Spark checks the pair."""
        start, end = (
            OffsetMap.parse(value, option_kind(option, batch=batch), name=option, nonempty=True)
            for option, value in ((STARTING, starting), (ENDING, ending))
        )
        found = cls(start, end, batch=batch)
        found.check()
        return found

    @classmethod
    def from_json(cls, starting: str, ending: str, *, batch: bool = True) -> OffsetRange:
        """Both options' JSON text, checked as Spark checks them (:meth:`check`)."""
        for option, text in ((STARTING, starting), (ENDING, ending)):
            _json_text(option, text, option_kind(option, batch=batch))
        return cls.parse(starting, ending, batch=batch)

    @classmethod
    def from_xcom(cls, source: Mapping[str, Any]) -> OffsetRange:
        """The sensor's XCom (or an asset event's extra): any mapping with ``startingOffsets``
        and ``endingOffsets`` JSON; checked."""
        missing = [k for k in (STARTING, ENDING) if not isinstance(source, Mapping) or k not in source]
        if missing:
            raise SparkOffsetsError(
                f"the sensor's result has no {' / '.join(missing)}; pass the ConsumerLagSensor "
                "XCom (e.g. gate.output) or starting=/ending= JSON."
            )
        return cls.from_json(source[STARTING], source[ENDING])

    def to_xcom(self) -> dict[str, str]:
        """``{"startingOffsets": JSON, "endingOffsets": JSON}``, the format the sensor's XCom has."""
        return {STARTING: self.starting.to_json(), ENDING: self.ending.to_json()}  # type: ignore[attr-defined]  # both ends are OffsetMaps here

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
        """Spark's rules for the pair (each map's values were checked when the range was made):
        each names a partition, the same partitions in both, no start after its end.
        (``parsed`` is accepted for earlier callers; it changes nothing.)"""
        for option, offsets in ((STARTING, self.starting), (ENDING, self.ending)):
            OffsetMap.parse(offsets, option_kind(option, batch=self.batch), name=option, nonempty=True)
        start, end = self.starting, self.ending
        if set(start) != set(end):
            only_start = sorted(set(start) - set(end))
            only_end = sorted(set(end) - set(start))
            parts = []
            if only_start:
                parts.append(f"only in startingOffsets: {', '.join(map(str, only_start))}")
            if only_end:
                parts.append(f"only in endingOffsets: {', '.join(map(str, only_end))}")
            raise SparkOffsetsError(
                "startingOffsets and endingOffsets must name the same partitions (Spark refuses "
                f"the read otherwise); {'; '.join(parts)}."
            )
        for tp in sorted(start):
            if start[tp] >= 0 and end[tp] >= 0 and start[tp] > end[tp]:
                raise SparkOffsetsError(
                    f"{tp}: startingOffsets {start[tp]} is after endingOffsets {end[tp]} (the end "
                    "is exclusive; equal offsets read nothing)."
                )


def _json_text(option: str, text: Any, kind: OffsetKind) -> str:
    if not isinstance(text, str):
        raise SparkOffsetsError(
            f"{option} must be a JSON string such as {kind.example}, got {type(text).__name__}."
        )
    return text


# -- the earlier names, each a thin delegate ------------------------------------------------------


def nest_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{TopicPartition: offset}`` -> ``{"topic": {"0": offset}}`` (:meth:`OffsetMap.nested`;
    any offset Spark takes)."""
    return OffsetMap(offsets, OffsetKind.STREAMING).nested()


def unnest_offsets(nested: Mapping[str, Mapping[Any, int]]) -> dict[TopicPartition, int]:
    """``{"topic": {"0": 5}}`` -> ``{TopicPartition("topic", 0): 5}``, the inverse of
    :func:`nest_offsets` (any offset Spark takes; read a map of a known use with
    :meth:`OffsetMap.parse` and its kind)."""
    return dict(OffsetMap.parse(nested, OffsetKind.STREAMING, name="offsets"))


def flat_offsets(name: str, offsets: Mapping[Any, Any]) -> dict[TopicPartition, int]:
    """Either shape (``{TopicPartition: int}`` or ``{topic: {partition: int}}``) -> flat."""
    return dict(OffsetMap.parse(offsets, OffsetKind.STREAMING, name=name))


def offsets_json(offsets: Mapping[Any, Any], *, option: str = ENDING, batch: bool = True) -> str:
    """The JSON text of ``offsets`` (``{TopicPartition: int}`` or ``{topic: {partition: int}}``),
    validated for ``option`` (``startingOffsets`` or ``endingOffsets``) first."""
    return OffsetMap.parse(offsets, option_kind(option, batch=batch), name=option, nonempty=True).to_json()


def spark_offsets(
    ending: Mapping[TopicPartition, int], previous: Mapping[str, Mapping[str, int]] | None
) -> tuple[str, str]:
    """``startingOffsets``/``endingOffsets`` JSON of :meth:`OffsetRange.up_to` (kept for its callers)."""
    xcom = OffsetRange.up_to(ending, previous).to_xcom()
    return xcom[STARTING], xcom[ENDING]


def parse_offsets_json(text: str, *, option: str = STARTING, batch: bool = True) -> dict[TopicPartition, int]:
    """Parse and check one option's JSON text against Spark's documented format; returns
    ``{TopicPartition: offset}``. Raises :class:`SparkOffsetsError` naming what is wrong."""
    kind = option_kind(option, batch=batch)
    return dict(OffsetMap.parse(_json_text(option, text, kind), kind, name=option, nonempty=True))


def validate_offset_range(
    starting: str, ending: str, *, batch: bool = True
) -> dict[TopicPartition, tuple[int, int]]:
    """Both options together, as Spark checks them (:meth:`OffsetRange.from_json`): each valid,
    the same partitions in both, no start after its end. Returns ``{TopicPartition: (start, end)}``."""
    return OffsetRange.from_json(starting, ending, batch=batch).pairs()
