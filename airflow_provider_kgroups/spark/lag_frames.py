"""The lag-history job's DataFrames (:mod:`.lag_history` runs them): the history read with its
schema and range, the per-group judging on the executors (:mod:`.judging`), and the lag
percentiles per topic and window. Importing this module does not import pyspark."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.model import HISTORY_COLUMNS
from airflow_provider_kgroups.lag.verdicts import VerdictRules
from airflow_provider_kgroups.spark import judging

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["functions", "window_index", "day", "read_history", "judge_groups", "lag_windows"]


def functions():
    from pyspark.sql import functions as F

    return F


def window_index(ms: Column, window_ms: int) -> Column:
    """floor(ms / window_ms) in integer arithmetic (times are >= 0)."""
    F = functions()
    return ((ms - F.pmod(ms, F.lit(window_ms))) / F.lit(window_ms)).cast("long")


def spark_schema(schema):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def history_schema():
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    types = {
        "snapshot_ms": LongType(),
        "members": IntegerType(),
        "partition": IntegerType(),
        "committed": LongType(),
        "log_start": LongType(),
        "log_end": LongType(),
        "lag": LongType(),
    }
    return StructType([StructField(c, types.get(c, StringType()), True) for c in HISTORY_COLUMNS])


def read_history(spark: SparkSession, url: str, since_ms: int | None, until_ms: int | None) -> DataFrame:
    """The history's rows (:data:`HISTORY_COLUMNS`) in the requested range."""
    F = functions()
    from pyspark.errors import AnalysisException

    try:
        df = spark.read.schema(history_schema()).parquet(url)
    except AnalysisException as exc:
        raise ConfigurationError(
            f"history {url!r} cannot be read by Spark: {str(exc).splitlines()[0]} (is it the "
            "history store's root, the directory holding date=YYYY-MM-DD/?)"
        ) from None
    if "date" not in df.columns:
        raise ConfigurationError(
            f"history {url!r} has no date=YYYY-MM-DD partition directories: point --history "
            "at the store's root."
        )
    if since_ms is not None:
        df = df.where((F.col("date") >= F.lit(day(since_ms))) & (F.col("snapshot_ms") >= since_ms))
    if until_ms is not None:
        df = df.where((F.col("date") <= F.lit(day(until_ms - 1))) & (F.col("snapshot_ms") < until_ms))
    return df.where(F.col("snapshot_ms").isNotNull() & F.col("group_id").isNotNull()).select(*HISTORY_COLUMNS)


def judge_groups(
    hist: DataFrame,
    evaluations: frozenset[int],
    window_ms: int,
    as_of_ms: int,
    existing_topics: frozenset[str],
    rules: VerdictRules,
    dead: DeadGroupRules,
    retention_ms: Mapping[str, int] | None = None,
) -> DataFrame:
    """Each group's partition verdicts (one row per group, topic, partition and evaluation time
    it has) and its status, in :data:`.judging.JUDGED` rows, judged on the executors by
    :func:`.judging.judge_group`, one group at a time (``retention_ms``: per topic, for the
    retention margins)."""

    def judge(rows):
        return judging.judge_group(
            rows, evaluations, window_ms, as_of_ms, existing_topics, rules, dead, retention_ms
        )

    return hist.groupBy("group_id").applyInArrow(judge, spark_schema(judging.JUDGED))


def lag_windows(hist: DataFrame, verdicts: DataFrame, window_ms: int) -> DataFrame:
    """``<output>/lag_windows``: per group, topic and window, the topic's lag percentiles over the
    window's snapshots joined with the window's worst partition verdict."""
    F = functions()
    out = _topic_lag_per_window(hist, window_ms).join(
        _worst_verdict_per_window(verdicts, window_ms), ["group_id", "topic", "k"], "left"
    )
    return out.select(
        "group_id",
        "topic",
        (F.col("k") * window_ms).alias("window_start_ms"),
        ((F.col("k") + 1) * window_ms).alias("window_end_ms"),
        F.timestamp_millis(F.col("k") * window_ms).alias("window_start"),
        "snapshots",
        "partitions",
        F.col("pct")[0].alias("lag_p50"),
        F.col("pct")[1].alias("lag_p95"),
        F.col("pct")[2].alias("lag_p99"),
        "lag_max",
        "unknown_lag_snapshots",
        "max_partition_lag",
        "last_lag",
        "at_ms",
        F.col("w.verdict").alias("verdict"),
        F.col("w.partition").alias("verdict_partition"),
        F.col("w.reason").alias("verdict_reason"),
        "judged_partitions",
        "not_ok_partitions",
        "last_progress_ms",
        (F.col("at_ms") - F.col("last_progress_ms")).alias("since_progress_ms"),
    )


def _topic_lag_per_window(hist: DataFrame, window_ms: int) -> DataFrame:
    """Per group, topic and window index ``k``: the topic's lag at each snapshot (null when a
    partition's is unknown), summarised over the window's snapshots."""
    F = functions()
    per_snapshot = (
        hist.where(F.col("topic").isNotNull())
        .groupBy("group_id", "topic", "snapshot_ms")
        .agg(
            F.sum("lag").alias("topic_lag"),
            F.count(F.lit(1)).alias("partitions"),
            F.count("lag").alias("known"),
            F.max("lag").alias("max_partition_lag"),
        )
        .withColumn("topic_lag", F.when(F.col("partitions") == F.col("known"), F.col("topic_lag")))
        .withColumn("k", window_index(F.col("snapshot_ms"), window_ms))
    )
    percentiles = F.percentile(F.col("topic_lag"), F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99)))
    return per_snapshot.groupBy("group_id", "topic", "k").agg(
        F.count(F.lit(1)).cast("int").alias("snapshots"),
        F.max("partitions").cast("int").alias("partitions"),
        percentiles.alias("pct"),
        F.max("topic_lag").alias("lag_max"),
        F.sum(F.col("topic_lag").isNull().cast("int")).cast("int").alias("unknown_lag_snapshots"),
        F.max("max_partition_lag").alias("max_partition_lag"),
        F.max_by("topic_lag", "snapshot_ms").alias("last_lag"),
    )


def _worst_verdict_per_window(verdicts: DataFrame, window_ms: int) -> DataFrame:
    """Per group, topic and window index ``k``: the most severe partition verdict (``w``, the
    lowest partition among equals) and how many partitions were judged and not OK."""
    F = functions()
    from pyspark.sql import Window

    worst = Window.partitionBy("group_id", "topic", "k").orderBy(F.col("severity").desc(), F.col("partition"))
    return (
        verdicts.withColumn("k", window_index(F.col("window_start_ms"), window_ms))
        .withColumn("rank", F.row_number().over(worst))
        .groupBy("group_id", "topic", "k")
        .agg(
            F.max("at_ms").alias("at_ms"),
            F.max(F.when(F.col("rank") == 1, F.struct("verdict", "partition", "reason"))).alias("w"),
            F.count(F.lit(1)).cast("int").alias("judged_partitions"),
            F.sum((F.col("verdict") != "OK").cast("int")).cast("int").alias("not_ok_partitions"),
            F.max("last_progress_ms").alias("last_progress_ms"),
        )
    )
