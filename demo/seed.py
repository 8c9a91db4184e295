"""Put known state into a real broker with a *different* client (kafka-python's own
KafkaAdminClient / KafkaProducer / KafkaConsumer), so the project's client is checked
against data it did not write itself.

    from demo.seed import Seeder, LiveConsumer

    with Seeder(broker.bootstrap) as seed:
        seed.create_topic("orders", partitions=3)
        seed.produce("orders", partition=0, count=5)          # offsets 0..4, end offset 5
        seed.commit("billing", {("orders", 0): 3})            # no join, generation -1
        seed.commit_many({f"g{i}": {("orders", 0): i} for i in range(300)})

    with LiveConsumer(broker.bootstrap, "live", ["orders"]) as live:   # joins in ~3 s
        live.wait_assigned()
        live.wait_committed({("orders", 0): 5})

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
* Group states are read with the kafka.protocol codec over a plain socket
  (``Seeder.describe_group``): kafka-python 3.0.12's ``KafkaAdminClient.describe_groups``
  raises ValueError on Tansu's authorized_operations (-1).
* A joining consumer uses ``session_timeout_ms=6000``: Tansu holds the first JoinGroup
  for half the member's session timeout (kafka-python's default 45 s gives the ~22 s
  joins people saw; 6 s, Apache Kafka's minimum, gives ~3 s).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata, TopicPartition

__all__ = [
    "BASE_TIMESTAMP_MS", "DEFAULT_TIMEOUT", "LIVE_SESSION_TIMEOUT_MS", "LiveConsumer", "LiveGroup",
    "SeedError", "Seeder", "TP", "start_live_group", "tp", "wait_until",
]

DEFAULT_TIMEOUT = 30.0
#: Session timeout for joining consumers: Tansu's first JoinGroup takes half of it.
LIVE_SESSION_TIMEOUT_MS = 6000
#: The base of the timestamps ``Seeder.produce`` gives records unless told otherwise
#: (2023-11-14T22:13:20Z: far from "now", so a test can tell it from broker time).
BASE_TIMESTAMP_MS = 1_700_000_000_000

TP = Union[TopicPartition, tuple[str, int]]
T = TypeVar("T")


class SeedError(RuntimeError):
    """Seeding failed (an error code from the broker, or a deadline passed)."""


def tp(value: TP) -> TopicPartition:
    """``("topic", 0)`` or a TopicPartition -> TopicPartition."""
    return value if isinstance(value, TopicPartition) else TopicPartition(value[0], value[1])


def wait_until(predicate: Callable[[], T], timeout: float, what: str,
               interval: float = 0.02) -> T:
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


def wait_on_worker(worker: Any, predicate: Callable[[Any], T], timeout: float, what: str, *, name: str,
                   error_cls: type[Exception], detail: Callable[[], str] = lambda: "") -> T:
    """Wait on a background worker's condition variable (``worker._cond``) until
    ``predicate(worker)`` is truthy; fail at once if the worker failed (``worker.error``) or
    stopped (``worker.closed``), and with ``error_cls`` naming ``what`` past the deadline."""
    deadline = time.monotonic() + timeout
    with worker._cond:
        while True:
            if worker.error is not None:
                raise error_cls(f"{name} failed: {worker.error!r}") from worker.error
            value = predicate(worker)
            if value:
                return value
            if worker.closed:
                raise error_cls(f"{name} stopped while waiting for {what}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise error_cls(f"timed out after {timeout:.1f}s waiting for {what} ({name}{detail()})")
            worker._cond.wait(left)


class Seeder:
    """kafka-python clients for one broker: a long-lived admin client and socket (created
    on first use, closed by :meth:`close`), a short-lived producer per produce call.
    Not thread-safe: one Seeder per thread."""

    def __init__(self, bootstrap: str, *, client_id: str = "kgroups-seed",
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.bootstrap = bootstrap
        self.client_id = client_id
        self.timeout = timeout
        self._admin: KafkaAdminClient | None = None
        self._wire = None

    # -- clients ----------------------------------------------------------------------------

    @property
    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                           client_id=f"{self.client_id}-admin",
                                           request_timeout_ms=int(self.timeout * 1000))
        return self._admin

    def _new_producer(self, **config: Any) -> KafkaProducer:
        # A fresh producer per call, closed at its end (~6 ms): a long-lived kafka-python
        # 3.0.12 producer that has written to a second topic can lose the first topic from
        # its metadata and then spin its network thread at 100% CPU ("unknown leaders
        # exist" -> metadata update, forever), which slows every other client in the
        # process (the GIL).
        return KafkaProducer(bootstrap_servers=self.bootstrap, client_id=f"{self.client_id}-producer",
                             acks=1, retries=0, request_timeout_ms=int(self.timeout * 1000), **config)

    def close(self) -> None:
        admin, self._admin = self._admin, None
        wire, self._wire = self._wire, None
        if wire is not None:
            wire.close()
        if admin is not None:
            admin.close()

    def __enter__(self) -> "Seeder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- topics -----------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1) -> None:
        self.create_topics({name: partitions})

    def create_topics(self, topics: Mapping[str, int]) -> None:
        """Create topics (name -> partition count) and wait until metadata shows every
        partition with a leader."""
        if not topics:
            return
        result = self.admin.create_topics(
            [NewTopic(name, partitions, 1) for name, partitions in topics.items()],
            timeout_ms=int(self.timeout * 1000), raise_errors=False)
        failed = {t["name"]: t["error_code"] for t in result["topics"] if t["error_code"] != 0}
        if failed:
            raise SeedError(f"CreateTopics failed: {failed}")
        self.admin.wait_for_topics(list(topics), timeout_ms=int(self.timeout * 1000))

    # -- records ----------------------------------------------------------------------------

    def produce(self, topic: str, partition: int, count: int, *,
                first_timestamp_ms: int | None = None, step_ms: int = 1000,
                value: Callable[[int], bytes] | None = None,
                key: bytes | None = None) -> list[int]:
        """Produce ``count`` records to one partition, one record per batch, waiting for
        each; record ``i`` gets timestamp ``first_timestamp_ms + i * step_ms`` (default
        first: :data:`BASE_TIMESTAMP_MS` + the partition's current end offset * step, so
        timestamps keep growing across calls). Returns the offsets written."""
        if first_timestamp_ms is None:
            first_timestamp_ms = BASE_TIMESTAMP_MS + self.end_offset(topic, partition) * step_ms
        records = [((value(i) if value else b"v%d" % i), first_timestamp_ms + i * step_ms)
                   for i in range(count)]
        return self.produce_records(topic, partition, records, key=key)

    def produce_records(self, topic: str, partition: int,
                        records: Iterable[tuple[bytes | None, int]], *,
                        key: bytes | None = None) -> list[int]:
        """Produce ``(value, timestamp_ms)`` records in order, one per batch."""
        offsets = []
        producer = self._new_producer(linger_ms=0, max_in_flight_requests_per_connection=1)
        try:
            for value, timestamp_ms in records:
                future = producer.send(topic, value=value, key=key, partition=partition,
                                       timestamp_ms=timestamp_ms)
                producer.flush(timeout=self.timeout)
                offsets.append(future.get(timeout=self.timeout).offset)
        finally:
            producer.close(timeout=self.timeout)
        return offsets

    def produce_batch(self, topic: str, partition: int, count: int, *,
                      first_timestamp_ms: int = BASE_TIMESTAMP_MS, step_ms: int = 1000) -> list[int]:
        """Produce ``count`` records as a single batch (a second producer that lingers,
        then one flush). On Tansu 0.6.0 this makes ListOffsets(latest) too low: use it only
        to show that, and :meth:`produce` for everything else."""
        producer = self._new_producer(linger_ms=600_000, batch_size=1 << 20,
                                      delivery_timeout_ms=600_000 + int(self.timeout * 1000) + 1000)
        try:
            futures = [producer.send(topic, value=b"b%d" % i, partition=partition,
                                     timestamp_ms=first_timestamp_ms + i * step_ms)
                       for i in range(count)]
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

    def commit(self, group_id: str, offsets: Mapping[TP, int], *, metadata: str = "",
               coordinator_id: int | None = None) -> None:
        """Commit offsets for a group without joining it (generation -1, no member id)."""
        payload = {tp(k): OffsetAndMetadata(offset, metadata, -1) for k, offset in offsets.items()}
        result = self.admin.alter_group_offsets(group_id, payload, group_coordinator_id=coordinator_id)
        failed = {str(k): err.__name__ for k, err in result.items() if err.errno != 0}
        if failed or len(result) != len(payload):
            raise SeedError(f"OffsetCommit for {group_id!r} failed: {failed or result}")

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

    def describe_group(self, group_id: str) -> Any:
        """The raw DescribeGroups v5 answer for one group (kafka.protocol codec over a
        plain socket: ``KafkaAdminClient.describe_groups`` of kafka-python 3.0.12 crashes
        on Tansu, whose authorized_operations is -1, all 32 bits, which it cannot map to
        ACL operations)."""
        from kafka.protocol.admin import DescribeGroupsRequest

        from tests.support.wire import WireConnection

        if self._wire is None:
            self._wire = WireConnection.to(self.bootstrap, timeout=self.timeout,
                                           client_id=f"{self.client_id}-wire")
        response = self._wire.send(DescribeGroupsRequest(groups=[group_id],
                                                         include_authorized_operations=False), 5)
        (group,) = response.groups
        return group

    def group_state(self, group_id: str) -> str:
        """The group state DescribeGroups reports."""
        return self.describe_group(group_id).group_state


# -- a live consumer --------------------------------------------------------------------------

class LiveConsumer:
    """A kafka-python KafkaConsumer that subscribes, joins, consumes and commits in a
    background thread until :meth:`stop`.

    All KafkaConsumer calls happen on the worker thread; other threads read the state
    below (under a condition variable) and wait on it with deadlines.

    After every poll that returned records it commits, synchronously, the offset after the
    last record it received per partition (``commit=False`` to never commit). A partition
    that never had a record gets no commit. :meth:`pause` stops fetching (the member stays
    in the group and keeps heartbeating); :meth:`resume` starts again.

    State: ``assignment`` (frozenset of TopicPartition), ``committed`` ({tp: offset} this
    member committed), ``consumed`` (records received), ``member_id``, ``generation_id``,
    ``joined_in`` (seconds from start to the first assignment), ``error`` (an exception
    that stopped the worker, re-raised by the ``wait_*`` methods).
    """

    def __init__(self, bootstrap: str, group_id: str, topics: Iterable[str], *,
                 client_id: str | None = None, commit: bool = True,
                 session_timeout_ms: int = LIVE_SESSION_TIMEOUT_MS,
                 heartbeat_interval_ms: int | None = None, poll_timeout_ms: int = 50,
                 auto_offset_reset: str = "earliest", **consumer_config: Any) -> None:
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.topics = list(topics)
        self.client_id = client_id or f"live-{group_id}"
        self._commit = commit
        self._poll_timeout_ms = poll_timeout_ms
        self._config = dict(
            bootstrap_servers=bootstrap, group_id=group_id, client_id=self.client_id,
            enable_auto_commit=False, auto_offset_reset=auto_offset_reset,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms or max(100, session_timeout_ms // 6),
        )
        self._config.update(consumer_config)
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._paused = False
        self._paused_applied = False
        self._thread: threading.Thread | None = None
        self._started_at: float | None = None
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.committed: dict[TopicPartition, int] = {}
        self.consumed = 0
        self.member_id: str | None = None
        self.generation_id: int | None = None
        self.joined_in: float | None = None
        self.error: BaseException | None = None
        self.closed = False

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> "LiveConsumer":
        if self._thread is not None:
            raise SeedError("LiveConsumer already started")
        self._started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"live-consumer-{self.group_id}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 15.0) -> None:
        """Leave the group (KafkaConsumer.close sends LeaveGroup) and end the thread."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise SeedError(f"live consumer {self.group_id!r} did not stop within {timeout}s")

    def __enter__(self) -> "LiveConsumer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def pause(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Stop fetching; returns once the worker has paused its assigned partitions (the
        member stays in the group and keeps heartbeating)."""
        with self._cond:
            self._paused = True
        self.wait_for(lambda s: s._paused_applied, timeout, "the consumer to pause")

    def resume(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        with self._cond:
            self._paused = False
        self.wait_for(lambda s: not s._paused_applied, timeout, "the consumer to resume")

    # -- waiting ----------------------------------------------------------------------------

    def wait_for(self, predicate: Callable[["LiveConsumer"], T], timeout: float, what: str) -> T:
        """Wait (condition variable, deadline) until ``predicate(self)`` is truthy."""
        return wait_on_worker(self, predicate, timeout, what, name=f"live consumer {self.group_id!r}",
                              error_cls=SeedError,
                              detail=lambda: f", assignment {sorted(self.assignment)}, committed {self.committed}")

    def wait_assigned(self, timeout: float = DEFAULT_TIMEOUT,
                      partitions: Iterable[TP] | None = None) -> frozenset[TopicPartition]:
        """Wait for a non-empty assignment (or one that covers ``partitions``)."""
        wanted = {tp(p) for p in partitions} if partitions is not None else None
        return self.wait_for(
            lambda s: s.assignment if s.assignment and (wanted is None or wanted <= s.assignment) else None,
            timeout, f"an assignment{'' if wanted is None else f' covering {sorted(wanted)}'}")

    def wait_committed(self, offsets: Mapping[TP, int], timeout: float = DEFAULT_TIMEOUT) -> dict[TopicPartition, int]:
        """Wait until this member has committed at least ``offsets``."""
        wanted = {tp(k): v for k, v in offsets.items()}
        return self.wait_for(
            lambda s: dict(s.committed) if all(s.committed.get(k, -1) >= v for k, v in wanted.items()) else None,
            timeout, f"commits {wanted}")

    # -- worker -----------------------------------------------------------------------------

    def _run(self) -> None:
        consumer = None
        try:
            consumer = KafkaConsumer(**self._config)
            consumer.subscribe(self.topics)
            paused_applied = False
            while not self._stop.is_set():
                with self._cond:
                    want_paused = self._paused
                paused_applied = apply_pause(consumer, want_paused, paused_applied)
                batches = consumer.poll(timeout_ms=self._poll_timeout_ms)
                to_commit = {}
                count = 0
                for partition, records in batches.items():
                    if records:
                        count += len(records)
                        to_commit[partition] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
                if to_commit and self._commit:
                    consumer.commit(to_commit)
                meta = consumer.group_metadata()
                assignment = frozenset(consumer.assignment())
                keep_paused(consumer, paused_applied, assignment)
                with self._cond:
                    if assignment and self.joined_in is None:
                        self.joined_in = time.monotonic() - (self._started_at or time.monotonic())
                    self.assignment = assignment
                    self.member_id = meta.member_id or None
                    self.generation_id = meta.generation_id
                    self.consumed += count
                    self._paused_applied = paused_applied
                    if self._commit:
                        for partition, oam in to_commit.items():
                            self.committed[partition] = oam.offset
                    self._cond.notify_all()
        except BaseException as exc:  # surfaced to waiters
            with self._cond:
                self.error = exc
                self._cond.notify_all()
        finally:
            if consumer is not None:
                try:
                    consumer.close(autocommit=False)
                except Exception as exc:
                    with self._cond:
                        self.error = self.error or exc
            with self._cond:
                self.closed = True
                self.assignment = frozenset()
                self._cond.notify_all()


def apply_pause(consumer: KafkaConsumer, want_paused: bool, paused_applied: bool) -> bool:
    """Carry out a pause/resume request from another thread once partitions are assigned (a
    pause before the first assignment would pause nothing); returns the state now applied."""
    assigned = consumer.assignment()
    if want_paused == paused_applied or not (assigned or not want_paused):
        return paused_applied
    if want_paused:
        consumer.pause(*assigned)
    else:
        consumer.resume(*consumer.paused())
    return want_paused


def keep_paused(consumer: KafkaConsumer, paused_applied: bool, assignment: frozenset) -> None:
    """A rebalance may bring new partitions to a paused member: pause them too."""
    if paused_applied and assignment - consumer.paused():
        consumer.pause(*assignment)


# -- a ready-made live group ------------------------------------------------------------------

@dataclass
class LiveGroup:
    """A consumer group with one live member, built by :func:`start_live_group`.

    ``end_offsets`` and ``committed`` are per partition of ``topic``; partitions without
    records have no entry in ``committed`` (assigned, but never committed).
    ``states_while_joining`` lists the distinct DescribeGroups states seen while the
    member was joining, in order.
    """

    group_id: str
    topic: str
    partitions: int
    end_offsets: dict[int, int]
    committed: dict[int, int]
    consumer: LiveConsumer
    timestamps: dict[int, list[int]] = field(default_factory=dict)
    states_while_joining: list[str] = field(default_factory=list)

    @property
    def member_id(self) -> str | None:
        return self.consumer.member_id

    def stop(self) -> None:
        self.consumer.stop()


def start_live_group(seeder: Seeder, group_id: str, topic: str, *,
                     records_per_partition: tuple[int, ...] = (5, 3, 0),
                     timeout: float = DEFAULT_TIMEOUT, pause_after_catch_up: bool = True,
                     watch_states: bool = True, **consumer_config: Any) -> LiveGroup:
    """Create ``topic`` (one partition per entry of ``records_per_partition``), produce
    that many records to each, start a :class:`LiveConsumer` for ``group_id``, wait until it
    has joined and committed the end offset of every non-empty partition, then (by
    default) pause it so the committed offsets stay put while the member stays live.
    """
    seeder.create_topic(topic, partitions=len(records_per_partition))
    timestamps: dict[int, list[int]] = {}
    for partition, count in enumerate(records_per_partition):
        first = BASE_TIMESTAMP_MS + partition * 1_000_000
        seeder.produce(topic, partition, count, first_timestamp_ms=first, step_ms=1000)
        timestamps[partition] = [first + i * 1000 for i in range(count)]
    end_offsets = seeder.end_offsets(topic, range(len(records_per_partition)))
    expected = {p: n for p, n in enumerate(records_per_partition) if n}
    if {p: end_offsets[p] for p in expected} != expected:
        raise SeedError(f"end offsets {end_offsets} != produced {records_per_partition}")
    consumer = LiveConsumer(seeder.bootstrap, group_id, [topic], **consumer_config).start()
    states: list[str] = []
    try:
        def joined() -> bool:
            if watch_states:
                state = seeder.group_state(group_id)
                if not states or states[-1] != state:
                    states.append(state)
            with consumer._cond:
                if consumer.error is not None:
                    raise SeedError(f"live consumer failed: {consumer.error!r}") from consumer.error
                return bool(consumer.assignment)

        wait_until(joined, timeout, f"group {group_id!r} to assign partitions")
        consumer.wait_committed({(topic, p): n for p, n in expected.items()}, timeout)
        if watch_states:
            wait_until(lambda: seeder.group_state(group_id) == "Stable", timeout,
                       f"group {group_id!r} to be Stable")
            if states[-1] != "Stable":
                states.append("Stable")
        if pause_after_catch_up:
            consumer.pause()
    except BaseException:
        consumer.stop()
        raise
    return LiveGroup(group_id=group_id, topic=topic, partitions=len(records_per_partition),
                     end_offsets=end_offsets, committed=dict(expected), consumer=consumer,
                     timestamps=timestamps, states_while_joining=states)
