"""Live members of every group type, written by librdkafka (confluent-kafka), for the tests on the
real Apache Kafka broker: a classic consumer, a KIP-848 consumer (``group.protocol=consumer``)
and a KIP-932 share consumer. librdkafka heartbeats on its own threads, so a member stays in its
group between polls; :func:`poll_until` drives polling with a deadline.

    with classic_member(bootstrap, "orders-app", ["orders"]) as member:
        poll_until(member, lambda: member.assignment(), "an assignment")
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from confluent_kafka import Consumer, ShareConsumer

T = TypeVar("T")

__all__ = ["classic_member", "consumer_member", "share_member", "poll_until", "consume_share"]


def _consumer(bootstrap: str, group_id: str, topics: list[str], extra: dict[str, Any]) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": f"live-{group_id}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **extra,
        }
    )
    consumer.subscribe(topics)
    return consumer


@contextmanager
def classic_member(bootstrap: str, group_id: str, topics: list[str], **extra: Any) -> Iterator[Consumer]:
    consumer = _consumer(bootstrap, group_id, topics, extra)
    try:
        yield consumer
    finally:
        consumer.close()


@contextmanager
def consumer_member(bootstrap: str, group_id: str, topics: list[str], **extra: Any) -> Iterator[Consumer]:
    """A KIP-848 member: the broker assigns (``group.remote.assignor``), no JoinGroup/SyncGroup."""
    consumer = _consumer(bootstrap, group_id, topics, {"group.protocol": "consumer", **extra})
    try:
        yield consumer
    finally:
        consumer.close()


@contextmanager
def share_member(bootstrap: str, group_id: str, topics: list[str], **extra: Any) -> Iterator[ShareConsumer]:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": f"live-{group_id}",
            "share.acknowledgement.mode": "explicit",
            **extra,
        }
    )
    consumer.subscribe(topics)
    try:
        yield consumer
    finally:
        consumer.close()


def poll_until(
    consumer: Consumer,
    predicate: Callable[[], T],
    what: str,
    timeout: float = 30.0,
    on_message: Callable[[Any], None] | None = None,
) -> T:
    """Poll ``consumer`` until ``predicate()`` is truthy; each record goes to ``on_message``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        message = consumer.poll(0.2)
        if message is not None and message.error() is None and on_message is not None:
            on_message(message)


def consume_share(consumer: ShareConsumer, count: int, timeout: float = 30.0) -> list[Any]:
    """Poll a share consumer (explicit acknowledgement) until ``count`` records came; each is
    accepted and the acknowledgements committed before returning."""
    deadline = time.monotonic() + timeout
    records: list[Any] = []
    while len(records) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"a share consumer got {len(records)} of {count} records in {timeout:.0f} s")
        for message in consumer.poll(0.5):
            if message.error() is None:
                records.append(message)
                consumer.acknowledge(message)
        consumer.commit_sync(10)
    return records
