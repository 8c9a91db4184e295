"""OffsetDelete (KIP-496) against the fake cluster's model of Kafka's group coordinator
(``OffsetMetadataManager.deleteOffsets``, ``Group.validateOffsetDelete`` / ``isSubscribedToTopic``)."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    ClientConfig,
    ConfigurationError,
    TopicPartition,
)
from airflow_provider_kgroups.client.errors import CLIENT_UNSUPPORTED, ErrorCode
from tests.support.fakekafka import FakeCluster, Member
from tests.support.fakeutil import config

O0, O1, P0 = TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("payments", 0)


async def run(c: FakeCluster, partitions):
    async with AsyncGroupsClient(config(c)) as client:
        return await client.delete_committed_offsets(partitions)


@pytest.fixture
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 2, end_offsets=100)
        c.add_topic("payments", 1, end_offsets=100)
        yield c


async def test_empty_group_loses_the_named_partitions_only(cluster):
    cluster.add_group("idle", offsets={("orders", 0): 5, ("orders", 1): 6, ("payments", 0): 7})
    result = await run(cluster, {"idle": [O0, P0]})
    assert result.failures == {} and result.values["idle"] == {O0: None, P0: None}
    assert cluster.committed("idle") == {("orders", 1): 6}


async def test_live_group_keeps_a_subscribed_topic_and_loses_the_others(cluster):
    """Classic group with consumer-protocol members: the subscription decides per topic."""
    cluster.add_group(
        "live", offsets={("orders", 0): 5, ("payments", 0): 7}, members=[Member("m-1", {"orders": [0, 1]})]
    )
    result = await run(cluster, {"live": [O0, O1, P0]})
    outcome = result.values["live"]
    assert outcome[P0] is None
    assert outcome[O0].code == outcome[O1].code == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    assert cluster.committed("live") == {("orders", 0): 5}


async def test_streams_group_keeps_what_its_topology_reads_while_it_runs(cluster):
    """As Kafka 4.4 answers for a real Kafka Streams app (tests/apachekafka/test_streams_groups.py):
    while it has members, the source and repartition topics its topology reads are
    GROUP_SUBSCRIBED_TO_TOPIC; once Empty (the app stopped) they are deleted."""
    cluster.add_topic("app-repartition", 1, end_offsets=100)
    rep = TopicPartition("app-repartition", 0)
    topology = {"0": ["orders"], "1": {"repartition_sources": ["app-repartition"]}}
    offsets = {("orders", 0): 5, ("app-repartition", 0): 4, ("payments", 0): 7}
    cluster.add_group(
        "app",
        group_type="streams",
        topology=topology,
        offsets=offsets,
        members=[Member("t-1", {"0": [0, 1], "1": [0]})],
    )
    outcome = (await run(cluster, {"app": [O0, rep, P0]})).values["app"]
    assert outcome[P0] is None
    assert outcome[O0].code == outcome[rep].code == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    cluster.add_group("app", group_type="streams", topology=topology, offsets=offsets)
    assert (await run(cluster, {"app": [O0, rep]})).values["app"] == {O0: None, rep: None}
    assert cluster.committed("app") == {("payments", 0): 7}


async def test_consumer_protocol_group_judged_by_its_members_subscriptions(cluster):
    cluster.add_group(
        "kip848",
        group_type="consumer",
        offsets={("orders", 0): 5, ("payments", 0): 7},
        members=[Member("m-1", {"payments": [0]}, member_epoch=3)],
    )
    outcome = (await run(cluster, {"kip848": [O0, P0]})).values["kip848"]
    assert outcome[O0] is None and outcome[P0].code == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC


async def test_group_level_refusals_fail_the_group(cluster):
    cluster.add_group(
        "connect-ish",
        protocol_type="connect",
        members=[Member("w-1", metadata_bytes=b"x", assignment_bytes=b"y")],
        offsets={("orders", 0): 1},
    )
    cluster.add_group("shared", group_type="share", offsets={})
    result = await run(cluster, {"connect-ish": [O0], "absent": [O0], "shared": [O0]})
    assert result.values == {}
    assert result.failures["connect-ish"].code == ErrorCode.NON_EMPTY_GROUP
    assert result.failures["absent"].code == ErrorCode.GROUP_ID_NOT_FOUND
    assert result.failures["shared"].code == ErrorCode.GROUP_ID_NOT_FOUND


async def test_unknown_topic_and_partition_answer_per_partition(cluster):
    cluster.add_group("idle", offsets={("orders", 0): 5})
    result = await run(cluster, {"idle": [TopicPartition("gone", 0), TopicPartition("orders", 9), O0]})
    outcome = result.values["idle"]
    assert outcome[TopicPartition("gone", 0)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert outcome[TopicPartition("orders", 9)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert outcome[O0] is None


async def test_many_groups_one_request_each_on_their_coordinators(cluster):
    for i in range(20):
        cluster.add_group(f"g{i}", offsets={("orders", 0): i})
    cluster.reset_counts()
    result = await run(cluster, {f"g{i}": [O0] for i in range(20)})
    assert sorted(result.values) == sorted(f"g{i}" for i in range(20)) and result.failures == {}
    assert cluster.count("OffsetDelete") == 20 and cluster.count("FindCoordinator") <= 3
    assert all(cluster.committed(f"g{i}") == {} for i in range(20))


async def test_a_broker_without_offset_delete_fails_every_group_by_name(cluster):
    cluster.add_group("idle", offsets={("orders", 0): 5})
    cluster.set_api_versions({"OffsetDelete": None})
    failure = (await run(cluster, {"idle": [O0]})).failures["idle"]
    assert failure.code == CLIENT_UNSUPPORTED and "does not support OffsetDelete" in failure.message
    assert cluster.committed("idle") == {("orders", 0): 5}


@pytest.mark.parametrize("bad", [{"g": []}, {"g": "orders"}, {"": [O0]}, {"g": [TopicPartition("t", -1)]}])
async def test_bad_input_is_refused_before_anything_is_sent(bad):
    async with AsyncGroupsClient(ClientConfig.create("127.0.0.1:1")) as client:  # nothing listens there
        with pytest.raises(ConfigurationError):
            await client.delete_committed_offsets(bad)
