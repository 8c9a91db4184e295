"""The client against a real Kafka-protocol broker (Tansu), checked exactly against what a
different client (kafka-python) seeded. Where Tansu departs from Apache Kafka the test says
so and asserts only what both agree on; the fake cluster covers the Apache-only semantics."""

import pytest

from airflow_provider_kgroups.client import (
    ClientConfig,
    GroupDeletion,
    GroupsClient,
    GroupState,
    TopicPartition,
)


@pytest.fixture(scope="module")
def client(broker):
    with GroupsClient(ClientConfig.create(broker.bootstrap, call_timeout_s=20)) as c:
        yield c


def test_committed_offsets_only_on_some_partitions(client, seed, name_prefix):
    topic, group = name_prefix + "orders", name_prefix + "partial"
    seed.create_topic(topic, partitions=4)
    seed.commit(group, {(topic, 0): 7, (topic, 2): 3})
    result = client.fetch_committed_offsets([group])
    assert result.failures == {}
    assert result[group].committed() == {TopicPartition(topic, 0): 7, TopicPartition(topic, 2): 3}


def test_log_end_and_start_offsets_equal_what_was_produced(client, seed, name_prefix):
    topic = name_prefix + "events"
    seed.create_topic(topic, partitions=3)
    for partition, count in enumerate((5, 0, 2)):
        if count:
            seed.produce(topic, partition, count)
    tps = [TopicPartition(topic, p) for p in range(3)]
    ends = client.log_end_offsets(tps)
    starts = client.log_start_offsets(tps)
    assert {tp.partition: v.offset for tp, v in ends.values.items()} == {0: 5, 1: 0, 2: 2}
    assert {tp.partition: v.offset for tp, v in starts.values.items()} == {0: 0, 1: 0, 2: 0}


def test_live_group_is_described_with_its_member(client, live_group):
    described = client.describe_groups([live_group.group_id])
    assert described.failures == {}
    group = described[live_group.group_id]
    assert group.state is GroupState.STABLE and group.protocol_type == "consumer"
    assert [m.member_id for m in group.members] == [live_group.member_id]
    # Tansu leaves member assignment bytes empty (Apache fills them): the fake cluster
    # checks assignment decoding; here only what Tansu does return is asserted.


def test_live_group_offsets_and_unknown_groups_in_one_call(client, live_group, name_prefix):
    missing = name_prefix + "never-existed"
    result = client.fetch_committed_offsets([live_group.group_id, missing])
    assert result.failures == {}
    assert result[live_group.group_id].committed() == {
        TopicPartition(live_group.topic, p): offset for p, offset in live_group.committed.items()
    }
    assert result[missing].partitions == {}


def test_three_hundred_groups_in_one_call_take_one_request_per_api(client, seed, name_prefix):
    topic = name_prefix + "many"
    seed.create_topic(topic, partitions=2)
    seeded = {f"{name_prefix}g{i:03d}": {(topic, 0): i, (topic, 1): i * 2} for i in range(300)}
    seed.commit_many(seeded)
    client.stats.reset()
    result = client.fetch_committed_offsets(list(seeded))
    assert result.failures == {}
    assert {
        g: {(tp.topic, tp.partition): o for tp, o in v.committed().items()} for g, v in result.values.items()
    } == seeded
    # One broker: one batched FindCoordinator (v4+) for 300 new groups, one batched OffsetFetch (v8+).
    assert client.stats.by_api["FindCoordinator"] == 1
    assert client.stats.by_api["OffsetFetch"] == 1


def test_unknown_topic_fails_only_its_partitions(client, seed, name_prefix):
    topic = name_prefix + "known"
    seed.create_topic(topic, partitions=1)
    seed.produce(topic, 0, 3)
    result = client.log_end_offsets([TopicPartition(topic, 0), TopicPartition(name_prefix + "nope", 0)])
    assert result.values[TopicPartition(topic, 0)].offset == 3
    assert result.failures[TopicPartition(name_prefix + "nope", 0)].name == "UNKNOWN_TOPIC_OR_PARTITION"


def test_list_groups_finds_seeded_and_live_groups(client, seed, live_group, name_prefix):
    group = name_prefix + "listed"
    seed.commit(group, {(live_group.topic, 0): 1})
    listed = {g.group_id for g in client.list_groups().groups}
    assert {group, live_group.group_id} <= listed


def test_delete_an_empty_group(client, seed, live_group, name_prefix):
    group = name_prefix + "to-delete"
    seed.commit(group, {(live_group.topic, 0): 1})
    result = client.delete_groups([group])
    assert result.values == {group: GroupDeletion.DELETED}
    assert client.fetch_committed_offsets([group])[group].partitions == {}
