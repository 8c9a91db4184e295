"""ListOffsets while leadership moves: retried with a metadata refresh until the deadline.

The broker side follows ReplicaManager.fetchOffset / Partition.fetchOffsetForTimestamp (a new
leader catching up answers OFFSET_NOT_AVAILABLE from v5, LEADER_NOT_AVAILABLE below; the old
one NOT_LEADER_OR_FOLLOWER; also REPLICA_NOT_AVAILABLE, KAFKA_STORAGE_ERROR and the leader-epoch
errors). The client follows the Java consumer's OffsetFetcherUtils.handleListOffsetResponse:
every one of them is retried after a metadata refresh.
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition
from airflow_provider_kgroups.client.errors import REFRESH_LEADER, ErrorCode
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakeutil import config, counts

DEADLINE_S = 20.0
ENDS = {0: 100, 1: 200, 2: 300}
TPS = [TopicPartition("orders", p) for p in range(3)]
O0 = TopicPartition("orders", 0)


def seed(c: FakeCluster) -> None:
    c.add_topic("orders", 3, end_offsets=[ENDS[p] for p in range(3)], leaders=[0, 1, 2])


def asked(entry) -> set[TopicPartition]:
    return {TopicPartition(t.name, p.partition_index) for t in entry.request.topics for p in t.partitions}


@pytest.mark.parametrize(
    "list_offsets_version, error", [(9, Err.OFFSET_NOT_AVAILABLE), (4, Err.LEADER_NOT_AVAILABLE)]
)
async def test_a_new_leader_catching_up_is_asked_again_until_it_answers(list_offsets_version, error):
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3, api_versions={"ListOffsets": list_offsets_version}) as c:
            seed(c)
            async with AsyncGroupsClient(config(c)) as client:
                await client.log_end_offsets(TPS)  # leaders cached
                c.move_leader("orders", 0, 2, catching_up=3)
                c.set_offsets("orders", 0, end=150)
                c.reset_counts()
                ends = await client.log_end_offsets(TPS)
            assert ends.failures == {}
            assert {tp: v.offset for tp, v in ends.values.items()} == {O0: 150, TPS[1]: 200, TPS[2]: 300}
            assert ends.values[O0].leader_epoch == 1
            # the old leader says NOT_LEADER (1 refresh), the new one 3 times `error` (3 refreshes)
            assert counts(c) == {"ListOffsets": 3 + 4, "Metadata": 4}
            to_new_leader = c.requests("ListOffsets", 2)
            assert [asked(e) for e in to_new_leader[1:]] == [{O0}] * 4
            assert all(e.api_version == list_offsets_version for e in to_new_leader)
            assert all([t.name for t in m.request.topics] == ["orders"] for m in c.requests("Metadata"))


@pytest.mark.parametrize("error", sorted(REFRESH_LEADER | {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}))
async def test_each_leader_error_is_retried_after_a_metadata_refresh(error):
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            injection = c.inject_error("ListOffsets", error, key=("orders", 1), times=2)
            async with AsyncGroupsClient(config(c)) as client:
                ends = await client.log_end_offsets(TPS)
            assert ends.failures == {}
            assert {tp: v.offset for tp, v in ends.values.items()} == {
                TopicPartition("orders", p): ENDS[p] for p in range(3)
            }
            assert injection.hits == 2
            # bootstrap + first lookup, then one refresh per error; one ListOffsets per leader + 2 retries
            assert counts(c) == {"Metadata": 2 + 2, "ListOffsets": 3 + 2}
            assert [asked(e) for e in c.requests("ListOffsets", 1)] == [{TPS[1]}] * 3


async def test_a_leader_that_never_catches_up_fails_that_partition_at_the_deadline_naming_why():
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            seed(c)
            c.move_leader("orders", 0, 2, catching_up=1_000_000)
            async with AsyncGroupsClient(config(c, retry_backoff_max_s=0.05)) as client:
                ends = await client.log_end_offsets(TPS, timeout_s=0.5)
            assert set(ends.failures) == {O0}
            assert ends.failures[O0].code == -100 and "OFFSET_NOT_AVAILABLE" in ends.failures[O0].message
            assert {tp: v.offset for tp, v in ends.values.items()} == {TPS[1]: 200, TPS[2]: 300}
            retries = c.count("ListOffsets", 2) - 1
            assert retries >= 1 and c.count("ListOffsets", 0) == 0
            # bootstrap, lookup, one refresh before each retry; the deadline may fall between a refresh
            # and the retry it was for (seen under load), so that refresh may stand without its retry
            assert counts(c)["Metadata"] - (1 + 1) in (retries, retries + 1)


async def test_a_topic_deleted_after_its_leaders_were_cached_fails_after_one_refresh():
    """The leader answers UNKNOWN_TOPIC_OR_PARTITION; the refreshed metadata confirms the topic
    is gone, so the partition fails with 3 at once rather than at the deadline. (One leader for
    every partition: one answer, so exactly one refresh.)"""
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=3) as c:
            c.add_topic("orders", 3, end_offsets=10, leaders=[1, 1, 1])
            async with AsyncGroupsClient(config(c)) as client:
                await client.log_end_offsets(TPS)
                c.delete_topic("orders")
                c.reset_counts()
                ends = await client.log_end_offsets(TPS, timeout_s=5)
            assert ends.values == {}
            assert {tp: f.code for tp, f in ends.failures.items()} == {tp: 3 for tp in TPS}
            assert counts(c) == {"ListOffsets": 1, "Metadata": 1}
