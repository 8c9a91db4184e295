"""The worker of :class:`demo.spark_oracle.SparkOracle` (run as a module, with the
oracle's pyspark first on PYTHONPATH): one Spark session with Spark's Kafka source (``spark.jars``)
and the ``kgroups`` source; reads one JSON request a line from stdin, answers one JSON line on the
file descriptor it was given (Spark's JVM shares stdout and stderr, so they only log).

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
}
#: The tests' default: a small heap and C1 only, for a JVM that starts in seconds less.
STARTUP_TUNED = {
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


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


def read(spark, request: dict) -> dict:
    df = spark.read.format(request["format"]).options(**request["options"]).load()
    if request.get("value_bytes"):  # a benchmark's read: every record delivered, only a sum comes back
        return {"value_bytes": df.selectExpr("sum(length(value)) AS n").collect()[0]["n"]}
    columns = COLUMNS + (("headers",) if "headers" in df.columns else ())
    rows = []
    for row in df.selectExpr(*columns).collect():
        values = list(row)
        if "headers" in df.columns:
            values[-1] = None if row.headers is None else [(h.key, h.value) for h in row.headers]
        rows.append(tuple(values))
    rows.sort(key=lambda r: (r[2], r[3], r[4]))
    return {
        "schema": df.schema.simpleString(),
        "rows": rows,
        "partitions": df.rdd.getNumPartitions() if request.get("partitions") else None,
    }


def main(answer_fd: int, workdir: str, jars: str, settings: dict[str, str] | None = None) -> None:
    answers = os.fdopen(answer_fd, "w")
    spark = session(jars, settings)
    import pyspark

    answers.write(json.dumps({"spark": pyspark.__version__}) + "\n")
    answers.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            found = read(spark, request)
        except Exception as exc:  # noqa: BLE001 - whatever the read raised is the answer, sent back
            answer = {"ok": False, "kind": type(exc).__name__, "message": str(exc)[:4000]}
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
