"""A fake cluster with a few Empty groups on topic "orders" (100 records), for the cleanup tests
that plan or run over them: ``on_fake_cluster(groups, body)`` runs ``await body(client, cluster)``."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Iterable

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from tests.support.fakekafka import FakeCluster


def on_fake_cluster(groups: Iterable[str], body: Callable[[AsyncGroupsClient, FakeCluster], Awaitable[Any]],
                    committed: int = 50) -> Any:
    async def main() -> Any:
        async with FakeCluster(brokers=1) as cluster:
            cluster.add_topic("orders", 1, end_offsets=[100])
            for g in groups:
                cluster.add_group(g, offsets={("orders", 0): committed})
            config = ClientConfig.create(cluster.bootstrap, call_timeout_s=10.0, retry_backoff_s=0.01)
            async with AsyncGroupsClient(config) as client:
                result = await body(client, cluster)
            assert not cluster.handler_errors, cluster.handler_errors
            return result

    return asyncio.run(asyncio.wait_for(main(), 30))
