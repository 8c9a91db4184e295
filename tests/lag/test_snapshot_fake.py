"""take_snapshot against the fake cluster: the numbers, the order of reads, the request counts."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.results import GroupState, TopicPartition
from airflow_provider_kgroups.lag.model import LagFlag, UnknownLagPolicy
from airflow_provider_kgroups.lag.snapshot import iter_snapshot, take_snapshot
from tests.support.fakekafka import Err, Member
from tests.support.fakeworld import with_fake_cluster


def seed(cluster):
    cluster.add_topic("orders", partitions=3, end_offsets=[100, 200, 300], start_offsets=[0, 50, 0])
    cluster.add_topic("audit", partitions=1, end_offsets=[10], last_stable_offsets=[8])
    cluster.add_group(
        "billing",
        offsets={("orders", 0): 90, ("orders", 1): 20, ("orders", 2): 310},
        members=[Member("m-1", assignment={"orders": [0, 1, 2], "audit": [0]})],
    )
    cluster.add_group("paused", offsets={("orders", 0): 100, ("audit", 0): 7})


async def test_snapshot_numbers_flags_and_states():
    async def body(cluster, client):
        return await take_snapshot(client, ["billing", "paused", "never-existed"])

    snap = await with_fake_cluster(body, setup=seed)
    billing = {p.tp: p for p in snap.groups["billing"].partitions}
    assert billing[TopicPartition("orders", 0)].lag == 10
    assert billing[TopicPartition("orders", 1)].flags == {LagFlag.LOST}  # 20 < log start 50
    assert billing[TopicPartition("orders", 1)].lag == 180
    assert billing[TopicPartition("orders", 2)].flags == {LagFlag.CLAMPED}
    assert billing[TopicPartition("audit", 0)].flags == {LagFlag.NO_COMMIT}
    assert billing[TopicPartition("audit", 0)].assigned_to == "m-1"
    assert snap.groups["billing"].state is GroupState.STABLE and snap.groups["billing"].members == 1
    assert snap.groups["billing"].total_lag is None  # FAIL policy and audit[0] never committed
    assert snap.groups["paused"].state is GroupState.EMPTY and snap.groups["paused"].total_lag == 3
    assert (
        snap.groups["never-existed"].state is GroupState.DEAD
        and snap.groups["never-existed"].partitions == ()
    )
    assert snap.groups["never-existed"].not_found and snap.groups["never-existed"].total_lag is None  # not 0
    assert not snap.groups["billing"].not_found and not snap.groups["paused"].not_found
    assert not snap.failures


async def test_an_unreadable_log_end_offset_makes_the_partition_and_the_total_unknown():
    """KafkaApis.handleListOffsetRequest answers per partition: one partition's error leaves the
    others known, and the group's total unknown (never summed as 0), whatever the policy."""

    async def body(cluster, client):
        cluster.inject_error("ListOffsets", Err.TOPIC_AUTHORIZATION_FAILED, key=("orders", 0))
        return [await take_snapshot(client, ["paused"], policy=policy) for policy in UnknownLagPolicy]

    for snap in await with_fake_cluster(body, setup=seed):
        paused = {p.tp: p for p in snap.groups["paused"].partitions}
        assert paused[TopicPartition("orders", 0)].lag is None
        assert paused[TopicPartition("orders", 0)].flags == {LagFlag.ERROR}
        assert paused[TopicPartition("orders", 0)].error.code == Err.TOPIC_AUTHORIZATION_FAILED
        assert paused[TopicPartition("audit", 0)].lag == 3
        assert snap.groups["paused"].total_lag is None
        assert snap.groups["paused"].to_dict()["total_lag"] is None


async def test_committed_offsets_are_read_before_end_offsets_in_one_round_per_leader():
    async def body(cluster, client):
        await take_snapshot(client, ["billing", "paused"], policy=UnknownLagPolicy.IGNORE)
        return cluster.requests()

    log = await with_fake_cluster(body, setup=seed)
    apis = [r.api for r in log]
    last_offset_fetch = max(i for i, api in enumerate(apis) if api == "OffsetFetch")
    first_list_offsets = min(i for i, api in enumerate(apis) if api == "ListOffsets")
    assert last_offset_fetch < first_list_offsets
    list_offsets = [r for r in log if r.api == "ListOffsets"]
    leaders = {r.node for r in list_offsets}
    assert len(list_offsets) == 2 * len(leaders)  # earliest + latest, together, per leader
    for r in list_offsets:  # partitions deduplicated across the two groups
        asked = [(t.name, p.partition_index) for t in r.request.topics for p in t.partitions]
        assert len(asked) == len(set(asked))
    assert apis.count("FindCoordinator") == 1  # describe and OffsetFetch go together and share one lookup
    assert apis.count("Metadata") <= 2  # bootstrap (shared too) + one refresh for all topics involved
    # describe and OffsetFetch in the same round: both went out before either was answered
    first_offset_fetch = apis.index("OffsetFetch")
    assert "DescribeGroups" in apis[first_offset_fetch - 3 : first_offset_fetch + 4]


async def test_iter_snapshot_reads_each_group_once_in_batches_each_exact():
    """Each part follows take_snapshot's order of reads (commits, then end offsets) for its own
    groups; together the parts hold every group exactly once."""

    async def body(cluster, client):
        parts = [
            part
            async for part in iter_snapshot(
                client,
                ["billing", "paused", "never-existed"],
                policy=UnknownLagPolicy.IGNORE,
                batch_size=2,
                concurrency=1,
            )
        ]
        whole = await take_snapshot(
            client, ["billing", "paused", "never-existed"], policy=UnknownLagPolicy.IGNORE
        )
        coordinators = {g: cluster.coordinator_of(g) for g in ("billing", "paused", "never-existed")}
        return parts, whole, cluster.requests(), coordinators

    parts, whole, log, coordinators = await with_fake_cluster(body, setup=seed)
    assert [sorted(p.groups) for p in parts] == [["billing", "paused"], ["never-existed"]]
    assert not any(p.failures for p in parts)
    for part in parts:
        for gid, group in part.groups.items():
            assert group.partitions == whole.groups[gid].partitions
            assert group.total_lag == whole.groups[gid].total_lag
    apis = [r.api for r in log]
    # one OffsetFetch per coordinator in each batch, then take_snapshot's own round
    assert apis.count("OffsetFetch") == (
        len({coordinators["billing"], coordinators["paused"]}) + 1 + len(set(coordinators.values()))
    )
    # batch 2 has no commit: no ListOffsets; batch 1 and take_snapshot: earliest + latest per leader
    leaders = {r.node for r in log if r.api == "ListOffsets"}
    assert apis.count("ListOffsets") == 2 * 2 * len(leaders)


async def test_iter_snapshot_refuses_a_bad_batch_size_before_any_request():
    async def body(cluster, client):
        with pytest.raises(ConfigurationError, match="batch_size"):
            async for _ in iter_snapshot(client, ["billing"], batch_size=0):
                pass
        return cluster.requests()

    assert await with_fake_cluster(body, setup=seed) == []


async def test_read_committed_uses_the_last_stable_offset():
    async def body(cluster, client):
        plain = await take_snapshot(client, ["paused"])
        stable = await take_snapshot(client, ["paused"], read_committed=True)
        return plain, stable

    plain, stable = await with_fake_cluster(body, setup=seed)
    audit = TopicPartition("audit", 0)
    assert {p.tp: p.lag for p in plain.groups["paused"].partitions}[audit] == 3
    assert {p.tp: p.lag for p in stable.groups["paused"].partitions}[audit] == 1


async def test_topics_limit_and_complete_the_partitions():
    async def body(cluster, client):
        return await take_snapshot(client, ["paused"], topics=["orders"], policy="from_latest")

    snap = await with_fake_cluster(body, setup=seed)
    parts = snap.groups["paused"].partitions
    assert [p.tp for p in parts] == [TopicPartition("orders", i) for i in range(3)]
    assert [LagFlag.NO_COMMIT in p.flags for p in parts] == [False, True, True]
    assert snap.groups["paused"].total_lag == 0


async def test_unknown_topic_is_a_configuration_error():
    async def body(cluster, client):
        with pytest.raises(ConfigurationError, match="'nope' do not exist"):
            await take_snapshot(client, ["paused"], topics=["orders", "nope"])

    await with_fake_cluster(body, setup=seed)


async def test_unknown_policy_fails_before_any_request():
    async def body(cluster, client):
        with pytest.raises(ConfigurationError, match="unknown lag policy"):
            await take_snapshot(client, ["paused"], policy="nan")
        return cluster.requests()

    assert await with_fake_cluster(body, setup=seed) == []


async def test_a_group_that_cannot_be_read_is_a_failure_and_the_rest_is_reported():
    def setup(cluster):
        seed(cluster)
        cluster.inject_error("OffsetFetch", Err.GROUP_AUTHORIZATION_FAILED, key="billing")

    async def body(cluster, client):
        return await take_snapshot(client, ["billing", "paused"])

    snap = await with_fake_cluster(body, setup=setup)
    assert snap.failures["billing"].code == Err.GROUP_AUTHORIZATION_FAILED
    assert snap.groups["paused"].total_lag == 3


async def test_deleted_topic_shows_as_error_partition():
    def setup(cluster):
        seed(cluster)
        cluster.delete_topic("audit")

    async def body(cluster, client):
        return await take_snapshot(client, ["paused"])

    snap = await with_fake_cluster(body, setup=setup)
    audit = next(p for p in snap.groups["paused"].partitions if p.topic == "audit")
    assert LagFlag.ERROR in audit.flags and audit.error.code == Err.UNKNOWN_TOPIC_OR_PARTITION


async def test_snapshots_read_with_fewer_collections_and_put_the_thresholds_back():
    """take_snapshot and iter_snapshot raise the collector's young threshold while they read
    (client/gcpause.py) and restore it when done."""
    import gc

    from airflow_provider_kgroups.client.gcpause import YOUNG_THRESHOLD

    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:

        async def body(cluster, client):
            seen = []
            fetch = client.fetch_committed_offsets

            async def fetch_and_look(*args, **kwargs):
                seen.append(gc.get_threshold()[0])
                return await fetch(*args, **kwargs)

            client.fetch_committed_offsets = fetch_and_look
            await take_snapshot(client, ["billing"])
            after_take = gc.get_threshold()[0]
            parts = [part async for part in iter_snapshot(client, ["billing", "paused"], batch_size=1)]
            return seen, after_take, gc.get_threshold()[0], len(parts)

        seen, after_take, after_iter, parts = await with_fake_cluster(body, setup=seed)
        assert seen == [YOUNG_THRESHOLD] * 3 and after_take == 700 and after_iter == 700 and parts == 2
    finally:
        gc.set_threshold(*saved)


async def test_a_listing_spares_the_describe_of_empty_groups_only():
    """``listings`` (what ``select_listed`` read): a group listed Empty is taken as listed, not
    described; a Stable group is described (members, owners); a group two brokers listed (its
    coordinator moving) is described, as neither listing is known to be current. The snapshot
    equals the one taken without listings."""
    from airflow_provider_kgroups.client.selection import GroupSelector, select_listed

    async def body(cluster, client):
        cluster.add_group("moving", offsets={("orders", 0): 95})
        cluster.list_stale("moving", (cluster.coordinator_of("moving") + 1) % 3)
        ids, listings = await select_listed(client, GroupSelector(patterns=("*",)))
        cluster.reset_counts()
        with_listing = await take_snapshot(client, ids, listings=listings)
        described = sorted(g for r in cluster.requests("DescribeGroups") for g in r.request.groups)
        without = await take_snapshot(client, ids)
        return ids, listings, described, with_listing, without

    ids, listings, described, with_listing, without = await with_fake_cluster(body, setup=seed, brokers=3)
    assert sorted(ids) == ["billing", "moving", "paused"]
    assert "moving" not in listings and listings["paused"].state is GroupState.EMPTY
    assert described == ["billing", "moving"]
    assert with_listing.groups == without.groups


async def test_iter_snapshot_in_order_yields_the_parts_in_the_order_of_the_groups():
    """The table streams parts in the order of the groups: with the first batch's coordinator
    slow, the other batches finish first; ``in_order`` holds them until the first is out (the
    default yields in completion order, which this setup makes different)."""

    def setup(cluster):
        for i in range(12):
            cluster.add_group(f"g{i:02d}", offsets={("orders", 0): i})

    async def body(cluster, client):
        slow = cluster.coordinator_of("g00")
        ids = [
            "g00",
            *[g for g in (f"g{i:02d}" for i in range(1, 12)) if cluster.coordinator_of(g) != slow][:4],
        ]
        cluster.set_delay(processing_s=0.3, api="OffsetFetch", node=slow)
        orders = []
        for in_order in (True, False):
            parts = [
                [*part.groups]
                async for part in iter_snapshot(client, ids, batch_size=1, concurrency=3, in_order=in_order)
            ]
            orders.append([gid for part in parts for gid in part])
        return ids, orders

    ids, (in_order, completed) = await with_fake_cluster(body, setup=setup)
    assert len(ids) == 5
    assert in_order == ids
    assert sorted(completed) == sorted(ids) and completed != ids
