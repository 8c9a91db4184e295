"""The cold path: what a new client sends before its first answer, and what waits for what.

A FindCoordinator answer carries the coordinator's node id, host and port
(FindCoordinatorResponse.json; KafkaApis.handleFindCoordinatorRequest answers it on any
broker), so a lookup needs no broker list first: on a cold client the first Metadata (the
broker list) and the first FindCoordinator go out together on the first connection. Kafka
answers a connection's requests in the order they came (SocketServer.Processor mutes the
channel until the response is sent), so the two share one round trip.

When no broker answers Metadata, the call still raises :class:`NoBrokerAvailable` naming each
broker, as a call did when the Metadata went first (NetworkClient.DefaultMetadataUpdater moves
on to the next leastLoadedNode; the client gives up once every broker failed).
"""

from __future__ import annotations

import asyncio
import re

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition
from airflow_provider_kgroups.client.errors import NoBrokerAvailable
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config, counts, until

DEADLINE_S = 20.0
HELD_S = 60.0  # how long the fake holds a Metadata answer: far beyond the test's own deadline


async def test_find_coordinator_goes_out_while_the_first_metadata_is_unanswered():
    """Metadata answers are held back a minute: a cold fetch_committed_offsets still sends its
    FindCoordinator, on the same connection (before this, nothing followed the first Metadata
    until its answer came). Its answer comes after the Metadata's (in order), so the call is
    cancelled here; a second, unhindered client gets the exact offsets with one request per
    API, the Metadata and the FindCoordinator on its first connection."""
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            c.add_topic("orders", 3, end_offsets=[10, 20, 30], leaders=[0, 1, 2])
            c.add_group("billing", offsets={("orders", 1): 7}, coordinator=2)
            c.set_delay(latency_s=HELD_S, api="Metadata")
            async with AsyncGroupsClient(config(c)) as client:
                call = asyncio.ensure_future(
                    client.fetch_committed_offsets(["billing"], timeout_s=DEADLINE_S)
                )
                await until(lambda: c.count("FindCoordinator") == 1, "FindCoordinator sent")
                assert not call.done()  # the Metadata answer is still out
                assert counts(c) == {"Metadata": 1, "FindCoordinator": 1}
                assert (c.count("Metadata", 0), c.count("FindCoordinator", 0)) == (1, 1)
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
            c.set_delay(latency_s=0.0, api="Metadata")
            c.reset_counts()
            async with AsyncGroupsClient(config(c)) as client:
                offsets = await client.fetch_committed_offsets(["billing"], timeout_s=5)
            assert offsets.failures == {}
            assert offsets.values["billing"].committed() == {TopicPartition("orders", 1): 7}
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 1}
            assert (c.count("Metadata", 0), c.count("FindCoordinator", 0), c.count("OffsetFetch", 2)) == (
                1,
                1,
                1,
            )


async def test_no_broker_answering_metadata_still_fails_the_call_as_a_whole():
    """Every broker silent for Metadata: the FindCoordinator queued behind it on each
    connection is never read either, and the call raises NoBrokerAvailable naming every
    broker, not a per-group failure."""
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            c.add_topic("orders", 3, end_offsets=[10, 20, 30], leaders=[0, 1, 2])
            c.add_group("billing", offsets={("orders", 1): 7}, coordinator=2)
            for node in range(3):
                c.blackhole(node, api="Metadata")
            async with AsyncGroupsClient(config(c, request_timeout_s=0.2)) as client:
                with pytest.raises(NoBrokerAvailable) as raised:
                    await client.fetch_committed_offsets(["billing"], timeout_s=10)
            assert str(raised.value).startswith("no broker answered Metadata (broker -1: ")
            assert re.findall(r"broker (-\d): Metadata", str(raised.value)) == ["-1", "-2", "-3"]
            assert [c.count("Metadata", n) for n in range(3)] == [1, 1, 1]
            assert counts(c) == {"Metadata": 3}  # no FindCoordinator read: each waited behind a Metadata
            c.clear_faults()
