"""Wire defects found by reading Kafka's message specs against the handlers, each at the version
named, on the fake cluster. The specs are Apache Kafka's
``clients/src/main/resources/common/message/*.json`` (read at trunk, October 2024); the Java
behaviour matched is named in each test. (ListGroups below v4/v5: test_fake_groups.py,
``test_list_groups_on_an_old_broker_applies_the_filters_on_the_client``.)"""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, TopicExistence, TopicPartition
from airflow_provider_kgroups.client.errors import CLIENT_UNSUPPORTED, UnsupportedVersion
from airflow_provider_kgroups.client.protocol import ListOffsetsResponse
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakeutil import committed, config, seed


async def test_list_offsets_v0_answers_old_style_offsets_so_the_handler_needs_v1():
    """ListOffsetsResponse.json: v0 carries its answer in ``OldStyleOffsets`` ("versions": "0",
    a list of log segments' offsets); ``Offset`` is "1+", default -1. Read as if it were v1,
    every partition of a v0 broker was offset -1 with no error. The handler declares v1 (Kafka
    0.10.1) as its need: a v0 broker's partitions fail with CLIENT_UNSUPPORTED, unsent, and
    -1 is never reported as an offset. (The codec has no v0 request, as Kafka 4 dropped it: the
    fake advertises v0 on broker 1 and would close the connection on such a request.)"""
    P = ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    v0 = ListOffsetsResponse(
        throttle_time_ms=0,
        topics=[
            ListOffsetsResponse.ListOffsetsTopicResponse(
                name="orders",
                partitions=[P(partition_index=0, error_code=0, old_style_offsets=[42], offset=42)],
            )
        ],
    )
    read = ListOffsetsResponse.decode(v0.encode(version=0), version=0).topics[0].partitions[0]
    assert (read.error_code, read.offset, list(read.old_style_offsets)) == (
        0,
        -1,
        [42],
    )  # the defect, on the wire

    async with FakeCluster(brokers=2, broker_api_versions={1: {"ListOffsets": (0, 0)}}) as c:
        c.add_topic("orders", 4, end_offsets=[10, 11, 12, 13], leaders=[0, 1, 0, 1])
        tps = [TopicPartition("orders", p) for p in range(4)]
        async with AsyncGroupsClient(config(c)) as client:
            ends = await client.log_end_offsets(tps)
            starts = await client.log_start_offsets(tps)
        for result in (ends, starts):
            assert set(result.failures) == {tps[1], tps[3]}
            assert {f.code for f in result.failures.values()} == {CLIENT_UNSUPPORTED}
            assert "broker 1 has ListOffsets up to v0; one exact offset per partition" in str(
                result.failures[tps[1]]
            )
        assert {tp: v.offset for tp, v in ends.values.items()} == {tps[0]: 10, tps[2]: 12}
        assert {tp: v.offset for tp, v in starts.values.items()} == {tps[0]: 0, tps[2]: 0}
        assert c.count("ListOffsets", 1) == 0 and c.count("ListOffsets", 0) == 2


@pytest.mark.parametrize(
    "error, relookup",
    [
        (Err.NOT_COORDINATOR, True),
        (Err.COORDINATOR_NOT_AVAILABLE, True),
        (Err.COORDINATOR_LOAD_IN_PROGRESS, False),
    ],
)
async def test_offset_fetch_v1_coordinator_errors_on_every_partition_are_the_groups(error, relookup):
    """OffsetFetchResponse.json: the top-level ErrorCode is "2-7"; in v0-v1 a coordinator error
    arrives on every partition (KafkaApis of those versions). Java's OffsetFetchResponse
    promotes any partition error but UNKNOWN_TOPIC_OR_PARTITION and TOPIC_AUTHORIZATION_FAILED
    to the group (``topLevelError``), so the admin handler re-looks the coordinator up (15, 16)
    or asks it again (14). Before, the group completed with these as per-partition failures and
    no offsets, with no retry."""
    async with FakeCluster(brokers=3, api_versions={"OffsetFetch": (1, 1)}) as c:
        seeded = seed(c, 6)
        topics = {"orders": [0, 1, 2]}
        async with AsyncGroupsClient(config(c)) as client:
            await client.fetch_committed_offsets(list(seeded), topics=topics)  # coordinators cached
            c.reset_counts()
            c.inject_error("OffsetFetch", error, key="g0", times=1)
            result = await client.fetch_committed_offsets(list(seeded), topics=topics)
        assert result.failures == {}
        assert committed(result) == seeded
        assert all(o.error is None for g in result.values.values() for o in g.partitions.values())
        assert c.count("FindCoordinator") == (1 if relookup else 0)
        assert [e.request.group_id for e in c.requests("OffsetFetch")].count("g0") == 2
        assert {e.api_version for e in c.requests("OffsetFetch")} == {1}


async def test_offset_fetch_v1_keeps_partition_errors_and_fails_the_group_on_others_and_v0_is_never_sent():
    """Below v2, UNKNOWN_TOPIC_OR_PARTITION stays the partition's (PARTITION_ERRORS); another
    error on every partition (GROUP_AUTHORIZATION_FAILED) fails the group alone. v0 reads
    offsets committed to ZooKeeper (OffsetFetchRequest.json: "In version 0, the request read
    offsets from ZK"): a broker with nothing newer fails its groups, unsent (advertised by the
    fake only: the codec, like Kafka 4, has no v0)."""
    async with FakeCluster(
        brokers=3, api_versions={"OffsetFetch": (1, 1)}, broker_api_versions={2: {"OffsetFetch": (0, 0)}}
    ) as c:
        seeded = seed(c, 9)
        on_v0 = {g for g in seeded if c.coordinator_of(g) == 2}
        denied, partial = [g for g in seeded if g not in on_v0][:2]
        c.inject_error("OffsetFetch", Err.GROUP_AUTHORIZATION_FAILED, key=denied)
        c.inject_error("OffsetFetch", Err.UNKNOWN_TOPIC_OR_PARTITION, key=(partial, "orders", 1))
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded), topics={"orders": [0, 1, 2]})
        assert set(result.failures) == on_v0 | {denied}
        assert result.failures[denied].code == Err.GROUP_AUTHORIZATION_FAILED
        assert {result.failures[g].code for g in on_v0} == {CLIENT_UNSUPPORTED}
        assert "offsets committed to Kafka (v0 reads ZooKeeper's) needs v1" in str(
            result.failures[min(on_v0)]
        )
        assert committed(result) == {g: o for g, o in seeded.items() if g not in on_v0 | {denied}}
        unknown = result.values[partial].partitions[TopicPartition("orders", 1)]
        assert unknown.offset is None and unknown.error.code == Err.UNKNOWN_TOPIC_OR_PARTITION
        assert c.count("OffsetFetch", 2) == 0


async def test_metadata_below_v4_never_names_topics_so_nothing_is_auto_created():
    """MetadataRequest.json: "Version 4 adds AllowAutoTopicCreation" (default true); below v4 a
    broker with auto.create.topics.enable creates every topic a request names
    (KafkaApis.handleTopicMetadataRequest). Java's MetadataRequest.Builder.build refuses such a
    request; so does this client: the leaders of a missing topic's partitions, a topic check and
    a topic description fail with CLIENT_UNSUPPORTED / UnsupportedVersion, no Metadata naming a
    topic is sent below v4, and the topic is not created. From v4 the same calls say it is absent
    without creating it."""
    async with FakeCluster(brokers=2, api_versions={"Metadata": (0, 3)}) as c:
        c.auto_create_topics = True
        c.add_topic("orders", 1, end_offsets=5)
        async with AsyncGroupsClient(config(c)) as client:
            ends = await client.log_end_offsets(
                [TopicPartition("typo", 0), TopicPartition("orders", 0)], timeout_s=5
            )
            checked = await client.check_topics(["typo", "orders"], timeout_s=5)
            with pytest.raises(UnsupportedVersion, match="cannot name topics"):
                await client.describe_topics(["typo"], timeout_s=5)
            everything = await client.describe_topics(None, timeout_s=5)  # all topics: nothing named
        assert {tp: f.code for tp, f in ends.failures.items()} == {
            TopicPartition("typo", 0): CLIENT_UNSUPPORTED,
            TopicPartition("orders", 0): CLIENT_UNSUPPORTED,
        }
        assert "AllowAutoTopicCreation=false needs v4" in ends.failures[TopicPartition("typo", 0)].message
        assert {t: f.code for t, f in checked.failures.items()} == {
            "typo": CLIENT_UNSUPPORTED,
            "orders": CLIENT_UNSUPPORTED,
        }
        assert set(everything) == {"orders"}
        assert "typo" not in c.topics
        named = [e for e in c.requests("Metadata") if e.request.topics]
        assert named == [] and c.count("Metadata") >= 1

    async with FakeCluster(brokers=2) as c:  # v4+: AllowAutoTopicCreation=false is said
        c.auto_create_topics = True
        async with AsyncGroupsClient(config(c)) as client:
            checked = await client.check_topics(["typo"], timeout_s=5)
        assert checked.values == {"typo": TopicExistence.ABSENT} and "typo" not in c.topics
        assert all(e.request.allow_auto_topic_creation is False for e in c.requests("Metadata"))


async def test_metadata_naming_topics_moves_on_to_a_broker_that_can_say_no_auto_creation():
    """During a rolling upgrade one broker may still be below Metadata v4: a request naming topics
    is not sent there but to a broker that can say AllowAutoTopicCreation=false."""
    async with FakeCluster(brokers=3, broker_api_versions={0: {"Metadata": (0, 3)}}) as c:
        c.auto_create_topics = True
        c.add_topic("orders", 3, end_offsets=7)
        async with AsyncGroupsClient(config(c)) as client:
            ends = await client.log_end_offsets([TopicPartition("orders", p) for p in range(3)], timeout_s=5)
            checked = await client.check_topics(["typo"], timeout_s=5)
        assert ends.failures == {} and {v.offset for v in ends.values.values()} == {7}
        assert checked.values == {"typo": TopicExistence.ABSENT} and "typo" not in c.topics
        assert [e for e in c.requests("Metadata", node=0) if e.request.topics] == []
