"""A consumer group with a live member, for tests: :class:`LiveConsumer` (a kafka-python
KafkaConsumer that joins, consumes and commits in a thread) and :func:`start_live_group` (a
topic with records and a group whose member has caught up, then paused). Group states are
read with the kafka.protocol codec over a plain socket (:func:`group_state`).

    from tests.support.live import LiveConsumer, start_live_group

    with LiveConsumer(broker.bootstrap, "live", ["orders"]) as live:   # joins in ~3 s
        live.wait_assigned()
        live.wait_committed({("orders", 0): 5})

The broker, the seeder and the consumer thread are the demo's (``demo.tansu``, ``demo.seed``,
``demo.worker``; the latter says why the session timeout is 6 s on Tansu).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.structs import OffsetAndMetadata, TopicPartition

from demo.seed import BASE_TIMESTAMP_MS, DEFAULT_TIMEOUT, Seeder, SeedError, wait_until
from demo.worker import ConsumerWorker
from tests.support.wire import WireConnection

__all__ = ["LiveConsumer", "LiveGroup", "describe_group", "group_state", "start_live_group"]


class LiveConsumer(ConsumerWorker):
    """A kafka-python KafkaConsumer that subscribes, joins, consumes and commits in a
    background thread until :meth:`stop` (demo.worker.ConsumerWorker: the thread, the waits,
    pause and resume).

    After every poll that returned records it commits, synchronously, the offset after the
    last record it received per partition (``commit=False`` to never commit). A partition
    that never had a record gets no commit.

    State, besides ConsumerWorker's: ``consumed`` (records received), ``member_id``,
    ``generation_id``.
    """

    error_cls = SeedError

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        topics: Iterable[str],
        *,
        client_id: str | None = None,
        commit: bool = True,
        poll_timeout_ms: int = 50,
        **consumer_config: Any,
    ) -> None:
        super().__init__(
            f"live consumer {group_id!r}",
            bootstrap,
            group_id,
            topics,
            client_id=client_id or f"live-{group_id}",
            **consumer_config,
        )
        self._commit = commit
        self._poll_timeout_ms = poll_timeout_ms
        self.consumed = 0
        self.member_id: str | None = None
        self.generation_id: int | None = None
        self.heartbeat_answered_at: float | None = None

    def __enter__(self) -> LiveConsumer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()  # KafkaConsumer.close sends LeaveGroup

    def _step(self, consumer: KafkaConsumer) -> int:
        batches = consumer.poll(timeout_ms=self._poll_timeout_ms)
        to_commit = {
            partition: OffsetAndMetadata(records[-1].offset + 1, "", -1)
            for partition, records in batches.items()
            if records
        }
        if to_commit and self._commit:
            consumer.commit(to_commit)
            with self._cond:
                self.committed.update((partition, oam.offset) for partition, oam in to_commit.items())
        return sum(len(records) for records in batches.values())

    def _publish(self, consumer: KafkaConsumer, count: int) -> None:
        meta = consumer.group_metadata()
        self.member_id = meta.member_id or None
        self.generation_id = meta.generation_id
        self.consumed += count
        # kafka-python keeps no public record of it: its coordinator's Heartbeat (3.0.12)
        heartbeat = getattr(getattr(consumer, "_coordinator", None), "heartbeat", None)
        self.heartbeat_answered_at = getattr(heartbeat, "last_receive", None)

    def wait_heartbeating(self, timeout: float) -> None:
        """Wait until the broker answers a heartbeat sent after this call (SeedError if none
        within ``timeout``): a member whose heartbeats stopped would drop out of its group after
        its session timeout."""
        since = time.monotonic()
        self.wait_for(
            lambda c: c.heartbeat_answered_at is not None and c.heartbeat_answered_at > since,
            timeout,
            "a heartbeat answered",
        )


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


def start_live_group(
    seeder: Seeder,
    group_id: str,
    topic: str,
    *,
    records_per_partition: tuple[int, ...] = (5, 3, 0),
    timeout: float = DEFAULT_TIMEOUT,
    pause_after_catch_up: bool = True,
    watch_states: bool = True,
    **consumer_config: Any,
) -> LiveGroup:
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
    states: list[str] = []
    wire = (
        WireConnection.to(seeder.bootstrap, timeout=seeder.timeout, client_id=f"{seeder.client_id}-wire")
        if watch_states
        else None
    )
    try:
        for attempt in range(1, _ATTEMPTS + 1):
            consumer = LiveConsumer(seeder.bootstrap, group_id, [topic], **consumer_config).start()
            try:
                _settle(consumer, wire, states, expected, timeout, pause_after_catch_up, seeder, attempt > 1)
                break
            except _Stalled as exc:
                consumer.stop()
                if attempt == _ATTEMPTS:
                    raise SeedError(f"group {group_id!r}: {exc} ({_ATTEMPTS} members in turn)") from exc
                log.warning("live group %s: %s; a new member takes its place", group_id, exc)
            except BaseException:
                consumer.stop()
                raise
    finally:
        if wire is not None:
            wire.close()
    return LiveGroup(
        group_id=group_id,
        topic=topic,
        partitions=len(records_per_partition),
        end_offsets=end_offsets,
        committed=dict(expected),
        consumer=consumer,
        timestamps=timestamps,
        states_while_joining=states,
    )


#: Members started in turn before a live group is given up: kafka-python 3.0.12's member sometimes
#: stalls after its first rebalances (its assignment never applied, or its heartbeats stop and the
#: broker drops it after the session timeout), a fault of that client the tests are not about.
_ATTEMPTS = 3
log = logging.getLogger(__name__)


class _Stalled(SeedError):
    """The member stopped making progress (see :data:`_ATTEMPTS`)."""


def _settle(
    consumer: LiveConsumer,
    wire: WireConnection | None,
    states: list[str],
    expected: dict[int, int],
    timeout: float,
    pause_after_catch_up: bool,
    seeder: Seeder,
    replacing: bool,
) -> None:
    """Wait until the member has joined and committed the end of every non-empty partition (a
    member ``replacing`` a stalled one finds them committed already), the group is Stable
    (watched through ``wire``), then pause it and check it still heartbeats."""
    group_id, (topic,) = consumer.group_id, consumer.topics

    def joined() -> bool:
        if wire is not None:
            state = group_state(wire, group_id)
            if not states or states[-1] != state:
                states.append(state)
        with consumer._cond:
            if consumer.error is not None:
                raise SeedError(f"live consumer failed: {consumer.error!r}") from consumer.error
            return bool(consumer.assignment)

    try:
        wait_until(joined, timeout, f"group {group_id!r} to assign partitions")
    except SeedError as exc:
        if consumer.error is not None or "timed out" not in str(exc):
            raise
        raise _Stalled(str(exc)) from exc
    if replacing:
        wait_until(
            lambda: all(
                seeder.committed(group_id).get(TopicPartition(topic, p), -1) >= n for p, n in expected.items()
            ),
            timeout,
            f"group {group_id!r}'s commits {expected}",
        )
    else:
        consumer.wait_committed({(topic, p): n for p, n in expected.items()}, timeout)
    if wire is not None:
        wait_until(
            lambda: group_state(wire, group_id) == "Stable", timeout, f"group {group_id!r} to be Stable"
        )
        if states[-1] != "Stable":
            states.append("Stable")
    if pause_after_catch_up:
        consumer.pause()
    session_s = consumer._config["session_timeout_ms"] / 1000
    try:
        consumer.wait_heartbeating(session_s)
    except SeedError as exc:
        if consumer.error is not None:
            raise
        raise _Stalled(f"no heartbeat answered within its session timeout ({session_s:g} s)") from exc


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
