"""The hook selects with the one routine the CLI uses, and each verb runs under one deadline.

Kafka sources: KafkaAdminClient.listConsumerGroups (every broker listed, each failed broker
reported); a silent coordinator (the connection's handshake never answered)."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import GroupSelector
from airflow_provider_kgroups.client.errors import CLIENT_TIMEOUT, IncompleteListingError
from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from tests.support.fakekafka import FakeCluster

UNKNOWN_SERVER_ERROR = -1


@pytest.fixture()
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 3, end_offsets=100)
        for i in range(30):
            c.add_group(f"orders-{i:02d}", offsets={("orders", i % 3): 50}, coordinator=i % 3)
        yield c


def test_hook_selection_refuses_a_pattern_when_a_broker_listing_failed(cluster, kgroups_conn):
    conn_id = kgroups_conn("kg_listing", "kgroups", host=cluster.bootstrap, extra={"retry_backoff_s": "0.01"})
    cluster.inject_error("ListGroups", UNKNOWN_SERVER_ERROR, node=2)
    hook = KafkaGroupsHook(conn_id)
    try:
        with pytest.raises(IncompleteListingError, match=r"\(broker 2: UNKNOWN\)") as caught:
            hook.select_groups(GroupSelector(patterns=("orders-*",)))
        assert list(caught.value.failures) == [2]
        assert hook.select_groups(GroupSelector(ids=("orders-03",))) == ["orders-03"]
    finally:
        hook.close()

    # The sync half above runs off any loop, as on a worker (an async test would run it inside one);
    # the async half gets a loop of its own here.
    async def main():
        ahook = KafkaGroupsHook(conn_id)
        try:
            return await ahook.aselect_groups(GroupSelector(patterns=("orders-*",)))
        finally:
            await ahook.aclose()

    with pytest.raises(IncompleteListingError, match=r"\(broker 2: UNKNOWN\)"):
        asyncio.run(main())
    assert cluster.count("ListGroups", 2) == 2 and cluster.count("OffsetFetch") == 0


def test_a_hook_verb_has_one_deadline_for_all_its_calls(cluster, kgroups_conn):
    """snapshot chains DescribeGroups, OffsetFetch, Metadata, ListOffsets: against a silent
    coordinator every call ends by the verb's one deadline (call_timeout_s), which the failure
    names, and the calls after it send nothing."""
    conn_id = kgroups_conn("kg_deadline", "kgroups", host=cluster.bootstrap, extra={"call_timeout_s": "0.5"})
    cluster.blackhole(1)
    hook = KafkaGroupsHook(conn_id)
    try:
        snapshot = hook.snapshot(["orders-01", "orders-00"])
    finally:
        hook.close()
        cluster.blackhole(1, on=False)
    # Describe and OffsetFetch go out together: orders-00 (live coordinator 0) is read, while
    # orders-01 waits for the silent node 1 until the deadline and fails with it named. The end
    # offsets come after the deadline: orders-00's every partition is unknown with the deadline
    # named, its total unknown (never 0), and no ListOffsets is sent. Nothing is made up.
    assert sorted(snapshot.failures) == ["orders-01"]
    failure = snapshot.failures["orders-01"]
    assert failure.code == CLIENT_TIMEOUT
    assert failure.message.startswith("the 0.5 s deadline passed before a result")
    group = snapshot.groups["orders-00"]
    assert group.total_lag is None and [p.committed for p in group.partitions] == [50]
    for p in group.partitions:
        assert p.lag is None and p.error is not None and p.error.code == CLIENT_TIMEOUT, p
    assert cluster.count("OffsetFetch", 0) == 1 and cluster.count("OffsetFetch", 1) == 0
    assert cluster.count("DescribeGroups", 1) == 0
    assert cluster.count("ListOffsets") == 0
