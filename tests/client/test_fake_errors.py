"""Coordinator errors, per group, against the fake cluster: 14 retries the same broker after a
backoff, 15/16 forget the coordinator and look it up again, anything else fails that group
alone. Each test asserts every group's outcome and the exact requests sent."""

from __future__ import annotations

import asyncio

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, GroupDeletion, TopicPartition
from airflow_provider_kgroups.client.errors import CLIENT_TIMEOUT, CLIENT_UNSUPPORTED
from tests.support.fakekafka import Err, FakeCluster, Member
from tests.support.fakeutil import HANDSHAKE_APIS, committed, config, counts, seed


def other_node(c: FakeCluster, node: int) -> int:
    return next(n for n in c.node_ids if n != node)


async def test_not_coordinator_after_the_coordinator_moves_looks_the_group_up_again():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 12)
        async with AsyncGroupsClient(config(c)) as client:
            await client.fetch_committed_offsets(list(seeded))  # fills the coordinator cache
            moved = "g0"
            old = c.coordinator_of(moved)
            new = other_node(c, old)
            c.move_coordinator(moved, new)
            c.reset_counts()

            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        # one OffsetFetch per coordinator from the cache, then one lookup and one
        # OffsetFetch for the moved group alone
        assert counts(c) == {"OffsetFetch": 4, "FindCoordinator": 1}
        [find] = c.requests("FindCoordinator")
        assert list(find.request.coordinator_keys) == [moved]
        assert c.count("OffsetFetch", old) == 1
        last = c.requests("OffsetFetch", new)[-1]
        assert [g.group_id for g in last.request.groups] == [moved]


async def test_not_coordinator_injected_for_every_group_of_one_broker():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 30)
        node = c.coordinator_of("g0")
        mine = [g for g in seeded if c.coordinator_of(g) == node]
        injections = [c.inject_error("OffsetFetch", Err.NOT_COORDINATOR, key=g, times=1) for g in mine]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        assert [i.hits for i in injections] == [1] * len(mine)
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 2, "OffsetFetch": 4}
        assert sorted(c.requests("FindCoordinator")[1].request.coordinator_keys) == sorted(mine)
        assert c.count("OffsetFetch", node) == 2


async def test_not_coordinator_for_ever_ends_in_a_timeout_naming_it():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 6)
        c.inject_error("OffsetFetch", Err.NOT_COORDINATOR, key="g2")
        async with AsyncGroupsClient(config(c, retry_backoff_max_s=0.05)) as client:
            result = await client.fetch_committed_offsets(list(seeded), timeout_s=0.5)
        assert {g: f.code for g, f in result.failures.items()} == {"g2": CLIENT_TIMEOUT}
        assert "NOT_COORDINATOR" in result.failures["g2"].message
        assert committed(result) == {g: o for g, o in seeded.items() if g != "g2"}
        # every NOT_COORDINATOR sent it back to lookup (the deadline may fall between the two)
        fetches = c.count("OffsetFetch", c.coordinator_of("g2"))
        assert fetches >= 3 and c.count("FindCoordinator") - fetches in (0, 1)


async def test_coordinator_load_in_progress_is_retried_on_the_same_broker():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 12)
        loading = "g5"
        node = c.coordinator_of(loading)
        injection = c.inject_error("OffsetFetch", Err.COORDINATOR_LOAD_IN_PROGRESS, key=loading, times=3)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        assert injection.hits == 3
        owners = {c.coordinator_of(g) for g in seeded}
        # no new lookup: the first round plus three retries of that group on its coordinator
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": len(owners) + 3}
        on_node = c.requests("OffsetFetch", node)
        assert len(on_node) == 4
        assert all([g.group_id for g in e.request.groups] == [loading] for e in on_node[1:])


async def test_coordinator_load_in_progress_for_ever_ends_in_a_timeout_naming_it():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 6)
        stuck = "g1"
        c.inject_error("OffsetFetch", Err.COORDINATOR_LOAD_IN_PROGRESS, key=stuck)
        async with AsyncGroupsClient(config(c, retry_backoff_max_s=0.05)) as client:
            loop = asyncio.get_running_loop()
            started = loop.time()
            result = await client.fetch_committed_offsets(list(seeded), timeout_s=0.5)
            elapsed = loop.time() - started
        assert set(result.failures) == {stuck}
        failure = result.failures[stuck]
        assert failure.code == CLIENT_TIMEOUT
        assert "COORDINATOR_LOAD_IN_PROGRESS" in failure.message
        assert committed(result) == {g: o for g, o in seeded.items() if g != stuck}
        assert c.count("FindCoordinator") == 1  # retried, never looked up again
        assert c.count("OffsetFetch", c.coordinator_of(stuck)) >= 5
        assert 0.5 <= elapsed < 1.5


async def test_coordinator_not_available_on_find_coordinator_looks_that_key_up_again():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 12)
        injection = c.inject_error("FindCoordinator", Err.COORDINATOR_NOT_AVAILABLE, key="g3", times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        assert injection.hits == 1
        finds = c.requests("FindCoordinator")
        assert len(finds) == 2
        assert sorted(finds[0].request.coordinator_keys) == sorted(seeded)
        assert list(finds[1].request.coordinator_keys) == ["g3"]
        # the others went out when the first lookup answered; g3 later, in its own OffsetFetch
        owners = {c.coordinator_of(g) for g in seeded if g != "g3"}
        assert c.count("OffsetFetch") == len(owners) + 1
        last = c.requests("OffsetFetch", c.coordinator_of("g3"))[-1]
        assert [g.group_id for g in last.request.groups] == ["g3"]
        assert sum(len(e.request.groups) for e in c.requests("OffsetFetch")) == 12


async def test_load_in_progress_and_not_available_on_per_key_find_coordinator():
    async with FakeCluster(brokers=3, api_versions={"FindCoordinator": 3}) as c:
        seeded = seed(c, 9)
        loading = c.inject_error("FindCoordinator", Err.COORDINATOR_LOAD_IN_PROGRESS, key="g2", times=2)
        unavailable = c.inject_error("FindCoordinator", Err.COORDINATOR_NOT_AVAILABLE, key="g7", times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        assert (loading.hits, unavailable.hits) == (2, 1)
        finds = c.requests("FindCoordinator")
        assert len(finds) == 9 + 3
        assert sorted(e.request.key for e in finds) == sorted(list(seeded) + ["g2", "g2", "g7"])


async def test_group_authorization_failed_on_find_coordinator_fails_that_group_alone():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 12)
        c.inject_error("FindCoordinator", Err.GROUP_AUTHORIZATION_FAILED, key="g4")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert {g: f.code for g, f in result.failures.items()} == {"g4": 30}
        assert committed(result) == {g: o for g, o in seeded.items() if g != "g4"}
        assert c.count("FindCoordinator") == 1
        assert "g4" not in [g.group_id for e in c.requests("OffsetFetch") for g in e.request.groups]


async def test_group_authorization_failed_on_one_group_among_many_offset_fetch():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 40)
        c.inject_error("OffsetFetch", Err.GROUP_AUTHORIZATION_FAILED, key="g17")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert {g: (f.code, f.name) for g, f in result.failures.items()} == {
            "g17": (30, "GROUP_AUTHORIZATION_FAILED")
        }
        assert committed(result) == {g: o for g, o in seeded.items() if g != "g17"}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 3}  # not retried


async def test_group_authorization_failed_on_one_group_among_many_describe():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 40)
        c.add_group("kip848-ok", group_type="consumer")
        c.add_group("kip848-denied", group_type="consumer")
        c.inject_error("DescribeGroups", Err.GROUP_AUTHORIZATION_FAILED, key="g17")
        c.inject_error("ConsumerGroupDescribe", Err.GROUP_AUTHORIZATION_FAILED, key="kip848-denied")
        ids = list(seeded) + ["kip848-ok", "kip848-denied"]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(ids)
        assert {g: f.code for g, f in result.failures.items()} == {"g17": 30, "kip848-denied": 30}
        assert set(result.values) == set(ids) - {"g17", "kip848-denied"}
        assert {g: d.state.value for g, d in result.values.items()} == (
            {g: "Empty" for g in seeded if g != "g17"} | {"kip848-ok": "Empty"}
        )
        assert result.values["kip848-ok"].group_type == "consumer"
        # the KIP-848 groups look Dead to DescribeGroups: only they go on to ConsumerGroupDescribe
        kip848_owners = {c.coordinator_of("kip848-ok"), c.coordinator_of("kip848-denied")}
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": 1,
            "DescribeGroups": 3,
            "ConsumerGroupDescribe": len(kip848_owners),
        }
        asked = sorted(g for e in c.requests("ConsumerGroupDescribe") for g in e.request.group_ids)
        assert asked == ["kip848-denied", "kip848-ok"]


async def test_other_group_errors_fail_the_group_without_retry():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 9)
        c.inject_error("OffsetFetch", Err.INVALID_GROUP_ID, key="g1")
        c.inject_error("OffsetFetch", Err.GROUP_ID_NOT_FOUND, key="g2")
        c.inject_error("OffsetFetch", Err.UNKNOWN_MEMBER_ID, key="g3")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert {g: f.code for g, f in result.failures.items()} == {"g1": 24, "g2": 69, "g3": 25}
        assert set(result.values) == set(seeded) - {"g1", "g2", "g3"}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 3}


async def test_partition_errors_leave_the_group_a_result():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 3, end_offsets=100)
        c.add_group("g", offsets={("orders", 0): 10, ("orders", 1): 11, ("orders", 2): 12})
        c.inject_error("OffsetFetch", Err.UNSTABLE_OFFSET_COMMIT, key=("g", "orders", 1))
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(["g"])
            asked = await client.fetch_committed_offsets(["g"], topics={"orders": [0, 2], "other": [5]})
        assert result.failures == {}
        offsets = result.values["g"]
        assert offsets.committed() == {TopicPartition("orders", 0): 10, TopicPartition("orders", 2): 12}
        assert offsets.partitions[TopicPartition("orders", 1)].error.code == 88
        # named partitions: those without a commit come back with no offset, not dropped
        assert asked.values["g"].committed() == {
            TopicPartition("orders", 0): 10,
            TopicPartition("orders", 2): 12,
        }
        assert asked.values["g"].partitions[TopicPartition("other", 5)].offset is None
        [_, second] = c.requests("OffsetFetch")
        assert {t.name: list(t.partition_indexes) for t in second.request.groups[0].topics} == {
            "orders": [0, 2],
            "other": [5],
        }


async def test_a_broker_too_old_for_the_api_fails_its_groups_without_sending():
    async with FakeCluster(brokers=3, broker_api_versions={1: {"OffsetFetch": (1, 1)}}) as c:
        seeded = seed(c, 12)
        on_old = {g for g in seeded if c.coordinator_of(g) == 1}
        assert on_old
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert set(result.failures) == on_old
        assert {f.code for f in result.failures.values()} == {CLIENT_UNSUPPORTED}
        assert committed(result) == {g: o for g, o in seeded.items() if g not in on_old}
        assert c.count("OffsetFetch", 1) == 0


async def test_delete_groups_per_group_outcome_one_request_per_coordinator():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 2, end_offsets=100)
        empty = [f"empty-{i}" for i in range(6)]
        stable = [f"stable-{i}" for i in range(3)]
        rebalancing = ["rebalancing"]
        missing = [f"missing-{i}" for i in range(3)]
        for g in empty:
            c.add_group(g, offsets={("orders", 0): 5})
        for g in stable:
            c.add_group(g, members=[Member("m1", {"orders": [0, 1]})])
        c.add_group("rebalancing", members=[Member("m1", {"orders": [0]})], state="PreparingRebalance")
        ids = empty + stable + rebalancing + missing
        owners = {c.coordinator_of(g) for g in ids}
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.delete_groups(ids)
        assert dict(result.values) == {g: GroupDeletion.DELETED for g in empty}
        assert {g: f.code for g, f in result.failures.items()} == (
            {g: 68 for g in stable + rebalancing} | {g: 69 for g in missing}
        )
        assert result.failures["stable-0"].name == "NON_EMPTY_GROUP"
        assert result.failures["missing-0"].name == "GROUP_ID_NOT_FOUND"
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "DeleteGroups": len(owners)}
        for node in owners:
            [delete] = c.requests("DeleteGroups", node)
            assert sorted(delete.request.groups_names) == sorted(
                g for g in ids if c.coordinator_of(g) == node
            )
        assert not any(c.has_group(g) for g in empty)
        assert all(c.has_group(g) for g in stable + rebalancing)


async def test_delete_groups_retries_and_relookups_like_every_other_api():
    async with FakeCluster(brokers=3) as c:
        for i in range(6):
            c.add_group(f"d{i}")
        load = c.inject_error("DeleteGroups", Err.COORDINATOR_LOAD_IN_PROGRESS, key="d1", times=2)
        moved = c.inject_error("DeleteGroups", Err.NOT_COORDINATOR, key="d2", times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.delete_groups([f"d{i}" for i in range(6)])
        assert (
            dict(result.values) == {f"d{i}": GroupDeletion.DELETED for i in range(6)}
            and result.failures == {}
        )
        assert (load.hits, moved.hits) == (2, 1)
        owners = {c.coordinator_of(f"d{i}") for i in range(6)}
        assert c.count("FindCoordinator") == 2
        assert c.count("DeleteGroups") == len(owners) + 3
        assert c.group_ids() == []
