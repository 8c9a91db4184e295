"""The landing zone: what a landing consumer wrote, keyed by topic, partition and offset, and
exactly one offset range of it read back for Spark.

Layout (:mod:`.layout`; no Spark, no Kafka client)::

    <root>/<topic>/<partition>/<from:020d>-<to:020d>.jsonl     (or .parquet)

``[from, to)`` is the consumer's *position* range of that file: its position before the batch
and after it, so ``to`` is exactly the offset it commits once the file is written. Files of
one consumer therefore tile the log without gaps (even across offsets that hold no record:
transaction markers, compacted records), and "committed offset C" means "every record below
C is in a file". Rows: ``topic``, ``partition``, ``offset``, ``timestamp_ms``, ``key``,
``value`` (:data:`.layout.LANDING_COLUMNS`).

Reading (:mod:`.reader`, pyspark imported there only): :func:`.layout.select_range` picks
from the file *names* the smallest set of files that covers ``[start, end)`` on every
partition and fails naming the first missing offsets if the landing zone has a hole;
:func:`.reader.read_selection` reads just those files and keeps the rows with
``start <= offset < end`` (a file that straddles a boundary contributes only its rows inside),
dropping duplicate offsets when selected files overlap (a consumer that crashed between
writing a file and committing it writes those records again).

    from airflow_provider_kgroups.landing import read_offset_range

    df = read_offset_range(spark, "/data/landing", gate_xcom)   # the ConsumerLagSensor's XCom
"""

from __future__ import annotations

from .layout import (
    FORMATS,
    LANDING_COLUMNS,
    LandingFile,
    LandingGapError,
    PartitionRange,
    RangeSelection,
    file_name,
    list_files,
    parse_file_name,
    parse_range,
    select_range,
    write_file,
)

__all__ = [
    "FORMATS",
    "LANDING_COLUMNS",
    "LandingFile",
    "LandingGapError",
    "PartitionRange",
    "RangeSelection",
    "file_name",
    "list_files",
    "parse_file_name",
    "parse_range",
    "select_range",
    "write_file",
    "read_offset_range",
    "read_selection",
    "landing_schema",
]


def __getattr__(
    name: str,
):  # the Spark half is imported on first use: importing this package needs no pyspark
    if name in ("read_offset_range", "read_selection", "landing_schema"):
        from . import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
