"""The worker of :class:`demo.spark_oracle.SparkOracle` (run as a module, with the
oracle's pyspark first on PYTHONPATH): one Spark session with Spark's Kafka source (``spark.jars``)
and the ``kgroups`` source; reads one JSON request a line from stdin, answers one JSON line on the
file descriptor it was given (Spark's JVM shares stdout and stderr, so they only log). A request's
``kind`` picks what it does (:data:`KINDS`): ``read`` (the default) collects a batch read,
``stream`` runs a Structured Streaming query to its end (:func:`stream`), ``stream_value_bytes``
runs one for a benchmark, answering only sums and Spark's timings (:func:`stream_value_bytes`).

    python -m demo.spark_oracle_worker <answer fd> <workdir> <jar,jar,...> [<settings JSON>]

The settings (Spark configuration on top of :data:`BASE_SETTINGS`) default to
:data:`STARTUP_TUNED`: what the tests want, a JVM that starts fast. A benchmark passes its own:
with C1 only (``-XX:TieredStopAtLevel=1``) the JVM's share of every read costs more CPU than with
the default JIT, and Spark's Kafka source is nearly all JVM.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import tempfile

COLUMNS = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "unix_millis(timestamp) AS timestamp_ms",
    "timestampType",
)


#: Every worker's session: what the comparisons need whatever the JVM's tuning.
BASE_SETTINGS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # A stream's answer takes every batch's offsets from recentProgress, which keeps only this many
    # progress updates (100 by default): a test with a small maxOffsetsPerTrigger runs more batches.
    "spark.sql.streaming.numRecentProgressUpdates": "1000",
}
#: The tests' default: a small heap and C1 only, for a JVM that starts in seconds less.
STARTUP_TUNED = {
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}
#: ``stream`` requests' triggers: the keyword arguments of ``DataStreamWriter.trigger``. Both end
#: the query by themselves once it has read what the source held when it started: availableNow in
#: batches as the source's limits (maxOffsetsPerTrigger) cut them, once in a single batch.
TRIGGERS = {"availableNow": {"availableNow": True}, "once": {"once": True}}


def session(jars: str, settings: dict[str, str] | None = None):
    from pyspark.sql import SparkSession

    from airflow_provider_kgroups.spark.datasource import register

    builder = SparkSession.builder.master("local[2]").appName("kgroups-spark-kafka-oracle")
    chosen = {**BASE_SETTINGS, **(STARTUP_TUNED if settings is None else settings), "spark.jars": jars}
    for key, value in chosen.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def projection(df) -> tuple[str, ...]:
    """The columns every answer carries: :data:`COLUMNS`, and ``headers`` when the source has them
    (``includeHeaders``), so that a missing column shows as missing rather than as nulls."""
    return COLUMNS + (("headers",) if "headers" in df.columns else ())


def collected(df) -> list[tuple]:
    """``df`` (already narrowed to :func:`projection`) collected as plain tuples, ``headers`` as
    ``[(key, value)]`` (Rows do not pickle into the parent's Python without pyspark), sorted by
    (topic, partition, offset): neither source promises an order across partitions."""
    headers = "headers" in df.columns
    rows = []
    for row in df.collect():
        values = list(row)
        if headers:
            values[-1] = None if row.headers is None else [(h.key, h.value) for h in row.headers]
        rows.append(tuple(values))
    rows.sort(key=lambda r: (r[2], r[3], r[4]))
    return rows


def read(spark, request: dict) -> dict:
    df = spark.read.format(request["format"]).options(**request["options"]).load()
    if request.get("value_bytes"):  # a benchmark's read: every record delivered, only a sum comes back
        return {"value_bytes": df.selectExpr("sum(length(value)) AS n").collect()[0]["n"]}
    return {
        "schema": df.schema.simpleString(),
        "rows": collected(df.selectExpr(*projection(df))),
        "partitions": df.rdd.getNumPartitions() if request.get("partitions") else None,
    }


def stream(spark, request: dict) -> dict:
    """Run ``format`` with ``options`` as a streaming query into ``foreachBatch`` until its trigger
    ends it (or ``timeout`` seconds pass), continuing from ``checkpoint``: the answer holds each
    batch foreachBatch ran, its rows collected as :func:`read` collects them, and its offsets."""
    if request["trigger"] not in TRIGGERS:
        raise ValueError(f"trigger {request['trigger']!r}: the oracle runs {' or '.join(TRIGGERS)}")
    df = spark.readStream.format(request["format"]).options(**request["options"]).load()
    ran: dict[int, list[tuple]] = {}

    def keep(batch, batch_id: int) -> None:
        # Runs in this process (Py4J calls back), one batch at a time: the rows need no pickling.
        ran[batch_id] = collected(batch)

    query = (
        df.selectExpr(*projection(df))
        .writeStream.foreachBatch(keep)
        .option("checkpointLocation", request["checkpoint"])
        .trigger(**TRIGGERS[request["trigger"]])
        .start()
    )
    progress = run_to_end(query, request["timeout"], ran)
    latest = progress[-1]["sources"][0]["latestOffset"] if progress and progress[-1]["sources"] else None
    return {
        "schema": df.schema.simpleString(),
        "batches": [batch(batch_id, rows, progress) for batch_id, rows in sorted(ran.items())],
        "latest": parsed_offset(latest),
    }


def run_to_end(query, timeout: float, ran: dict) -> list:
    """Wait for ``query`` to end by itself and answer its ``recentProgress`` (complete once the
    query's thread has ended: Spark records a batch's progress before it starts the next trigger).
    The query's own exception propagates; after ``timeout`` seconds it is stopped and this raises
    TimeoutError, so a worker never holds a running query between requests."""
    try:
        if not query.awaitTermination(timeout):
            status = query.status["message"]
            query.stop()
            raise TimeoutError(
                f"the streaming query did not end within {timeout:g} s and was stopped "
                f"({len(ran)} batches ran; its status was {status!r})"
            )
    finally:
        if query.isActive:  # an exception of ours (not the query's) while it ran: leave nothing behind
            query.stop()
    return query.recentProgress


def batch(batch_id: int, rows: list[tuple], progress: list) -> dict:
    """One batch foreachBatch ran, with its source's offsets from the progress update of the trigger
    that ran it: the one naming ``batch_id`` with an ``addBatch`` duration (the sink's write). A
    trigger that ran no batch is reported too, with no input rows and no ``addBatch``, under the id
    the next batch will take (a rerun with nothing new reports one): it must not stand in for the
    batch that later runs under that id."""
    for update in progress:
        if update["batchId"] == batch_id and "addBatch" in update["durationMs"] and update["sources"]:
            source = update["sources"][0]
            return {
                "batch_id": batch_id,
                "rows": rows,
                "start": parsed_offset(source["startOffset"]),
                "end": parsed_offset(source["endOffset"]),
                "input_rows": source["numInputRows"],
            }
    raise RuntimeError(
        f"batch {batch_id} ran but the query's recentProgress has no update for it (it keeps "
        f"{BASE_SETTINGS['spark.sql.streaming.numRecentProgressUpdates']}): run fewer batches"
    )


def parsed_offset(value: str | dict | None) -> dict | None:
    """An offset of a progress update as data: pyspark 4 gives JSON text (``"null"`` for none, as a
    fresh query's first batch has no start); a parsed object or None passes through."""
    return json.loads(value) if isinstance(value, str) else value


def stream_value_bytes(spark, request: dict) -> dict:
    """A benchmark's stream: ``format`` with ``options`` run as :func:`stream` runs it, but each
    micro-batch only sums ``length(value)`` (every record delivered, nothing collected or sent
    back), so the query's cost is the source's and Spark's, not the answer's. Answers the sum
    over the batches and, per batch that ran, its progress update's ``durationMs`` (every phase
    Spark timed: latestOffset, queryPlanning, getBatch, walCommit, addBatch, commitOffsets,
    triggerExecution) and ``numInputRows``: where a micro-batch's time goes besides the data."""
    if request.get("trigger", "availableNow") not in TRIGGERS:
        raise ValueError(f"trigger {request['trigger']!r}: the oracle runs {' or '.join(TRIGGERS)}")
    df = spark.readStream.format(request["format"]).options(**request["options"]).load()
    summed: dict[int, int] = {}

    def add(batch, batch_id: int) -> None:
        summed[batch_id] = batch.selectExpr("sum(length(value)) AS n").collect()[0]["n"] or 0

    query = (
        df.writeStream.foreachBatch(add)
        .option("checkpointLocation", request["checkpoint"])
        .trigger(**TRIGGERS[request.get("trigger", "availableNow")])
        .start()
    )
    progress = run_to_end(query, request["timeout"], summed)
    return {"value_bytes": sum(summed.values()), "batches": [batch_cost(b, progress) for b in sorted(summed)]}


def batch_cost(batch_id: int, progress: list) -> dict:
    """The progress update of the trigger that ran ``batch_id`` (the one with an ``addBatch``
    duration, as :func:`batch` picks it): its durations and input rows."""
    for update in progress:
        if update["batchId"] == batch_id and "addBatch" in update["durationMs"]:
            return {
                "batch_id": batch_id,
                "durations": dict(update["durationMs"]),
                "input_rows": update["numInputRows"],
            }
    raise RuntimeError(
        f"batch {batch_id} ran but the query's recentProgress has no update for it (it keeps "
        f"{BASE_SETTINGS['spark.sql.streaming.numRecentProgressUpdates']}): run fewer batches"
    )


#: What a request's ``kind`` asks for.
KINDS = {"read": read, "stream": stream, "stream_value_bytes": stream_value_bytes}


def failure(exc: Exception) -> dict:
    """The answer for a request that raised: the exception's class name and message. A failed
    streaming query's message is Spark's STREAM_FAILED text followed by the query's plan, so its
    cause's class and message (and the root cause's, when another) are appended and kept within
    the length limit: they say what went wrong, and a test matches on them."""
    added = ""
    origin = getattr(exc, "_origin", None)  # the JVM exception pyspark converted (no public accessor)
    if type(exc).__name__ == "StreamingQueryException" and origin is not None:
        added = "".join(f"\ncaused by {line[:1500]}" for line in causes(origin))
    return {"ok": False, "kind": type(exc).__name__, "message": str(exc)[: 4000 - len(added)] + added}


def causes(jvm_exception) -> list[str]:
    """``class: message`` of a JVM exception's cause and of its root cause (when another)."""
    chain, cause = [], jvm_exception.getCause()
    while cause is not None and len(chain) < 20:  # the cap guards against a cyclic chain
        chain.append(cause)
        cause = cause.getCause()
    picked = chain[:1] + chain[-1:] if len(chain) > 1 else chain
    return [f"{c.getClass().getName()}: {c.getMessage()}" for c in picked]


def main(answer_fd: int, workdir: str, jars: str, settings: dict[str, str] | None = None) -> None:
    answers = os.fdopen(answer_fd, "w")
    spark = session(jars, settings)
    import pyspark

    answers.write(json.dumps({"spark": pyspark.__version__}) + "\n")
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            found = KINDS[request.get("kind", "read")](spark, request)
        except Exception as exc:  # noqa: BLE001 - whatever the request raised is the answer, sent back
            answer = failure(exc)
        else:
            fd, path = tempfile.mkstemp(dir=workdir, suffix=".pickle")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(found, handle)
            answer = {"ok": True, "path": path}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], json.loads(sys.argv[4]) if len(sys.argv) > 4 else None)
