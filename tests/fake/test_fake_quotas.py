"""The fake's quota switch (KIP-219): the response goes out at once with throttle_time_ms, then
the broker reads nothing from that connection for that long (RequestHandlerHelper.
sendResponseMaybeThrottle, ClientQuotaManager.throttle, SocketServer / KafkaChannel
MUTED_AND_THROTTLED). A request written meanwhile is read when the mute ends; the request
log keeps when it arrived."""

from __future__ import annotations

import asyncio

from kafka.protocol.metadata import MetadataRequest

from tests.support.fakekafka import FakeCluster, WireClient

DEADLINE_S = 20.0


async def test_a_throttled_response_mutes_the_connection_and_logs_early_arrivals():
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=2) as c:
            throttle = c.throttle(1, 300, api="Metadata", times=1)
            async with WireClient(*c.address(1)) as client:
                first = await client.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 8)
                assert first.throttle_time_ms == 300
                [(start, end)] = throttle.mutes
                assert round(end - start, 3) == 0.3
                # a client that does not hold back: its request waits unread until the mute ends
                second = await client.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 8)
                assert second.throttle_time_ms == 0
            async with WireClient(*c.address(0)) as other:  # the quota was on broker 1 only
                assert (
                    await other.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 8)
                ).throttle_time_ms == 0
            first_log, second_log = c.requests("Metadata", 1)
            assert first_log.arrived is None
            assert start < second_log.arrived < end <= second_log.at
            assert throttle.hits == 1 and c.count("Metadata") == 3
