"""A streaming ``kgroups`` query in a child process, for the crash test (tests/spark/test_stream_crash.py).

Its own ``local[2]`` Spark reads a topic from the earliest offset with ``maxOffsetsPerTrigger``
and ``commitToGroup``, into a parquet file sink, as one ``Trigger.AvailableNow`` run; prints
``{"batches": n, "rows": m, "batch_ms": [...]}`` when the run ends.

With ``--block-at P:O --marker PATH`` a ``mapInArrow`` stage between the source and the sink
watches the records go by: the task that sees offset O of partition P creates PATH and then
blocks (at most ``BLOCK_S``) so that the parent can SIGKILL the whole job in the middle of that
micro-batch. Without them the stage passes the records through, so a rerun on the same
checkpoint runs the same plan.

    python -m tests.support.stream_job <bootstrap> <topic> <group> <out> <checkpoint> <maxOffsetsPerTrigger>
        [--block-at P:O --marker PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

BLOCK_S = (
    600.0  # longer than any deadline of the test; a parent that never kills does not leave the job forever
)

CONF = {  # tests/spark/conftest.py's, with a smaller driver
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "512m",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


def blocker(partition: int | None, offset: int | None, marker: str | None):
    """The ``mapInArrow`` function: record batches through unchanged; the task that sees
    (partition, offset) creates ``marker`` and blocks there."""

    def passing(batches):
        import time

        import pyarrow.compute as pc

        for batch in batches:
            if marker is not None and len(batch):
                hit = pc.and_(
                    pc.equal(batch.column("partition"), partition), pc.equal(batch.column("offset"), offset)
                )
                if pc.any(hit).as_py():
                    with open(marker + ".tmp", "w") as handle:
                        handle.write(str(os.getpid()))
                    os.replace(marker + ".tmp", marker)  # appears whole
                    time.sleep(BLOCK_S)
                    raise RuntimeError(
                        f"blocked at {partition}:{offset} for {BLOCK_S} s and nobody killed the job"
                    )
            yield batch

    return passing


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "group", "out", "checkpoint"):
        parser.add_argument(name)
    parser.add_argument("max_offsets", type=int)
    parser.add_argument("--block-at", default=None, help="P:O")
    parser.add_argument("--marker", default=None)
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from airflow_provider_kgroups.spark.datasource import register

    builder = SparkSession.builder.master("local[2]").appName("kgroups-stream-crash")
    for key, value in CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)

    partition = offset = None
    if args.block_at is not None:
        partition, offset = map(int, args.block_at.split(":"))
    stream = (
        spark.readStream.format("kgroups")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.max_offsets))
        .option("commitToGroup", args.group)
        .load()
    )
    stream = stream.mapInArrow(blocker(partition, offset, args.marker), stream.schema)
    query = (
        stream.writeStream.format("parquet")
        .option("path", args.out)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        print(f"the query failed: {query.exception()}", file=sys.stderr)
        return 1
    progress = query.recentProgress
    summary = {
        "batches": len(progress),
        "rows": sum(p.numInputRows for p in progress),
        "batch_ms": [p.durationMs.get("triggerExecution") for p in progress],
    }
    print(json.dumps(summary))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
