"""Run a test body against the fake cluster and the real client, with a deadline, on the test's
own loop (``await with_fake_cluster(body)`` from an async test).

- ``with_fake_cluster(body, setup=, brokers=)`` runs ``await body(cluster, client)``;
- ``on_fake_cluster(groups, body)``: one broker with a few Empty groups on topic "orders" (100
  records, each group committed at 50), for the cleanup tests that plan or run over them; runs
  ``await body(client, cluster)``.

Handler errors of the fake fail the test (tests/support/pytest_fakekafka.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from tests.support.fakekafka import FakeCluster

TEST_DEADLINE_S = 30.0


async def with_fake_cluster(
    body: Callable[[FakeCluster, AsyncGroupsClient], Awaitable[Any]],
    *,
    brokers: int = 3,
    setup: Callable[[FakeCluster], None] | None = None,
    **cluster_options: Any,
) -> Any:
    async with asyncio.timeout(TEST_DEADLINE_S):
        async with FakeCluster(brokers=brokers, **cluster_options) as cluster:
            if setup is not None:
                setup(cluster)
            config = ClientConfig.create(cluster.bootstrap, call_timeout_s=10.0, retry_backoff_s=0.01)
            async with AsyncGroupsClient(config) as client:
                return await body(cluster, client)


async def on_fake_cluster(
    groups: Iterable[str],
    body: Callable[[AsyncGroupsClient, FakeCluster], Awaitable[Any]],
    committed: int = 50,
) -> Any:
    def setup(cluster: FakeCluster) -> None:
        cluster.add_topic("orders", 1, end_offsets=[100])
        for g in groups:
            cluster.add_group(g, offsets={("orders", 0): committed})

    return await with_fake_cluster(lambda cluster, client: body(client, cluster), brokers=1, setup=setup)
