"""The lag-history job: the snapshot history store (Parquet) in, four Parquet tables out.

Run it with ``spark-submit`` (this file is the application) or call
:func:`run_lag_history` from a PySpark task. It reads the history with
``spark.read.parquet(<history>)`` (partition discovery on ``date=``; ``_backups/`` and
``_audit/`` are skipped as Spark skips ``_`` paths), never collects it to the driver (only
one row: the latest snapshot times), and uses no Python UDF, so executors need nothing but
Spark. The driver needs this package installed (the rules come from :mod:`..lag`).
Importing this module does not import pyspark. While it runs, the session's time zone is UTC
(restored after). Reasons and evidence are the Python engine's texts, character for character
(numbers rounded as Python rounds them).

Outputs (each replaced on every run; times are epoch ms, UTC; windows are tumbling windows
of ``window_minutes`` aligned on the epoch, ``[window_start_ms, window_end_ms)``):

``<output>/partition_verdicts``: one row per group, topic, partition and window, judged at
the window's *evaluation time* ``at_ms`` = the latest snapshot in that window (any group's),
for the partitions the group has in that snapshot::

    group_id string, topic string, partition int, window_start_ms long, window_end_ms long,
    at_ms long, verdict string, reason string, lag long, committed long, log_end long,
    points int (the partition's points in the rules' look-back), severity int (0 OK .. 6 LOST),
    last_progress_ms long (last time its committed offset changed, in the input; null: not seen),
    since_progress_ms long (at_ms - last_progress_ms), history_from_ms long (its first point)

``<output>/lag_windows``: one row per group, topic and window::

    group_id, topic, window_start_ms, window_end_ms, window_start timestamp, snapshots int,
    partitions int, lag_p50 double, lag_p95 double, lag_p99 double, lag_max long,
    unknown_lag_snapshots int, max_partition_lag long, last_lag long, at_ms long,
    verdict string, verdict_partition int, verdict_reason string, judged_partitions int,
    not_ok_partitions int, last_progress_ms long, since_progress_ms long

``<output>/group_status``: one row per group in the input, as of ``as_of_ms`` (the latest
snapshot)::

    group_id, as_of_ms, last_seen_ms, first_seen_ms, in_latest_snapshot boolean, state,
    protocol_type, members int, total_lag long, partitions int, committed_topics array<string>,
    verdict, reason, last_progress_ms, since_progress_ms, empty_since_ms, expires_at_ms,
    idle_since_ms long, health string (active | paused | dead; null if not in the latest
    snapshot), deletable boolean, evidence array<string>, dead_reasons array<string>,
    cannot_tell array<string>

``<output>/dead_candidates``: the ``group_status`` rows with ``health = 'dead'`` and
``deletable``: group_id, as_of_ms, state, protocol_type, committed_topics, gone_topics,
last_progress_ms, since_progress_ms, empty_since_ms, expires_at_ms, idle_since_ms, evidence,
dead_reasons.

Semantics
---------
*Lag percentiles*: per snapshot, a topic's lag is the sum over its partitions, or unknown if
any partition's lag is unknown (never summed as zero); ``lag_p50/p95/p99/max`` are over the
window's snapshots with a known topic lag (exact percentiles with linear interpolation,
Spark's ``percentile``), ``unknown_lag_snapshots`` counts the others.

*Verdicts* are those of :mod:`airflow_provider_kgroups.lag.verdicts`, rule for rule, with
its :class:`~airflow_provider_kgroups.lag.verdicts.VerdictRules` (look-back ``window_ms``,
``stuck_after_ms``, ``min_points``, ``allowed_lag``): the verdict at ``at_ms`` is what
``group_verdicts(<the snapshots up to at_ms>, rules)`` says, expressed as window functions
and aggregates (the least-squares slope's sign is decided in exact decimal arithmetic).
The look-back may reach into the previous window. A group's verdict is its worst
partition's (first in topic/partition order on ties); ``group_status`` gives it with the
same reason text, UNKNOWN for a group missing from the latest snapshot.

*Last progress* (the admin API has no commit times): a partition's is the last snapshot
whose committed offset differs from the partition's previous point; a topic's is the latest
of its partitions'; a group's compares the whole set of committed offsets between the
group's consecutive snapshots, as :mod:`..lag.deadgroups` does (by size and an XOR of 64-bit
hashes of the entries: two different sets compare equal with probability 2^-64). The
history's first point is never progress; ``--since`` bounds how far back it looks.

*Dead candidates*: :func:`..lag.deadgroups.classify_group`'s rules, with the group's row in
the latest snapshot standing for DescribeGroups and OffsetFetch, and its earlier rows for the
stored history (idle time counts only over an unbroken trailing run of snapshots in which the
group was Empty without members, had its latest committed offsets and a log end beyond a
committed offset; only for plain consumer groups). For the topic list: the topics whose end
offsets were read (any group's row) in any of the last ``gone_after_snapshots`` snapshots. No
topic is checked by name here, so a committed topic missing from that list is *cannot tell*,
never evidence: "every committed topic was deleted" is left to the Python engine
(:func:`..lag.deadgroups.find_dead_groups` checks each topic by name), and this job's
candidates are never more than the Python engine's. "No committed offset at all" is evidence
only with ``DeadGroupRules(assume_full_visibility=True)`` (``--assume-full-visibility``).
Share and streams groups are not told apart from other protocol types in the history
(it has no group type): like any non-consumer protocol type they are never dead here.
Kafka Streams application ids are recognised only by topics in that list (changelog topics
are rarely consumed, so add Streams apps to ``deny``). ``group_status`` also gives
``idle_since_ms``, ``dead_reasons`` (the ``DeadReason`` codes) and ``cannot_tell``. The
candidates are evidence for a review or for
:class:`~airflow_provider_kgroups.operators.cleanup.DeadConsumerGroupCleanupOperator`,
which describes the groups again before deleting anything.

Assumptions: one row per snapshot, group and partition (as the store writes them).

Cost: one shuffle of the history by group for the verdicts (each point is used by the
evaluations whose look-back covers it: about ``verdict window / window + 1`` copies before the
look-back filter), and two partially aggregated ones (per topic and snapshot, per group and
snapshot). Set ``spark.sql.shuffle.partitions`` to a few times the cores (the default 200 is
too many for a small history). On this project's 2-core machine: about 6.7 million rows
(7 days of 15-minute snapshots of 1,000 groups x 10 partitions) in about a minute in
``local[2]``; see ``benchmarks/bench_spark.py``.

Submitting it from Airflow
--------------------------
With apache-airflow-providers-apache-spark (``spark-submit`` on the worker's PATH; pip's
pyspark puts it in the virtualenv's ``bin``)::

    import airflow_provider_kgroups.spark.lag_history as lag_history
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    SparkSubmitOperator(
        task_id="lag_history",
        application=lag_history.__file__,       # or airflow_provider_kgroups.spark.LAG_HISTORY_APPLICATION
        conn_id="spark_local",                  # AIRFLOW_CONN_SPARK_LOCAL='{"conn_type":"spark","host":"local[*]"}'
        application_args=["--history", "s3a://bucket/kgroups-history", "--output", "s3a://bucket/kgroups-lag",
                          "--window-minutes", "60",
                          "--since", "{{ (data_interval_end - macros.timedelta(days=7)).isoformat() }}",
                          "--until", "{{ data_interval_end.isoformat() }}", "--idle-hours", "168"],
        conf={"spark.sql.shuffle.partitions": "64"},
        env_vars={"PYSPARK_PYTHON": sys.executable},  # local mode: the driver's Python has this package
    )

``dags/kgroups_lag_history.py`` is this, daily.

Give the connection as JSON: the URI form ``spark://local[*]`` is parsed as an IPv6 host
and silently falls back to ``yarn``, as does a missing connection. On a cluster, the driver
needs this package (``pip install airflow-provider-kgroups`` in its image, or
``py_files=`` a zip of it and kafka-python); executors need nothing from it.

From the command line (it prints a JSON summary: outputs, rows, verdict counts, candidates,
seconds per step; exit 2 on bad arguments)::

    APP=$(python -c 'import airflow_provider_kgroups.spark as s; print(s.LAG_HISTORY_APPLICATION)')
    spark-submit --master 'local[2]' "$APP" --history kgroups-history --output kgroups-lag \\
        --window-minutes 60 --idle-hours 168
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Sequence

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.selection import REGEX_PREFIX, compile_pattern
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.model import HISTORY_COLUMNS
from airflow_provider_kgroups.lag.verdicts import VerdictRules

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["run_lag_history", "LagHistoryResult", "OUTPUTS", "SEVERITY", "glob_to_java_regex", "main"]

#: Verdicts from best to worst (``severity`` is the index), as in :mod:`..lag.verdicts`.
SEVERITY = ("OK", "UNKNOWN", "WARN", "STALL", "STOP", "REWIND", "LOST")
OUTPUTS = ("partition_verdicts", "lag_windows", "group_status", "dead_candidates")
_STATES = ("Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "Empty", "Dead")
_STREAMS_SUFFIXES = ("-changelog", "-repartition")
_EXACT = "decimal(38,0)"  # the slope sums: exact, so the sign of the slope is exact
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
        return {"outputs": self.outputs, "as_of_ms": self.as_of_ms, "windows": self.windows, "rows": self.rows,
                "verdicts": self.verdicts, "dead_candidates": self.dead_candidates, "seconds": self.seconds}


# -- patterns: the same globs / re: regexes as client.selection, as Java regexes ------------------


def _java_char(ch: str) -> str:
    return f"\\x{{{ord(ch):x}}}"


def glob_to_java_regex(pattern: str) -> str:
    """A group pattern (a glob as :func:`fnmatch.translate` reads it, or ``re:<regex>``) as a
    Java regex that ``rlike`` matches exactly where ``compile_pattern(pattern).match`` does.
    ``re:`` bodies are passed through (write them in the common subset of Python and Java)."""
    compile_pattern(pattern)  # the same validation and error messages
    if pattern.startswith(REGEX_PREFIX):
        return f"^(?:{pattern[len(REGEX_PREFIX):]})\\z"
    out, i, n = [], 0, len(pattern)
    while i < n:
        ch = pattern[i]
        i += 1
        if ch == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(_java_char("["))
                continue
            body, i = pattern[i:j], j + 1
            negate = body.startswith("!")
            if negate:
                body = body[1:]
            items, k = [], 0
            while k < len(body):  # fnmatch: "a-z" is a range (dropped if reversed), other chars literal
                if k + 2 < len(body) and body[k + 1] == "-":
                    lo, hi = body[k], body[k + 2]
                    if lo <= hi:
                        items.append(f"{_java_char(lo)}-{_java_char(hi)}")
                    k += 3
                else:
                    items.append(_java_char(body[k]))
                    k += 1
            if not items:
                out.append("." if negate else "(?!)")
            else:
                out.append(f"[{'^' if negate else ''}{''.join(items)}]")
        else:
            out.append(_java_char(ch))
    return "(?s)^" + "".join(out) + "\\z"


# -- small column helpers -----------------------------------------------------------------------


def _f():
    from pyspark.sql import functions as F

    return F


def _fmt(col: "Column", decimals: int) -> "Column":
    """Python's ``f"{x:.Nf}"`` (round half to even on the double's exact value) for x >= 0:
    Java's DecimalFormat does the same rounding; its grouping commas are removed."""
    F = _f()
    return F.regexp_replace(F.format_number(col, decimals), ",", "")


def _minutes(ms: "Column") -> "Column":
    F = _f()
    return F.concat(_fmt(ms / F.lit(60_000.0), 1), F.lit(" min"))


def _duration(ms: "Column") -> "Column":
    """:func:`..lag.deadgroups.format_duration`: floored, ``H h M min`` from one hour up,
    ``M min S s`` or ``S s`` below (zero parts left out)."""
    F = _f()
    total = F.floor(F.greatest(ms, F.lit(0)) / F.lit(1000)).cast("long")
    hours, minutes, seconds = (F.floor(total / F.lit(3600)).cast("long"),
                               F.floor(F.pmod(total, F.lit(3600)) / F.lit(60)).cast("long"), F.pmod(total, F.lit(60)))

    def part(value: "Column", unit: str) -> "Column":
        return F.when(value > 0, F.concat(F.lit(" "), _s(value), F.lit(unit))).otherwise(F.lit(""))

    return (F.when(hours > 0, F.concat(_s(hours), F.lit(" h"), part(minutes, " min")))
            .when(minutes > 0, F.concat(_s(minutes), F.lit(" min"), part(seconds, " s")))
            .otherwise(F.concat(_s(seconds), F.lit(" s"))))


def _iso(ms: "Column") -> "Column":
    """``%Y-%m-%d %H:%M UTC`` (the session time zone is UTC while the job runs)."""
    F = _f()
    return F.concat(F.date_format(F.timestamp_millis(ms), "yyyy-MM-dd HH:mm"), F.lit(" UTC"))


def _repr(col: "Column") -> "Column":
    """Python's ``repr`` of printable text."""
    F = _f()
    double = F.concat(F.lit('"'), col, F.lit('"'))
    single = F.concat(F.lit("'"), F.replace(F.replace(col, F.lit("\\"), F.lit("\\\\")), F.lit("'"), F.lit("\\'")),
                      F.lit("'"))
    return F.when(F.contains(col, F.lit("'")) & ~F.contains(col, F.lit('"')) & ~F.contains(col, F.lit("\\")),
                  double).otherwise(single)


def _s(col: "Column") -> "Column":
    return col.cast("string")


def _window_index(ms: "Column", window_ms: int) -> "Column":
    """floor(ms / window_ms) in integer arithmetic (times are >= 0)."""
    F = _f()
    return ((ms - F.pmod(ms, F.lit(window_ms))) / F.lit(window_ms)).cast("long")


def _severity(verdict: "Column") -> "Column":
    F = _f()
    return (F.array_position(F.array(*[F.lit(v) for v in SEVERITY]), verdict) - 1).cast("int")


def _state(col: "Column") -> "Column":
    """GroupState.parse: case, '_' and ' ' folded; anything else is Unknown."""
    F = _f()
    folded = F.lower(F.regexp_replace(col, "[_ ]", ""))
    expr = F.lit("Unknown")
    for state in _STATES:
        expr = F.when(folded == state.lower(), F.lit(state)).otherwise(expr)
    return F.when(col.isin(*_STATES, "Unknown"), col).otherwise(expr)  # stored values are canonical: no regex


def _first_match(group: "Column", patterns: Sequence[str]) -> "Column":
    F = _f()
    expr = F.lit(None).cast("string")
    for pattern in reversed(patterns):
        expr = F.when(group.rlike(glob_to_java_regex(pattern)), F.lit(repr(pattern))).otherwise(expr)
    return expr


def _ms(name: str, value: Any) -> int | None:
    """Epoch ms from None, an int, digits, or an ISO-8601 time with a zone (a date alone is midnight UTC)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ConfigurationError(f"{name} must be epoch milliseconds or an ISO-8601 time, got {value!r}.")
    if isinstance(value, int):
        if value < 0:
            raise ConfigurationError(f"{name} must be >= 0 epoch milliseconds, got {value}.")
        return value
    if isinstance(value, datetime):
        parsed = value
    else:
        text = str(value).strip()
        if text.isdigit():
            return int(text)
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigurationError(f"{name}={text!r} is not epoch ms or an ISO-8601 time such as "
                                     "'2024-05-01T00:00:00+00:00'.") from None
        if len(text) == 10:  # a date: midnight UTC
            parsed = parsed.replace(tzinfo=timezone.utc)
    if parsed.tzinfo is None:
        raise ConfigurationError(f"{name}={parsed.isoformat()!r} has no time zone: add one (e.g. +00:00).")
    return int(parsed.timestamp() * 1000)


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")


# -- the job ------------------------------------------------------------------------------------


def _history_schema():
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    types = {"snapshot_ms": LongType(), "members": IntegerType(), "partition": IntegerType(),
             "committed": LongType(), "log_start": LongType(), "log_end": LongType(), "lag": LongType()}
    return StructType([StructField(c, types.get(c, StringType()), True) for c in HISTORY_COLUMNS])


def _read_history(spark: "SparkSession", url: str, since_ms: int | None, until_ms: int | None) -> "DataFrame":
    F = _f()
    from pyspark.errors import AnalysisException

    try:
        df = spark.read.schema(_history_schema()).parquet(url)
    except AnalysisException as exc:
        raise ConfigurationError(f"history {url!r} cannot be read by Spark: {str(exc).splitlines()[0]} (is it the "
                                 "history store's root, the directory holding date=YYYY-MM-DD/?)") from None
    if "date" not in df.columns:
        raise ConfigurationError(f"history {url!r} has no date=YYYY-MM-DD partition directories: point --history "
                                 "at the store's root.")
    if since_ms is not None:
        df = df.where((F.col("date") >= F.lit(_day(since_ms))) & (F.col("snapshot_ms") >= since_ms))
    if until_ms is not None:
        df = df.where((F.col("date") <= F.lit(_day(until_ms - 1))) & (F.col("snapshot_ms") < until_ms))
    return (df.where(F.col("snapshot_ms").isNotNull() & F.col("group_id").isNotNull())
            .select("snapshot_ms", "group_id", _state(F.col("group_state")).alias("state"),
                    F.coalesce(F.col("protocol_type"), F.lit("")).alias("protocol_type"),
                    F.coalesce(F.col("members"), F.lit(0)).alias("members"), "topic", "partition", "committed",
                    "log_start", "log_end", "lag",
                    (F.col("log_end").isNotNull()
                     & ~F.array_contains(F.split(F.coalesce(F.col("flags"), F.lit("")), ","), "error"))
                    .alias("readable")))


def _prepare(hist: "DataFrame") -> "DataFrame":
    """The history hash-partitioned by group (the verdicts' windows and aggregates are keyed by
    columns that include ``group_id``, so they need no further shuffle), with per-series
    columns carried on each row: ``progress_t`` (the last change of the committed offset up to
    this point) and ``first_t`` (the series' first point)."""
    F = _f()
    from pyspark.sql import Window

    series = Window.partitionBy("group_id", "topic", "partition").orderBy("snapshot_ms")
    upto = series.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    prev = F.lag("committed").over(series)
    first = F.row_number().over(series) == 1
    change = F.when(~first & ~F.col("committed").eqNullSafe(prev), F.col("snapshot_ms"))
    return (hist.repartition("group_id")
            .withColumn("change_t", change)
            .select("*", F.max("change_t").over(upto).alias("progress_t"),
                    F.min("snapshot_ms").over(upto).alias("first_t"))
            .drop("change_t"))


def _partition_verdicts(hist: "DataFrame", evals: "DataFrame", window_ms: int, rules: VerdictRules) -> "DataFrame":
    """One row per (group, topic, partition, evaluation time) that the group has at that time."""
    F = _f()
    from pyspark.sql import Window

    t, e = F.col("snapshot_ms"), F.col("at_ms")
    allowed = F.lit(rules.allowed_lag)
    reach = max(1, math.ceil(rules.window_ms / window_ms))  # later windows whose look-back can see a point
    series = (hist.where(F.col("topic").isNotNull())
              .withColumn("k", _window_index(t, window_ms))
              .withColumn("ek", F.explode(F.sequence(F.col("k"), F.col("k") + reach)))
              .join(F.broadcast(evals.select(F.col("k").alias("ek"), "at_ms")), "ek")
              .where((t >= e - rules.window_ms) & (t <= e)))
    key = ["group_id", "topic", "partition", "at_ms"]
    whole = Window.partitionBy(*key)
    before = whole.orderBy("snapshot_ms").rowsBetween(Window.unboundedPreceding, -1)
    known = F.col("readable") & F.col("committed").isNotNull() & F.col("lag").isNotNull()
    at_latest = t == e
    # one pass of window functions (one sort), then the stuck run, which needs the latest commit
    stage = (series.withColumn("known", known)
             .select("*", F.max(at_latest.cast("int")).over(whole).alias("present"),
                     F.max(F.when(at_latest, F.col("committed"))).over(whole).alias("L_committed"),
                     F.min(F.when(known, t)).over(whole).alias("known_first_t"),
                     F.max(F.when(known, t)).over(whole).alias("known_last_t"),
                     F.max(F.when(F.col("committed").isNotNull() | ~F.col("readable"), t)).over(whole)
                     .alias("nc_break_t"),
                     F.last(F.when(known, F.col("lag")), ignorenulls=True).over(before).alias("prev_known_lag"))
             .where(F.col("present") == 1))
    stuck_break = F.col("known") & ((F.col("committed") != F.col("L_committed")) | (F.col("lag") <= allowed))
    stage = stage.select("*", F.max(F.when(stuck_break, t)).over(whole).alias("stuck_break_t"))

    def latest(col: str) -> "Column":
        return F.max(F.when(at_latest, F.col(col))).alias(f"L_{col}")

    x = F.when(F.col("known"), t - F.col("known_first_t"))  # ms since the first known point
    y = F.when(F.col("known"), F.col("lag"))
    first_known_t = F.when(F.col("known"), t)
    in_nc_run = t > F.coalesce(F.col("nc_break_t"), F.lit(-1))
    in_stuck_run = F.col("known") & (t > F.coalesce(F.col("stuck_break_t"), F.lit(-1)))
    agg = stage.groupBy(*key).agg(
        latest("committed"), latest("log_start"), latest("log_end"), latest("lag"),
        F.max(F.when(at_latest, F.col("readable").cast("int"))).alias("L_readable"),
        latest("progress_t"), latest("first_t"),
        F.count(F.lit(1)).cast("int").alias("points"),
        F.sum(F.col("known").cast("int")).alias("n"),
        F.min(first_known_t).alias("first_known_t"), F.max(first_known_t).alias("known_last_t"),
        F.min_by(F.col("lag"), first_known_t).alias("first_lag"),
        F.min_by(F.col("committed"), first_known_t).alias("first_committed"),
        F.max(F.when(F.col("known") & (t < F.col("known_last_t")), F.col("committed"))).alias("earlier_max"),
        F.min(F.when(in_nc_run, t)).alias("nc_run_t"),
        F.min_by(F.col("log_end"), F.when(in_nc_run, t)).alias("nc_run_log_end"),
        F.min(F.when(in_stuck_run, t)).alias("stuck_run_t"),
        F.min_by(F.col("log_end"), F.when(in_stuck_run, t)).alias("stuck_run_log_end"),
        F.sum(F.when(F.col("known") & (F.col("lag") > F.col("prev_known_lag")), 1).otherwise(0)).alias("rises"),
        # least squares: slope = (n*Sxy - Sx*Sy) / (n*Sxx - Sx^2); Sxy exact in decimal (a product of a
        # time and a lag can pass 2^63), the others fit in longs; the sign is decided exactly
        F.sum(x).alias("sx"), F.sum(y).alias("sy"), F.sum(x.cast(_EXACT) * y.cast(_EXACT)).alias("sxy"),
        F.sum(x.cast("double") * x.cast("double")).alias("sxx"),
    )
    c, lag_, log_start, log_end = (F.col(n) for n in ("L_committed", "L_lag", "L_log_start", "L_log_end"))
    num = F.col("n").cast(_EXACT) * F.col("sxy") - F.col("sx").cast(_EXACT) * F.col("sy").cast(_EXACT)
    n_d, sx_d = F.col("n").cast("double"), F.col("sx").cast("double")
    spread = F.col("first_known_t") < F.col("known_last_t")  # two distinct times: the variance is > 0
    agg = (agg.withColumn("slope_up", spread & (num > 0))
           .withColumn("slope", F.when(spread, num.cast("double") / (n_d * F.col("sxx") - sx_d * sx_d) * 1000.0)
                       .otherwise(0.0))
           .withColumn("never_ms", e - F.col("nc_run_t"))
           .withColumn("nc_growth", log_end - F.col("nc_run_log_end"))
           .withColumn("stuck_ms", F.coalesce(e - F.col("stuck_run_t"), F.lit(0)))
           .withColumn("stuck_growth", log_end - F.col("stuck_run_log_end")))
    stuck_after = rules.stuck_after_ms
    steps = F.col("n") - 1
    nc_stop = (F.col("never_ms") >= stuck_after) & (F.col("nc_growth") > 0)
    nc_ok = (log_end == log_start) | (lag_.isNotNull() & (lag_ <= allowed))
    lost = log_start.isNotNull() & (c < log_start)
    rewind = F.col("earlier_max").isNotNull() & (c < F.col("earlier_max"))
    caught_up = lag_.isNotNull() & (lag_ <= allowed)
    stuck = (F.col("stuck_ms") >= stuck_after) & (F.col("stuck_ms") > 0)
    warn = ((F.col("n") >= rules.min_points) & F.col("slope_up") & (2 * F.col("rises") > steps)
            & ((lag_ - F.col("first_lag")) > allowed))
    verdict = (F.when(F.col("L_readable") != 1, "UNKNOWN")
               .when(c.isNull(), F.when(nc_stop, "STOP").when(nc_ok, "OK").otherwise("UNKNOWN"))
               .when(lost, "LOST").when(rewind, "REWIND").when(caught_up, "OK")
               .when(stuck, F.when(F.col("stuck_growth") > 0, "STOP").otherwise("STALL"))
               .when(warn, "WARN").otherwise("OK"))
    stuck_for = _minutes(F.col("stuck_ms"))
    reason = (
        F.when(F.col("L_readable") != 1, F.lit("its offsets could not be read in the latest snapshot"))
        .when(c.isNull(), F.when(nc_stop, F.concat(F.lit("no committed offset for "), _minutes(F.col("never_ms")),
                                                   F.lit(" while the log grew by "), _s(F.col("nc_growth")),
                                                   F.lit(" records")))
              .when(nc_ok, F.lit("no committed offset, and nothing to read"))
              .otherwise(F.lit("no committed offset: the lag is unknown under the chosen policy")))
        .when(lost, F.concat(F.lit("committed offset "), _s(c), F.lit(" is below the log start "), _s(log_start),
                             F.lit(": "), _s(log_start - c), F.lit(" records were deleted by retention unread")))
        .when(rewind, F.concat(F.lit("committed offset went back from "), _s(F.col("earlier_max")), F.lit(" to "),
                               _s(c), F.lit(f" in the last {rules.window_ms / 60_000:.1f} min and has not caught up "
                                            "with where it was")))
        .when(caught_up, F.when(lag_ == 0, F.lit("caught up"))
              .otherwise(F.concat(F.lit("lag "), _s(lag_), F.lit(f" is within the allowed {rules.allowed_lag}"))))
        .when(stuck, F.when(F.col("stuck_growth") > 0,
                            F.concat(F.lit("committed offset stuck at "), _s(c), F.lit(" for "), stuck_for,
                                     F.lit(" while the log grew by "), _s(F.col("stuck_growth")),
                                     F.lit(" records (lag "), _s(lag_), F.lit(")")))
              .otherwise(F.concat(F.lit("committed offset stuck at "), _s(c), F.lit(" for "), stuck_for,
                                  F.lit(" with "), _s(lag_),
                                  F.lit(" records to read (the log end is not moving)"))))
        .when(warn, F.concat(F.lit("lag growing by "), _fmt(F.col("slope"), 2), F.lit(" records/s over "),
                             _minutes(e - F.col("first_known_t")), F.lit(" ("), _s(F.col("first_lag")),
                             F.lit(" -> "), _s(lag_), F.lit("; rose in "), _s(F.col("rises")), F.lit(" of "),
                             _s(steps), F.lit(" steps)")))
        .otherwise(F.concat(F.lit("lag "), _s(lag_),
                            F.when(F.col("first_committed") != c, F.lit(", committed offset moving"))
                            .otherwise(F.lit(", not growing")))))
    k = _window_index(e, window_ms)
    return agg.select("group_id", "topic", "partition", (k * window_ms).alias("window_start_ms"),
                      ((k + 1) * window_ms).alias("window_end_ms"), "at_ms", verdict.alias("verdict"),
                      reason.alias("reason"), lag_.alias("lag"), c.alias("committed"), log_end.alias("log_end"),
                      "points", _severity(verdict).alias("severity"), F.col("L_progress_t").alias("last_progress_ms"),
                      (e - F.col("L_progress_t")).alias("since_progress_ms"),
                      F.col("L_first_t").alias("history_from_ms"))


def _lag_windows(hist: "DataFrame", verdicts: "DataFrame", window_ms: int) -> "DataFrame":
    F = _f()
    from pyspark.sql import Window

    per_snapshot = (hist.where(F.col("topic").isNotNull())
                    .groupBy("group_id", "topic", "snapshot_ms")
                    .agg(F.sum("lag").alias("topic_lag"), F.count(F.lit(1)).alias("partitions"),
                         F.count("lag").alias("known"), F.max("lag").alias("max_partition_lag"))
                    .withColumn("topic_lag", F.when(F.col("partitions") == F.col("known"), F.col("topic_lag")))
                    .withColumn("k", _window_index(F.col("snapshot_ms"), window_ms)))
    percentiles = F.percentile(F.col("topic_lag"), F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99)))
    windows = (per_snapshot.groupBy("group_id", "topic", "k")
               .agg(F.count(F.lit(1)).cast("int").alias("snapshots"),
                    F.max("partitions").cast("int").alias("partitions"),
                    percentiles.alias("pct"), F.max("topic_lag").alias("lag_max"),
                    F.sum(F.col("topic_lag").isNull().cast("int")).cast("int").alias("unknown_lag_snapshots"),
                    F.max("max_partition_lag").alias("max_partition_lag"),
                    F.max_by("topic_lag", "snapshot_ms").alias("last_lag")))
    worst = Window.partitionBy("group_id", "topic", "k").orderBy(F.col("severity").desc(), F.col("partition"))
    by_topic = (verdicts.withColumn("k", _window_index(F.col("window_start_ms"), window_ms))
                .withColumn("rank", F.row_number().over(worst))
                .groupBy("group_id", "topic", "k")
                .agg(F.max("at_ms").alias("at_ms"),
                     F.max(F.when(F.col("rank") == 1, F.struct("verdict", "partition", "reason"))).alias("w"),
                     F.count(F.lit(1)).cast("int").alias("judged_partitions"),
                     F.sum((F.col("verdict") != "OK").cast("int")).cast("int").alias("not_ok_partitions"),
                     F.max("last_progress_ms").alias("last_progress_ms")))
    out = windows.join(by_topic, ["group_id", "topic", "k"], "left")
    return out.select(
        "group_id", "topic", (F.col("k") * window_ms).alias("window_start_ms"),
        ((F.col("k") + 1) * window_ms).alias("window_end_ms"),
        F.timestamp_millis(F.col("k") * window_ms).alias("window_start"), "snapshots", "partitions",
        F.col("pct")[0].alias("lag_p50"), F.col("pct")[1].alias("lag_p95"), F.col("pct")[2].alias("lag_p99"),
        "lag_max", "unknown_lag_snapshots", "max_partition_lag", "last_lag", "at_ms",
        F.col("w.verdict").alias("verdict"), F.col("w.partition").alias("verdict_partition"),
        F.col("w.reason").alias("verdict_reason"), "judged_partitions", "not_ok_partitions", "last_progress_ms",
        (F.col("at_ms") - F.col("last_progress_ms")).alias("since_progress_ms"))


def _group_points(hist: "DataFrame", as_of_ms: int) -> "DataFrame":
    """Per group, over its points (one per snapshot it is in, as deadgroups.history_points):
    how many, first and last, the last change of its set of committed offsets, the first
    point of its trailing run of Empty points without members, and its idle run as
    deadgroups._idle_run finds it (the stored points before ``as_of_ms`` that were Empty
    without members, with the latest point's committed offsets and a log end beyond a
    committed offset; ``idle_before``: why the point before the run breaks it). Two points'
    sets of committed offsets are compared by their size and the XOR of their entries' 64-bit
    hashes (different sets look equal with probability 2^-64)."""
    F = _f()
    from pyspark.sql import Window

    entry = F.when(F.col("committed").isNotNull(), F.xxhash64("topic", "partition", "committed"))
    backlog = F.col("committed").isNotNull() & F.col("log_end").isNotNull() & (F.col("log_end") > F.col("committed"))
    end_unknown = F.col("committed").isNotNull() & F.col("log_end").isNull()
    points = (hist.groupBy("group_id", "snapshot_ms")
              .agg(F.max("state").alias("state"), F.max("members").alias("members"),
                   F.count(entry).alias("entries"), F.coalesce(F.bit_xor(entry), F.lit(0)).alias("digest"),
                   F.count(F.when(backlog, 1)).alias("backlog"), F.count(F.when(end_unknown, 1)).alias("unknown_ends")))
    by_time, whole = Window.partitionBy("group_id").orderBy("snapshot_ms"), Window.partitionBy("group_id")
    empty = (F.col("state") == "Empty") & (F.col("members") == 0)
    commits = F.struct("entries", "digest")
    prev = F.lag(commits).over(by_time)
    same = commits == F.max_by(commits, "snapshot_ms").over(whole)  # as the group's latest point
    stored = F.col("snapshot_ms") < as_of_ms
    idle = stored & empty & same & (F.col("entries") > 0) & (F.col("backlog") > 0)
    at = _iso(F.col("snapshot_ms"))
    why = (F.when(~empty, F.concat(F.lit("it had "), _s(F.col("members")), F.lit(" member(s) in state "),
                                   F.col("state"), F.lit(" at "), at))
           .when(~same, F.concat(F.lit("its committed offsets changed after "), at))
           .when(F.col("entries") == 0, F.concat(F.lit("it had no visible committed offset at "), at))
           .when(F.col("unknown_ends") == 0, F.concat(F.lit("it had nothing to read at "), at,
                                                        F.lit(" (caught up on every partition)")))
           .otherwise(F.concat(F.lit("nothing to read was known at "), at, F.lit(" (log end offsets not read)"))))
    points = points.select("*", (prev.isNotNull() & (prev != commits)).alias("changed"),
                           F.max(F.when(~empty, F.col("snapshot_ms"))).over(whole).alias("busy_t"),
                           idle.alias("idle"), F.when(stored & ~idle, why).alias("why"),
                           F.max(F.when(stored & ~idle, F.col("snapshot_ms"))).over(whole).alias("broken_t"))
    after_break = F.col("snapshot_ms") > F.coalesce(F.col("broken_t"), F.lit(-1))
    return (points.groupBy("group_id")
            .agg(F.count(F.lit(1)).cast("int").alias("n_points"), F.min("snapshot_ms").alias("first_seen_ms"),
                 F.max("snapshot_ms").alias("last_seen_ms"),
                 F.max(F.when(F.col("changed"), F.col("snapshot_ms"))).alias("last_progress_ms"),
                 F.min(F.when(F.col("snapshot_ms") > F.coalesce(F.col("busy_t"), F.lit(-1)), F.col("snapshot_ms")))
                 .alias("empty_since_ms"),
                 F.min(F.when(F.col("idle") & after_break, F.col("snapshot_ms"))).alias("idle_since_ms"),
                 F.max(F.when(F.col("snapshot_ms") == F.col("broken_t"), F.col("why"))).alias("idle_before")))


def _group_status(hist: "DataFrame", verdicts: "DataFrame", as_of_ms: int,
                  existing_since_ms: int, dead: DeadGroupRules) -> "DataFrame":
    F = _f()
    from pyspark.sql import Window

    latest = hist.where(F.col("snapshot_ms") == as_of_ms)
    now = latest.groupBy("group_id").agg(
        F.max("state").alias("state"), F.max("protocol_type").alias("protocol_type"),
        F.max("members").cast("int").alias("members"),
        F.when(F.count("topic") == 0, F.lit(0).cast("long"))
        .when(F.count("topic") == F.count("lag"), F.sum("lag")).alias("total_lag"),
        F.count("topic").cast("int").alias("partitions"),
        F.array_sort(F.collect_set(F.when(F.col("committed").isNotNull(), F.col("topic")))).alias("committed_topics"))
    existing = (hist.where((F.col("snapshot_ms") >= existing_since_ms) & F.col("readable") & F.col("topic").isNotNull())
                .agg(F.array_sort(F.collect_set("topic")).alias("existing_topics")))
    points = _group_points(hist, as_of_ms)

    # the group verdict at as_of (worst partition, first in topic/partition order), reason as group_verdicts
    worst = Window.partitionBy("group_id").orderBy(F.col("severity").desc(), "topic", "partition")
    gv = (verdicts.where(F.col("at_ms") == as_of_ms)
          .withColumn("rank", F.row_number().over(worst))
          .groupBy("group_id")
          .agg(F.max(F.when(F.col("rank") == 1, F.struct("verdict", "topic", "partition", "reason"))).alias("w"),
               F.count(F.lit(1)).alias("judged"),
               F.collect_list("verdict").alias("all_verdicts")))

    df = (points.join(now, "group_id", "left").join(gv, "group_id", "left")
          .crossJoin(F.broadcast(existing)))
    in_latest = F.col("last_seen_ms") == as_of_ms
    judged = F.coalesce(F.col("judged"), F.lit(0))
    v = F.col("w.verdict")
    same = F.size(F.filter(F.col("all_verdicts"), lambda x: x == v))
    more = F.when(same > 1, F.concat(F.lit(" ("), _s(same - 1), F.lit(" more partition(s) "), v, F.lit(")"))) \
        .otherwise(F.lit(""))
    reason = (F.when(v == "OK", F.when(judged == 1, F.col("w.reason"))
                     .otherwise(F.concat(F.lit("all "), _s(judged), F.lit(" partitions OK"))))
              .otherwise(F.concat(F.col("w.topic"), F.lit("["), _s(F.col("w.partition")), F.lit("]: "),
                                  F.col("w.reason"), more)))
    reason = F.when(v.isin("STOP", "STALL"), F.concat(reason, F.lit("; the group has "), _s(F.col("members")),
                                                       F.lit(" member(s), state "), F.col("state"))).otherwise(reason)
    df = (df.withColumn("verdict", F.when(~in_latest, F.lit("UNKNOWN")).when(judged == 0, F.lit("OK")).otherwise(v))
          .withColumn("reason", F.when(~in_latest, F.lit("the group could not be read in the latest snapshot"))
                      .when(judged == 0, F.lit("the group has no partitions")).otherwise(reason)))

    # dead-group evidence, as lag.deadgroups.classify_group with the latest row as the description
    group = F.col("group_id")
    denied, allowed = _first_match(group, dead.deny), _first_match(group, dead.allow)
    system = _first_match(group, dead.default_deny)
    streams = F.filter(F.col("existing_topics"), lambda t: F.startswith(t, F.concat(group, F.lit("-")))
                       & (F.endswith(t, F.lit(_STREAMS_SUFFIXES[0])) | F.endswith(t, F.lit(_STREAMS_SUFFIXES[1]))))
    streams = streams if dead.deny_streams_apps else F.array().cast("array<string>")
    may_delete = (F.when(denied.isNotNull(), False).when(allowed.isNotNull(), True)
                  .when(F.lit(bool(dead.allow)), False).when(system.isNotNull(), False)
                  .when(F.size(streams) > 0, False).otherwise(True))
    permission = (F.when(denied.isNotNull(), F.concat(F.lit("matches the deny pattern "), denied,
                                                       F.lit(": never deletable")))
                  .when(allowed.isNotNull(), F.concat(F.lit("matches the allow pattern "), allowed))
                  .when(F.lit(bool(dead.allow)), F.lit("matches no allow pattern: not deletable"))
                  .when(system.isNotNull(), F.concat(F.lit("matches the default deny pattern "), system,
                                                     F.lit(" (a system group): not deletable")))
                  .when(F.size(streams) > 0, F.concat(F.lit("looks like a Kafka Streams application id (topic(s) "),
                                                      F.array_join(F.slice(streams, 1, 3), ", "),
                                                      F.lit(" exist): not deletable")))
                  .otherwise(F.lit("matches no deny pattern")))

    # The rules of lag.deadgroups.classify_group, given no topic checked by name: a committed topic
    # missing from the topic list is "cannot tell", so topics_deleted never fires here (the
    # candidates are never more than the Python engine's, which checks by name).
    plain = F.col("protocol_type").isin("consumer", "")
    committed = F.coalesce(F.col("committed_topics"), F.array().cast("array<string>"))
    has_commit = F.size(committed) > 0
    gone = F.filter(committed, lambda t: ~F.array_contains(F.col("existing_topics"), t))
    all_gone = has_commit & (F.size(gone) == F.size(committed))
    n_points, last_progress, first = F.col("n_points"), F.col("last_progress_ms"), F.col("first_seen_ms")
    history = n_points >= 2
    idle_since, idle_before = F.col("idle_since_ms"), F.col("idle_before")
    idle_ms = F.lit(as_of_ms) - idle_since
    progress_ms = F.lit(as_of_ms) - last_progress
    covered_ms = F.lit(as_of_ms) - first
    idle_needed = dead.idle_ms
    hours_g = format(dead.idle_hours, "g")
    full = F.lit(dead.assume_full_visibility)
    no_commit_unknown = F.when(~has_commit & plain & ~full, F.lit(
        "cannot tell whether it has no committed offset at all: a fetch of all its offsets leaves out topics the "
        "principal may not Describe (set assume_full_visibility only if it may Describe every topic and group)"))
    gone_unknown = F.when(all_gone, F.concat(
        F.lit("cannot tell whether every committed topic was deleted: "), F.array_join(gone, ", "),
        F.lit(" not in the topic list (which leaves out topics the principal may not Describe) and not checked by "
              "name")))
    idle_unknown = F.when(~history, F.lit("cannot tell how long it has been idle: no stored history"))
    cannot_tell = F.filter(F.array(no_commit_unknown, gone_unknown, idle_unknown), lambda r: r.isNotNull())
    no_commit_reason = F.when(~has_commit & plain & full,
                              F.lit("it has no committed offset at all (assume_full_visibility)"))
    idle_reason = F.when(plain & idle_since.isNotNull() & (idle_ms >= idle_needed), F.concat(
        F.lit("no commit progress for at least "), _duration(idle_ms),
        F.lit(f" while Empty with records to read (idle_hours={hours_g})")))
    dead_reasons = F.filter(F.array(no_commit_reason, idle_reason), lambda r: r.isNotNull())
    dead_codes = F.filter(F.array(F.when(no_commit_reason.isNotNull(), F.lit("no_commits")),
                                  F.when(idle_reason.isNotNull(), F.lit("idle"))), lambda r: r.isNotNull())
    idle_line = (F.when(~history, idle_unknown)
                 .when(idle_since.isNull(), F.concat(
                     F.lit("not idle by the history: "), F.coalesce(idle_before, F.lit("no stored snapshot")),
                     F.lit("; idle time counts only while Empty with records to read and no commit progress")))
                 .otherwise(F.concat(
                     F.lit("idle for at least "), _duration(idle_ms),
                     F.lit(": Empty, with records to read and no commit progress, at every stored snapshot since "),
                     _iso(idle_since),
                     F.when(idle_before.isNotNull(), F.concat(F.lit(" (before that, "), idle_before, F.lit(")")))
                     .otherwise(F.lit("")),
                     F.when(idle_ms < idle_needed, F.lit(f"; less than idle_hours={hours_g}")).otherwise(F.lit("")))))
    empty_since = F.col("empty_since_ms")
    retention_ms = dead.offsets_retention_minutes * 60_000
    expires = F.when(empty_since.isNotNull() & has_commit & history, empty_since + retention_ms)
    is_dead = F.size(dead_reasons) > 0
    empty_evidence = F.filter(F.array(
        F.when(is_dead, F.concat(F.lit("dead: "), F.array_join(dead_reasons, "; ")))
        .otherwise(F.lit("paused: Empty, but no evidence that it is abandoned")),
        F.lit("state Empty: no members"),
        F.when(~plain, F.concat(F.lit("protocol type "), _repr(F.col("protocol_type")),
                                F.lit(" is not a plain consumer group: neither a missing commit nor a lack of commit "
                                      "progress is evidence against it"))),
        F.when(~has_commit, F.lit("no committed offsets")),
        no_commit_unknown,
        F.when(all_gone, gone_unknown)
        .when(F.size(gone) > 0, F.concat(_s(F.size(gone)), F.lit(" of "), _s(F.size(committed)),
                                         F.lit(" committed topics are not in the topic list (not checked by name): "),
                                         F.array_join(gone, ", "))),
        F.when(history & last_progress.isNotNull(),
               F.concat(F.lit("last commit progress "), _duration(progress_ms), F.lit(" ago ("), _iso(last_progress),
                        F.lit(")")))
        .when(history, F.concat(F.lit("no commit progress in the "), _duration(covered_ms),
                                F.lit(" of stored history (since "), _iso(first), F.lit(")"))),
        idle_line,
        F.when(has_commit & ~history, F.lit(f"Kafka expires its offsets {dead.offsets_retention_minutes} min after "
                                            "it became Empty (KIP-211); when that was is not in the history"))
        .when(has_commit & empty_since.isNotNull(),
              F.concat(F.lit("Empty since at least "), _iso(empty_since),
                       F.lit(": Kafka will expire its offsets at or before "), _iso(expires),
                       F.lit(f" (offsets.retention.minutes={dead.offsets_retention_minutes}, KIP-211)"))),
        permission), lambda r: r.isNotNull())
    state = F.col("state")
    is_dead_state = state == "Dead"
    is_active = (F.col("members") > 0) | (state != "Empty")
    health = (F.when(~in_latest, F.lit(None).cast("string")).when(is_dead_state, F.lit("dead"))
              .when(is_active, F.lit("active")).when(is_dead, F.lit("dead")).otherwise(F.lit("paused")))
    evidence = (F.when(~in_latest, F.array(F.concat(F.lit("not in the latest snapshot (last seen "),
                                                   _iso(F.col("last_seen_ms")), F.lit("): not classified"))))
                .when(is_dead_state, F.array(F.lit("state Dead: the group does not exist, or Kafka already expired "
                                                   "its offsets (nothing to delete)"), permission))
                .when(is_active, F.array(F.concat(F.lit("state "), state, F.lit(" with "), _s(F.col("members")),
                                                  F.lit(" member(s)")), permission))
                .otherwise(empty_evidence))
    none = F.array().cast("array<string>")
    empty_case = in_latest & ~is_dead_state & ~is_active
    return df.select(
        "group_id", F.lit(as_of_ms).alias("as_of_ms"), "last_seen_ms", "first_seen_ms",
        in_latest.alias("in_latest_snapshot"),
        F.when(in_latest, state).alias("state"), F.when(in_latest, F.col("protocol_type")).alias("protocol_type"),
        F.when(in_latest, F.col("members")).alias("members"), "total_lag", "partitions",
        F.when(in_latest, committed).alias("committed_topics"),
        F.when(empty_case, gone).alias("gone_topics"),
        "verdict", "reason", "last_progress_ms",
        (F.lit(as_of_ms) - last_progress).alias("since_progress_ms"),
        F.when(empty_case & history, empty_since).alias("empty_since_ms"),
        F.when(empty_case, expires).alias("expires_at_ms"),
        F.when(empty_case, idle_since).alias("idle_since_ms"),
        health.alias("health"),
        F.coalesce(empty_case & is_dead & may_delete, F.lit(False)).alias("deletable"),
        evidence.alias("evidence"),
        F.when(~in_latest, F.lit(None).cast("array<string>")).when(is_dead_state, F.array(F.lit("state_dead")))
        .when(is_active, none).otherwise(dead_codes).alias("dead_reasons"),
        F.when(~in_latest, F.lit(None).cast("array<string>")).when(is_dead_state | is_active, none)
        .otherwise(cannot_tell).alias("cannot_tell"))


def run_lag_history(spark: "SparkSession", history_url: str, output_url: str, *, window_minutes: float = 60,
                    since: Any = None, until: Any = None, rules: VerdictRules = VerdictRules(),
                    dead_rules: DeadGroupRules = DeadGroupRules(), gone_after_snapshots: int = 3) -> LagHistoryResult:
    """Compute the four outputs (module docstring) from the history at ``history_url`` into
    ``output_url`` (``<output_url>/<name>``, replaced). ``since``/``until``: epoch ms, ISO-8601
    text or aware datetimes bounding ``snapshot_ms`` (``since <= t < until``)."""
    F = _f()
    if not isinstance(history_url, str) or not history_url.strip():
        raise ConfigurationError(f"history_url must be a path or URL, got {history_url!r}.")
    if not isinstance(output_url, str) or not output_url.strip():
        raise ConfigurationError(f"output_url must be a path or URL, got {output_url!r}.")
    if isinstance(window_minutes, bool) or not isinstance(window_minutes, (int, float)) or window_minutes <= 0:
        raise ConfigurationError(f"window_minutes must be a positive number, got {window_minutes!r}.")
    window_ms = int(round(window_minutes * 60_000))
    if window_ms < 1000:
        raise ConfigurationError(f"window_minutes={window_minutes!r} is shorter than a second.")
    if isinstance(gone_after_snapshots, bool) or not isinstance(gone_after_snapshots, int) or gone_after_snapshots < 1:
        raise ConfigurationError(f"gone_after_snapshots must be an int >= 1, got {gone_after_snapshots!r}.")
    since_ms, until_ms = _ms("since", since), _ms("until", until)
    if since_ms is not None and until_ms is not None and until_ms <= since_ms:
        raise ConfigurationError(f"until ({until_ms}) must be after since ({since_ms}).")
    for pattern in (*dead_rules.allow, *dead_rules.deny, *dead_rules.default_deny):
        glob_to_java_regex(pattern)
    out = output_url.rstrip("/")
    paths = {name: f"{out}/{name}" for name in OUTPUTS}

    previous_tz = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    timings: dict[str, float] = {}
    try:
        hist = _read_history(spark, history_url, since_ms, until_ms)
        with _step("latest snapshot times", timings):  # the one driver-side read of the input: 2 numbers
            latest = (hist.select("snapshot_ms").distinct().orderBy(F.col("snapshot_ms").desc())
                      .limit(gone_after_snapshots)
                      .agg(F.max("snapshot_ms").alias("as_of"), F.min("snapshot_ms").alias("cut")).collect()[0])
        if latest["as_of"] is None:
            raise ConfigurationError(f"history {history_url!r} has no snapshot in the requested range "
                                     f"(since={since_ms}, until={until_ms}).")
        as_of_ms, existing_since_ms = int(latest["as_of"]), int(latest["cut"])
        evals = (hist.groupBy(_window_index(F.col("snapshot_ms"), window_ms).alias("k"))
                 .agg(F.max("snapshot_ms").alias("at_ms")))

        with _step("partition_verdicts", timings):
            _partition_verdicts(_prepare(hist), evals, window_ms, rules).write.mode("overwrite") \
                .parquet(paths["partition_verdicts"])
        verdicts = spark.read.parquet(paths["partition_verdicts"])  # cheaper to read back than to cache
        with _step("lag_windows", timings):
            _lag_windows(hist, verdicts, window_ms).write.mode("overwrite").parquet(paths["lag_windows"])
        with _step("group_status", timings):
            _group_status(hist, verdicts, as_of_ms, existing_since_ms, dead_rules) \
                .write.mode("overwrite").parquet(paths["group_status"])
        status = spark.read.parquet(paths["group_status"])
        with _step("dead_candidates", timings):
            (status.where((F.col("health") == "dead") & F.col("deletable"))
             .select("group_id", "as_of_ms", "state", "protocol_type", "committed_topics", "gone_topics",
                     "last_progress_ms", "since_progress_ms", "empty_since_ms", "expires_at_ms", "idle_since_ms",
                     "evidence", "dead_reasons")
             .write.mode("overwrite").parquet(paths["dead_candidates"]))
        with _step("summary", timings):  # small reads of the outputs
            pv = spark.read.parquet(paths["partition_verdicts"]).agg(
                F.count(F.lit(1)).alias("rows"), F.count_distinct("window_start_ms").alias("windows")).collect()[0]
            verdict_counts = {r["verdict"]: int(r["count"]) for r in status.groupBy("verdict").count().collect()}
            dead = spark.read.parquet(paths["dead_candidates"])
            candidates = [r["group_id"] for r in dead.select("group_id").orderBy("group_id").limit(100).collect()]
            rows = {"partition_verdicts": int(pv["rows"]),
                    "lag_windows": spark.read.parquet(paths["lag_windows"]).count(),
                    "group_status": sum(verdict_counts.values()), "dead_candidates": dead.count()}
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous_tz)
    log.info("lag history: as of %s, %d window(s), %s", _day(as_of_ms), int(pv["windows"]), rows)
    return LagHistoryResult(paths, as_of_ms, int(pv["windows"]), rows, verdict_counts, candidates, timings)


# -- spark-submit entry point --------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    defaults, dead = VerdictRules(), DeadGroupRules()
    p = argparse.ArgumentParser(prog="lag_history.py", description="Lag percentiles, verdicts, progress and dead-group "
                                "candidates from the kgroups history store (Parquet).")
    p.add_argument("--history", required=True, help="the history store's root (path or Hadoop URL, e.g. s3a://...)")
    p.add_argument("--output", required=True, help="where the four outputs go (replaced)")
    p.add_argument("--window-minutes", type=float, default=60.0, help="tumbling window length (default 60)")
    p.add_argument("--since", help="first snapshot time: epoch ms or ISO-8601 with a zone (default: all)")
    p.add_argument("--until", help="end of the range, exclusive (default: all)")
    p.add_argument("--verdict-window-minutes", type=float, default=defaults.window_ms / 60_000,
                   help="the verdicts' look-back (VerdictRules.window_ms; default 30)")
    p.add_argument("--stuck-after-minutes", type=float, default=defaults.stuck_after_ms / 60_000,
                   help="STOP/STALL after the offset is stuck this long (default 10)")
    p.add_argument("--min-points", type=int, default=defaults.min_points, help="points needed for WARN (default 3)")
    p.add_argument("--allowed-lag", type=int, default=defaults.allowed_lag, help="lag counted as caught up (default 0)")
    p.add_argument("--idle-hours", type=float, default=dead.idle_hours,
                   help="idle (Empty, records to read, no commit progress) this long is evidence of death "
                        "(default 168)")
    p.add_argument("--offsets-retention-minutes", type=int, default=dead.offsets_retention_minutes,
                   help="the cluster's offsets.retention.minutes (default 10080)")
    p.add_argument("--allow", action="append", default=[], help="group pattern that may be deleted (repeatable)")
    p.add_argument("--deny", action="append", default=[], help="group pattern never deleted (repeatable)")
    p.add_argument("--no-default-deny", action="store_true", help="drop the default system-group deny patterns")
    p.add_argument("--assume-full-visibility", action="store_true",
                   help="the snapshots' principal could Describe every topic and group (e.g. a super user): only "
                        "then is 'no committed offset at all' evidence of death")
    p.add_argument("--gone-after-snapshots", type=int, default=3,
                   help="a committed topic unread in this many latest snapshots is reported as possibly deleted "
                        "(cannot tell: never evidence here) (default 3)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        rules = VerdictRules(window_ms=int(round(args.verdict_window_minutes * 60_000)),
                             stuck_after_ms=int(round(args.stuck_after_minutes * 60_000)),
                             min_points=args.min_points, allowed_lag=args.allowed_lag)
        dead = DeadGroupRules(idle_hours=args.idle_hours, offsets_retention_minutes=args.offsets_retention_minutes,
                              allow=tuple(args.allow), deny=tuple(args.deny),
                              assume_full_visibility=args.assume_full_visibility,
                              **({"default_deny": ()} if args.no_default_deny else {}))
    except ConfigurationError as exc:
        print(f"lag_history: {exc}", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("kgroups-lag-history").getOrCreate()
    try:
        result = run_lag_history(spark, args.history, args.output, window_minutes=args.window_minutes,
                                 since=args.since, until=args.until, rules=rules, dead_rules=dead,
                                 gone_after_snapshots=args.gone_after_snapshots)
    except ConfigurationError as exc:
        print(f"lag_history: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
