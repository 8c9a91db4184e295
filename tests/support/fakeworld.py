"""Run a test body against the fake cluster and the real client, on a fresh loop, with a deadline."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from tests.support.fakekafka import FakeCluster

TEST_DEADLINE_S = 30.0


def with_fake_cluster(body: Callable[[FakeCluster, AsyncGroupsClient], Awaitable[Any]], *, brokers: int = 3,
                      setup: Callable[[FakeCluster], None] | None = None, **cluster_options: Any) -> Any:
    async def main() -> Any:
        async with FakeCluster(brokers=brokers, **cluster_options) as cluster:
            if setup is not None:
                setup(cluster)
            config = ClientConfig.create(cluster.bootstrap, call_timeout_s=10.0, retry_backoff_s=0.01)
            async with AsyncGroupsClient(config) as client:
                result = await body(cluster, client)
            assert not cluster.handler_errors, cluster.handler_errors
            return result

    return asyncio.run(asyncio.wait_for(main(), TEST_DEADLINE_S))
