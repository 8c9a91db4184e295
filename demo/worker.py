"""Kafka clients that run in a background thread, watched from the caller's thread: the base
of the demo's order producer and landing consumer (demo/landing.py) and of the tests' live
consumer (tests/support/live.py).

All kafka-python calls happen on the worker thread; other threads read the worker's state
under its condition variable and wait on it with a deadline (:meth:`Worker.wait_for`). A
worker that failed (``error``) or stopped (``closed``) ends every wait at once.

:class:`ConsumerWorker` is a consumer group member (kafka-python's KafkaConsumer: subscribe,
join, poll) that a subclass gives one job per poll (:meth:`ConsumerWorker._step`: commit what
it read, or land it first). ``session_timeout_ms`` defaults to :data:`SESSION_TIMEOUT_MS`
(6000): Tansu 0.6.0 holds the first JoinGroup for half the member's session timeout
(kafka-python's default 45 s gives the ~22 s joins people saw; 6 s, Apache Kafka's minimum,
gives ~3 s).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kafka import KafkaConsumer
from kafka.structs import TopicPartition

from demo.seed import DEFAULT_TIMEOUT, TP, tp

__all__ = ["SESSION_TIMEOUT_MS", "ConsumerWorker", "Worker"]

#: Session timeout for joining consumers: Tansu's first JoinGroup takes half of it.
SESSION_TIMEOUT_MS = 6000
T = TypeVar("T")


class Worker:
    """A condition variable, a stop event, an error slot, a thread, and ``wait_for`` with a
    deadline. Subclasses set ``error_cls`` (what a failed wait raises)."""

    error_cls: type[Exception] = RuntimeError

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.closed = False

    def wait_for(self, predicate: Callable[[Any], T], timeout: float, what: str) -> T:
        """Wait until ``predicate(self)`` is truthy and return that; fail at once if the worker
        failed or stopped, and with ``error_cls`` naming ``what`` past the deadline."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self.error is not None:
                    raise self.error_cls(f"{self.name} failed: {self.error!r}") from self.error
                value = predicate(self)
                if value:
                    return value
                if self.closed:
                    raise self.error_cls(f"{self.name} stopped while waiting for {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self.error_cls(
                        f"timed out after {timeout:.1f}s waiting for {what} ({self.name}{self._detail()})"
                    )
                self._cond.wait(left)

    def _detail(self) -> str:
        """More words for a timeout's message (read under the condition)."""
        return ""

    def _start_thread(self, target: Callable[[], None]) -> None:
        if self._thread is not None:
            raise self.error_cls(f"{self.name} already started")
        self._thread = threading.Thread(target=target, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 15.0) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise self.error_cls(f"{self.name} did not stop within {timeout}s")

    def _fail(self, exc: BaseException) -> None:
        with self._cond:
            self.error = self.error or exc
            self._cond.notify_all()


class ConsumerWorker(Worker):
    """A consumer group member in a thread until :meth:`stop`: each round it carries out a
    pause or resume asked for, runs :meth:`_step` (poll and handle the records), then publishes
    its assignment; on a clean stop :meth:`_finish` runs, then ``close`` sends LeaveGroup.

    :meth:`pause` stops fetching while the member stays in the group and keeps heartbeating.
    State (read under the condition): ``assignment`` (frozenset of TopicPartition),
    ``committed`` ({TopicPartition: offset} this member committed), ``joined_in`` (seconds
    from start to the first assignment), ``error``, ``closed``.
    """

    def __init__(
        self,
        name: str,
        bootstrap: str,
        group_id: str,
        topics: Iterable[str],
        *,
        client_id: str,
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int | None = None,
        auto_offset_reset: str = "earliest",
        **consumer_config: Any,
    ) -> None:
        super().__init__(name)
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.topics = list(topics)
        self.client_id = client_id
        self._config = dict(
            bootstrap_servers=bootstrap,
            group_id=group_id,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset=auto_offset_reset,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms or max(100, session_timeout_ms // 6),
        )
        self._config.update(consumer_config)
        self._paused = False
        self._paused_applied = False
        self._started_at: float | None = None
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.committed: dict[TopicPartition, int] = {}
        self.joined_in: float | None = None

    # -- what a subclass does ---------------------------------------------------------------

    def _step(self, consumer: KafkaConsumer) -> int:
        """Poll once and handle what came; return the number of records."""
        raise NotImplementedError

    def _publish(self, consumer: KafkaConsumer, count: int) -> None:
        """More state to publish after a round (called under the condition)."""

    def _pace(self, count: int) -> None:
        """Called after each round, outside the condition (a slow consumer waits here)."""

    def _finish(self, consumer: KafkaConsumer) -> None:
        """Called on a clean stop, before the consumer closes."""

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> ConsumerWorker:
        self._started_at = time.monotonic()
        self._start_thread(self._run)
        return self

    def pause(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Stop fetching; returns once the worker has paused its assigned partitions."""
        with self._cond:
            self._paused = True
        self.wait_for(lambda s: s._paused_applied, timeout, "the consumer to pause")

    def resume(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        with self._cond:
            self._paused = False
        self.wait_for(lambda s: not s._paused_applied, timeout, "the consumer to resume")

    # -- waiting ----------------------------------------------------------------------------

    def _detail(self) -> str:
        return f", assignment {sorted(self.assignment)}, committed {self.committed}"

    def wait_assigned(
        self, timeout: float = DEFAULT_TIMEOUT, partitions: Iterable[TP] | None = None
    ) -> frozenset[TopicPartition]:
        """Wait for a non-empty assignment (or one that covers ``partitions``)."""
        wanted = {tp(p) for p in partitions} if partitions is not None else None
        return self.wait_for(
            lambda s: s.assignment if s.assignment and (wanted is None or wanted <= s.assignment) else None,
            timeout,
            f"an assignment{'' if wanted is None else f' covering {sorted(wanted)}'}",
        )

    def wait_committed(
        self, offsets: Mapping[TP, int], timeout: float = DEFAULT_TIMEOUT
    ) -> dict[TopicPartition, int]:
        """Wait until this member has committed at least ``offsets`` ({(topic, partition): offset})."""
        wanted = {tp(k): v for k, v in offsets.items()}
        return self.wait_for(
            lambda s: (
                dict(s.committed) if all(s.committed.get(k, -1) >= v for k, v in wanted.items()) else None
            ),
            timeout,
            f"commits {wanted}",
        )

    # -- worker -----------------------------------------------------------------------------

    def _run(self) -> None:
        consumer = None
        try:
            consumer = KafkaConsumer(**self._config)
            # The topics' partitions known before the first join: kafka-python 3 otherwise joins
            # with none (a topic created just before), assigns nothing, and rejoins when its
            # metadata arrives; that second rebalance was seen to stall past 30 s (the leader's
            # assignment never applied). With the metadata first, a member usually joins once.
            for topic in self.topics:
                consumer.partitions_for_topic(topic)
            consumer.subscribe(self.topics)
            paused_applied = False
            while not self._stop.is_set():
                with self._cond:
                    want_paused = self._paused
                paused_applied = _apply_pause(consumer, want_paused, paused_applied)
                count = self._step(consumer)
                assignment = frozenset(consumer.assignment())
                if paused_applied and assignment - consumer.paused():
                    consumer.pause(*assignment)  # a rebalance brought new partitions to a paused member
                with self._cond:
                    if assignment and self.joined_in is None:
                        self.joined_in = time.monotonic() - (self._started_at or time.monotonic())
                    self.assignment = assignment
                    self._paused_applied = paused_applied
                    self._publish(consumer, count)
                    self._cond.notify_all()
                self._pace(count)
            self._finish(consumer)
        except BaseException as exc:  # noqa: BLE001 - surfaced to waiters
            self._fail(exc)
        finally:
            if consumer is not None:
                try:
                    consumer.close(autocommit=False)
                except Exception as exc:  # noqa: BLE001 - surfaced to waiters
                    self._fail(exc)
            with self._cond:
                self.closed = True
                self.assignment = frozenset()
                self._cond.notify_all()


def _apply_pause(consumer: KafkaConsumer, want_paused: bool, paused_applied: bool) -> bool:
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
