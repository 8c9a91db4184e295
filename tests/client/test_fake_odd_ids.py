"""Odd but valid group ids (issue 8, item 12).

Kafka refuses only null and empty group ids (GroupCoordinatorService.isGroupIdNotEmpty, the
admin APIs' INVALID_GROUP_ID): " ", a tab or any Unicode text is a group like any other, so
the client accepts them, and one from a listing never fails the call. A string longer than
32767 UTF-8 bytes cannot travel in any version: Kafka's generated message classes refuse to
write it and refuse to read it (MessageDataGenerator: "field is too long to be serialized",
"string field ... had invalid length"), so such an id fails alone, unsent, and the other
keys are still answered.
"""

from __future__ import annotations

from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    GroupDeletion,
    GroupSelector,
    GroupState,
    TopicPartition,
)
from airflow_provider_kgroups.client.errors import ErrorCode
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config, counts

ODD = [" ", "\t", "  padded  ", "ünïcødé-组", "emoji-🙂", "a" * 32767]
TOO_LONG = "x" * 32768
TOO_LONG_MULTIBYTE = "é" * 16384  # 16384 code points, 32768 UTF-8 bytes


async def test_odd_ids_are_listed_described_fetched_and_deleted():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 1, end_offsets=100)
        for i, g in enumerate(ODD):
            c.add_group(g, offsets={("orders", 0): 10 + i})
        async with AsyncGroupsClient(config(c)) as client:
            listing = await client.list_groups()
            assert sorted(g.group_id for g in listing.groups) == sorted(ODD)
            assert listing.broker_failures == {}
            chosen = GroupSelector(patterns=("*",)).select(g.group_id for g in listing.groups)
            assert sorted(chosen) == sorted(ODD)
        # a client that did not list them: the odd ids travel in a FindCoordinator too (a
        # listing names each group's coordinator, so the listing client would send none)
        async with AsyncGroupsClient(config(c)) as client:
            c.reset_counts()
            described = await client.describe_groups(chosen)
            assert described.failures == {}
            assert {g: d.state for g, d in described.values.items()} == {g: GroupState.EMPTY for g in ODD}
            owners = {c.coordinator_of(g) for g in ODD}
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "DescribeGroups": len(owners)}
            assert sorted(c.requests("FindCoordinator")[0].request.coordinator_keys) == sorted(ODD)

            offsets = await client.fetch_committed_offsets(chosen)
            assert offsets.failures == {}
            assert {g: o.committed() for g, o in offsets.values.items()} == {
                g: {TopicPartition("orders", 0): 10 + i} for i, g in enumerate(ODD)
            }

            deleted = await client.delete_groups(chosen)
            assert dict(deleted.values) == {g: GroupDeletion.DELETED for g in ODD} and deleted.failures == {}
        assert c.group_ids() == []


def test_an_empty_id_in_a_listing_is_skipped_not_fatal():
    """A pre-2.2 cluster may still list the empty group id; no admin API can address it."""
    assert GroupSelector(patterns=("*",)).select(["", " ", "orders"]) == [" ", "orders"]


async def test_too_long_id_fails_alone_and_is_never_sent():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 1, end_offsets=100)
        ok = ["billing", " "]
        for g in ok:
            c.add_group(g, offsets={("orders", 0): 7})
        ids = ok + [TOO_LONG, TOO_LONG_MULTIBYTE]
        owners = {c.coordinator_of(g) for g in ok}
        async with AsyncGroupsClient(config(c)) as client:
            described = await client.describe_groups(ids)
            assert {g: d.state for g, d in described.values.items()} == {g: GroupState.EMPTY for g in ok}
            assert {g: f.code for g, f in described.failures.items()} == {
                TOO_LONG: ErrorCode.INVALID_GROUP_ID,
                TOO_LONG_MULTIBYTE: ErrorCode.INVALID_GROUP_ID,
            }
            assert "32768 bytes" in described.failures[TOO_LONG].message
            assert "not sent" in described.failures[TOO_LONG_MULTIBYTE].message
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "DescribeGroups": len(owners)}
            [lookup] = c.requests("FindCoordinator")
            assert sorted(lookup.request.coordinator_keys) == sorted(ok)
            assert sorted(g for e in c.requests("DescribeGroups") for g in e.request.groups) == sorted(ok)

            c.reset_counts()
            offsets = await client.fetch_committed_offsets(ids)
            assert set(offsets.values) == set(ok)
            assert {g: f.code for g, f in offsets.failures.items()} == {
                TOO_LONG: ErrorCode.INVALID_GROUP_ID,
                TOO_LONG_MULTIBYTE: ErrorCode.INVALID_GROUP_ID,
            }
            assert counts(c) == {"OffsetFetch": len(owners)}  # coordinators cached

            c.reset_counts()
            deleted = await client.delete_groups(ids)
            assert dict(deleted.values) == {g: GroupDeletion.DELETED for g in ok}
            assert set(deleted.failures) == {TOO_LONG, TOO_LONG_MULTIBYTE}
            assert counts(c) == {"DeleteGroups": len(owners)}

            only_bad = await client.delete_groups([TOO_LONG])
            assert only_bad.values == {} and set(only_bad.failures) == {TOO_LONG}
            assert counts(c) == {"DeleteGroups": len(owners)}  # nothing sent for it
        assert sorted(g for e in c.requests("DeleteGroups") for g in e.request.groups_names) == sorted(ok)


async def test_too_long_id_on_brokers_without_batching():
    """Old versions (FindCoordinator v3, OffsetFetch v7, DescribeGroups v4: non-flexible
    strings with an int16 length) refuse it the same way."""
    async with FakeCluster(
        brokers=2, api_versions={"FindCoordinator": 3, "OffsetFetch": 7, "DescribeGroups": 4}
    ) as c:
        c.add_group(" ", offsets={("orders", 0): 3})
        c.add_topic("orders", 1, end_offsets=10)
        async with AsyncGroupsClient(config(c)) as client:
            offsets = await client.fetch_committed_offsets([" ", TOO_LONG])
        assert {g: o.committed() for g, o in offsets.values.items()} == {
            " ": {TopicPartition("orders", 0): 3}
        }
        assert {g: f.code for g, f in offsets.failures.items()} == {TOO_LONG: ErrorCode.INVALID_GROUP_ID}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 1}
