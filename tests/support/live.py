"""A consumer group with a live member, for tests: :class:`LiveConsumer` (a kafka-python
KafkaConsumer that joins, consumes and commits in a thread) and :func:`start_live_group` (a
topic with records and a group whose member has caught up, then paused). Group states are
read with the kafka.protocol codec over a plain socket (:func:`group_state`).

    from tests.support.live import LiveConsumer, start_live_group

    with LiveConsumer(broker.bootstrap, "live", ["orders"]) as live:   # joins in ~3 s
        live.wait_assigned()
        live.wait_committed({("orders", 0): 5})

The broker and the seeder are the demo's (``demo.tansu``, ``demo.seed``); see demo/seed.py for
the Tansu 0.6.0 facts behind the session timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafka import KafkaConsumer
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.structs import OffsetAndMetadata, TopicPartition

from demo.seed import (
    BASE_TIMESTAMP_MS, DEFAULT_TIMEOUT, LIVE_SESSION_TIMEOUT_MS, TP, SeedError, Seeder, apply_pause, keep_paused, tp,
    wait_on_worker, wait_until,
)
from tests.support.wire import WireConnection

__all__ = ["LiveConsumer", "LiveGroup", "describe_group", "group_state", "start_live_group"]

T = TypeVar("T")


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
    wire = (WireConnection.to(seeder.bootstrap, timeout=seeder.timeout, client_id=f"{seeder.client_id}-wire")
            if watch_states else None)
    try:
        def joined() -> bool:
            if wire is not None:
                state = group_state(wire, group_id)
                if not states or states[-1] != state:
                    states.append(state)
            with consumer._cond:
                if consumer.error is not None:
                    raise SeedError(f"live consumer failed: {consumer.error!r}") from consumer.error
                return bool(consumer.assignment)

        wait_until(joined, timeout, f"group {group_id!r} to assign partitions")
        consumer.wait_committed({(topic, p): n for p, n in expected.items()}, timeout)
        if wire is not None:
            wait_until(lambda: group_state(wire, group_id) == "Stable", timeout,
                       f"group {group_id!r} to be Stable")
            if states[-1] != "Stable":
                states.append("Stable")
        if pause_after_catch_up:
            consumer.pause()
    except BaseException:
        consumer.stop()
        raise
    finally:
        if wire is not None:
            wire.close()
    return LiveGroup(group_id=group_id, topic=topic, partitions=len(records_per_partition),
                     end_offsets=end_offsets, committed=dict(expected), consumer=consumer,
                     timestamps=timestamps, states_while_joining=states)


# -- group states -----------------------------------------------------------------------------

def describe_group(conn: WireConnection, group_id: str) -> Any:
    """The raw DescribeGroups v5 answer for one group (kafka.protocol codec over a plain
    socket: ``KafkaAdminClient.describe_groups`` of kafka-python 3.0.12 crashes on Tansu, whose
    authorized_operations is -1, all 32 bits, which it cannot map to ACL operations)."""
    response = conn.send(DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False), 5)
    (group,) = response.groups
    return group


def group_state(conn: WireConnection, group_id: str) -> str:
    """The group state DescribeGroups reports."""
    return describe_group(conn, group_id).group_state
