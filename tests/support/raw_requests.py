"""Requests built by hand for raw wire tests of the fake cluster (``roundtrip``, ``WireClient``),
at exactly the shape and version a test means, and readers of their answers."""

from __future__ import annotations

from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetFetchRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from tests.support.fakekafka import WireClient

#: a raw wire test of the fake finishes within this (``@within(WIRE_TEST_DEADLINE_S)``)
WIRE_TEST_DEADLINE_S = 20.0


def find_coordinator(*keys: str):
    return FindCoordinatorRequest(key_type=0, coordinator_keys=list(keys))


def offset_fetch_v8(groups: dict[str, dict[str, list[int]] | None], *, require_stable: bool = False):
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    return OffsetFetchRequest(
        require_stable=require_stable,
        groups=[
            G(
                group_id=g,
                topics=None
                if topics is None
                else [G.OffsetFetchRequestTopics(name=t, partition_indexes=ps) for t, ps in topics.items()],
            )
            for g, topics in groups.items()
        ],
    )


def offset_fetch_single(group: str, topics: dict[str, list[int]] | None = None):
    T = OffsetFetchRequest.OffsetFetchRequestTopic
    return OffsetFetchRequest(
        group_id=group,
        require_stable=False,
        topics=None if topics is None else [T(name=t, partition_indexes=ps) for t, ps in topics.items()],
    )


def list_offsets(partitions: dict[tuple[str, int], int], isolation_level: int = 0):
    T = ListOffsetsRequest.ListOffsetsTopic
    by_topic: dict[str, list] = {}
    for (topic, p), ts in partitions.items():
        by_topic.setdefault(topic, []).append(
            T.ListOffsetsPartition(partition_index=p, timestamp=ts, current_leader_epoch=-1)
        )
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[T(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


def fetch_request(topic: str, partition: int, offset: int, *, topic_id=None, max_bytes: int = 1 << 20):
    T = FetchRequest.FetchTopic
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        forgotten_topics_data=[],
        rack_id="",
        topics=[
            T(
                topic=topic,
                topic_id=topic_id,
                partitions=[
                    T.FetchPartition(
                        partition=partition,
                        fetch_offset=offset,
                        partition_max_bytes=max_bytes,
                        current_leader_epoch=-1,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                    )
                ],
            )
        ],
    )


def offsets_of(group_response) -> dict[tuple[str, int], tuple[int, int]]:
    """{(topic, partition): (committed offset, error)} of one OffsetFetch group/response."""
    return {
        (t.name, p.partition_index): (p.committed_offset, p.error_code)
        for t in group_response.topics
        for p in t.partitions
    }


async def sasl_exchange(client: WireClient, mechanism: str, *tokens: bytes):
    """A SaslHandshake v1 for ``mechanism``, then one SaslAuthenticate v2 per token: the answers."""
    hs = await client.send(SaslHandshakeRequest(mechanism=mechanism), 1)
    assert hs.error_code == 0
    return [await client.send(SaslAuthenticateRequest(auth_bytes=t), 2) for t in tokens]
