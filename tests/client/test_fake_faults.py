"""Connection faults against the fake cluster: a response cut in half, a broker that never
answers, a broker that goes down. The faulty broker's groups go back to lookup (or time out
at the call's deadline, naming the last error); the other brokers' groups are unaffected."""

from __future__ import annotations

import asyncio

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, TopicPartition
from airflow_provider_kgroups.client.errors import CLIENT_TIMEOUT
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import HANDSHAKE_APIS, committed, config, counts, seed


def owned_by(c: FakeCluster, groups, node: int) -> set[str]:
    return {g for g in groups if c.coordinator_of(g) == node}


async def test_dropped_mid_response_sends_that_brokers_groups_back_to_lookup():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 30)
        faulty = 1
        mine = owned_by(c, seeded, faulty)
        drop = c.drop_mid_response("OffsetFetch", node=faulty, times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
            # the client counts what it sent, cut responses included, exactly as received
            assert dict(client.stats.by_api) == c.requests_by_api()
            assert client.stats.errors == 1
        assert committed(result) == seeded and result.failures == {}
        assert drop.hits == 1
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 2, "OffsetFetch": 4}
        assert {n: c.count("OffsetFetch", n) for n in range(3)} == {0: 1, 1: 2, 2: 1}
        second_lookup = c.requests("FindCoordinator")[1]
        assert sorted(second_lookup.request.coordinator_keys) == sorted(mine)
        retried = c.requests("OffsetFetch", faulty)[1]
        assert sorted(g.group_id for g in retried.request.groups) == sorted(mine)


async def test_dropped_mid_response_on_pipelined_per_group_requests():
    """Below OffsetFetch v8 the broker's groups are pipelined on one connection: cutting one
    response fails every request in flight there, and all of them go back to lookup."""
    async with FakeCluster(brokers=3, api_versions={"OffsetFetch": 7}) as c:
        seeded = seed(c, 15)
        faulty = 2
        mine = owned_by(c, seeded, faulty)
        drop = c.drop_mid_response("OffsetFetch", node=faulty, times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        assert drop.hits == 1
        assert c.count("OffsetFetch", 0) == len(owned_by(c, seeded, 0))
        assert c.count("OffsetFetch", 1) == len(owned_by(c, seeded, 1))
        # the broker read the first request, cut its answer and closed: the rest of the
        # pipeline never reached it; then every group of that broker once more
        received = [e.request.group_id for e in c.requests("OffsetFetch", faulty)]
        assert len(received) == 1 + len(mine)
        assert received[0] in mine and sorted(received[1:]) == sorted(mine)
        assert c.count("FindCoordinator") == 2


async def test_dropped_find_coordinator_response_is_looked_up_again():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 9)
        drop = c.drop_mid_response("FindCoordinator", times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        assert drop.hits == 1
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 2, "OffsetFetch": 3}


async def test_blackholed_coordinator_times_out_its_groups_only():
    """The broker went silent after the client cached its coordinators and connections."""
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 30)
        silent = 1
        mine = owned_by(c, seeded, silent)
        async with AsyncGroupsClient(config(c, request_timeout_s=0.3)) as client:
            await client.fetch_committed_offsets(list(seeded))
            c.blackhole(silent)
            c.reset_counts()
            loop = asyncio.get_running_loop()
            started = loop.time()
            result = await client.fetch_committed_offsets(list(seeded), timeout_s=1.0)
            elapsed = loop.time() - started
        assert set(result.failures) == mine
        for failure in result.failures.values():
            assert failure.code == CLIENT_TIMEOUT
            assert "last error" in failure.message and "broker" in failure.message
        assert committed(result) == {g: o for g, o in seeded.items() if g not in mine}
        assert elapsed < 1.0 + 1.0
        assert c.count("OffsetFetch", 0) == 1 and c.count("OffsetFetch", 2) == 1


async def test_blackholed_broker_from_the_start_times_out_its_groups_only():
    """The broker accepts connections and reads requests but never answers anything, not even
    ApiVersions. The call's other groups must not wait for it."""
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 30)
        silent = 2
        mine = owned_by(c, seeded, silent)
        c.blackhole(silent)
        async with AsyncGroupsClient(config(c, request_timeout_s=0.4)) as client:
            loop = asyncio.get_running_loop()
            started = loop.time()
            result = await client.fetch_committed_offsets(list(seeded), timeout_s=1.5)
            elapsed = loop.time() - started
        assert committed(result) == {g: o for g, o in seeded.items() if g not in mine}
        assert set(result.failures) == mine
        for failure in result.failures.values():
            assert failure.code == CLIENT_TIMEOUT
            assert "last error" in failure.message and str(c.address(silent)[1]) in failure.message
        assert elapsed < 1.5 + 1.0
        assert c.count("OffsetFetch", 0) == 1 and c.count("OffsetFetch", 1) == 1
        assert c.count("OffsetFetch", silent) == 0  # it never got past ApiVersions


async def test_blackholed_first_bootstrap_broker_is_skipped_within_the_deadline():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 30)
        silent = 0  # the first bootstrap server
        mine = owned_by(c, seeded, silent)
        c.blackhole(silent)
        async with AsyncGroupsClient(config(c, request_timeout_s=0.3)) as client:
            loop = asyncio.get_running_loop()
            started = loop.time()
            result = await client.fetch_committed_offsets(list(seeded), timeout_s=1.0)
            elapsed = loop.time() - started
        assert committed(result) == {g: o for g, o in seeded.items() if g not in mine}
        assert set(result.failures) == mine
        assert {f.code for f in result.failures.values()} == {CLIENT_TIMEOUT}
        assert elapsed < 1.0 + 1.0


async def test_silent_broker_that_recovers_within_the_deadline():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 12)
        silent = 1
        async with AsyncGroupsClient(config(c, request_timeout_s=0.3)) as client:
            await client.fetch_committed_offsets(list(seeded))
            c.blackhole(silent)
            loop = asyncio.get_running_loop()
            loop.call_later(0.5, c.blackhole, silent, False)
            result = await client.fetch_committed_offsets(list(seeded), timeout_s=5)
        assert committed(result) == seeded and result.failures == {}


async def test_coordinator_broker_down_then_groups_fail_over():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 30)
        down = 0
        mine = owned_by(c, seeded, down)
        async with AsyncGroupsClient(config(c)) as client:
            await client.fetch_committed_offsets(list(seeded))
            await c.stop_broker(down)
            for g in mine:  # the coordinators' partitions get new leaders
                c.move_coordinator(g, 1)
            c.reset_counts()
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        # the cached coordinator refused the connection: one lookup for its groups,
        # then one OffsetFetch to the new coordinator
        assert counts(c) == {"FindCoordinator": 1, "OffsetFetch": 3}
        assert sorted(c.requests("FindCoordinator")[0].request.coordinator_keys) == sorted(mine)
        assert c.count("OffsetFetch", 1) == 2 and c.count("OffsetFetch", 2) == 1


async def test_coordinator_broker_down_for_good_times_out_naming_the_connection_error():
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 12)
        down = 2
        mine = owned_by(c, seeded, down)
        await c.stop_broker(down)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded), timeout_s=0.5)
        assert committed(result) == {g: o for g, o in seeded.items() if g not in mine}
        assert set(result.failures) == mine
        for failure in result.failures.values():
            assert failure.code == CLIENT_TIMEOUT
            assert "cannot connect" in failure.message


async def test_silent_broker_chosen_for_the_lookup_delays_but_does_not_fail_it():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 1, end_offsets=10)
        first = [f"a{i}" for i in range(6)]
        later = [f"b{i}" for i in range(6)]
        for i, g in enumerate(first + later):
            c.add_group(g, offsets={("orders", 0): i}, coordinator=1 + i % 2)
        silent = 0
        async with AsyncGroupsClient(config(c, request_timeout_s=0.3)) as client:
            await client.fetch_committed_offsets(first)
            # With every connection idle, the lookup goes to the lowest broker id: open one to
            # broker 0 so that it is the one chosen, then silence it.
            await client.pool.get(silent)
            c.blackhole(silent)
            c.reset_counts()
            result = await client.fetch_committed_offsets(later, timeout_s=5)
        assert {g: list(v.committed().values()) for g, v in result.values.items()} == {
            g: [6 + i] for i, g in enumerate(later)
        }
        assert result.failures == {}
        finds = c.requests("FindCoordinator")
        assert [e.node for e in finds] == [silent, 1]  # unanswered, then another broker
        assert sorted(finds[1].request.coordinator_keys) == sorted(later)
        assert counts(c) == {"FindCoordinator": 2, "OffsetFetch": 2}


async def test_broker_downgraded_under_an_open_connection():
    """A rolling downgrade: the broker now rejects the version negotiated on the open
    connection (Kafka closes it). The client reconnects, negotiates again, and falls back."""
    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 18)
        node = 1
        mine = owned_by(c, seeded, node)
        async with AsyncGroupsClient(config(c)) as client:
            await client.fetch_committed_offsets(list(seeded))
            c.set_api_versions({"OffsetFetch": 7}, node=node)
            c.reset_counts()
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded and result.failures == {}
        on_node = c.requests("OffsetFetch", node)
        assert on_node[0].api_version == 9  # refused: connection closed
        assert sorted(e.request.group_id for e in on_node[1:]) == sorted(mine)
        assert {e.api_version for e in on_node[1:]} == {7}
        assert c.count("FindCoordinator") == 1 and c.count("ApiVersions", node) == 1
