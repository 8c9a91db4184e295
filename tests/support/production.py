"""Seed a real broker the way production producers write, with librdkafka (confluent-kafka), and
remember exactly what landed where.

What production clients send (shared/notes/production-records.md; librdkafka's CONFIGURATION.md):
``compression.type`` per topic here (none, gzip, snappy, lz4, zstd), ``linger.ms`` so that many
records share a batch, an idempotent producer (producer id, epoch and sequence in every batch)
and a transactional one (control batches for COMMIT/ABORT markers; the aborted records stay in
the log). Records carry headers with duplicate keys and null values, null and empty keys and
values, and one value of a full MiB.

The layout of every partition :func:`seed_partition` writes, in this order (offsets follow from
the deliveries; markers take one offset each):

    1 record alone | a batch of ``big_batch`` records | 20 records with headers and null/empty
    keys and values | a 1 MiB record | 50 from an idempotent producer | a committed transaction
    of 30 | an aborted transaction of 20 | a committed transaction of 10 | 1 record alone

The partition ends in a single-record batch: Tansu 0.6.0 answers ListOffsets(latest) with the
last batch's base offset + 1 (shared/notes/real-broker.md), exact only after a batch of one.

Timestamps are set by the producer (CreateTime): record ``i`` of a partition's seed gets
``first_ms + i * step_ms``, so every record has its own, known age.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

__all__ = [
    "CODECS",
    "Seeded",
    "SeededRecord",
    "create_topics",
    "seed_partition",
    "seed_behind",
    "append_young",
]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
MIB = 1024 * 1024
HEADERS = [("trace", b"a"), ("trace", b"b"), ("null", None), ("empty", b"")]
_TIMEOUT = 30.0
#: how far behind issue 18's group was: 3.6 h, 12,960 s (the ``behind`` fixture's records)
BEHIND_MS = int(3.6 * 3_600_000)


@dataclass(frozen=True, slots=True)
class SeededRecord:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    aborted: bool = False  # written inside a transaction that was aborted


@dataclass
class Seeded:
    """What one partition holds: its records (markers are the offsets in none of them)."""

    topic: str
    partition: int
    codec: str
    records: list[SeededRecord] = field(default_factory=list)
    end: int = 0  # the log end offset after the last single-record batch
    behind: SeededRecord | None = None  # seed_behind: the record issue 18's group reads next

    def committed(self) -> list[SeededRecord]:
        return [r for r in self.records if not r.aborted]

    def batch_middle(self) -> SeededRecord:
        """A record in the middle of the large batch: a committed offset inside a batch."""
        return self.records[1 + len(self.records[1:]) // 4]

    def first_aborted(self) -> SeededRecord:
        return next(r for r in self.records if r.aborted)


def create_topics(bootstrap: str, topics: dict[str, int], config: dict[str, str] | None = None) -> None:
    """Topics whose batches may reach 4 MiB: Apache Kafka refuses a batch over the topic's
    ``max.message.bytes`` (1 MiB + 12 by default, MESSAGE_TOO_LARGE), so a team that writes 1 MiB
    records raises it, as these topics do. ``config``: more topic settings for all of them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    settings = {"max.message.bytes": str(4 * MIB), **dict(config or {})}
    new = [NewTopic(name, partitions, 1, config=settings) for name, partitions in topics.items()]
    for future in admin.create_topics(new, operation_timeout=_TIMEOUT).values():
        future.result(_TIMEOUT)


def _producer(bootstrap: str, codec: str, **config) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": 200,
            "batch.num.messages": 10_000,
            "batch.size": 4 * MIB,
            "message.max.bytes": 4 * MIB,
            "acks": "all",
            "log_level": 3,
            **config,
        }
    )


class _Writer:
    """One producer's sends, each delivery checked and recorded."""

    def __init__(self, seeded: Seeded, producer: Producer, clock: list[int], step_ms: int) -> None:
        self.seeded, self.producer, self.clock, self.step_ms = seeded, producer, clock, step_ms
        self.pending: list[tuple[int, bytes | None, bytes | None, tuple]] = []
        self.delivered: dict[int, int] = {}
        self.errors: list[str] = []

    def send(self, key: bytes | None, value: bytes | None, headers=()) -> None:
        ts = self.clock[0]
        self.clock[0] += self.step_ms
        index = len(self.pending)
        self.pending.append((ts, key, value, tuple(headers)))

        def delivered(err, msg, index=index):
            if err is not None:
                self.errors.append(str(err))
            else:
                self.delivered[index] = msg.offset()

        self.producer.produce(
            self.seeded.topic,
            key=key,
            value=value,
            headers=list(headers) or None,
            partition=self.seeded.partition,
            timestamp=ts,
            on_delivery=delivered,
        )

    def batch(self, rows, *, aborted: bool = False) -> None:
        """Send ``rows`` (key, value, headers) within one linger window, then wait for all."""
        for key, value, headers in rows:
            self.send(key, value, headers)
        self.flush(aborted=aborted)

    def flush(self, *, aborted: bool = False) -> None:
        left = self.producer.flush(_TIMEOUT)
        if left or self.errors or len(self.delivered) != len(self.pending):
            raise KafkaException(
                f"{self.seeded.topic}[{self.seeded.partition}]: {left} undelivered, errors {self.errors[:3]}"
            )
        for index, (ts, key, value, headers) in enumerate(self.pending):
            self.seeded.records.append(SeededRecord(self.delivered[index], ts, key, value, headers, aborted))
        self.pending, self.delivered = [], {}


def wait_for_log_end(bootstrap: str, topic: str, partition: int, end: int) -> None:
    """Wait until ``topic[partition]``'s high watermark reaches ``end``. Apache Kafka's transaction
    coordinator writes the COMMIT/ABORT marker after EndTxn has answered, so without this wait the next
    producer's record can land before the marker and the marker after it."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "kgroups-seed-watermarks", "log_level": 3}
    )
    try:
        deadline = time.monotonic() + _TIMEOUT
        high = -1
        while time.monotonic() < deadline:
            _, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=_TIMEOUT, cached=False
            )
            if high >= end:
                return
            time.sleep(0.05)
        raise KafkaException(f"{topic}[{partition}]: high watermark {high}, not {end}, after {_TIMEOUT} s")
    finally:
        consumer.close()


def seed_partition(
    bootstrap: str,
    topic: str,
    partition: int,
    codec: str,
    *,
    big_batch: int = 500,
    first_ms: int = 1_700_000_000_000,
    step_ms: int = 1000,
    transactions: bool = True,
) -> Seeded:
    """Write the layout in the module docstring to ``topic[partition]``; returns what landed."""
    seeded = Seeded(topic, partition, codec)
    clock = [first_ms]
    plain = _Writer(seeded, _producer(bootstrap, codec), clock, step_ms)
    plain.batch([(b"alone", b"first", ())])
    plain.batch([(b"k%d" % (i % 7), b"%08d:" % i + b"v" * 92, ()) for i in range(big_batch)])
    odd = [
        (None, b"null key", HEADERS),
        (b"", b"empty key", ()),
        (b"null value", None, [("h", None)]),
        (b"empty value", b"", HEADERS[:2]),
        (None, None, ()),
        (b"", b"", [("", b"")]),
    ]
    plain.batch([odd[i % len(odd)] for i in range(20)])
    plain.batch([(b"big", bytes(range(256)) * (MIB // 256), [("size", b"1MiB")])])
    idempotent = _Writer(seeded, _producer(bootstrap, codec, **{"enable.idempotence": True}), clock, step_ms)
    idempotent.batch([(b"idem", b"i%d" % i, ()) for i in range(50)])
    if transactions:
        producer = _producer(bootstrap, codec, **{"transactional.id": f"{topic}-{partition}-tx"})
        producer.init_transactions(_TIMEOUT)
        txn = _Writer(seeded, producer, clock, step_ms)
        for count, commit in ((30, True), (20, False), (10, True)):
            producer.begin_transaction()
            txn.batch(
                [(b"tx", b"%s%d" % (b"c" if commit else b"a", i), ()) for i in range(count)],
                aborted=not commit,
            )
            producer.commit_transaction(_TIMEOUT) if commit else producer.abort_transaction(_TIMEOUT)
            wait_for_log_end(bootstrap, topic, partition, seeded.records[-1].offset + 2)
    plain.batch([(b"last", b"alone again", ())])
    seeded.end = seeded.records[-1].offset + 1
    return seeded


def _rows(tag: bytes, first: int, count: int) -> list[tuple[bytes, bytes, tuple]]:
    return [(b"k%d" % (i % 7), tag + b"%08d:" % i + b"v" * 90, ()) for i in range(first, first + count)]


def seed_behind(
    bootstrap: str,
    topic: str,
    codec: str,
    *,
    age_ms: int,
    at_ms: int,
    batches: int = 2,
    per_batch: int = 100,
    step_ms: int = 10,
) -> Seeded:
    """What issue 18 tried: ``batches`` lingered batches of ``per_batch`` records in ``codec``, then
    one record alone (so that Tansu's log end is exact). ``Seeded.behind``, in the middle of the
    first batch, is ``age_ms`` old at ``at_ms``; the others are ``step_ms`` apart around it."""
    seeded = Seeded(topic, 0, codec)
    clock = [at_ms - age_ms - (per_batch // 2) * step_ms]
    writer = _Writer(seeded, _producer(bootstrap, codec), clock, step_ms)
    for n in range(batches):
        writer.batch(_rows(b"old", n * per_batch, per_batch))
    writer.batch([(b"last", b"alone", ())])
    seeded.end = seeded.records[-1].offset + 1
    seeded.behind = seeded.records[per_batch // 2]
    return seeded


def append_young(bootstrap: str, seeded: Seeded, now_ms: int, count: int = 50) -> list[SeededRecord]:
    """``count`` records stamped from ``now_ms`` on (1 ms apart) in one lingered batch, then one
    alone; returns them (``seeded`` keeps them and its new end). Not thread-safe: one test at a time."""
    before = len(seeded.records)
    writer = _Writer(seeded, _producer(bootstrap, seeded.codec), [now_ms], 1)
    writer.batch(_rows(b"young", 0, count))
    writer.batch([(b"last", b"alone", ())])
    seeded.end = seeded.records[-1].offset + 1
    return seeded.records[before:]
