"""Listings on real clusters: loading coordinators, moving groups, failed brokers, and the one
selection routine every caller uses.

Kafka sources: a 3.x broker answers COORDINATOR_LOAD_IN_PROGRESS together with the groups
loaded so far (``GroupCoordinator.handleListGroups`` via ``GroupCoordinatorAdapter.listGroups``);
the 4.x coordinator leaves a not-yet-loaded shard out with no error
(``GroupCoordinatorService.listGroups`` maps NotCoordinatorException to an empty list). The
Java admin client (``KafkaAdminClient.listConsumerGroups``) retries 14 and 15 until its
deadline, keeps one listing per group id (``ListConsumerGroupsResults.addListing``) and reports
each broker whose listing failed (``addError``).
"""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, GroupSelector, GroupState
from airflow_provider_kgroups.client.errors import CLIENT_TIMEOUT, IncompleteListingError
from airflow_provider_kgroups.client.selection import select_groups
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config, counts

UNKNOWN_SERVER_ERROR = -1  # what a broker answers for an unexpected exception (Errors.UNKNOWN_SERVER_ERROR)


def seed_spread(c: FakeCluster, n: int = 30) -> list[str]:
    """``n`` groups, coordinators round-robin over the brokers."""
    ids = [f"orders-{i:02d}" for i in range(n)]
    for i, group_id in enumerate(ids):
        c.add_group(group_id, coordinator=i % len(c.node_ids))
    return ids


async def test_a_loading_3x_coordinator_is_asked_again_until_its_list_is_complete():
    """GroupCoordinator.handleListGroups (3.x): 14 with a partial list -> the list is not taken,
    the broker is asked again (KafkaAdminClient.listConsumerGroups rethrows 14 as retriable)."""
    async with FakeCluster(brokers=3) as c:
        ids = seed_spread(c, 9)
        on_1 = c.groups_coordinated_by(1)
        c.start_loading(1, loaded=on_1[:1], times=2)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.list_groups()
        assert [g.group_id for g in result.groups] == ids
        assert {g.group_id: g.coordinator_id for g in result.groups} == {g: i % 3 for i, g in enumerate(ids)}
        assert result.broker_failures == {}
        assert [c.count("ListGroups", n) for n in range(3)] == [1, 3, 1]
        assert counts(c) == {"Metadata": 1, "ListGroups": 5}


async def test_a_group_listed_by_two_brokers_while_its_coordinator_moves_is_listed_once():
    """GroupMetadataManager.removeGroupsForPartition runs after the move: the old broker still
    lists the group. One entry per group id, as ListConsumerGroupsResults.addListing keeps."""
    async with FakeCluster(brokers=3) as c:
        c.add_group("moving", coordinator=0)
        c.add_group("staying", coordinator=1)
        c.move_coordinator("moving", 2)
        c.list_stale("moving", 0)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.list_groups()
        assert [(g.group_id, g.state, g.coordinator_id) for g in result.groups] == [
            ("moving", GroupState.EMPTY, 0),
            ("staying", GroupState.EMPTY, 1),
        ]
        assert result.broker_failures == {}
        assert counts(c) == {"Metadata": 1, "ListGroups": 3}


async def test_a_listing_names_each_groups_coordinator_so_no_find_coordinator_follows():
    """A broker lists the groups of the __consumer_offsets partitions it leads
    (GroupCoordinator.handleListGroups / GroupCoordinatorService.listGroups): the broker that
    listed a group is its coordinator, and the calls after a listing (the lag path: list,
    describe, fetch offsets) send no FindCoordinator for it. A group two brokers list (its
    coordinator moving) is looked up; a listing gone stale before the next call costs one
    NOT_COORDINATOR and a lookup, as any moved coordinator does, never a wrong answer."""
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 1, end_offsets=10)
        ids = seed_spread(c, 9)
        for g in ids:
            c.commit(g, {("orders", 0): 3})
        c.add_group("moving", offsets={("orders", 0): 5}, coordinator=0)
        c.move_coordinator("moving", 2)
        c.list_stale("moving", 0)  # listed by its old and its new broker
        async with AsyncGroupsClient(config(c)) as client:
            await client.list_groups()
            c.reset_counts()
            offsets = await client.fetch_committed_offsets(ids + ["moving"])
            assert offsets.failures == {} and len(offsets.values) == 10
            [lookup] = c.requests("FindCoordinator")
            assert list(lookup.request.coordinator_keys) == ["moving"]  # the only one not known
            assert {e.node for e in c.requests("OffsetFetch")} == {0, 1, 2}

            c.move_coordinator(ids[0], (c.coordinator_of(ids[0]) + 1) % 3)  # the listing goes stale
            c.reset_counts()
            described = await client.describe_groups(ids)
            assert described.failures == {} and set(described.values) == set(ids)
            assert [list(e.request.coordinator_keys) for e in c.requests("FindCoordinator")] == [[ids[0]]]


async def test_a_group_listed_by_no_broker_for_a_moment_appears_once_the_new_coordinator_loaded():
    """The old broker unloaded the group, the new one (3.x) is still loading it: its 14 answer
    lacks the group; asked again after the load, it lists it."""
    async with FakeCluster(brokers=3) as c:
        c.add_group("moving", coordinator=0)
        c.add_group("other", coordinator=2)
        c.move_coordinator("moving", 2)
        c.start_loading(2, loaded=["other"], times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.list_groups()
        assert [(g.group_id, g.coordinator_id) for g in result.groups] == [("moving", 2), ("other", 2)]
        assert result.broker_failures == {}
        assert [c.count("ListGroups", n) for n in range(3)] == [1, 1, 2]


async def test_a_4x_coordinator_still_loading_a_shard_omits_its_groups_without_an_error():
    """GroupCoordinatorService.listGroups: a shard not loaded yet contributes nothing and no
    error, so no client can see the gap; the group is simply not in this listing (documented:
    a listing is a snapshot, a group moving at that instant can be missing from it)."""
    async with FakeCluster(brokers=3) as c:
        c.add_group("moving", coordinator=1)
        c.add_group("other", coordinator=1)
        c.start_loading(1, loaded=["other"], error=0)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.list_groups()
        assert [g.group_id for g in result.groups] == ["other"]
        assert result.broker_failures == {}
        assert counts(c) == {"Metadata": 1, "ListGroups": 3}


async def test_a_broker_still_loading_at_the_deadline_is_reported_with_its_last_error():
    async with FakeCluster(brokers=3) as c:
        seed_spread(c, 6)
        c.start_loading(2, loaded=[])
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.list_groups(timeout_s=0.3)
        assert sorted(g.group_id for g in result.groups) == sorted(
            c.groups_coordinated_by(0) + c.groups_coordinated_by(1)
        )
        assert list(result.broker_failures) == [2]
        failure = result.broker_failures[2]
        assert failure.code == CLIENT_TIMEOUT
        assert "COORDINATOR_LOAD_IN_PROGRESS" in failure.message
        assert c.count("ListGroups", 2) >= 2 and c.count("ListGroups", 0) == c.count("ListGroups", 1) == 1


async def test_select_groups_refuses_a_pattern_when_a_broker_listing_failed():
    """30 groups over 3 brokers, broker 1's listing fails (a non-retriable error): the selection
    names broker 1 and selects nothing, instead of silently dropping its 10 groups."""
    async with FakeCluster(brokers=3) as c:
        seed_spread(c, 30)
        c.inject_error("ListGroups", UNKNOWN_SERVER_ERROR, node=1)
        async with AsyncGroupsClient(config(c)) as client:
            with pytest.raises(IncompleteListingError) as caught:
                await select_groups(client, GroupSelector(patterns=("orders-*",)))
            assert list(caught.value.failures) == [1]
            assert caught.value.failures[1].code == UNKNOWN_SERVER_ERROR
            assert "(broker 1: UNKNOWN)" in str(caught.value)
            assert counts(c) == {"Metadata": 1, "ListGroups": 3}
            c.reset_counts()
            exact = await select_groups(client, GroupSelector(ids=("orders-01", "nobody")))
            assert exact == ["orders-01", "nobody"]
            assert counts(c) == {}  # exact ids need no listing


async def test_select_groups_takes_every_matching_group_once():
    async with FakeCluster(brokers=3) as c:
        ids = seed_spread(c, 30)
        c.add_group("billing", coordinator=0)
        c.list_stale("orders-04", 0)  # also listed by its old broker
        async with AsyncGroupsClient(config(c)) as client:
            chosen = await select_groups(
                client, GroupSelector(ids=("pinned",), patterns=("orders-*",), exclude=("orders-2*",))
            )
        assert chosen == ["pinned"] + [g for g in ids if not g.startswith("orders-2")]
        assert counts(c) == {"Metadata": 1, "ListGroups": 3}
