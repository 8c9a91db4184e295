"""The lag-history job: the snapshot history store (Parquet) in, four Parquet tables out.

Run it with ``spark-submit`` (this file is the application) or call :func:`run_lag_history` from a
PySpark task. It reads the history with ``spark.read.parquet(<history>)`` (partition discovery on
``date=``; ``_backups/`` and ``_audit/`` are skipped as Spark skips ``_`` paths) and never collects
it to the driver (it reads back only the latest snapshot times, one evaluation time per window and
the topic list). The rules are not restated here: the executors run the lag engine itself on one
group at a time (``groupBy("group_id").applyInArrow`` over :mod:`.judging`; the DataFrames are in
:mod:`.lag_frames`), which calls :func:`..lag.verdicts.group_verdicts` and
:func:`..cleanup.report.classify`, so a rule lives only in :mod:`..lag` (its permission in
:mod:`..cleanup.permission`), and the driver and the executors both need this package (and
pyarrow). Importing this module does not import pyspark. While it runs, the session's time zone is
UTC (restored after).

The outputs' columns and what they mean, the job's cost, and how to submit it from Airflow or the
command line: docs/spark.rst, "The lag-history Spark job".
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_kgroups.arguments import parse_timestamp_ms
from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.numbers import check_int, check_number
from airflow_provider_kgroups.lag.deadgroups import DEFAULT_DENY_PATTERNS, DeadGroupRules
from airflow_provider_kgroups.lag.model import LagFlag
from airflow_provider_kgroups.lag.verdicts import VerdictRules
from airflow_provider_kgroups.spark.lag_frames import (
    day,
    functions,
    judge_groups,
    lag_windows,
    read_history,
    window_index,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["run_lag_history", "LagHistoryResult", "OUTPUTS", "main"]

OUTPUTS = ("partition_verdicts", "lag_windows", "group_status", "dead_candidates")

log = logging.getLogger(__name__)


@contextmanager
def _step(name: str, timings: dict[str, float]):
    started = time.perf_counter()
    yield
    timings[name] = round(time.perf_counter() - started, 3)
    log.info("lag history: %s in %.1f s", name, timings[name])


@dataclass(frozen=True)
class LagHistoryResult:
    """What a run wrote, and a small summary read back from the outputs."""

    outputs: dict[str, str]
    as_of_ms: int
    windows: int
    rows: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)  # groups per verdict in group_status
    dead_candidates: list[str] = field(default_factory=list)  # at most 100 ids
    seconds: dict[str, float] = field(default_factory=dict)  # per step

    def to_dict(self) -> dict[str, Any]:
        return {
            "outputs": self.outputs,
            "as_of_ms": self.as_of_ms,
            "windows": self.windows,
            "rows": self.rows,
            "verdicts": self.verdicts,
            "dead_candidates": self.dead_candidates,
            "seconds": self.seconds,
        }


# -- small helpers ------------------------------------------------------------------------------


def _ms(name: str, value: Any) -> int | None:
    """Epoch ms as :func:`..arguments.parse_timestamp_ms` reads it; a date alone is midnight UTC."""
    if isinstance(value, str) and len(value.strip()) == 10 and value.strip()[4:5] == "-":
        value = value.strip() + "T00:00:00+00:00"
    return parse_timestamp_ms(name, value)


# -- the job ------------------------------------------------------------------------------------


def _check_versions(spark: SparkSession) -> None:
    """The rules run in Python workers (Arrow UDFs): pyspark's Python files must be Spark's own
    version, which an install of ``pyspark-client`` over pyspark (the Airflow Spark provider's
    dependency) breaks with a Py4J error about a missing constructor."""
    import pyspark

    python, jvm = pyspark.__version__, str(spark.version)
    if python.split(".")[:2] != jvm.split(".")[:2]:
        raise ConfigurationError(
            f"pyspark's Python files are version {python} but Spark is {jvm}: this job runs "
            f"Python workers, which need both the same (pip install --force-reinstall "
            f"'pyspark=={jvm}', after any pyspark-client)."
        )


def run_lag_history(
    spark: SparkSession,
    history_url: str,
    output_url: str,
    *,
    window_minutes: float = 60,
    since: Any = None,
    until: Any = None,
    rules: VerdictRules = VerdictRules(),
    dead_rules: DeadGroupRules = DeadGroupRules(),
    gone_after_snapshots: int = 3,
    retention_ms: Mapping[str, int] | None = None,
) -> LagHistoryResult:
    """Compute the four outputs (module docstring) from the history at ``history_url`` into
    ``output_url`` (``<output_url>/<name>``, replaced). ``since``/``until``: epoch ms, ISO-8601
    text or aware datetimes bounding ``snapshot_ms`` (``since <= t < until``). ``retention_ms``:
    each topic's ``retention.ms`` (-1: not deleted by time;
    :func:`..lag.retention_history.deletion_retention_ms` reads it from the topic's settings), for
    the retention margins and AT_RISK; a topic left out has an unknown margin."""
    window_ms, since_ms, until_ms = _checked_range(
        history_url, output_url, window_minutes, gone_after_snapshots, since, until
    )
    retention_ms = _checked_retention(retention_ms)
    out = output_url.rstrip("/")
    paths = {name: f"{out}/{name}" for name in OUTPUTS}
    timings: dict[str, float] = {}
    with _utc_session(spark):
        hist = read_history(spark, history_url, since_ms, until_ms)
        with _step("latest snapshot times", timings):
            as_of_ms, evaluations, existing_topics = _input_facts(
                hist, history_url, since_ms, until_ms, window_ms, gone_after_snapshots
            )
        _check_versions(spark)  # before the first Python worker

        with _step("judging", timings):
            _write_judged(
                judge_groups(
                    hist, evaluations, window_ms, as_of_ms, existing_topics, rules, dead_rules, retention_ms
                ),
                paths,
            )
        verdicts = spark.read.parquet(paths["partition_verdicts"])  # cheaper to read back than to cache
        with _step("lag_windows", timings):
            lag_windows(hist, verdicts, window_ms).write.mode("overwrite").parquet(paths["lag_windows"])
        status = spark.read.parquet(paths["group_status"])
        with _step("dead_candidates", timings):
            _dead_candidates(status).write.mode("overwrite").parquet(paths["dead_candidates"])
        with _step("summary", timings):
            windows, rows, verdict_counts, candidates = _summary(spark, paths, status)
    log.info("lag history: as of %s, %d window(s), %s", day(as_of_ms), windows, rows)
    return LagHistoryResult(paths, as_of_ms, windows, rows, verdict_counts, candidates, timings)


def _checked_range(
    history_url: Any,
    output_url: Any,
    window_minutes: Any,
    gone_after_snapshots: Any,
    since: Any,
    until: Any,
) -> tuple[int, int | None, int | None]:
    """The job's arguments checked before Spark does any work: ``(window_ms, since_ms, until_ms)``."""
    if not isinstance(history_url, str) or not history_url.strip():
        raise ConfigurationError(f"history_url must be a path or URL, got {history_url!r}.")
    if not isinstance(output_url, str) or not output_url.strip():
        raise ConfigurationError(f"output_url must be a path or URL, got {output_url!r}.")
    check_number("window_minutes", window_minutes, above=0, must_be="a positive number")
    window_ms = round(window_minutes * 60_000)
    if window_ms < 1000:
        raise ConfigurationError(f"window_minutes={window_minutes!r} is shorter than a second.")
    check_int("gone_after_snapshots", gone_after_snapshots, at_least=1)
    since_ms, until_ms = _ms("since", since), _ms("until", until)
    if since_ms is not None and until_ms is not None and until_ms <= since_ms:
        raise ConfigurationError(f"until ({until_ms}) must be after since ({since_ms}).")
    return window_ms, since_ms, until_ms


def _checked_retention(retention_ms: Any) -> dict[str, int] | None:
    """``retention_ms`` as the executors take it: topic -> ms (>= -1), checked before Spark works."""
    if retention_ms is None:
        return None
    if not isinstance(retention_ms, Mapping):
        raise ConfigurationError(
            f"retention_ms must map each topic to its retention.ms (e.g. {{'orders': 604800000}}), "
            f"got {retention_ms!r}."
        )
    for topic, ms in retention_ms.items():
        if not isinstance(topic, str) or not topic:
            raise ConfigurationError(f"retention_ms has a key {topic!r}: each key is a topic name.")
        check_int(
            f"retention_ms[{topic!r}]", ms, at_least=-1, must_be="retention.ms: an int >= -1 (-1: no limit)"
        )
    return dict(retention_ms)


@contextmanager
def _utc_session(spark: SparkSession):
    """The session's time zone is UTC inside, the previous one restored after."""
    previous_tz = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        yield
    finally:
        if previous_tz is not None:  # Spark always has one (its default: the JVM's zone)
            spark.conf.set("spark.sql.session.timeZone", previous_tz)


def _input_facts(
    hist: DataFrame,
    history_url: str,
    since_ms: int | None,
    until_ms: int | None,
    window_ms: int,
    gone_after_snapshots: int,
) -> tuple[int, frozenset[int], frozenset[str]]:
    """The driver's only reads of the input, never the history itself: the latest snapshot time,
    one evaluation time per window, and the topics read in the last ``gone_after_snapshots``
    snapshots."""
    F = functions()
    latest = (
        hist.select("snapshot_ms")
        .distinct()
        .orderBy(F.col("snapshot_ms").desc())
        .limit(gone_after_snapshots)
        .agg(F.max("snapshot_ms").alias("as_of"), F.min("snapshot_ms").alias("cut"))
        .collect()[0]
    )
    if latest["as_of"] is None:
        raise ConfigurationError(
            f"history {history_url!r} has no snapshot in the requested range "
            f"(since={since_ms}, until={until_ms})."
        )
    as_of_ms, existing_since_ms = int(latest["as_of"]), int(latest["cut"])
    evaluations = frozenset(
        int(r["at_ms"])
        for r in hist.groupBy(window_index(F.col("snapshot_ms"), window_ms))
        .agg(F.max("snapshot_ms").alias("at_ms"))
        .collect()
    )
    readable = F.col("log_end").isNotNull() & ~F.array_contains(
        F.split(F.coalesce(F.col("flags"), F.lit("")), ","), LagFlag.ERROR.value
    )
    existing_topics = frozenset(
        r["topic"]
        for r in hist.where(
            (F.col("snapshot_ms") >= existing_since_ms) & readable & F.col("topic").isNotNull()
        )
        .select("topic")
        .distinct()
        .collect()
    )
    return as_of_ms, evaluations, existing_topics


def _write_judged(judged: DataFrame, paths: dict[str, str]) -> None:
    """Both judged outputs from one shuffle, cached (spilled if need be) for the two writes."""
    F = functions()
    judged = judged.persist()
    try:
        judged.where(F.col("verdict").isNotNull()).select("verdict.*").write.mode("overwrite").parquet(
            paths["partition_verdicts"]
        )
        judged.where(F.col("status").isNotNull()).select("status.*").write.mode("overwrite").parquet(
            paths["group_status"]
        )
    finally:
        judged.unpersist()


#: ``dead_candidates``' columns, taken from ``group_status``.
_DEAD_CANDIDATE_COLUMNS = (
    "group_id",
    "as_of_ms",
    "state",
    "protocol_type",
    "committed_topics",
    "gone_topics",
    "last_progress_ms",
    "since_progress_ms",
    "empty_since_ms",
    "expires_at_ms",
    "idle_since_ms",
    "evidence",
    "dead_reasons",
)


def _dead_candidates(status: DataFrame) -> DataFrame:
    F = functions()
    return status.where((F.col("health") == "dead") & F.col("deletable")).select(*_DEAD_CANDIDATE_COLUMNS)


def _summary(
    spark: SparkSession, paths: dict[str, str], status: DataFrame
) -> tuple[int, dict[str, int], dict[str, int], list[str]]:
    """Small reads of the outputs: ``(windows, rows per output, groups per verdict, the first 100
    dead candidates)``."""
    F = functions()
    pv = (
        spark.read.parquet(paths["partition_verdicts"])
        .agg(F.count(F.lit(1)).alias("rows"), F.count_distinct("window_start_ms").alias("windows"))
        .collect()[0]
    )
    verdict_counts = {r["verdict"]: int(r["count"]) for r in status.groupBy("verdict").count().collect()}
    dead = spark.read.parquet(paths["dead_candidates"])
    candidates = [r["group_id"] for r in dead.select("group_id").orderBy("group_id").limit(100).collect()]
    rows = {
        "partition_verdicts": int(pv["rows"]),
        "lag_windows": spark.read.parquet(paths["lag_windows"]).count(),
        "group_status": sum(verdict_counts.values()),
        "dead_candidates": dead.count(),
    }
    return int(pv["windows"]), rows, verdict_counts, candidates


# -- spark-submit entry point --------------------------------------------------------------------


def _retention_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"not JSON ({exc}): give each topic's retention.ms as an object, e.g. '{{\"orders\": 604800000}}'"
        ) from exc


def _parser() -> argparse.ArgumentParser:
    defaults, dead = VerdictRules(), DeadGroupRules()
    p = argparse.ArgumentParser(
        prog="lag_history.py",
        description="Lag percentiles, verdicts, progress and dead-group "
        "candidates from the kgroups history store (Parquet).",
    )
    p.add_argument(
        "--history", required=True, help="the history store's root (path or Hadoop URL, e.g. s3a://...)"
    )
    p.add_argument("--output", required=True, help="where the four outputs go (replaced)")
    p.add_argument("--window-minutes", type=float, default=60.0, help="tumbling window length (default 60)")
    p.add_argument("--since", help="first snapshot time: epoch ms or ISO-8601 with a zone (default: all)")
    p.add_argument("--until", help="end of the range, exclusive (default: all)")
    p.add_argument(
        "--verdict-window-minutes",
        type=float,
        default=defaults.window_ms / 60_000,
        help="the verdicts' look-back (VerdictRules.window_ms; default 30)",
    )
    p.add_argument(
        "--stuck-after-minutes",
        type=float,
        default=defaults.stuck_after_ms / 60_000,
        help="STOP/STALL after the offset is stuck this long (default 10)",
    )
    p.add_argument(
        "--min-points", type=int, default=defaults.min_points, help="points needed for WARN (default 3)"
    )
    p.add_argument(
        "--allowed-lag", type=int, default=defaults.allowed_lag, help="lag counted as caught up (default 0)"
    )
    p.add_argument(
        "--idle-hours",
        type=float,
        default=dead.idle_hours,
        help="idle (Empty, records to read, no commit progress) this long is evidence of death (default 168)",
    )
    p.add_argument(
        "--offsets-retention-minutes",
        type=int,
        default=dead.offsets_retention_minutes,
        help="the cluster's offsets.retention.minutes (default 10080)",
    )
    p.add_argument(
        "--allow", action="append", default=[], help="group pattern that may be deleted (repeatable)"
    )
    p.add_argument("--deny", action="append", default=[], help="group pattern never deleted (repeatable)")
    p.add_argument(
        "--no-default-deny", action="store_true", help="drop the default system-group deny patterns"
    )
    p.add_argument(
        "--assume-full-visibility",
        action="store_true",
        help="the snapshots' principal could Describe every topic and group (e.g. a super user): only "
        "then is 'no committed offset at all' evidence of death",
    )
    p.add_argument(
        "--retention-ms",
        type=_retention_json,
        help="each topic's retention.ms as JSON, e.g. '{\"orders\": 604800000}' (-1: not deleted by time), "
        "for the retention margins and AT_RISK (default: none, no margin)",
    )
    p.add_argument(
        "--margin-floor-minutes",
        type=float,
        default=defaults.margin_floor_ms / 60_000,
        help="AT_RISK below this retention margin, whatever the catch-up time (default 60)",
    )
    p.add_argument(
        "--gone-after-snapshots",
        type=int,
        default=3,
        help="a committed topic unread in this many latest snapshots is reported as possibly deleted "
        "(cannot tell: never evidence here) (default 3)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        rules = VerdictRules(
            window_ms=round(args.verdict_window_minutes * 60_000),
            stuck_after_ms=round(args.stuck_after_minutes * 60_000),
            min_points=args.min_points,
            allowed_lag=args.allowed_lag,
            margin_floor_ms=round(args.margin_floor_minutes * 60_000),
        )
        dead = DeadGroupRules(
            idle_hours=args.idle_hours,
            offsets_retention_minutes=args.offsets_retention_minutes,
            allow=tuple(args.allow),
            deny=tuple(args.deny),
            assume_full_visibility=args.assume_full_visibility,
            default_deny=() if args.no_default_deny else DEFAULT_DENY_PATTERNS,
        )
        retention_ms = _checked_retention(args.retention_ms)  # before Spark starts
    except ConfigurationError as exc:
        print(f"lag_history: {exc}", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("kgroups-lag-history").getOrCreate()
    try:
        result = run_lag_history(
            spark,
            args.history,
            args.output,
            window_minutes=args.window_minutes,
            since=args.since,
            until=args.until,
            rules=rules,
            dead_rules=dead,
            gone_after_snapshots=args.gone_after_snapshots,
            retention_ms=retention_ms,
        )
    except ConfigurationError as exc:
        print(f"lag_history: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
