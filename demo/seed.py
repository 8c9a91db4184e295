"""Put known state into a real broker with a *different* client (kafka-python's own
KafkaAdminClient / KafkaProducer), so the project's client is checked against data it did
not write itself. The demo, the tests and the benchmarks seed their brokers with it.

    from demo.seed import Seeder

    with Seeder(broker.bootstrap) as seed:
        seed.create_topic("orders", partitions=3)
        seed.produce("orders", partition=0, count=5)          # offsets 0..4, end offset 5
        seed.commit("billing", {("orders", 0): 3})            # no join, generation -1
        seed.commit_many({f"g{i}": {("orders", 0): i} for i in range(300)})

Why it is written this way (Tansu 0.6.0, seen on this machine):

* One record per produce batch (``linger_ms=0`` and waiting for each send): Tansu's
  ListOffsets(latest) answers "base offset of the last batch + 1", so a batch of N>1
  records would make end offsets too low.
* Offsets are committed without joining: OffsetCommit with generation -1 and an empty
  member id (``KafkaAdminClient.alter_group_offsets``, which kafka-python 3.0.12 has;
  ``alter_consumer_group_offsets`` does not exist there). Tansu, like Apache Kafka,
  refuses such a commit (25 UNKNOWN_MEMBER_ID) while the group has a live member.
  ``commit_many`` looks all coordinators up in one batched FindCoordinator, then sends
  one OffsetCommit per group on the admin client's connection: 300 groups in ~0.2-0.3 s.
* A short-lived producer per produce call (see ``Seeder._new_producer`` for the
  kafka-python bug that rules out a long-lived one).

Consumers that run in a thread (the demo's landing consumer, the tests' live consumer) are
in demo/worker.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata, TopicPartition

__all__ = [
    "BASE_TIMESTAMP_MS",
    "DEFAULT_TIMEOUT",
    "CommitRefused",
    "SeedError",
    "Seeder",
    "TP",
    "tp",
    "wait_until",
]

DEFAULT_TIMEOUT = 30.0
#: The base of the timestamps ``Seeder.produce`` gives records unless told otherwise
#: (2023-11-14T22:13:20Z: far from "now", so a test can tell it from broker time).
BASE_TIMESTAMP_MS = 1_700_000_000_000

TP = TopicPartition | tuple[str, int]
T = TypeVar("T")


class SeedError(RuntimeError):
    """Seeding failed (an error code from the broker, or a deadline passed)."""


class CommitRefused(SeedError):
    """An OffsetCommit answered an error that retrying cannot fix."""


def tp(value: TP) -> TopicPartition:
    """``("topic", 0)`` or a TopicPartition -> TopicPartition."""
    return value if isinstance(value, TopicPartition) else TopicPartition(value[0], value[1])


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.02) -> T:
    """Call ``predicate`` until it returns something truthy; return that, or raise
    :class:`SeedError` naming ``what`` when ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise SeedError(f"timed out after {timeout:.1f}s waiting for {what}")
        time.sleep(min(interval, left))


class Seeder:
    """kafka-python clients for one broker: a long-lived admin client and socket (created
    on first use, closed by :meth:`close`), a short-lived producer per produce call.
    Not thread-safe: one Seeder per thread."""

    def __init__(
        self, bootstrap: str, *, client_id: str = "kgroups-seed", timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.bootstrap = bootstrap
        self.client_id = client_id
        self.timeout = timeout
        self._admin: KafkaAdminClient | None = None

    # -- clients ----------------------------------------------------------------------------

    @property
    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            self._admin = KafkaAdminClient(
                bootstrap_servers=self.bootstrap,
                client_id=f"{self.client_id}-admin",
                request_timeout_ms=int(self.timeout * 1000),
            )
        return self._admin

    def _new_producer(self, **config: Any) -> KafkaProducer:
        # A fresh producer per call, closed at its end (~6 ms): a long-lived kafka-python
        # 3.0.12 producer that has written to a second topic can lose the first topic from
        # its metadata and then spin its network thread at 100% CPU ("unknown leaders
        # exist" -> metadata update, forever), which slows every other client in the
        # process (the GIL).
        return KafkaProducer(
            bootstrap_servers=self.bootstrap,
            client_id=f"{self.client_id}-producer",
            acks=1,
            retries=0,
            request_timeout_ms=int(self.timeout * 1000),
            **config,
        )

    def close(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()

    def __enter__(self) -> Seeder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- topics -----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, *, replication: int = 1) -> None:
        self.create_topics({name: partitions}, replication=replication)

    def create_topics(self, topics: Mapping[str, int], *, replication: int = 1) -> None:
        """Create topics (name -> partition count, each partition on ``replication`` brokers) and
        wait until metadata shows every partition with a leader."""
        if not topics:
            return
        result = self.admin.create_topics(
            [NewTopic(name, partitions, replication) for name, partitions in topics.items()],
            timeout_ms=int(self.timeout * 1000),
            raise_errors=False,
        )
        failed = {t["name"]: t["error_code"] for t in result["topics"] if t["error_code"] != 0}
        if failed:
            raise SeedError(f"CreateTopics failed: {failed}")
        self.admin.wait_for_topics(list(topics), timeout_ms=int(self.timeout * 1000))

    # -- records ----------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        partition: int,
        count: int,
        *,
        first_timestamp_ms: int | None = None,
        step_ms: int = 1000,
        value: Callable[[int], bytes] | None = None,
        key: bytes | None = None,
    ) -> list[int]:
        """Produce ``count`` records to one partition, one record per batch, waiting for
        each; record ``i`` gets timestamp ``first_timestamp_ms + i * step_ms`` (default
        first: :data:`BASE_TIMESTAMP_MS` + the partition's current end offset * step, so
        timestamps keep growing across calls). Returns the offsets written."""
        if first_timestamp_ms is None:
            first_timestamp_ms = BASE_TIMESTAMP_MS + self.end_offset(topic, partition) * step_ms
        records = [
            ((value(i) if value else b"v%d" % i), first_timestamp_ms + i * step_ms) for i in range(count)
        ]
        return self.produce_records(topic, partition, records, key=key)

    def produce_records(
        self,
        topic: str,
        partition: int,
        records: Iterable[tuple[bytes | None, int]],
        *,
        key: bytes | None = None,
    ) -> list[int]:
        """Produce ``(value, timestamp_ms)`` records in order, one per batch."""
        offsets = []
        producer = self._new_producer(linger_ms=0, max_in_flight_requests_per_connection=1)
        try:
            for value, timestamp_ms in records:
                future = producer.send(
                    topic, value=value, key=key, partition=partition, timestamp_ms=timestamp_ms
                )
                producer.flush(timeout=self.timeout)
                offsets.append(future.get(timeout=self.timeout).offset)
        finally:
            producer.close(timeout=self.timeout)
        return offsets

    def produce_batch(
        self,
        topic: str,
        partition: int,
        count: int,
        *,
        first_timestamp_ms: int = BASE_TIMESTAMP_MS,
        step_ms: int = 1000,
    ) -> list[int]:
        """Produce ``count`` records as a single batch (a second producer that lingers,
        then one flush). On Tansu 0.6.0 this makes ListOffsets(latest) too low: use it only
        to show that, and :meth:`produce` for everything else."""
        producer = self._new_producer(
            linger_ms=600_000,
            batch_size=1 << 20,
            delivery_timeout_ms=600_000 + int(self.timeout * 1000) + 1000,
        )
        try:
            futures = [
                producer.send(
                    topic,
                    value=b"b%d" % i,
                    partition=partition,
                    timestamp_ms=first_timestamp_ms + i * step_ms,
                )
                for i in range(count)
            ]
            producer.flush(timeout=self.timeout)
            return [f.get(timeout=self.timeout).offset for f in futures]
        finally:
            producer.close(timeout=self.timeout)

    def end_offsets(self, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        """ListOffsets(latest) through kafka-python's admin client."""
        from kafka.protocol.consumer import OffsetSpec

        specs = {TopicPartition(topic, p): OffsetSpec.LATEST for p in partitions}
        result = self.admin.list_partition_offsets(specs)
        return {tp_.partition: info.offset for tp_, info in result.items()}

    def end_offset(self, topic: str, partition: int) -> int:
        return self.end_offsets(topic, [partition])[partition]

    # -- group offsets ----------------------------------------------------------------------

    def commit(
        self,
        group_id: str,
        offsets: Mapping[TP, int],
        *,
        metadata: str = "",
        coordinator_id: int | None = None,
    ) -> None:
        """Commit offsets for a group without joining it (generation -1, no member id).

        Retriable errors are retried until the seeder's timeout, as Kafka's own clients do: a
        cluster just started may answer COORDINATOR_LOAD_IN_PROGRESS while the group's
        ``__consumer_offsets`` partition loads (seen on a fresh three-node cluster), and a
        coordinator that moved answers NOT_COORDINATOR (looked up again)."""
        payload = {tp(k): OffsetAndMetadata(offset, metadata, -1) for k, offset in offsets.items()}
        last: dict[str, str] = {}

        def committed() -> bool:
            nonlocal coordinator_id
            result = self.admin.alter_group_offsets(group_id, payload, group_coordinator_id=coordinator_id)
            failed = {str(k): err for k, err in result.items() if err.errno != 0}
            if not failed and len(result) == len(payload):
                return True
            last.clear()
            last.update((k, err.__name__) for k, err in failed.items())
            if not failed or not all(err.retriable for err in failed.values()):
                raise CommitRefused(f"OffsetCommit for {group_id!r} failed: {last or result}")
            coordinator_id = None  # found again: NOT_COORDINATOR means it moved
            return False

        try:
            wait_until(committed, self.timeout, f"OffsetCommit for {group_id!r}", interval=0.1)
        except CommitRefused:
            raise
        except SeedError as exc:  # the deadline passed on retriable answers
            raise SeedError(f"{exc}: the last answer was {last}") from None

    def commit_many(self, groups: Mapping[str, Mapping[TP, int]]) -> float:
        """Commit offsets for many groups: one batched FindCoordinator for all of them,
        then one OffsetCommit per group on the same connection. Returns the seconds it
        took (300 groups: a few hundred ms on Tansu)."""
        start = time.monotonic()
        coordinators = self.find_coordinators(list(groups))
        for group_id, offsets in groups.items():
            self.commit(group_id, offsets, coordinator_id=coordinators.get(group_id))
        return time.monotonic() - start

    def find_coordinators(self, group_ids: list[str]) -> dict[str, int]:
        """Coordinator node id per group, looked up in one batched FindCoordinator when
        this kafka-python has the (private) helper; ``{}`` otherwise, and then each commit
        looks its coordinator up itself."""
        lookup = getattr(self.admin, "_find_coordinator_ids", None)
        if lookup is None or not group_ids:
            return {}
        return self.admin._manager.run(lookup, group_ids)

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        """Committed offsets of a group, read with kafka-python (OffsetFetch, all topics)."""
        result = self.admin.list_group_offsets({group_id: None})
        return {k: v.offset for k, v in result.get(group_id, {}).items() if v.offset >= 0}
