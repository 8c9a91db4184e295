"""Quota throttling (KIP-219) on the fake cluster.

The broker answers at once with throttle_time_ms and then mutes the connection
(RequestHandlerHelper.sendResponseMaybeThrottle, ClientQuotaManager.throttle). The client
follows NetworkClient.maybeThrottle / ClusterConnectionStates.throttle: nothing more is written
to that broker until the throttle ends; a request's timeout starts when it is written, and
requests already in flight get the throttle added (InFlightRequests.incrementThrottleTime).
"""

from __future__ import annotations

import asyncio

from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config, counts

DEADLINE_S = 20.0
A = [TopicPartition("a", p) for p in range(2)]  # led by broker 1
B = [TopicPartition("b", p) for p in range(2)]  # led by broker 1


def seed(c: FakeCluster) -> None:
    c.add_topic("a", 2, end_offsets=[10, 11], leaders=[1, 1])
    c.add_topic("b", 2, end_offsets=[20, 21], leaders=[1, 1])


def never_during_a_mute(c: FakeCluster, throttle, node: int) -> None:
    """No request reached ``node`` while it muted the connection."""
    for entry in c.requests(node=node):
        arrived = entry.arrived if entry.arrived is not None else entry.at
        assert not any(start < arrived < end for start, end in throttle.mutes), (
            entry.api,
            arrived,
            throttle.mutes,
        )


async def test_nothing_is_sent_to_a_throttled_broker_until_the_throttle_ends():
    """The request timeout (0.1 s) is shorter than the throttle (0.4 s): it must not run while
    the request waits for the throttle to end."""
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            throttle = c.throttle(1, 400, api="ListOffsets", times=1)
            async with AsyncGroupsClient(config(c, request_timeout_s=0.1)) as client:
                first = await client.log_end_offsets(A)
                second = await client.log_end_offsets(B)
            assert first.failures == {} and second.failures == {}
            assert {tp: v.offset for tp, v in (first.values | second.values).items()} == {
                A[0]: 10,
                A[1]: 11,
                B[0]: 20,
                B[1]: 21,
            }
            assert counts(c) == {"Metadata": 3, "ListOffsets": 2}
            assert c.count("ApiVersions", 1) == 1  # the connection was never given up
            assert throttle.hits == 1 and len(throttle.mutes) == 1
            never_during_a_mute(c, throttle, 1)
            _first_sent, second_sent = c.requests("ListOffsets", 1)
            assert second_sent.arrived is None and second_sent.at >= throttle.mutes[0][1]


async def test_a_request_already_in_flight_does_not_time_out_because_of_the_throttle():
    """Two calls pipeline ListOffsets on broker 1; the first response throttles for 0.4 s, and
    the second request (already written, held unread by the broker) has a 0.15 s timeout."""
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            async with AsyncGroupsClient(config(c, request_timeout_s=0.15)) as client:
                await client.describe_topics(["a", "b"])  # leaders cached, connections open
                c.reset_counts()
                c.set_delay(processing_s=0.05, node=1, api="ListOffsets")  # both written before an answer
                throttle = c.throttle(1, 400, api="ListOffsets", times=1)
                first, second = await asyncio.gather(client.log_end_offsets(A), client.log_end_offsets(B))
            assert first.failures == {} and second.failures == {}
            assert {tp: v.offset for tp, v in (first.values | second.values).items()} == {
                A[0]: 10,
                A[1]: 11,
                B[0]: 20,
                B[1]: 21,
            }
            assert counts(c) == {"ListOffsets": 2}  # no timeout, no retry, no reconnect
            [(start, end)] = throttle.mutes
            _, held = c.requests("ListOffsets", 1)
            assert held.arrived is not None and held.arrived <= start + 0.05 and held.at >= end


async def test_a_throttle_past_the_deadline_fails_at_once_naming_the_quota_and_sends_nothing():
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            throttle = c.throttle(1, 30_000, api="ListOffsets", times=1)
            async with AsyncGroupsClient(config(c)) as client:
                first = await client.log_end_offsets(A)
                second = await client.log_end_offsets(B, timeout_s=2)
            assert first.failures == {} and second.values == {}
            assert {tp: f.code for tp, f in second.failures.items()} == {tp: -100 for tp in B}
            assert all("throttles this client (quota)" in f.message for f in second.failures.values())
            assert counts(c) == {"Metadata": 3, "ListOffsets": 1}
            assert throttle.hits == 1


async def test_metadata_goes_to_another_broker_while_one_throttles_past_the_deadline():
    """A broker that throttles this client for longer than the call may take is left for the
    next least-loaded broker (NetworkClient.leastLoadedNode skips throttled nodes)."""
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            throttle = c.throttle(0, 30_000, api="Metadata", times=1)
            async with AsyncGroupsClient(config(c)) as client:
                first = await client.describe_topics(["a"], timeout_s=5)
                second = await client.describe_topics(["b"], timeout_s=5)
            assert first["a"].partitions == {0: 1, 1: 1} and second["b"].partitions == {0: 1, 1: 1}
            assert {n: c.count("Metadata", n) for n in range(3)} == {0: 1, 1: 1, 2: 0}
            assert throttle.hits == 1
            never_during_a_mute(c, throttle, 0)
