"""What the fake-cluster client tests share: a quick-retry config, request counts without
the connection handshake, a standard seed of groups on one topic, group ids a given broker
coordinates, a wait on a condition, and a deadline for a whole async test."""

from __future__ import annotations

import asyncio
import functools
import time

from airflow_provider_kgroups.client import ClientConfig, TopicPartition
from tests.support.fakekafka import FakeCluster

HANDSHAKE_APIS = {"ApiVersions", "SaslHandshake", "SaslAuthenticate"}


def config(c: FakeCluster, **options) -> ClientConfig:
    return ClientConfig.create(c.bootstrap, retry_backoff_s=0.01, **options)


def counts(c: FakeCluster) -> dict[str, int]:
    """Requests by API, leaving out the per-connection handshake."""
    return {api: n for api, n in c.requests_by_api().items() if api not in HANDSHAKE_APIS}


def seed(c: FakeCluster, n: int) -> dict[str, dict[TopicPartition, int]]:
    """``n`` groups g0..g{n-1}, each with one commit on topic "orders" (3 partitions)."""
    c.add_topic("orders", 3, end_offsets=10_000)
    out = {}
    for i in range(n):
        c.add_group(f"g{i}", offsets={("orders", i % 3): 100 + i})
        out[f"g{i}"] = {TopicPartition("orders", i % 3): 100 + i}
    return out


def committed(result) -> dict[str, dict[TopicPartition, int]]:
    return {g: v.committed() for g, v in result.values.items()}


def on_node(c: FakeCluster, node: int, n: int, prefix: str) -> list[str]:
    """``n`` group ids whose coordinator (Kafka's hash) is ``node``."""
    out, i = [], 0
    while len(out) < n:
        if c.coordinator_of(f"{prefix}{i}") == node:
            out.append(f"{prefix}{i}")
        i += 1
    return out


async def until(condition, what: str = "the condition", within_s: float = 10.0) -> None:
    """Wait on the event loop until ``condition()`` holds; fail naming ``what`` past the deadline."""
    ends = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > ends:
            raise AssertionError(f"not within {within_s:g} s: {what}")
        await asyncio.sleep(0.002)


def within(seconds: float):
    """``@within(20)`` on an async test: it fails with TimeoutError past ``seconds`` instead of
    hanging the suite (pytest-asyncio runs it; this only bounds it)."""

    def bound(test):
        @functools.wraps(test)
        async def bounded(*args, **kwargs):
            async with asyncio.timeout(seconds):
                return await test(*args, **kwargs)

        return bounded

    return bound
