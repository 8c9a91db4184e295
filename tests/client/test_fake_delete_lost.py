"""DeleteGroups whose response was lost (issue 8, item 11).

Error routing follows Kafka's DeleteConsumerGroupsHandler.handleError (14 retry, 15/16 look
the coordinator up again, 30/24/68/69 fail the group). The one addition: a group whose
DeleteGroups was sent but whose response never came, and whose retry answers
GROUP_ID_NOT_FOUND (69, GroupMetadataManager.deleteGroups / ClassicGroup.validateDeleteGroup
on a group the lost request removed), is ``CONFIRMED_GONE_AFTER_LOST_RESPONSE``. A 69 with no
lost response before it (first attempt, or after 14/15/16, which prove the request did
nothing) stays a failure.
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, GroupDeletion
from airflow_provider_kgroups.client.errors import BrokerDisconnected, RequestTimeout, response_lost
from airflow_provider_kgroups.client.protocol import DeleteGroupsRequest
from airflow_provider_kgroups.client.transport import BrokerConnection
from tests.support.fakekafka import Err, FakeCluster, Member
from tests.support.fakeutil import config, counts, on_node, until

CONFIRMED = GroupDeletion.CONFIRMED_GONE_AFTER_LOST_RESPONSE


async def test_dropped_delete_response_then_group_id_not_found_is_confirmed_gone():
    """The coordinator deletes the groups, then the connection drops mid-response; the retry
    answers 69 for the deleted ones: confirmed gone. A group with members is refused (68) on
    the retry as on any attempt; the other coordinator's group is deleted normally."""
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 1, end_offsets=10)
        faulty = 1
        empty = on_node(c, faulty, 2, "e")
        [busy] = on_node(c, faulty, 1, "busy")
        [elsewhere] = on_node(c, 2, 1, "x")
        [absent] = on_node(c, faulty, 1, "absent")
        for g in empty + [elsewhere]:
            c.add_group(g)
        c.add_group(busy, members=[Member("m1", {"orders": [0]})])
        drop = c.drop_mid_response("DeleteGroups", node=faulty, times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.delete_groups(empty + [busy, elsewhere, absent])
        assert drop.hits == 1
        # ``absent`` answered 69 in the lost response too: the client cannot tell it from a
        # group the lost request deleted, and either way it is gone.
        assert dict(result.values) == {
            **{g: CONFIRMED for g in empty},
            elsewhere: GroupDeletion.DELETED,
            absent: CONFIRMED,
        }
        assert {g: f.code for g, f in result.failures.items()} == {busy: Err.NON_EMPTY_GROUP}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 2, "DeleteGroups": 3}
        assert (c.count("DeleteGroups", faulty), c.count("DeleteGroups", 2)) == (2, 1)
        retried = c.requests("DeleteGroups", faulty)[1]
        assert sorted(retried.request.groups_names) == sorted(empty + [busy, absent])
        assert sorted(c.requests("FindCoordinator")[1].request.coordinator_keys) == sorted(
            empty + [busy, absent]
        )
        assert c.group_ids() == [busy]


async def test_timed_out_delete_then_group_id_not_found_is_confirmed_gone():
    """The coordinator deletes the group but its answer is late (latency); the request times
    out and the coordinator moves (a new leader of its __consumer_offsets partition), which
    answers 69: confirmed gone."""
    async with FakeCluster(brokers=3) as c:
        slow, new = 0, 2
        [group] = on_node(c, slow, 1, "slow")
        c.add_group(group)
        c.set_delay(latency_s=30, node=slow, api="DeleteGroups")
        async with AsyncGroupsClient(config(c, request_timeout_s=2.0)) as client:
            call = asyncio.ensure_future(client.delete_groups([group], timeout_s=20))
            await until(lambda: not c.has_group(group))  # the slow coordinator did delete it
            c.move_coordinator(group, new)
            result = await call
        assert dict(result.values) == {group: CONFIRMED} and result.failures == {}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 2, "DeleteGroups": 2}
        assert (c.count("DeleteGroups", slow), c.count("DeleteGroups", new)) == (1, 1)


@pytest.mark.parametrize(
    "before, lookups",
    [
        (None, 1),
        (Err.COORDINATOR_LOAD_IN_PROGRESS, 1),
        (Err.COORDINATOR_NOT_AVAILABLE, 2),
        (Err.NOT_COORDINATOR, 2),
    ],
)
async def test_group_id_not_found_without_a_lost_response_stays_a_failure(before, lookups):
    """69 on a first attempt, and 69 after 14 (retried on the same coordinator) or 15 / 16
    (looked up again), answers that prove the request did nothing: a failure, as in
    DeleteConsumerGroupsHandler.handleError."""
    async with FakeCluster(brokers=3) as c:
        if before is not None:
            c.inject_error("DeleteGroups", before, key="gone", times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.delete_groups(["gone"])
        assert result.values == {}
        assert {g: f.code for g, f in result.failures.items()} == {"gone": Err.GROUP_ID_NOT_FOUND}
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": lookups,
            "DeleteGroups": 1 if before is None else 2,
        }


async def test_lost_response_then_load_in_progress_then_not_found_is_still_confirmed():
    """The lost request deleted the group; the retry's COORDINATOR_LOAD_IN_PROGRESS only says
    that *that* attempt did nothing, so the final 69 is still the confirmation."""
    async with FakeCluster(brokers=1) as c:
        c.add_group("g")
        drop = c.drop_mid_response("DeleteGroups", times=1)
        # a long backoff leaves room to script the retry's answer once the first is cut
        async with AsyncGroupsClient(ClientConfig.create(c.bootstrap, retry_backoff_s=1.0)) as client:
            call = asyncio.ensure_future(client.delete_groups(["g"], timeout_s=30))
            await until(lambda: drop.hits == 1)
            load = c.inject_error("DeleteGroups", Err.COORDINATOR_LOAD_IN_PROGRESS, key="g", times=1)
            result = await call
        assert load.hits == 1 and not c.has_group("g")
        assert dict(result.values) == {"g": CONFIRMED} and result.failures == {}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 2, "DeleteGroups": 3}


async def test_request_never_written_does_not_count_as_lost():
    """A send on a closed connection fails before anything reaches the broker
    (``request_sent`` False); a response cut mid-frame fails a request that was written."""
    async with FakeCluster(brokers=1) as c:
        cfg = config(c)
        conn = BrokerConnection(0, cfg.bootstrap_servers[0], cfg)
        await conn.connect()
        c.drop_mid_response("DeleteGroups", times=1)
        try:
            await conn.send(DeleteGroupsRequest(groups_names=["g"]), 2, 5.0)
        except BrokerDisconnected as exc:
            assert response_lost(exc)
        else:
            raise AssertionError("the cut response must fail the request")
        try:
            await conn.send(DeleteGroupsRequest(groups_names=["g"]), 2, 5.0)
        except BrokerDisconnected as exc:
            assert not response_lost(exc)
        else:
            raise AssertionError("a closed connection must refuse to send")
        await conn.close()
        assert c.count("DeleteGroups") == 1


async def test_request_timeout_is_a_lost_response():
    async with FakeCluster(brokers=1) as c:
        cfg = config(c)
        conn = BrokerConnection(0, cfg.bootstrap_servers[0], cfg)
        await conn.connect()
        c.blackhole(0, api="DeleteGroups")
        try:
            await conn.send(DeleteGroupsRequest(groups_names=["g"]), 2, 0.2)
        except RequestTimeout as exc:
            assert response_lost(exc)
        else:
            raise AssertionError("a silent broker must time the request out")
        await conn.close()
