"""Reading one offset range of 1,000,000 records per codec (none, lz4, zstd), side by side: the
``kgroups`` Spark data source on ``local[2]``, Spark's own Kafka source (``spark-sql-kafka-0-10``),
confluent-kafka's consumer (librdkafka: the fastest reader a Python user would pick) and
kafka-python's, each assigned the partitions and reading to the range's end; plus the landing-zone
read of the same records (JSON-lines files, Spark); and the whole topic streamed by both Spark
sources (below). Prints a table of wall and CPU seconds and records per CPU-second, and one of
each micro-batch's overhead; asserts nothing.

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

The broker is Apache Kafka itself (:data:`demo.apache_kafka.NEWEST`, the tests' release: one KRaft
node started from Maven Central's jars by ``KafkaCluster``), with the JVM's full JIT and a 1 GB heap
rather than the tests' fast-start flags (C1 only), as a production broker runs. (Until 2026-11 it
was Tansu, whose fetch path is not Kafka's: RESULTS-datasource.txt says what moved.) The topics are
written as production producers write (confluent-kafka: ``compression.type`` per topic,
``linger.ms`` 100, batches of up to 1 MiB), 4 partitions; each partition's high watermark is
checked to be exactly the records written. Every reader must deliver every record of the range (the
sum of value lengths is checked).

Streaming (the ``stream`` rows, in the 4.2.0 process): each codec's whole topic read by a
``Trigger.AvailableNow`` query with ``maxOffsetsPerTrigger`` 100,000 (``--stream-batch``: 10
micro-batches of 1,000,000 records), ``startingOffsets=earliest``, a fresh checkpoint each time, by
Spark's Kafka source and by ``kgroups`` (with ``commitToGroup``, so committing the progress group is
in its cost), into a ``foreachBatch`` that only sums ``length(value)`` (checked against the
expected total). A second table gives each micro-batch's overhead from Spark's progress updates
(``durationMs``): ``triggerExecution - addBatch`` (all but the batch's own Spark job) and the phases
apart, median over the batches; the ``tiny`` rows run 20 micro-batches of 8 records (a topic of 4
partitions x 40 records, ``maxOffsetsPerTrigger`` 8), so a batch's fixed cost shows apart from its
data, with the CPU of the whole query divided by its batches. A stream row is warmed by its
format's batch read (the same Python workers run its tasks).

Runs are interleaved (for each run: every codec, every reader) and the median of ``--runs`` is
shown. Each Spark reader reads 1,000 records a partition, untimed, right before each timed read:
Spark ends a Python worker idle for a minute, and a round of the other readers takes longer, so
without it a reader would pay new Python workers (their imports) or not depending on its place
in the order.

CPU seconds: the benchmark process's own (``time.process_time``: every thread, librdkafka's
included) plus, for the Spark readers, every process under it (the JVMs, shown apart, the Python
workers, those that exited meanwhile included: sampled from /proc, :class:`TreeCpu`; never the
broker's JVM, which serves every reader alike). The three
"kgroups reader" rows run what each executor task runs, in this process without Spark, stopping
after fetching, after decompressing, and after decoding into Arrow columns: where the time goes.
The "Spark floor" row (benchmarks/spark_floor.py) reads the same rows through a Python data source
of the same schema and splits whose ``read()`` yields ready Arrow batches: what Spark's side costs
any reader on the executors (this one, or librdkafka wrapped the same way); the line under the
table gives the part of it every query pays whatever it reads (the floor on 1,000 records a split).

    python benchmarks/bench_datasource.py                  # 1,000,000 records a codec, 3 runs
    python benchmarks/bench_datasource.py --records 200000 --runs 5 --codecs none,lz4
    python benchmarks/bench_datasource.py --values letters --skip "Spark 4.2.0"  # the earlier table
    python benchmarks/bench_datasource.py --only stream --runs 5       # the streaming rows only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    """Write ``per_partition`` records to each partition as production producers write; answers
    the high watermarks, checked to be exactly that (record ``i`` of a partition must hold
    ``values[i % len]``, which :func:`value_bytes` counts on)."""
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
        for i in range(per_partition):
            producer.produce(topic, key=b"k%d" % (i % 100), value=values[i % len(values)], partition=p)
            if i % 100_000 == 0:
                producer.poll(0)
    if producer.flush(120):
        raise SystemExit(f"{topic}: records still unsent after 120 s")
    ends = high_watermarks(bootstrap, topic, partitions)
    if set(ends.values()) != {per_partition}:
        raise SystemExit(f"{topic}: high watermarks {ends}, expected {per_partition} a partition")
    return ends


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's end offset as the broker reports it (a retried produce could add one)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-seed", "log_level": 3})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


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
#: Spark's phases of a micro-batch shown in the overhead table (progress ``durationMs``).
PHASES = (
    "latestOffset",
    "queryPlanning",
    "getBatch",
    "walCommit",
    "commitOffsets",
    "addBatch",
    "triggerExecution",
)
TINY_PER_PARTITION, TINY_BATCH = 40, 8  # 4 partitions: 2 offsets a partition a batch, 20 batches


def kafka_options(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[str, str]:
    """The range as options of Spark's Kafka source (which the ``kgroups`` source takes too)."""
    return {
        "kafka.bootstrap.servers": bootstrap,
        "assign": json.dumps({topic: sorted(ends)}),
        **gate(topic, ends),
    }


def stream_options(bootstrap: str, topic: str, max_offsets: int, group: str | None) -> dict[str, str]:
    """A whole topic as an AvailableNow job reads it: from the earliest offsets, ``max_offsets`` a
    micro-batch; ``group`` (kgroups only) is the progress group committed after each batch."""
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": str(max_offsets),
    }
    return options if group is None else {**options, "commitToGroup": group}


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
    with SparkOracle(folder, settings=settings, read_timeout=900) as other:
        yield other


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
SIGCHLD_BIT = 1 << 16  # SIGCHLD (17) in /proc/<pid>/status's signal masks


@dataclass(frozen=True)
class Proc:
    """One process as /proc/<pid>/stat shows it; CPU in seconds: ``own`` (its threads) and
    ``reaped`` (the children it has waited for)."""

    ppid: int
    name: str
    own: float
    reaped: float
    started: int  # in clock ticks since boot: with the pid, a key no reused pid shares


def process_table() -> dict[int, Proc]:
    """Every process now. Read directly (one small file a process, ~1 ms for a hundred), as
    psutil's ``children()`` takes ~12 ms, too much to sample often."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                text = handle.read()
        except OSError:  # it exited meanwhile
            continue
        head, _, rest = text.rpartition(b")")
        f = rest.split()  # f[0] is field 3 (state): utime, stime, cutime, cstime are f[11:15]
        table[int(entry)] = Proc(
            ppid=int(f[1]),
            name=head.partition(b"(")[2].decode(errors="replace"),
            own=(int(f[11]) + int(f[12])) / CLOCK_TICKS,
            reaped=(int(f[13]) + int(f[14])) / CLOCK_TICKS,
            started=int(f[19]),
        )
    return table


def descendants(table: dict[int, Proc], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, proc in table.items():
        children.setdefault(proc.ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def waits_for_children(pid: int) -> bool:
    """Whether ``pid`` reaps its children itself, so their CPU joins its children times; a process
    that ignores SIGCHLD (pyspark's daemon) has the kernel reap them, and their CPU goes nowhere."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            ignored = next(line for line in handle if line.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return False
    return not int(ignored.split()[1], 16) & SIGCHLD_BIT


class TreeCpu:
    """CPU seconds spent during a ``with`` block by this process and, with ``tree``, by every
    process under it (Spark's JVMs, their Python processes, their short-lived commands), as
    ``spent``: ``jvm`` (the JVMs and what they reaped) and ``python`` (the rest). The broker
    (``broker``: its pids) is never counted: it serves every reader alike.

    Two snapshots of each process's own and children times would not do: pyspark's daemon
    ignores SIGCHLD, so its workers are reaped by the kernel and their CPU joins no one's children
    times; a worker that exited during a read took its whole life's CPU out of such a sum (a read
    came out at -0.36 CPU s), one born and gone within it did not count at all. So the processes
    are sampled every ``interval`` seconds: each counts from the block's start (or its birth) to
    its last sample, own and reaped; one that exits into a parent that waits for it (a JVM
    reaping a streaming source's runner) is taken out of that parent's children times instead
    of counted twice. Missed: the last ``interval`` of a worker the daemon lets the kernel reap,
    and such workers shorter than that. The sampling thread's own CPU is left out."""

    def __init__(self, tree: bool, broker: frozenset[int] = frozenset(), interval: float = 0.1) -> None:
        self.tree, self.broker, self.interval = tree, broker, interval
        self.first: dict[tuple[int, int], float] = {}  # own + reaped at the block's start
        self.last: dict[tuple[int, int], Proc] = {}
        self.reaped_by: dict[tuple[int, int], tuple[int, int] | None] = {}  # a parent that waits
        self.spent: dict[str, float] = {}
        self._sampler_cpu = 0.0

    def __enter__(self) -> TreeCpu:
        import threading

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)
        if self.tree:
            self._sample(first=True)
            self._thread.start()
        self._self_start = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        own = time.process_time() - self._self_start
        self.spent = {"python": own, "jvm": 0.0}
        if self.tree:
            self._stop.set()
            self._thread.join()
            live = self._sample()
            self.spent["python"] -= self._sampler_cpu
            self._add_up(live)

    def _add_up(self, live: set[tuple[int, int]]) -> None:
        for key, proc in self.last.items():
            total = proc.own + proc.reaped
            self.spent[kind(proc)] += total - self.first.get(key, 0.0)
            parent = self.reaped_by.get(key)
            if key not in live and parent in live:  # its CPU is in the parent's children times too
                self.spent[kind(self.last[parent])] -= total

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
        self._sampler_cpu = time.thread_time()

    def _sample(self, *, first: bool = False) -> set[tuple[int, int]]:
        table = process_table()
        seen = set()
        for pid in descendants(table, os.getpid()):
            if pid in self.broker:
                continue
            proc = table[pid]
            key = (pid, proc.started)
            if key not in self.reaped_by:
                parent = table.get(proc.ppid)
                waits = parent is not None and proc.ppid != os.getpid() and waits_for_children(proc.ppid)
                self.reaped_by[key] = (proc.ppid, parent.started) if waits and parent else None
            self.last[key] = proc
            seen.add(key)
            if first:
                self.first[key] = proc.own + proc.reaped
        return seen


def kind(proc: Proc) -> str:
    return "jvm" if "java" in proc.name else "python"


@dataclass
class Reader:
    """One row of the table: ``read(codec, ends)`` answers what it delivered, which must be
    ``must``. ``warm(codec)``, for a Spark reader, runs untimed right before each timed read
    (Python workers kept alive); a Spark reader's CPU is its process tree's."""

    read: Callable[[str, dict[int, int]], int]
    must: int
    warm: Callable[[str], object] | None = None


@dataclass
class Streams:
    """The streaming readers' runs: a fresh checkpoint (and progress group) for every query, each
    query's micro-batches kept by (codec or ``tiny``, reader) for the overhead table."""

    other: Any  # the SparkOracle (demo.spark_oracle: imported only when the 4.2.0 process runs)
    bootstrap: str
    root: Path
    batches: dict[tuple[str, str], list] = field(default_factory=dict)
    queries: int = 0

    def run(self, name: str, fmt: str, topic: str, max_offsets: int, label: str) -> int:
        self.queries += 1
        group = f"bench-stream-{self.queries}" if fmt == "kgroups" else None
        cost = self.other.stream_value_bytes(
            fmt,
            stream_options(self.bootstrap, topic, max_offsets, group),
            checkpoint=self.root / f"{fmt}-{self.queries}",
            timeout=900,
        )
        self.batches.setdefault((label, name), []).extend(cost.batches)
        return cost.value_bytes


def own_spark_readers(
    other, streams: Streams, bootstrap: str, expected: int, warm: dict, stream_batch: int
) -> dict[str, Reader]:
    """The 4.2.0 process's rows: both sources' batch reads of the range, and their AvailableNow
    streams over the whole topic (``stream_batch`` offsets a micro-batch), each warmed by its
    format's batch read of the warm-up range (the same Python workers run a stream's tasks)."""

    def batch(fmt: str) -> Callable[[str, dict[int, int]], int]:
        return lambda c, e: other.value_bytes(fmt, kafka_options(bootstrap, f"bench-{c}", e))

    def stream(fmt: str, name: str) -> Callable[[str, dict[int, int]], int]:
        return lambda c, e: streams.run(name, fmt, f"bench-{c}", stream_batch, c)

    readers = {}
    for fmt, source in (("kafka", "Spark's Kafka source"), ("kgroups", "kgroups source")):
        warmed = batch(fmt)
        readers[f"{OWN_SPARK}: {source}"] = Reader(batch(fmt), expected, lambda c, r=warmed: r(c, warm[c]))
        name = f"{OWN_SPARK}: {source}, stream"
        readers[name] = Reader(stream(fmt, name), expected, lambda c, r=warmed: r(c, warm[c]))
    return readers


def stream_format(name: str) -> str:
    """The format a stream row reads (its name says the source)."""
    return "kgroups" if "kgroups" in name else "kafka"


def tiny_stream(
    streams: Streams, reader: Reader, name: str, codec: str, broker: frozenset[int], must: int
) -> float:
    """One AvailableNow query of the reader's format over the tiny topic (20 micro-batches of
    :data:`TINY_BATCH` records), warmed (on ``codec``'s topic) as before a timed read; answers its
    CPU seconds a batch."""
    assert reader.warm is not None
    reader.warm(codec)
    before = len(streams.batches.get(("tiny", name), []))
    with TreeCpu(True, broker) as meter:
        got = streams.run(name, stream_format(name), "bench-tiny", TINY_BATCH, "tiny")
    spent = sum(meter.spent.values())
    if got != must:
        raise SystemExit(f"{name} on the tiny topic read {got}, expected {must}")
    return spent / (len(streams.batches[("tiny", name)]) - before)


def print_table(records: int, args, value_size: float, wall: dict, cpu: dict, fixed: list) -> None:
    """The main table: each reader's wall and CPU seconds and records per (CPU-)second."""
    load = os.getloadavg()
    print(
        f"\nreading {records:,} records ({args.values} values of {value_size:.0f} bytes on average) a codec, "
        f"median of {args.runs} interleaved "
        f"runs; load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores)"
    )
    print(
        f"{'codec':6} {'reader':50} {'wall s':>7} {'CPU s':>7} {'(JVM)':>7} {'records/s':>11} "
        f"{'records/CPU-s':>14}  CPU s of each run"
    )
    for (codec, name), walls in wall.items():
        w = statistics.median(walls)
        each = [sum(run.values()) for run in cpu[(codec, name)]]
        c = statistics.median(each)
        jvm = statistics.median(run["jvm"] for run in cpu[(codec, name)])
        print(
            f"{codec:6} {name:50} {w:>7.2f} {c:>7.2f} {f'{jvm:.2f}' if jvm else '':>7} {records / w:>11,.0f} "
            f"{records / c:>14,.0f}  {' '.join(f'{x:.2f}' for x in each)}"
        )
    if fixed:
        print(
            f"a query's fixed cost (the Spark floor on {args.partitions} splits of 1,000 records): "
            f"{statistics.median(sum(run.values()) for run in fixed):.2f} CPU s "
            f"(JVM {statistics.median(run['jvm'] for run in fixed):.2f})"
        )


def overhead_ms(batches: list) -> dict[str, float]:
    """Medians over ``batches`` (StreamBatchCost) of each phase, and of ``triggerExecution -
    addBatch``: what a micro-batch costs besides its own Spark job."""
    out = {
        "trigger-add": statistics.median(
            b.durations.get("triggerExecution", 0) - b.durations.get("addBatch", 0) for b in batches
        )
    }
    for phase in PHASES:
        out[phase] = statistics.median(b.durations.get(phase, 0) for b in batches)
    return out


def print_overhead(streams: Streams, tiny_cpu: dict[str, list[float]], runs: int) -> None:
    """The per-micro-batch overhead table (module docstring)."""
    short = {"latestOffset": "latest", "queryPlanning": "planning", "commitOffsets": "commitOff"}
    heads = ["trig-add", *(short.get(p, p) for p in PHASES)]
    print(
        f"\nper micro-batch, ms (Spark's progress durationMs; median over every batch of {runs} run(s)); "
        "trig-add = triggerExecution - addBatch"
    )
    print(
        f"{'range':6} {'reader':50} {'batches':>7} {'rows/batch':>10} " + " ".join(f"{h:>9}" for h in heads)
    )
    for (label, name), batches in streams.batches.items():
        ms = overhead_ms(batches)
        rows = statistics.median(b.input_rows for b in batches)
        cells = [ms["trigger-add"], *(ms[p] for p in PHASES)]
        print(
            f"{label:6} {name:50} {len(batches) // runs:>7} {rows:>10,.0f} "
            + " ".join(f"{c:>9.0f}" for c in cells)
        )
    for name, per_batch in tiny_cpu.items():
        print(
            f"tiny   {name}: {statistics.median(per_batch):.3f} CPU s a micro-batch "
            "(the whole query's CPU over its batches: its start included)"
        )


def chosen(name: str, skipped: list[str], only: list[str]) -> bool:
    """Whether a reader runs: no ``--skip`` part in its name, and an ``--only`` part if any given."""
    return not any(s in name for s in skipped) and (not only or any(s in name for s in only))


def local_readers(
    spark, bootstrap: str, landing_root: str, warm: dict, expected: int, records: int, floor: tuple
) -> dict[str, Reader]:
    """The rows read in this process (and its local[2] Spark), by name; ``floor`` is the Spark
    floor's (rows a batch, value)."""
    from benchmarks.spark_floor import read_floor

    def reader(read: Callable[[str, dict[int, int]], int], must: int, spark_reader: bool) -> Reader:
        return Reader(read, must, (lambda c: read(c, warm[c])) if spark_reader else None)

    def stage(name: str) -> Callable[[str, dict[int, int]], int]:
        return lambda c, e: read_kgroups_no_spark(bootstrap, f"bench-{c}", e, name)

    rows_per_batch, value = floor
    return {
        "kgroups source, local[2]": reader(
            lambda c, e: read_kgroups(spark, bootstrap, f"bench-{c}", e), expected, True
        ),
        "kgroups reader, fetch only": reader(stage("fetch"), records, False),
        "kgroups reader, + decompress": reader(stage("decompress"), records, False),
        "kgroups reader, + Arrow columns": reader(stage("arrow"), expected, False),
        "confluent-kafka consumer": reader(
            lambda c, e: read_confluent(bootstrap, f"bench-{c}", e), expected, False
        ),
        "kafka-python consumer": reader(
            lambda c, e: read_kafka_python(bootstrap, f"bench-{c}", e), expected, False
        ),
        "landing zone (jsonl), local[2]": reader(
            lambda c, e: read_landing(spark, landing_root, f"bench-{c}", e), expected, True
        ),
        "Spark floor (ready Arrow), local[2]": reader(
            lambda c, e: read_floor(spark, e, rows_per_batch, value), records * len(value), True
        ),
    }


def timed_read(reader: Reader, codec: str, ends: dict[int, int], broker: frozenset[int]) -> tuple[dict, int]:
    """One timed read: its wall and CPU seconds (``wall``, ``python``, ``jvm``) and what it read.

    A Spark reader is first warmed, untimed, on as many rows a partition as the warm-up: Spark
    ends a Python worker idle for a minute (PythonWorkerFactory's IDLE_WORKER_TIMEOUT_NS, not a
    setting), and a round of the other readers takes longer, so a Spark reader would otherwise
    pay new workers' imports, in one Spark and not the other, depending on the order of the
    readers."""
    if reader.warm is not None:
        reader.warm(codec)
    with TreeCpu(reader.warm is not None, broker) as meter:
        t0 = time.perf_counter()
        got = reader.read(codec, ends)
        wall = time.perf_counter() - t0
    return {"wall": wall, **meter.spent}, got


def seed_topics(
    bootstrap: str, codecs: list[str], partitions: int, per_partition: int, values: list[bytes]
) -> tuple[dict[str, dict[int, int]], dict[int, int]]:
    """Each codec's topic (``bench-<codec>``) and the tiny one (``bench-tiny``, the first codec's):
    their high watermarks."""
    ends = {
        codec: produce(bootstrap, f"bench-{codec}", codec, partitions, per_partition, values)
        for codec in codecs
    }
    return ends, produce(bootstrap, "bench-tiny", codecs[0], partitions, TINY_PER_PARTITION, values)


def fixed_query_cost(spark, partitions: list[int], floor: tuple, broker: frozenset[int]) -> dict[str, float]:
    """What a query costs whatever it reads: the Spark floor on 1,000 records a split, its
    Python workers warmed by the same read first."""
    from benchmarks.spark_floor import read_floor

    rows_per_batch, value = floor
    read_floor(spark, dict.fromkeys(partitions, 1000), rows_per_batch, value)
    with TreeCpu(True, broker) as meter:
        read_floor(spark, dict.fromkeys(partitions, 1000), rows_per_batch, value)
    return meter.spent


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
    parser.add_argument("--only", default="", help="the readers to keep (a part of their names), e.g. stream")
    parser.add_argument(
        "--floor-batch",
        type=int,
        default=BATCH_ROWS,
        help="rows in each Arrow batch the Spark floor yields (default: the source's bound)",
    )
    parser.add_argument(
        "--stream-batch", type=int, default=100_000, help="maxOffsetsPerTrigger of the stream rows"
    )
    args = parser.parse_args()

    from airflow_provider_kgroups.spark.session import spark_session
    from demo.apache_kafka import NEWEST, KafkaCluster

    values = make_values(args.values)
    codecs = args.codecs.split(",")
    per_partition = args.records // args.partitions
    with (
        tempfile.TemporaryDirectory() as tmp,
        KafkaCluster(
            version=NEWEST,
            nodes=1,
            heap="1g",
            jvm_flags=("-XX:TieredStopAtLevel=4",),  # the full JIT: the later flag wins over C1 only
            workdir=Path(tmp) / "kafka",
        ) as cluster,
    ):
        bootstrap = cluster.bootstrap
        broker_pids = frozenset(n.process.popen.pid for n in cluster.node_list if n.process.popen)
        started = time.perf_counter()
        ends, tiny_ends = seed_topics(bootstrap, codecs, args.partitions, per_partition, values)
        records = sum(ends[codecs[0]].values())
        expected = value_bytes(values, ends[codecs[0]])
        value_size = expected / records
        floor_value = b"x" * round(value_size)  # the floor's rows: values of the same mean size
        floor = (args.floor_batch, floor_value)
        landing_root = os.path.join(tmp, "landing")
        land(landing_root, f"bench-{codecs[0]}", ends[codecs[0]], values)
        print(
            f"seeded {records:,} records ({expected / 1e6:.0f} MB of values) a codec ({', '.join(codecs)}) over "
            f"{args.partitions} partitions on Apache Kafka {NEWEST} in {time.perf_counter() - started:.1f} s; "
            "landing files written"
        )
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        conf = {  # both Sparks: the JVM's own JIT and GC, as a job runs
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "2g",
            "spark.ui.showConsoleProgress": "false",
        }
        skipped = [s for s in args.skip.split(",") if s]
        only = [s for s in args.only.split(",") if s]
        with (
            spark_session("bench-datasource", master="local[2]", conf=conf) as spark,
            own_spark(tmp, skipped, conf) as other,
        ):
            spark.sparkContext.setLogLevel("ERROR")
            warm = {codec: {p: min(e, 1000) for p, e in ends[codec].items()} for codec in codecs}

            readers = local_readers(spark, bootstrap, landing_root, warm, expected, records, floor)
            streams = None
            if other is not None:
                streams = Streams(other, bootstrap, Path(tmp) / "checkpoints")
                readers.update(
                    own_spark_readers(other, streams, bootstrap, expected, warm, args.stream_batch)
                )
            readers = {name: r for name, r in readers.items() if chosen(name, skipped, only)}
            stream_names = [name for name in readers if name.endswith(", stream")]
            for codec in codecs:  # this process: each codec's first import
                read_kgroups_no_spark(bootstrap, f"bench-{codec}", warm[codec], "arrow")
            wall: dict[tuple[str, str], list[float]] = {}
            cpu: dict[tuple[str, str], list[dict[str, float]]] = {}
            fixed: list[dict[str, float]] = []
            tiny_cpu: dict[str, list[float]] = {}
            tiny_must = value_bytes(values, tiny_ends)

            for _ in range(args.runs):
                for codec in codecs:
                    for name, reader in readers.items():
                        if name.startswith("landing") and codec != codecs[0]:
                            continue  # files carry no codec: read once
                        spent, got = timed_read(reader, codec, ends[codec], broker_pids)
                        wall.setdefault((codec, name), []).append(spent["wall"])
                        cpu.setdefault((codec, name), []).append({k: spent[k] for k in ("python", "jvm")})
                        if got != reader.must:
                            raise SystemExit(f"{name} on {codec} read {got}, expected {reader.must}")
                for name in stream_names:  # a micro-batch's fixed cost, apart from its data
                    per_batch = tiny_stream(streams, readers[name], name, codecs[0], broker_pids, tiny_must)
                    tiny_cpu.setdefault(name, []).append(per_batch)
                fixed.append(fixed_query_cost(spark, list(ends[codecs[0]]), floor, broker_pids))
    print_table(records, args, value_size, wall, cpu, fixed)
    if streams is not None and streams.batches:
        print_overhead(streams, tiny_cpu, args.runs)


if __name__ == "__main__":
    main()
