"""The codec warm-up (protocol.CodecWarmup): codecs a call will need are compiled while its
first requests are on the wire, in the order they will be needed, and into the very cache
kafka-python's own encode/decode read (so none is compiled twice)."""

from __future__ import annotations

import asyncio

from airflow_provider_kgroups.client.cluster import METADATA
from airflow_provider_kgroups.client.handlers.offset_fetch import OffsetFetchHandler
from airflow_provider_kgroups.client.protocol import (
    ApiVersionsRequest,
    CodecWarmup,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    OffsetFetchRequest,
    compile_codecs,
)


async def test_wanted_codecs_compile_after_a_write_next_up_first_each_once():
    compiled: list[tuple[str, int]] = []
    warmup = CodecWarmup(lambda cls, version: compiled.append((cls.__name__, version)))

    warmup.want(OffsetFetchRequest)  # the call's own request: after the lookups
    warmup.want(MetadataRequest, next_up=True)
    warmup.want(FindCoordinatorRequest, 4, next_up=True)
    warmup.want(ApiVersionsRequest, 3, next_up=True)  # the handshake: first of all
    warmup.want(OffsetFetchRequest)  # wanted twice: compiled once
    warmup.want(ApiVersionsRequest, None)  # a version this client has: its highest
    assert compiled == []  # nothing before a request is on the wire
    warmup.written()
    warmup.written()  # one chain of steps, not two
    for _ in range(20):
        await asyncio.sleep(0)
    warmup.want(MetadataRequest)  # compiled already: not again
    warmup.written()
    await asyncio.sleep(0)

    metadata, offset_fetch = METADATA.max_version, OffsetFetchHandler.kafka_api.max_version
    assert compiled == [
        ("ApiVersionsRequest", 3),
        ("ApiVersionsResponse", 3),
        ("FindCoordinatorRequest", 4),
        ("FindCoordinatorResponse", 4),
        ("MetadataRequest", metadata),
        ("MetadataResponse", metadata),
        ("OffsetFetchRequest", offset_fetch),
    ]  # its response: client/wire.py decodes it


async def test_one_compile_per_event_loop_step():
    """A response arriving meanwhile waits for one compile at most: each step compiles one codec
    (a request's encoder or a response's decoder)."""
    compiled: list[str] = []
    warmup = CodecWarmup(lambda cls, version: compiled.append(cls.__name__))

    warmup.want(MetadataRequest)
    warmup.want(OffsetFetchRequest)
    warmup.written()
    seen = []
    for _ in range(5):
        await asyncio.sleep(0)
        seen.append(len(compiled))
    assert seen == [1, 2, 3, 3, 3]
    assert compiled == ["MetadataRequest", "MetadataResponse", "OffsetFetchRequest"]


def test_compiled_codecs_are_the_ones_encode_and_decode_use():
    """After compile_codecs, encoding the request and decoding its response at that version
    generate no further code: the warm-up fills kafka-python's own cache."""
    version = 9
    for cache in (
        ListOffsetsRequest._struct._compiled_encoders,
        ListOffsetsResponse._struct._compiled_encoders,
    ):
        for key in [k for k in cache if version in k]:  # as in a fresh process (recompiled on use)
            del cache[key]
    compile_codecs(ListOffsetsRequest, version)
    encoders = dict(ListOffsetsRequest._struct._compiled_encoders)
    decoders = dict(ListOffsetsResponse._struct._compiled_encoders)
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name="t",
                partitions=[
                    ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, timestamp=-1)
                ],
            )
        ],
    )
    request.encode(version=version)
    response = ListOffsetsResponse(
        throttle_time_ms=0,
        topics=[
            ListOffsetsResponse.ListOffsetsTopicResponse(
                name="t",
                partitions=[
                    ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
                        partition_index=0, error_code=0, timestamp=-1, offset=42, leader_epoch=3
                    )
                ],
            )
        ],
    )
    decoded = ListOffsetsResponse.decode(response.encode(version=version), version=version)
    assert decoded.topics[0].partitions[0].offset == 42
    assert ListOffsetsRequest._struct._compiled_encoders.keys() == encoders.keys()
    assert {k for k in ListOffsetsResponse._struct._compiled_encoders if k[0] == "decode"} == {
        k for k in decoders if k[0] == "decode"
    }


async def test_a_cold_call_names_every_codec_it_then_uses_at_the_version_it_sends(monkeypatch):
    """On the fake cluster: what a cold fetch_committed_offsets + log_end_offsets asks the warm-up
    for (the handshake, the lookups, the call's own API, in that order) is exactly what it then
    sends, at the versions it sends them (KafkaApis answers ApiVersions with the fake's ranges;
    the client's highest versions are within them). OffsetFetch's response is decoded by
    client/wire.py, so only its request is wanted."""
    from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition, runner
    from airflow_provider_kgroups.client.transport import connection
    from tests.support.fakekafka import FakeCluster
    from tests.support.fakeutil import config

    compiled: list[tuple[str, int]] = []
    fresh = CodecWarmup(lambda cls, version: compiled.append((cls.__name__, version)))
    monkeypatch.setattr(runner, "warmup", fresh)
    monkeypatch.setattr(connection, "warmup", fresh)

    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 3, end_offsets=[10, 20, 30], leaders=[0, 1, 2])
        c.add_group("billing", offsets={("orders", 1): 7}, coordinator=2)
        async with AsyncGroupsClient(config(c)) as client:
            offsets = await client.fetch_committed_offsets(["billing"], timeout_s=10)
            ends = await client.log_end_offsets(offsets.values["billing"].committed(), timeout_s=10)
        assert offsets.values["billing"].committed() == {TopicPartition("orders", 1): 7}
        assert {tp: v.offset for tp, v in ends.values.items()} == {TopicPartition("orders", 1): 20}
        sent = {(r.api + "Request", r.api_version) for r in c.requests()}

    assert compiled == [
        ("ApiVersionsRequest", 3),
        ("ApiVersionsResponse", 3),
        ("FindCoordinatorRequest", 6),
        ("FindCoordinatorResponse", 6),
        ("MetadataRequest", 12),
        ("MetadataResponse", 12),
        ("OffsetFetchRequest", 9),
        ("ListOffsetsRequest", 9),
        ("ListOffsetsResponse", 9),
    ]
    assert sent == {(name, version) for name, version in compiled if name.endswith("Request")}
