"""The one batching mechanism against the fake cluster: how many requests of each API the
client sends, to which broker, carrying which groups, and that the values come back exact.

Coordinators are spread over the brokers by Kafka's own hash (``coordinator_of``), so each
test derives its expected per-broker counts from the cluster rather than hard-coding them.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, TopicPartition
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import HANDSHAKE_APIS, config


def counts(c: FakeCluster) -> dict[str, int]:
    """Requests received by API, connection set-up (ApiVersions, SASL) left out."""
    return {api: n for api, n in c.requests_by_api().items() if api not in HANDSHAKE_APIS}


def seed_groups(c: FakeCluster, n: int, *, prefix: str = "group-", partitions: int = 4) -> dict[str, dict]:
    """``n`` Empty groups with commits on two partitions of "orders": {group: {(topic, p): offset}}."""
    if "orders" not in c.topics:
        c.add_topic("orders", partitions, end_offsets=100_000)
    seeded = {}
    for i in range(n):
        offsets = {("orders", i % partitions): 1000 + i, ("orders", (i + 1) % partitions): 2000 + i}
        c.add_group(f"{prefix}{i}", offsets=offsets)
        seeded[f"{prefix}{i}"] = offsets
    return seeded


def by_coordinator(c: FakeCluster, group_ids) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for g in group_ids:
        out.setdefault(c.coordinator_of(g), set()).add(g)
    return out


def as_seeded(result) -> dict[str, dict]:
    """Client values -> the shape ``seed_groups`` returns."""
    return {
        g: {(tp.topic, tp.partition): off for tp, off in v.committed().items()}
        for g, v in result.values.items()
    }


def offset_fetch_groups(entry) -> list[str]:
    """The group ids one logged OffsetFetch carried (v8+ batch or a single group)."""
    if entry.api_version >= 8:
        return [g.group_id for g in entry.request.groups]
    return [entry.request.group_id]


def find_coordinator_keys(entry) -> list[str]:
    if entry.api_version >= 4:
        return list(entry.request.coordinator_keys)
    return [entry.request.key]


async def test_spread_coordinators_one_find_coordinator_and_one_offset_fetch_per_coordinator():
    async with FakeCluster(brokers=3) as c:
        seeded = seed_groups(c, 60)
        owners = by_coordinator(c, seeded)
        assert len(owners) == 3, "the hash should spread 60 groups over all three brokers"
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
            assert result.failures == {}
            assert as_seeded(result) == seeded
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 3}
            [find] = c.requests("FindCoordinator")
            assert find.api_version >= 4 and sorted(find.request.coordinator_keys) == sorted(seeded)
            for node, groups in owners.items():
                [fetch] = c.requests("OffsetFetch", node)
                assert fetch.api_version >= 8 and sorted(offset_fetch_groups(fetch)) == sorted(groups)
                assert fetch.request.groups[0].topics is None  # all partitions, not a topic list
            # the client's own count agrees with what the brokers received
            assert client.stats.by_api["FindCoordinator"] == 1 and client.stats.by_api["OffsetFetch"] == 3

            c.reset_counts()
            client.stats.reset()
            again = await client.fetch_committed_offsets(list(seeded))
            assert as_seeded(again) == seeded and again.failures == {}
            assert c.requests_by_api() == {"OffsetFetch": 3}  # cached coordinators, live connections
            assert {n: c.count("OffsetFetch", n) for n in owners} == {n: 1 for n in owners}
            assert dict(client.stats.by_api) == {"OffsetFetch": 3}


async def test_only_brokers_that_coordinate_requested_groups_are_asked():
    async with FakeCluster(brokers=4) as c:
        c.add_topic("orders", 2, end_offsets=10)
        for i in range(8):
            c.add_group(f"a{i}", offsets={("orders", 0): i}, coordinator=1 if i % 2 else 3)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets([f"a{i}" for i in range(8)])
        assert {g: v.committed() for g, v in result.values.items()} == {
            f"a{i}": {TopicPartition("orders", 0): i} for i in range(8)
        }
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 2}
        assert c.count("OffsetFetch", 1) == 1 and c.count("OffsetFetch", 3) == 1


async def test_duplicate_and_unknown_groups_one_result_each():
    async with FakeCluster(brokers=3) as c:
        seeded = seed_groups(c, 6)
        ids = list(seeded) + list(seeded)[:3] + ["never-existed"]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(ids)
        assert set(result.values) == set(seeded) | {"never-existed"} and result.failures == {}
        assert result.values["never-existed"].partitions == {}  # Kafka: no group, no commits, no error
        [find] = c.requests("FindCoordinator")
        assert sorted(find.request.coordinator_keys) == sorted(set(ids))
        carried = [g for e in c.requests("OffsetFetch") for g in offset_fetch_groups(e)]
        assert sorted(carried) == sorted(set(ids))


async def test_brokers_below_find_coordinator_v4_get_one_lookup_per_group_spread_over_brokers():
    async with FakeCluster(brokers=3, api_versions={"FindCoordinator": 3}) as c:
        seeded = seed_groups(c, 60)
        owners = by_coordinator(c, seeded)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
            assert as_seeded(result) == seeded and result.failures == {}
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 60, "OffsetFetch": 3}
            finds = c.requests("FindCoordinator")
            assert all(e.api_version == 3 and e.request.key for e in finds)
            assert sorted(e.request.key for e in finds) == sorted(seeded)
            assert {n: c.count("FindCoordinator", n) for n in range(3)} == {0: 20, 1: 20, 2: 20}
            for node, groups in owners.items():
                [fetch] = c.requests("OffsetFetch", node)
                assert sorted(offset_fetch_groups(fetch)) == sorted(groups)

            c.reset_counts()
            await client.fetch_committed_offsets(list(seeded))
            assert counts(c) == {"OffsetFetch": 3}


async def test_brokers_below_offset_fetch_v8_get_one_offset_fetch_per_group():
    async with FakeCluster(brokers=3, api_versions={"OffsetFetch": 7}) as c:
        seeded = seed_groups(c, 30)
        owners = by_coordinator(c, seeded)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert as_seeded(result) == seeded and result.failures == {}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 30}
        for node, groups in owners.items():
            fetches = c.requests("OffsetFetch", node)
            assert all(e.api_version == 7 and e.request.group_id for e in fetches)
            assert sorted(e.request.group_id for e in fetches) == sorted(groups)


async def test_mixed_versions_batch_where_possible_and_split_only_on_the_old_broker():
    old = 2
    async with FakeCluster(
        brokers=3, broker_api_versions={old: {"FindCoordinator": 3, "OffsetFetch": 7}}
    ) as c:
        seeded = seed_groups(c, 60)
        owners = by_coordinator(c, seeded)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert as_seeded(result) == seeded and result.failures == {}
        # one batched lookup, never sent to the old broker
        assert c.count("FindCoordinator") == 1 and c.count("FindCoordinator", old) == 0
        [find] = c.requests("FindCoordinator")
        assert find.api_version >= 4 and sorted(find.request.coordinator_keys) == sorted(seeded)
        # batched OffsetFetch on the new brokers, one per group on the old one
        for node in (0, 1):
            [fetch] = c.requests("OffsetFetch", node)
            assert fetch.api_version >= 8 and sorted(offset_fetch_groups(fetch)) == sorted(owners[node])
        old_fetches = c.requests("OffsetFetch", old)
        assert len(old_fetches) == len(owners[old])
        assert sorted(e.request.group_id for e in old_fetches) == sorted(owners[old])
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 2 + len(owners[old])}


async def test_no_batched_request_is_ever_encoded_below_its_batching_version():
    """Every broker old, every API path: each v<4 FindCoordinator names one key and each v<8
    OffsetFetch one group (kafka-python silently drops the batch otherwise)."""
    async with FakeCluster(
        brokers=3,
        broker_api_versions={
            0: {"FindCoordinator": 3, "OffsetFetch": 7},
            1: {"FindCoordinator": 2, "OffsetFetch": 5},
            2: {"FindCoordinator": 1, "OffsetFetch": 3},
        },
    ) as c:
        seeded = seed_groups(c, 24)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
            described = await client.describe_groups(list(seeded))
        assert as_seeded(result) == seeded and result.failures == {}
        assert set(described.values) == set(seeded) and described.failures == {}
        finds = c.requests("FindCoordinator")
        assert len(finds) == 24
        assert all(e.api_version < 4 and e.request.key for e in finds)
        fetches = c.requests("OffsetFetch")
        assert len(fetches) == 24
        assert all(e.api_version < 8 and e.request.group_id for e in fetches)
        assert sorted(e.request.group_id for e in fetches) == sorted(seeded)
        # each broker was asked at the highest version both sides speak
        assert {e.node: e.api_version for e in fetches} == {0: 7, 1: 5, 2: 3}


async def test_five_hundred_groups_in_one_call_nine_brokers():
    async with FakeCluster(brokers=9) as c:
        seeded = seed_groups(c, 500, partitions=12)
        owners = by_coordinator(c, seeded)
        assert len(owners) == 9
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
            assert as_seeded(result) == seeded and result.failures == {}
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 9}
            for node, groups in owners.items():
                [fetch] = c.requests("OffsetFetch", node)
                assert sorted(offset_fetch_groups(fetch)) == sorted(groups)

            c.reset_counts()
            described = await client.describe_groups(list(seeded))
            assert len(described.values) == 500 and described.failures == {}
            assert counts(c) == {"DescribeGroups": 9}  # no group is Dead: no ConsumerGroupDescribe


async def test_five_hundred_groups_on_old_brokers_are_pipelined_per_coordinator():
    async with FakeCluster(brokers=3, api_versions={"FindCoordinator": 3, "OffsetFetch": 7}) as c:
        seeded = seed_groups(c, 500)
        owners = by_coordinator(c, seeded)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert as_seeded(result) == seeded and result.failures == {}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 500, "OffsetFetch": 500}
        assert {n: c.count("OffsetFetch", n) for n in owners} == {n: len(g) for n, g in owners.items()}
        # the lookups were spread evenly over the brokers
        assert sorted(Counter(e.node for e in c.requests("FindCoordinator")).values()) == [166, 167, 167]


async def test_concurrent_calls_on_one_client_share_connections():
    async with FakeCluster(brokers=3, latency_s=0.005) as c:
        seeded = seed_groups(c, 30)
        tps = [TopicPartition("orders", p) for p in range(4)]
        async with AsyncGroupsClient(config(c)) as client:
            offsets, described, ends, listing = await asyncio.gather(
                client.fetch_committed_offsets(list(seeded)),
                client.describe_groups(list(seeded)),
                client.log_end_offsets(tps),
                client.list_groups(),
            )
        assert as_seeded(offsets) == seeded
        assert set(described.values) == set(seeded) and described.failures == {}
        assert {tp: v.offset for tp, v in ends.values.items()} == {tp: 100_000 for tp in tps}
        assert {g.group_id for g in listing.groups} == set(seeded)
        # one connection per broker plus the bootstrap one, however many calls raced for them
        assert c.count("ApiVersions") == 4
        owners = len(by_coordinator(c, seeded))
        assert c.count("OffsetFetch") == owners and c.count("DescribeGroups") == owners
        assert c.count("ListGroups") == 3
