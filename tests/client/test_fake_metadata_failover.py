"""Metadata failover: a broker that goes silent or drops the connection after it opened is not
the end of a call; the next broker is asked within the same deadline, as the Java client's
NetworkClient.DefaultMetadataUpdater does (maybeUpdate picks leastLoadedNode; a failed or
timed-out request leaves that node for another on the next try)."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition
from airflow_provider_kgroups.client.errors import NoBrokerAvailable
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config, counts

DEADLINE_S = 20.0
TPS = [TopicPartition("orders", p) for p in range(3)]


def seed(c: FakeCluster) -> None:
    c.add_topic("orders", 3, end_offsets=[10, 20, 30], leaders=[0, 1, 2])


async def test_first_bootstrap_broker_silent_after_connecting_the_next_one_answers():
    """Broker 0 (first in the bootstrap list) answers ApiVersions, then never Metadata."""
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            c.blackhole(0, api="Metadata")
            async with AsyncGroupsClient(config(c, request_timeout_s=0.3)) as client:
                ends = await client.log_end_offsets(TPS, timeout_s=5)
            assert ends.failures == {}
            assert {tp: v.offset for tp, v in ends.values.items()} == {TPS[0]: 10, TPS[1]: 20, TPS[2]: 30}
            # one unanswered Metadata on broker 0, then the bootstrap and the leader lookup on broker 1
            assert {n: c.count("Metadata", n) for n in range(3)} == {0: 1, 1: 2, 2: 0}
            assert counts(c) == {"Metadata": 3, "ListOffsets": 3}


async def test_a_broker_that_drops_the_metadata_response_is_left_for_the_next():
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            drop = c.drop_mid_response("Metadata", node=0, times=1)
            async with AsyncGroupsClient(config(c)) as client:
                topics = await client.describe_topics(["orders"], timeout_s=5)
            assert {p: leader for p, leader in topics["orders"].partitions.items()} == {0: 0, 1: 1, 2: 2}
            assert drop.hits == 1
            assert {n: c.count("Metadata", n) for n in range(3)} == {0: 1, 1: 1, 2: 0}


async def test_every_broker_silent_raises_naming_each_one_within_the_deadline():
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            for node in range(3):
                c.blackhole(node, api="Metadata")
            async with AsyncGroupsClient(config(c, request_timeout_s=0.2)) as client:
                with pytest.raises(NoBrokerAvailable) as raised:
                    await client.describe_topics(["orders"], timeout_s=10)
            message = str(raised.value)
            assert message.startswith("no broker answered Metadata")
            assert all(f"broker -{n + 1}: Metadata" in message for n in range(3)), message
            assert {n: c.count("Metadata", n) for n in range(3)} == {0: 1, 1: 1, 2: 1}
            c.clear_faults()


async def test_a_silent_broker_for_find_coordinator_is_left_for_another_within_the_deadline():
    """The lookup's least-loaded broker goes silent for FindCoordinator: the timed-out
    connection is dropped and the retried lookup goes to a live broker (AdminApiDriver retries
    the lookup stage; leastLoadedNode skips the failed node)."""
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            c.add_group("billing", offsets={("orders", 0): 7}, coordinator=2)
            async with AsyncGroupsClient(config(c, request_timeout_s=0.3)) as client:
                await client.describe_topics(["orders"])  # connection to the first bootstrap broker
                c.blackhole(0, api="FindCoordinator")
                c.reset_counts()
                offsets = await client.fetch_committed_offsets(["billing"], timeout_s=5)
            assert offsets.failures == {}
            assert offsets.values["billing"].committed() == {TPS[0]: 7}
            finds = {n: c.count("FindCoordinator", n) for n in range(3)}
            assert finds[0] == 1 and finds[1] + finds[2] == 1
            assert counts(c) == {"FindCoordinator": 2, "OffsetFetch": 1}
            c.clear_faults()
