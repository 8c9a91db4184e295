"""The data world of the flagship DAG, for the demo and the end-to-end tests: a producer of
order records that remembers exactly what it wrote, and a landing consumer (a real Kafka
consumer group) that writes landing files keyed by topic, partition and offset and commits.

    with OrderProducer(bootstrap, "orders", partitions=3, rate_per_s=40) as producer, \\
            LandingConsumer(bootstrap, "orders-landing", ["orders"], "/data/landing") as landing:
        producer.produce(600)               # a backlog, synchronously
        producer.start()                    # then 40 records/s in a thread until stop()
        landing.start()                     # joins (~3 s on Tansu), lands, commits
        landing.wait_committed({("orders", 0): 100})

Both use kafka-python, never this project's client, so the provider is checked against data
it did not write. Tansu 0.6.0 quirks handled here (see demo/seed.py):

* one record per produce batch (``linger_ms=0``, waiting for each send): ListOffsets(latest)
  is exact only then, and the barrier is a ListOffsets(latest). Each batch is lz4-compressed, as
  production producers commonly write (kafka-python's codec needs the ``lz4`` package, in the
  ``bench`` dependency group; the gate's lag in seconds reads the batches with cramjam);
* one topic per long-lived producer (a kafka-python 3.0.12 producer that writes a second
  topic can spin on metadata);
* ``session_timeout_ms=6000`` for the consumer: Tansu holds the first JoinGroup for half of it.

Record ``n`` (0, 1, 2, ... in production order) goes to partition ``n % partitions`` with key
``sku-<n % 5>`` and value ``{"order": n, "sku": key, "qty": 1 + 7n % 10}`` (JSON).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import OffsetAndMetadata, TopicPartition

from airflow_provider_kgroups.landing import write_file
from demo.seed import DEFAULT_TIMEOUT, TP
from demo.seed import tp as as_tp
from demo.worker import ConsumerWorker, Worker

__all__ = ["KEYS", "Produced", "OrderProducer", "LandingConsumer", "LandingError", "expected_totals"]

KEYS = tuple(f"sku-{i}" for i in range(5))


class LandingError(RuntimeError):
    """A producer or landing consumer failed, or a wait passed its deadline."""


@dataclass(frozen=True, slots=True)
class Produced:
    """One record as the broker acknowledged it."""

    topic: str
    partition: int
    offset: int
    key: str
    qty: int
    order: int
    timestamp_ms: int = -1  # the record's CreateTime as the broker stored it


def order_record(n: int) -> tuple[str, int]:
    return KEYS[n % len(KEYS)], 1 + (7 * n) % 10


def expected_totals(
    records: Iterable[Produced], ranges: Mapping[tuple[str, int], tuple[int | None, int]]
) -> dict[str, tuple[int, int]]:
    """``{key: (records, qty)}`` over the records with ``start <= offset < end`` of their
    partition's range (start None: from the first)."""
    out: dict[str, list[int]] = {}
    for r in records:
        bounds = ranges.get((r.topic, r.partition))
        if bounds is None:
            continue
        start, end = bounds
        if (start is None or r.offset >= start) and r.offset < end:
            totals = out.setdefault(r.key, [0, 0])
            totals[0] += 1
            totals[1] += r.qty
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


class OrderProducer(Worker):
    """Produces order records one per batch and keeps the acknowledged ones (``records``).
    :meth:`produce` writes synchronously; :meth:`start` writes ``rate_per_s`` records per second
    in a thread until :meth:`stop`."""

    error_cls = LandingError

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        *,
        rate_per_s: float = 50.0,
        client_id: str = "orders-producer",
        timeout: float = 30.0,
    ) -> None:
        super().__init__(f"producer of {topic!r}")
        self.topic = topic
        self.partitions = partitions
        self.rate_per_s = rate_per_s
        self.timeout = timeout
        self.records: list[Produced] = []
        self._lock = threading.Lock()  # one send at a time: sequence numbers follow offsets
        self._producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            client_id=client_id,
            acks=1,
            retries=0,
            linger_ms=0,
            max_in_flight_requests_per_connection=1,
            compression_type="lz4",
            request_timeout_ms=int(timeout * 1000),
        )

    def __enter__(self) -> OrderProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def produce(self, count: int, timestamps_ms: Sequence[int] | None = None) -> list[Produced]:
        """Write ``count`` records; ``timestamps_ms`` gives each its CreateTime (else now)."""
        if timestamps_ms is not None and len(timestamps_ms) != count:
            raise ValueError(f"{len(timestamps_ms)} timestamps for {count} records")
        out = []
        for i in range(count):
            with self._lock:
                n = len(self.records)
                key, qty = order_record(n)
                value = json.dumps({"order": n, "sku": key, "qty": qty}).encode()
                future = self._producer.send(
                    self.topic,
                    key=key.encode(),
                    value=value,
                    partition=n % self.partitions,
                    timestamp_ms=None if timestamps_ms is None else timestamps_ms[i],
                )
                self._producer.flush(timeout=self.timeout)
                meta = future.get(timeout=self.timeout)
                record = Produced(self.topic, meta.partition, meta.offset, key, qty, n, meta.timestamp)
                with self._cond:
                    self.records.append(record)
                    self._cond.notify_all()
            out.append(record)
        return out

    def start(self) -> OrderProducer:
        self._start_thread(self._run)
        return self

    def _run(self) -> None:
        interval = 1.0 / self.rate_per_s
        next_at = time.monotonic()
        try:
            while not self._stop.is_set():
                self.produce(1)
                next_at += interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))
        except BaseException as exc:  # noqa: BLE001 - any failure, Ctrl-C included, is surfaced to the waiters
            self._fail(exc)
        finally:
            with self._cond:
                self.closed = True
                self._cond.notify_all()

    def end_offsets(self) -> dict[int, int]:
        """Per partition, the offset after the last acknowledged record."""
        with self._cond:
            ends: dict[int, int] = {}
            for r in self.records:
                ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
            return ends

    def snapshot(self) -> list[Produced]:
        with self._cond:
            return list(self.records)

    def wait_past(self, offsets: Mapping[int, int], timeout: float = 30.0) -> dict[int, int]:
        """Wait until every partition in ``offsets`` has records at or beyond that offset."""

        def past(me: OrderProducer):
            ends: dict[int, int] = {}
            for r in me.records:
                ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
            return ends if all(ends.get(p, 0) > o for p, o in offsets.items()) else None

        return self.wait_for(past, timeout, f"records past {dict(offsets)}")

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self._producer.close(timeout=self.timeout)


class LandingConsumer(ConsumerWorker):
    """A consumer group member that lands what it reads, as a Kafka Connect sink would: records
    are buffered per partition and flushed as one landing file (positions ``[before, after)``,
    :func:`airflow_provider_kgroups.landing.write_file`) once ``flush_records`` are buffered or
    the oldest has waited ``flush_interval_s``; then one synchronous commit of ``after`` for every
    partition flushed. A commit never runs ahead of the files.

    ``max_records_per_s`` makes it slow on purpose (behind and catching up); :meth:`pause`
    stops fetching while the member stays in the group (buffered records are still flushed).
    ``hold_at`` ({(topic, partition): offset}) makes it land and commit nothing at or past those
    offsets until :meth:`release` (the records past them are read again after it), so a reader
    started later still meets it behind; once every held partition is at its hold it stops polling
    (kafka-python's thread keeps heartbeating: keep ``max_poll_interval_ms`` above the hold's
    length, or the member leaves the group). The thread, the waits, pause and resume:
    demo.worker.ConsumerWorker. State (read under the condition), besides ConsumerWorker's:
    ``files`` (paths written), ``landed`` (records), ``holding`` (a hold not yet released)."""

    error_cls = LandingError

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        topics: Iterable[str],
        root: str,
        *,
        fmt: str = "jsonl",
        max_poll_records: int = 500,
        max_records_per_s: float | None = None,
        flush_records: int = 200,
        flush_interval_s: float = 0.5,
        client_id: str | None = None,
        hold_at: Mapping[TP, int] | None = None,
        **consumer_config,
    ) -> None:
        super().__init__(
            f"landing consumer {group_id!r}",
            bootstrap,
            group_id,
            topics,
            client_id=client_id or group_id,
            fetch_max_wait_ms=100,
            **consumer_config,
        )
        self.root = root
        self.fmt = fmt
        self.max_poll_records = max_poll_records
        self.max_records_per_s = max_records_per_s
        self.flush_records = flush_records
        self.flush_interval_s = flush_interval_s
        self._buffers: dict[TopicPartition, tuple[float, list]] = {}  # tp -> (first buffered at, records)
        self._next: dict[TopicPartition, int] = {}  # position after the last landed batch
        self.files: list[str] = []
        self.landed = 0
        self._hold = {as_tp(k): v for k, v in (hold_at or {}).items()}  # the worker's, until released
        self._at_hold: set[TopicPartition] = set()  # held partitions whose position is at the hold
        self._release_asked = False
        self.holding = bool(self._hold)

    def __enter__(self) -> LandingConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def release(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """End the hold (``hold_at``); returns once the worker polls past it."""
        with self._cond:
            self._release_asked = True
            self._cond.notify_all()
        self.wait_for(lambda s: not s.holding, timeout, "the hold to be released")

    def _below_hold(self, consumer: KafkaConsumer, part: TopicPartition, records: list) -> list:
        """The records below the partition's hold; the position goes back to the hold (what is past
        it is read again after :meth:`release`)."""
        limit = self._hold.get(part)
        if limit is None or records[-1].offset < limit:
            return records
        consumer.seek(part, max(limit, records[0].offset))
        self._at_hold.add(part)
        return [r for r in records if r.offset < limit]

    def _holding_still(self, consumer: KafkaConsumer) -> bool:
        """True while the hold is on and every held partition assigned here is at it: then this round
        does not poll but lands what is due and waits for :meth:`release` or :meth:`stop`. Pausing
        the partitions instead is not safe: kafka-python 3.0.12 can park a paused partition's
        fetched records and never fetch it again after resume."""
        with self._cond:
            if self._release_asked and self._hold:
                self._hold, self._at_hold = {}, set()
                self.holding = False
            if not self._hold:
                return False
        assignment = consumer.assignment()
        self._at_hold &= assignment  # a partition assigned anew starts from its commit
        held = set(self._hold) & assignment
        if not held or not held <= self._at_hold:
            return False
        self._flush(consumer)
        with self._cond:
            if not (self._release_asked or self._stop.is_set()):
                self._cond.wait(0.1)  # the flush interval's pace; release() and stop() wake it at once
        return True

    def _land(self, tp: TopicPartition, records: list) -> int:
        first = records[0].offset
        before = self._next.get(tp)
        start = first if before is None or first < before else before
        end = records[-1].offset + 1
        rows = [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "offset": r.offset,
                "timestamp_ms": r.timestamp,
                "key": r.key.decode() if r.key is not None else None,
                "value": r.value.decode() if r.value is not None else None,
            }
            for r in records
        ]
        path = write_file(self.root, tp.topic, tp.partition, start, end, rows, fmt=self.fmt)
        self._next[tp] = end
        with self._cond:
            self.files.append(path)
        return end

    def _flush(self, consumer, *, force: bool = False) -> int:
        """Land the buffers that are due (all with ``force``), then commit them; returns records."""
        now = time.monotonic()
        due = {
            tp: records
            for tp, (since, records) in self._buffers.items()
            if force or len(records) >= self.flush_records or now - since >= self.flush_interval_s
        }
        if not due:
            return 0
        to_commit = {
            tp: OffsetAndMetadata(self._land(tp, records), "", -1) for tp, records in sorted(due.items())
        }
        consumer.commit(to_commit)  # only after every file is written
        for tp in due:
            del self._buffers[tp]
        with self._cond:
            for tp, oam in to_commit.items():
                self.committed[tp] = oam.offset
            self.landed += sum(len(r) for r in due.values())
            self._cond.notify_all()
        return sum(len(r) for r in due.values())

    def _step(self, consumer: KafkaConsumer) -> int:
        if self._holding_still(consumer):
            return 0
        batches = consumer.poll(timeout_ms=100, max_records=self.max_poll_records)
        assignment = consumer.assignment()
        for tp in [tp for tp in self._buffers if tp not in assignment]:  # revoked: not ours to land
            del self._buffers[tp]
            self._next.pop(tp, None)
        count = 0
        for tp, records in batches.items():
            records = self._below_hold(consumer, tp, records) if records else records
            if records:
                count += len(records)
                self._buffers.setdefault(tp, (time.monotonic(), []))[1].extend(records)
        self._flush(consumer)
        return count

    def _pace(self, count: int) -> None:
        if count and self.max_records_per_s:
            self._stop.wait(count / self.max_records_per_s)

    def _finish(self, consumer: KafkaConsumer) -> None:
        self._flush(consumer, force=True)  # a clean stop lands and commits what it holds
