"""Landing-zone layout: file names, writing one file, and choosing the files of an offset range.

No Spark and no Kafka client here: a landing consumer calls :func:`write_file` after each
batch and commits ``to`` once it returns; a reader calls :func:`select_range` and reads the
files it names (:mod:`.reader` does that with Spark).

    <root>/<topic>/<partition>/<from:020d>-<to:020d>.<jsonl|parquet>

* ``from``: the consumer's position before the batch (the offset it had committed, or the
  first record's offset when it starts on a partition);
* ``to``: its position after the batch, ``last record's offset + 1``: what it commits next.

Offsets are zero-padded to 20 digits so names sort in offset order. A file is written under
a hidden temporary name (``.<name>.tmp-<uuid>``) and then renamed, so a reader never sees a
partial file; names starting with ``.`` or ``_`` are never read.

``<root>`` is a local directory or any fsspec URL (``s3://bucket/landing``); Spark may need a
different scheme for the same place (``s3a://``): the reader takes ``spark_root`` for that.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import fsspec

from ..client.errors import ConfigurationError
from ..client.numbers import check_int
from ..client.results import TopicPartition

__all__ = [
    "FORMATS",
    "LANDING_COLUMNS",
    "LandingFile",
    "LandingGapError",
    "PartitionRange",
    "RangeSelection",
    "file_name",
    "parse_file_name",
    "write_file",
    "list_files",
    "parse_range",
    "select_range",
]

#: The columns of every landing row, in this order.
LANDING_COLUMNS = ("topic", "partition", "offset", "timestamp_ms", "key", "value")
#: format -> file extension
FORMATS = {"jsonl": ".jsonl", "parquet": ".parquet"}
_DIGITS = 20
_NAME = re.compile(r"^(\d{20})-(\d{20})\.(jsonl|parquet)$")
_EXTENSIONS = {ext: fmt for fmt, ext in FORMATS.items()}


class LandingGapError(RuntimeError):
    """Part of the requested range is in no landing file (the message names the partition and
    the missing offsets): reading on would silently miss records."""


def _check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ConfigurationError(f"landing format {fmt!r} is not one of {', '.join(map(repr, FORMATS))}.")
    return fmt


def file_name(start: int, end: int, fmt: str = "jsonl") -> str:
    """``00000000000000000040-00000000000000000047.jsonl`` for positions [40, 47)."""
    _check_format(fmt)
    for name, value in (("start", start), ("end", end)):
        check_int(
            f"landing file {name}", value, at_least=0, at_most=10**_DIGITS - 1, must_be="an offset >= 0"
        )
    if end <= start:
        raise ConfigurationError(
            f"a landing file covers [start, end) with end > start, got [{start}, {end})."
        )
    return f"{start:0{_DIGITS}d}-{end:0{_DIGITS}d}{FORMATS[fmt]}"


def parse_file_name(name: str) -> tuple[int, int, str] | None:
    """``(start, end, format)`` of a landing file name, or None for any other name."""
    match = _NAME.match(name)
    if match is None:
        return None
    start, end = int(match.group(1)), int(match.group(2))
    return (start, end, match.group(3)) if end > start else None


@dataclass(frozen=True, slots=True, order=True)
class LandingFile:
    """One landing file: the records of ``topic[partition]`` at positions ``[start, end)``."""

    topic: str
    partition: int
    start: int
    end: int
    fmt: str = "jsonl"

    @property
    def name(self) -> str:
        return file_name(self.start, self.end, self.fmt)

    @property
    def relative(self) -> str:
        """The path below the landing root."""
        return f"{self.topic}/{self.partition}/{self.name}"


def _fs(root: str, storage_options: Mapping[str, Any] | None):
    if not isinstance(root, str) or not root.strip():
        raise ConfigurationError(f"landing root must be a directory or an fsspec URL, got {root!r}.")
    fs, path = fsspec.core.url_to_fs(root.rstrip("/"), **dict(storage_options or {}))
    return fs, path.rstrip("/")


def _check_topic(topic: Any) -> str:
    if not isinstance(topic, str) or not topic or topic in (".", "..") or "/" in topic:
        raise ConfigurationError(f"{topic!r} is not a Kafka topic name usable as a directory.")
    return topic


def write_file(
    root: str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    rows: Iterable[Mapping[str, Any]],
    *,
    fmt: str = "jsonl",
    storage_options: Mapping[str, Any] | None = None,
) -> str:
    """Write the rows of positions ``[start, end)`` of ``topic[partition]`` as one file, atomically
    (a hidden temporary name, then a rename); returns the file's path. Commit ``end`` only after
    this returns. Every row needs the :data:`LANDING_COLUMNS`; its ``offset`` must lie in
    ``[start, end)`` and its topic and partition must be these."""
    _check_topic(topic)
    name = file_name(start, end, fmt)
    out = []
    for row in rows:
        missing = [c for c in LANDING_COLUMNS if c not in row]
        if missing:
            raise ConfigurationError(f"landing row {dict(row)!r} lacks {', '.join(missing)}.")
        if row["topic"] != topic or row["partition"] != partition:
            raise ConfigurationError(
                f"row of {row['topic']}[{row['partition']}] in a file of {topic}[{partition}]."
            )
        if not start <= row["offset"] < end:
            raise ConfigurationError(f"row offset {row['offset']} outside the file's range [{start}, {end}).")
        out.append({c: row[c] for c in LANDING_COLUMNS})
    fs, base = _fs(root, storage_options)
    directory = f"{base}/{topic}/{partition}"
    fs.makedirs(directory, exist_ok=True)
    final = f"{directory}/{name}"
    temporary = f"{directory}/.{name}.tmp-{uuid.uuid4().hex[:12]}"
    if fmt == "jsonl":
        data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in out).encode()
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema(
            [
                ("topic", pa.string()),
                ("partition", pa.int32()),
                ("offset", pa.int64()),
                ("timestamp_ms", pa.int64()),
                ("key", pa.string()),
                ("value", pa.string()),
            ]
        )
        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(out, schema=schema), buffer)
        data = buffer.getvalue()
    with fs.open(temporary, "wb") as f:
        f.write(data)
    fs.mv(temporary, final)
    return final


def list_files(
    root: str,
    partitions: Iterable[TopicPartition] | None = None,
    *,
    fmt: str = "jsonl",
    storage_options: Mapping[str, Any] | None = None,
) -> dict[TopicPartition, list[LandingFile]]:
    """The landing files of ``partitions`` (default: every partition under ``root``), by name
    only (nothing is opened), sorted by start offset. Hidden and foreign names are skipped."""
    _check_format(fmt)
    fs, base = _fs(root, storage_options)
    if partitions is None:
        wanted = []
        for topic_dir in fs.ls(base, detail=False) if fs.isdir(base) else []:
            topic = topic_dir.rstrip("/").rsplit("/", 1)[-1]
            if topic.startswith((".", "_")):
                continue
            for part_dir in fs.ls(topic_dir, detail=False):
                part = part_dir.rstrip("/").rsplit("/", 1)[-1]
                if part.isdigit():
                    wanted.append(TopicPartition(topic, int(part)))
    else:
        wanted = sorted(set(partitions))
    out: dict[TopicPartition, list[LandingFile]] = {}
    for tp in wanted:
        directory = f"{base}/{_check_topic(tp.topic)}/{tp.partition}"
        files = []
        for path in fs.ls(directory, detail=False) if fs.isdir(directory) else []:
            parsed = parse_file_name(path.rstrip("/").rsplit("/", 1)[-1])
            if parsed is not None and parsed[2] == fmt:
                files.append(LandingFile(tp.topic, tp.partition, parsed[0], parsed[1], fmt))
        out[tp] = sorted(files)
    return out


# -- ranges ---------------------------------------------------------------------------------------


def parse_range(
    source: Mapping[str, Any] | None = None, *, starting: Any = None, ending: Any = None
) -> dict[TopicPartition, tuple[int | None, int]]:
    """``{TopicPartition: (start or None for earliest, end)}`` from the ConsumerLagSensor's XCom
    (``source``, a mapping with ``startingOffsets`` and ``endingOffsets``) or from
    ``starting``/``ending`` (Spark Kafka-source JSON or mappings). The rules are Spark's (see
    :mod:`airflow_provider_kgroups.lag.offset_range`), and the end of every partition must be an
    actual offset: a landing zone has no "latest"."""
    from ..client.offset_map import EARLIEST, OffsetKind, OffsetMap
    from ..lag.offset_range import ENDING, LATEST, STARTING, OffsetRange

    if source is not None:
        if starting is not None or ending is not None:
            raise ConfigurationError("give either the sensor's result or starting=/ending=, not both.")
        if not isinstance(source, Mapping) or STARTING not in source or ENDING not in source:
            raise ConfigurationError(
                f"the sensor's result has no {STARTING}/{ENDING}: pass the ConsumerLagSensor "
                "XCom (e.g. gate.output), or starting=/ending=."
            )
        starting, ending = source[STARTING], source[ENDING]
    if ending is None:
        raise ConfigurationError(
            f"{ENDING} is needed: the landing zone is read up to an exclusive end offset."
        )
    end = OffsetMap.parse(ending, OffsetKind.ENDING, name=ENDING)
    if not end:
        return {}  # no partition: nothing to read
    ranges = OffsetRange.parse({tp: EARLIEST for tp in end} if starting is None else starting, end).pairs()
    latest = sorted(str(tp) for tp, (_, end) in ranges.items() if end == LATEST)
    if latest:
        raise ConfigurationError(
            f"{ENDING} is -1 (latest) for {', '.join(latest)}: a landing zone has no "
            "'latest'; pass the sensor's endingOffsets (the barrier it waited for)."
        )
    return {tp: (None if start < 0 else start, end) for tp, (start, end) in ranges.items()}


@dataclass(frozen=True, slots=True)
class PartitionRange:
    """The files chosen for ``topic[partition]`` and the offsets ``[start, end)`` to keep from them
    (``start`` None: from the earliest landed offset, ``first``)."""

    topic: str
    partition: int
    start: int | None
    end: int
    files: tuple[LandingFile, ...]
    first: int | None = (
        None  # the first offset the chosen files cover (the range's start, or earliest landed)
    )

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def overlapping(self) -> bool:
        """True when chosen files overlap: the same offset is in two files and must be read once."""
        return any(b.start < a.end for a, b in zip(self.files, self.files[1:]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "first": self.first,
            "files": [f.name for f in self.files],
            "overlapping": self.overlapping,
        }


@dataclass(frozen=True, slots=True)
class RangeSelection:
    """What :func:`select_range` chose: per partition, files and offset bounds."""

    root: str
    fmt: str
    ranges: tuple[PartitionRange, ...]

    @property
    def files(self) -> list[LandingFile]:
        return [f for r in self.ranges for f in r.files]

    @property
    def overlapping(self) -> bool:
        return any(r.overlapping for r in self.ranges)

    @property
    def empty(self) -> bool:
        return not any(r.files for r in self.ranges)

    def to_dict(self) -> dict[str, Any]:
        partitions: dict[str, dict[str, Any]] = {}
        for r in self.ranges:
            partitions.setdefault(r.topic, {})[str(r.partition)] = r.to_dict()
        return {
            "root": self.root,
            "format": self.fmt,
            "files": len(self.files),
            "overlapping": self.overlapping,
            "partitions": partitions,
        }


def _cover(tp: TopicPartition, start: int | None, end: int, files: list[LandingFile]) -> PartitionRange:
    """The fewest files (greedy by reach) covering [start, end); raises LandingGapError on a hole."""
    low = start if start is not None else -1
    candidates = [f for f in files if f.end > low and f.start < end]  # sorted by start
    if start is not None and start >= end:
        return PartitionRange(tp.topic, tp.partition, start, end, (), None)
    if start is None:
        if end == 0:
            return PartitionRange(tp.topic, tp.partition, start, end, (), None)
        if not candidates:
            raise LandingGapError(
                f"{tp}: nothing has landed below offset {end}, which the range ends at: is the "
                "landing consumer writing to this root, and has it committed?"
            )
        cursor = candidates[0].start
    else:
        cursor = start
    first = cursor
    chosen: list[LandingFile] = []
    best: LandingFile | None = None
    i = 0
    while cursor < end:
        while i < len(candidates) and candidates[i].start <= cursor:
            if best is None or candidates[i].end > best.end:
                best = candidates[i]
            i += 1
        if best is None or best.end <= cursor:
            upto = candidates[i].start if i < len(candidates) else end
            raise LandingGapError(
                f"{tp}: offsets [{cursor}, {upto}) of the range [{first}, {end}) are in no landing "
                f"file: the landing zone has a hole there (files deleted, or a consumer that names "
                "files by record offsets instead of positions); refusing to read less than the range."
            )
        chosen.append(best)
        cursor = best.end
    return PartitionRange(tp.topic, tp.partition, start, end, tuple(chosen), first)


def select_range(
    root: str,
    source: Mapping[str, Any] | None = None,
    *,
    starting: Any = None,
    ending: Any = None,
    fmt: str = "jsonl",
    storage_options: Mapping[str, Any] | None = None,
) -> RangeSelection:
    """Choose the landing files that hold exactly the offset range (see :func:`parse_range` for
    ``source``/``starting``/``ending``): for each partition the fewest files covering
    ``[start, end)``, by their names alone. Raises :class:`LandingGapError` when some offsets of
    the range are in no file."""
    _check_format(fmt)
    ranges = parse_range(source, starting=starting, ending=ending)
    listed = list_files(root, list(ranges), fmt=fmt, storage_options=storage_options)
    chosen = tuple(_cover(tp, start, end, listed.get(tp, [])) for tp, (start, end) in sorted(ranges.items()))
    return RangeSelection(root.rstrip("/"), fmt, chosen)
