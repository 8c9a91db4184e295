"""Describing and listing groups against the fake cluster.

DescribeGroups describes every group first (one request per coordinator); only the groups
it calls "not a classic group" (v6) or Dead (below v6) are asked again with
ConsumerGroupDescribe, where the coordinator has that API (group types: test_fake_group_types). ListGroups goes to every broker,
with the state filter from v4 and the type filter from v5.
"""

from __future__ import annotations

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, GroupState, TopicPartition
from tests.support.fakekafka import Err, FakeCluster, Member
from tests.support.fakeutil import HANDSHAKE_APIS, config, counts


def tps(*pairs) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t, p) for t, p in pairs)


def seed_mixed(c: FakeCluster) -> None:
    c.add_topic("orders", 3, end_offsets=100)
    c.add_topic("payments", 2, end_offsets=100)
    c.add_group(
        "classic-stable",
        members=[
            Member("m1", {"orders": [0, 1]}, client_id="c-1", host="/10.0.0.1"),
            Member(
                "m2",
                {"orders": [2], "payments": [0, 1]},
                client_id="c-2",
                host="/10.0.0.2",
                group_instance_id="static-2",
            ),
        ],
        coordinator=0,
    )
    c.add_group("classic-empty", offsets={("orders", 0): 5}, coordinator=1)
    c.add_group(
        "classic-rebalancing",
        members=[Member("m1", {"orders": [0]})],
        state="PreparingRebalance",
        coordinator=2,
    )
    c.add_group(
        "connect-cluster",
        protocol_type="connect",
        protocol="sessioned",
        coordinator=1,
        members=[
            Member(
                "worker-1",
                assignment_bytes=b"\x00\x01not-the-consumer-protocol",
                metadata_bytes=b"\x00\x01w1",
            )
        ],
    )
    c.add_group(
        "kip848",
        group_type="consumer",
        coordinator=2,
        members=[
            Member("k1", {"orders": [0, 2]}, client_id="new-1", subscription=["orders"]),
            Member("k2", {"payments": [1]}, client_id="new-2", rack_id="r1"),
        ],
    )
    c.add_group("kip848-empty", group_type="consumer", coordinator=0)


async def test_describe_classic_connect_kip848_and_unknown_groups():
    async with FakeCluster(brokers=3) as c:
        seed_mixed(c)
        ids = [
            "classic-stable",
            "classic-empty",
            "classic-rebalancing",
            "connect-cluster",
            "kip848",
            "kip848-empty",
            "nobody",
        ]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(ids)
        assert result.failures == {}
        assert list(result.values) == ids  # in the order asked
        d = result.values

        stable = d["classic-stable"]
        assert (
            stable.state,
            stable.protocol_type,
            stable.protocol,
            stable.group_type,
            stable.coordinator_id,
        ) == (GroupState.STABLE, "consumer", "range", "classic", 0)
        assert [
            (m.member_id, m.client_id, m.client_host, m.group_instance_id, m.assignment, m.subscribed_topics)
            for m in stable.members
        ] == [
            ("m1", "c-1", "/10.0.0.1", None, tps(("orders", 0), ("orders", 1)), ("orders",)),
            (
                "m2",
                "c-2",
                "/10.0.0.2",
                "static-2",
                tps(("orders", 2), ("payments", 0), ("payments", 1)),
                ("orders", "payments"),
            ),
        ]
        assert stable.assigned_partitions == frozenset(
            tps(("orders", 0), ("orders", 1), ("orders", 2), ("payments", 0), ("payments", 1))
        )

        assert (d["classic-empty"].state, d["classic-empty"].members) == (GroupState.EMPTY, ())
        rebalancing = d["classic-rebalancing"]
        assert rebalancing.state is GroupState.PREPARING_REBALANCE and rebalancing.state.is_rebalancing
        assert [m.member_id for m in rebalancing.members] == ["m1"]

        connect = d["connect-cluster"]
        assert (connect.state, connect.protocol_type, connect.protocol) == (
            GroupState.STABLE,
            "connect",
            "sessioned",
        )
        assert not connect.is_plain_consumer_group
        assert [(m.member_id, m.assignment) for m in connect.members] == [("worker-1", ())]

        kip848 = d["kip848"]
        assert (
            kip848.state,
            kip848.group_type,
            kip848.protocol_type,
            kip848.protocol,
            kip848.coordinator_id,
        ) == (GroupState.STABLE, "consumer", "consumer", "uniform", 2)
        assert [(m.member_id, m.client_id, m.assignment, m.subscribed_topics) for m in kip848.members] == [
            ("k1", "new-1", tps(("orders", 0), ("orders", 2)), ("orders",)),
            ("k2", "new-2", tps(("payments", 1)), ("payments",)),
        ]
        assert (d["kip848-empty"].state, d["kip848-empty"].group_type) == (GroupState.EMPTY, "consumer")

        nobody = d["nobody"]
        assert (nobody.state, nobody.members, nobody.coordinator_id) == (
            GroupState.DEAD,
            (),
            c.coordinator_of("nobody"),
        )

        owners = {c.coordinator_of(g) for g in ids}
        # DescribeGroups v6 says "Group nobody not found.": Dead at once; the KIP-848 groups are
        # "not a classic group" and go on to ConsumerGroupDescribe
        kip848_owners = {c.coordinator_of(g) for g in ("kip848", "kip848-empty")}
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": 1,
            "DescribeGroups": len(owners),
            "ConsumerGroupDescribe": len(kip848_owners),
        }
        asked = sorted(g for e in c.requests("ConsumerGroupDescribe") for g in e.request.group_ids)
        assert asked == ["kip848", "kip848-empty"]


async def test_describe_without_consumer_group_describe_falls_back_to_describe_groups():
    async with FakeCluster(brokers=3, api_versions={"ConsumerGroupDescribe": None}) as c:
        seed_mixed(c)
        ids = ["classic-stable", "classic-empty", "connect-cluster", "nobody"]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(ids)
        assert result.failures == {}
        assert {g: v.state for g, v in result.values.items()} == {
            "classic-stable": GroupState.STABLE,
            "classic-empty": GroupState.EMPTY,
            "connect-cluster": GroupState.STABLE,
            "nobody": GroupState.DEAD,
        }
        assert len(result.values["classic-stable"].members) == 2
        owners = {c.coordinator_of(g) for g in ids}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "DescribeGroups": len(owners)}


async def test_describe_with_consumer_group_describe_on_some_brokers_only():
    async with FakeCluster(brokers=3, broker_api_versions={1: {"ConsumerGroupDescribe": None}}) as c:
        seed_mixed(c)
        c.move_coordinator("nobody", 1)
        ids = ["kip848", "classic-empty", "nobody"]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(ids)
        assert result.failures == {}
        assert result.values["kip848"].group_type == "consumer" and len(result.values["kip848"].members) == 2
        assert result.values["nobody"].state is GroupState.DEAD
        assert c.count("ConsumerGroupDescribe", 1) == 0
        assert [list(e.request.group_ids) for e in c.requests("ConsumerGroupDescribe")] == [["kip848"]]


async def test_describe_retries_and_relookups_on_both_apis():
    async with FakeCluster(brokers=3) as c:
        seed_mixed(c)
        loading = c.inject_error(
            "DescribeGroups", Err.COORDINATOR_LOAD_IN_PROGRESS, key="classic-stable", times=2
        )
        moved = c.inject_error("ConsumerGroupDescribe", Err.NOT_COORDINATOR, key="kip848", times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(["classic-stable", "kip848"])
        assert result.failures == {}
        assert result.values["classic-stable"].state is GroupState.STABLE
        assert result.values["kip848"].group_type == "consumer"
        assert (loading.hits, moved.hits) == (2, 1)
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": 2,
            "DescribeGroups": 2 + 2,
            "ConsumerGroupDescribe": 2,
        }
        assert list(c.requests("FindCoordinator")[1].request.coordinator_keys) == ["kip848"]


def seed_for_listing(c: FakeCluster) -> None:
    c.add_topic("orders", 1, end_offsets=10)
    c.add_group("s0", members=[Member("m", {"orders": [0]})], coordinator=0)
    c.add_group("e0", coordinator=0)
    c.add_group("s1", members=[Member("m", {"orders": [0]})], coordinator=1)
    c.add_group("r1", members=[Member("m", {"orders": [0]})], state="CompletingRebalance", coordinator=1)
    c.add_group("e2", coordinator=2)
    c.add_group("k2", group_type="consumer", members=[Member("k", {"orders": [0]})], coordinator=2)
    c.add_group("dead2", state="Dead", coordinator=2)


def listed(result) -> dict[str, tuple]:
    return {g.group_id: (g.state.value, g.group_type, g.coordinator_id) for g in result.groups}


async def test_list_groups_from_every_broker_with_states_and_types():
    async with FakeCluster(brokers=3) as c:
        seed_for_listing(c)
        async with AsyncGroupsClient(config(c)) as client:
            everything = await client.list_groups()
            assert listed(everything) == {
                "s0": ("Stable", "classic", 0),
                "e0": ("Empty", "classic", 0),
                "s1": ("Stable", "classic", 1),
                "r1": ("CompletingRebalance", "classic", 1),
                "e2": ("Empty", "classic", 2),
                "k2": ("Stable", "consumer", 2),
            }
            assert [g.group_id for g in everything.groups] == sorted(listed(everything))
            assert everything.broker_failures == {}
            assert counts(c) == {"Metadata": 1, "ListGroups": 3}
            assert {e.node for e in c.requests("ListGroups")} == {0, 1, 2}

            c.reset_counts()
            stable = await client.list_groups(states=["Stable"])
            assert set(listed(stable)) == {"s0", "s1", "k2"}
            assert all(list(e.request.states_filter) == ["Stable"] for e in c.requests("ListGroups"))
            assert counts(c) == {"Metadata": 1, "ListGroups": 3}

            several = await client.list_groups(states=["Empty", "CompletingRebalance"])
            assert set(listed(several)) == {"e0", "r1", "e2"}

            consumer = await client.list_groups(types=["consumer"])
            assert set(listed(consumer)) == {"k2"}
            classic_stable = await client.list_groups(states=["Stable"], types=["classic"])
            assert set(listed(classic_stable)) == {"s0", "s1"}


async def test_list_groups_state_filter_is_case_insensitive_like_kafka():
    async with FakeCluster(brokers=3) as c:
        seed_for_listing(c)
        async with AsyncGroupsClient(config(c)) as client:
            stable = await client.list_groups(states=["stable"])
            rebalancing = await client.list_groups(states=["completingrebalance"], types=["CLASSIC"])
        assert set(listed(stable)) == {"s0", "s1", "k2"}
        assert set(listed(rebalancing)) == {"r1"}


async def test_list_groups_on_an_old_broker_applies_the_filters_on_the_client():
    """ListGroupsRequest.json (clients/src/main/resources/common/message/): "Version 4 adds the
    StatesFilter field (KIP-518)", "Version 5 adds the TypesFilter field (KIP-848)", and the
    response's GroupState / GroupType fields start at the same versions. Java's
    ListGroupsRequest.Builder.build refuses a filter below them; here the groups of such a
    broker are described and filtered on the client, so every broker gives the same answer:
    none of a v3 broker's groups comes back unfiltered as "Unknown". A group whose describe
    fails is kept as listed (state Unknown): an unknown state is not proven to miss the filter."""
    async with FakeCluster(brokers=3, broker_api_versions={1: {"ListGroups": 3}, 2: {"ListGroups": 4}}) as c:
        seed_for_listing(c)
        async with AsyncGroupsClient(config(c)) as client:
            stable = await client.list_groups(states=["Stable"])
            # broker 0 filtered (v5); broker 1 (v3) lists s1 and r1 without states: described
            # here, r1 (CompletingRebalance) dropped; broker 2 (v4) filtered by state
            assert listed(stable) == {
                "s0": ("Stable", "classic", 0),
                "s1": ("Stable", "classic", 1),
                "k2": ("Stable", None, 2),
            }
            assert sorted(g for e in c.requests("DescribeGroups") for g in e.request.groups) == ["r1", "s1"]

            c.reset_counts()
            consumer = await client.list_groups(types=["consumer"])
            # types need v5: broker 1's and 2's groups are described, and only k2 is a consumer group
            assert listed(consumer) == {"k2": ("Stable", "consumer", 2)}
            assert sorted(g for e in c.requests("DescribeGroups") for g in e.request.groups) == [
                "e2",
                "k2",
                "r1",
                "s1",
            ]
            assert [list(e.request.group_ids) for e in c.requests("ConsumerGroupDescribe")] == [["k2"]]

            c.inject_error("DescribeGroups", Err.GROUP_AUTHORIZATION_FAILED, key="r1")
            empty = await client.list_groups(states=["Empty"])
            assert listed(empty) == {
                "e0": ("Empty", "classic", 0),
                "r1": ("Unknown", None, 1),
                "e2": ("Empty", None, 2),
            }
        versions = {e.node: e.api_version for e in c.requests("ListGroups")}
        assert versions == {0: 5, 1: 3, 2: 4}


async def test_list_groups_broker_errors_retry_or_fail_that_broker_only():
    async with FakeCluster(brokers=3) as c:
        seed_for_listing(c)
        loading = c.inject_error("ListGroups", Err.COORDINATOR_LOAD_IN_PROGRESS, node=1, times=2)
        c.inject_error("ListGroups", 31, node=2)  # CLUSTER_AUTHORIZATION_FAILED
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.list_groups()
        assert loading.hits == 2
        assert set(listed(result)) == {"s0", "e0", "s1", "r1"}
        assert {n: f.code for n, f in result.broker_failures.items()} == {2: 31}
        assert {n: c.count("ListGroups", n) for n in range(3)} == {0: 1, 1: 3, 2: 1}


async def test_list_groups_with_a_broker_down_reports_that_broker_and_lists_the_rest():
    async with FakeCluster(brokers=3) as c:
        seed_for_listing(c)
        await c.stop_broker(2)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.list_groups(timeout_s=0.5)
        assert set(listed(result)) == {"s0", "e0", "s1", "r1"}
        assert list(result.broker_failures) == [2]
        failure = result.broker_failures[2]
        assert failure.code == -100 and "cannot connect" in failure.message
        assert c.count("ListGroups") == 2
