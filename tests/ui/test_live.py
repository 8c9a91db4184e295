""" "Refresh now" (ui/live.py) against the fake cluster: the group's lag, the age of its worst
partitions and their shortest retention margin, from the topic's retention.ms as DescribeConfigs
answers it (the fake follows Apache Kafka there: tests/apachekafka/test_topic_retention.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient
from airflow_provider_kgroups.ui.live import FLOOR_S, live_view
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config

HOUR_MS = 3_600_000


@pytest.mark.parametrize("retention_hours, at_risk", [(1.5, True), (48, False)])
def test_the_live_view_names_the_shortest_retention_margin(retention_hours, at_risk):
    now_ms = int(time.time() * 1000)
    with FakeCluster.running_in_thread(brokers=1) as cluster:
        cluster.add_topic("orders", 2, config={"retention.ms": str(int(retention_hours * HOUR_MS))})
        for p in (0, 1):  # one record a minute, the oldest an hour old
            cluster.append("orders", p, 60, timestamp_ms=lambda offset: now_ms - HOUR_MS + offset * 60_000)
        cluster.add_group("g", offsets={("orders", 0): 10, ("orders", 1): 30})

        async def view() -> dict:
            async with AsyncGroupsClient(config(cluster)) as client:
                return await live_view(client, "g")

        out = asyncio.run(view())
    margin = out["retention_margin"]
    assert (margin["topic"], margin["partition"]) == ("orders", 0)  # its first unread record is the oldest
    expected = (now_ms - HOUR_MS + 10 * 60_000 + retention_hours * HOUR_MS - out["taken_at_ms"]) / 1000
    assert margin["seconds"] == pytest.approx(expected, abs=1)
    assert (margin["below_floor_s"] == FLOOR_S) is at_risk


def test_a_compacted_topic_has_no_margin_and_says_why():
    with FakeCluster.running_in_thread(brokers=1) as cluster:
        cluster.add_topic("state", 1, config={"cleanup.policy": "compact"})
        cluster.append("state", 0, 5)
        cluster.add_group("g", offsets={("state", 0): 1})

        async def view() -> dict:
            async with AsyncGroupsClient(config(cluster)) as client:
                return await live_view(client, "g")

        margin = asyncio.run(view())["retention_margin"]
    assert margin["seconds"] is None and "cleanup.policy=compact" in margin["reasons"][0]
