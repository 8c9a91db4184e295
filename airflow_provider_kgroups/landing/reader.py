"""Read exactly one offset range of the landing zone with Spark.

The driver lists file *names* only (:func:`.layout.select_range`); the data is read by the
executors, so this runs unchanged on a cluster. The filter keeps ``start <= offset < end`` per
partition (a file straddling the barrier contributes only its rows below it), and duplicate
offsets are dropped when the chosen files overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .layout import LANDING_COLUMNS, RangeSelection, select_range

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["landing_schema", "read_selection", "read_offset_range"]


def landing_schema():
    """The Spark schema of landing rows (given explicitly: no schema inference pass over the files)."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    types = {
        "topic": StringType(),
        "partition": IntegerType(),
        "offset": LongType(),
        "timestamp_ms": LongType(),
        "key": StringType(),
        "value": StringType(),
    }
    return StructType(
        [StructField(c, types[c], nullable=c in ("key", "value", "timestamp_ms")) for c in LANDING_COLUMNS]
    )


def _balanced_or(conditions: list[Column]) -> Column:
    """OR of many conditions as a balanced tree (a long left-deep chain is slow to plan)."""
    while len(conditions) > 1:
        conditions = [a | b for a, b in zip(conditions[::2], conditions[1::2])] + (
            [conditions[-1]] if len(conditions) % 2 else []
        )
    return conditions[0]


def read_selection(
    spark: SparkSession, selection: RangeSelection, *, spark_root: str | None = None
) -> DataFrame:
    """The rows of ``selection``'s range: exactly one row per offset in ``[start, end)`` of each
    partition that holds a record. ``spark_root``: the landing root as Spark names it, when that
    differs from the fsspec URL the selection was made with (``s3a://`` for ``s3://``)."""
    from pyspark.sql import functions as F

    schema = landing_schema()
    if selection.empty:
        return spark.createDataFrame([], schema)
    base = (spark_root or selection.root).rstrip("/")
    paths = [f"{base}/{f.relative}" for f in selection.files]
    reader = spark.read.schema(schema).option(
        "mode", "FAILFAST"
    )  # a corrupt row fails the read, never drops it
    df = reader.json(paths) if selection.fmt == "jsonl" else reader.parquet(*paths)
    conditions = []
    for r in selection.ranges:
        if not r.files:
            continue
        condition = (
            (F.col("topic") == F.lit(r.topic))
            & (F.col("partition") == F.lit(r.partition))
            & (F.col("offset") < F.lit(r.end))
        )
        if r.start is not None:
            condition = condition & (F.col("offset") >= F.lit(r.start))
        conditions.append(condition)
    df = df.where(_balanced_or(conditions))
    if selection.overlapping:
        df = df.dropDuplicates(["topic", "partition", "offset"])
    return df.select(*LANDING_COLUMNS)


def read_offset_range(
    spark: SparkSession,
    root: str,
    source: Mapping[str, Any] | None = None,
    *,
    starting: Any = None,
    ending: Any = None,
    fmt: str = "jsonl",
    spark_root: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> DataFrame:
    """:func:`.layout.select_range` then :func:`read_selection`: the landing rows of exactly the
    range the ConsumerLagSensor covered (``source`` = its XCom) or of ``starting``/``ending``."""
    selection = select_range(
        root, source, starting=starting, ending=ending, fmt=fmt, storage_options=storage_options
    )
    return read_selection(spark, selection, spark_root=spark_root)
