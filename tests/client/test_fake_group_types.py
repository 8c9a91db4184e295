"""Group types in the client (issue 8, item 2): classic, consumer (KIP-848), share (KIP-932)
and streams (KIP-1071), each with its real type and state, never a live one called Dead.

Follows GroupMetadataManager.describeGroups / consumerGroupDescribe / shareGroupDescribe /
streamsGroupDescribe (each API answers only its own type), DescribeGroups v6 (KIP-1043: "not
a classic group" vs "not found"), ListGroups v5 (GroupType), and
GroupCoordinatorService.consumerGroupDescribe of 3.7 to late 2024 (duplicate entries), with
DescribeConsumerGroupsHandler's preference for the successful entry.
"""

from __future__ import annotations

from airflow_provider_kgroups.client import AsyncGroupsClient, GroupState, TopicPartition
from airflow_provider_kgroups.client.errors import ErrorCode
from tests.support.fakekafka import Err, FakeCluster, Member, Subtopology
from tests.support.fakeutil import config, counts

CLASSIC_NODE, CONSUMER_NODE, NEW_NODE = 0, 1, 2


def tps(*pairs) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t, p) for t, p in pairs)


def seed_types(c: FakeCluster) -> None:
    c.add_topic("words", 2, end_offsets=100)
    c.add_topic("counts-repartition", 1, end_offsets=100)
    c.add_group("classic", members=[Member("c1", {"words": [0]})], coordinator=CLASSIC_NODE)
    c.add_group(
        "consumer", group_type="consumer", members=[Member("k1", {"words": [1]})], coordinator=CONSUMER_NODE
    )
    c.add_group(
        "share",
        group_type="share",
        members=[Member("s1", {"words": [0, 1]}, client_id="share-1")],
        coordinator=NEW_NODE,
    )
    c.add_group("share-idle", group_type="share", coordinator=NEW_NODE)
    c.add_group(
        "streams",
        group_type="streams",
        coordinator=NEW_NODE,
        # the shape Kafka 4.4 gives a real Kafka Streams app (tests/apachekafka/test_streams_groups.py)
        topology={
            "0": Subtopology(sources=("words",), repartition_sinks=("counts-repartition",)),
            "1": Subtopology(repartition_sources=("counts-repartition",), changelogs=("counts-changelog",)),
        },
        members=[Member("t1", {"0": [0, 1], "1": [0]}, client_id="app-1")],
    )
    c.add_group("streams-not-ready", group_type="streams", state="NotReady", coordinator=NEW_NODE)
    c.move_coordinator("absent", CONSUMER_NODE)


IDS = ["classic", "consumer", "share", "share-idle", "streams", "streams-not-ready", "absent"]
EXPECTED = {
    "classic": ("classic", GroupState.STABLE, "consumer"),
    "consumer": ("consumer", GroupState.STABLE, "consumer"),
    "share": ("share", GroupState.STABLE, "share"),
    "share-idle": ("share", GroupState.EMPTY, "share"),
    "streams": ("streams", GroupState.STABLE, "streams"),
    "streams-not-ready": ("streams", GroupState.NOT_READY, "streams"),
    "absent": ("classic", GroupState.DEAD, ""),
}


def kinds(result) -> dict:
    return {g: (d.group_type, d.state, d.protocol_type) for g, d in result.values.items()}


async def test_every_type_described_without_a_listing():
    """No type known: DescribeGroups for all (v6: "absent" is "not found", Dead at once); the
    "not a classic group" ones to ConsumerGroupDescribe; what it does not have to
    ShareGroupDescribe and StreamsGroupDescribe together."""
    async with FakeCluster(brokers=3) as c:
        seed_types(c)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(IDS)
        assert result.failures == {}
        assert list(result.values) == IDS
        assert kinds(result) == EXPECTED
        share = result.values["share"]
        assert (
            share.protocol,
            [(m.member_id, m.client_id, m.assignment, m.subscribed_topics) for m in share.members],
        ) == ("simple", [("s1", "share-1", tps(("words", 0), ("words", 1)), ("words",))])
        streams = result.values["streams"]
        assert streams.protocol == "sticky"  # StreamsGroupDescribe v1's AssignorName
        assert [(m.member_id, m.assignment, m.subscribed_topics) for m in streams.members] == [
            (
                "t1",
                tps(("counts-repartition", 0), ("words", 0), ("words", 1)),
                ("counts-repartition", "words"),
            )
        ]
        assert result.values["absent"].coordinator_id == CONSUMER_NODE
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": 1,
            "DescribeGroups": 3,
            "ConsumerGroupDescribe": 2,
            "ShareGroupDescribe": 1,
            "StreamsGroupDescribe": 1,
        }
        [cgd_consumer] = c.requests("ConsumerGroupDescribe", CONSUMER_NODE)
        assert list(cgd_consumer.request.group_ids) == ["consumer"]
        [cgd_new] = c.requests("ConsumerGroupDescribe", NEW_NODE)
        assert sorted(cgd_new.request.group_ids) == ["share", "share-idle", "streams", "streams-not-ready"]
        [sgd] = c.requests("ShareGroupDescribe", NEW_NODE)
        [stgd] = c.requests("StreamsGroupDescribe", NEW_NODE)
        assert (
            sorted(sgd.request.group_ids)
            == sorted(stgd.request.group_ids)
            == ["share", "share-idle", "streams", "streams-not-ready"]
        )


async def test_listed_types_pick_the_describe_api_at_once():
    """After ListGroups v5 gave each group's type: one request per coordinator and API, in one
    round; only the unlisted id goes through DescribeGroups."""
    async with FakeCluster(brokers=3) as c:
        seed_types(c)
        async with AsyncGroupsClient(config(c)) as client:
            listing = await client.list_groups()
            assert {g.group_id: (g.group_type, g.state) for g in listing.groups} == {
                g: (t, s) for g, (t, s, _) in EXPECTED.items() if g != "absent"
            }
            c.reset_counts()
            result = await client.describe_groups(IDS)
        assert result.failures == {} and kinds(result) == EXPECTED
        assert counts(c) == {
            "FindCoordinator": 1,
            "DescribeGroups": 2,
            "ConsumerGroupDescribe": 1,
            "ShareGroupDescribe": 1,
            "StreamsGroupDescribe": 1,
        }
        assert sorted(g for e in c.requests("DescribeGroups") for g in e.request.groups) == [
            "absent",
            "classic",
        ]
        assert [list(e.request.group_ids) for e in c.requests("ConsumerGroupDescribe")] == [["consumer"]]
        assert sorted(c.requests("ShareGroupDescribe")[0].request.group_ids) == ["share", "share-idle"]
        assert sorted(c.requests("StreamsGroupDescribe")[0].request.group_ids) == [
            "streams",
            "streams-not-ready",
        ]


async def test_a_stale_listed_type_costs_one_more_round_not_a_wrong_answer():
    """The share group was deleted and the id reused by a classic group since the listing:
    ShareGroupDescribe says 69, DescribeGroups then describes it."""
    async with FakeCluster(brokers=3) as c:
        seed_types(c)
        async with AsyncGroupsClient(config(c)) as client:
            await client.list_groups()
            c.delete_group("share")
            c.add_group("share", members=[Member("c9", {"words": [1]})], coordinator=NEW_NODE)
            c.reset_counts()
            result = await client.describe_groups(["share"])
            assert kinds(result) == {"share": ("classic", GroupState.STABLE, "consumer")}
            # the listing named the coordinator (the broker that listed it): no FindCoordinator
            assert counts(c) == {"ShareGroupDescribe": 1, "DescribeGroups": 1}
            c.reset_counts()
            again = await client.describe_groups(["share"])  # the describe taught the client its type
            assert kinds(again) == kinds(result)
            assert counts(c) == {"DescribeGroups": 1}


async def test_duplicate_entries_per_shard_prefer_the_successful_one():
    """Kafka 3.7 to late 2024: every shard among the requested ids answers every id, so each
    group comes back once per shard, its real answer before or after the 69s."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("t", 1, end_offsets=10)
        consumers = [f"k{i}" for i in range(4)]
        shares = [f"s{i}" for i in range(2)]
        for g in consumers:
            c.add_group(g, group_type="consumer", members=[Member(f"m-{g}", {"t": [0]})])
        for g in shares:
            c.add_group(g, group_type="share")
        ids = consumers + shares + ["classic", "absent"]
        c.add_group("classic")
        assert len({c.offsets_partition_of(g) for g in ids}) > 3
        c.set_describe_per_shard()
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(ids)
        assert result.failures == {}
        assert {g: (d.group_type, d.state) for g, d in result.values.items()} == {
            **{g: ("consumer", GroupState.STABLE) for g in consumers},
            **{g: ("share", GroupState.EMPTY) for g in shares},
            "classic": ("classic", GroupState.EMPTY),
            "absent": ("classic", GroupState.DEAD),
        }
        assert all(len(result.values[g].members) == 1 for g in consumers)
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": 1,
            "DescribeGroups": 1,
            "ConsumerGroupDescribe": 1,
            "ShareGroupDescribe": 1,
            "StreamsGroupDescribe": 1,
        }


async def test_a_retriable_duplicate_beats_the_not_found_ones():
    """The owning shard is still loading (14) while the others say 69: retried, not Dead."""
    async with FakeCluster(brokers=1) as c:
        c.add_group("k", group_type="consumer")
        c.add_group("k2", group_type="consumer")
        c.set_describe_per_shard()
        loading = c.inject_error("ConsumerGroupDescribe", Err.COORDINATOR_LOAD_IN_PROGRESS, key="k", times=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(["k", "k2"])
        assert loading.hits == 1
        assert {g: (d.group_type, d.state) for g, d in result.values.items()} == {
            "k": ("consumer", GroupState.EMPTY),
            "k2": ("consumer", GroupState.EMPTY),
        }
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": 1,
            "DescribeGroups": 1,
            "ConsumerGroupDescribe": 2,
        }


async def test_broker_without_share_and_streams_describe_reports_them_from_its_listing():
    """A coordinator without ShareGroupDescribe / StreamsGroupDescribe (Kafka 4.0 keeps them
    unstable): type and state come from its ListGroups v5, filtered to those types; never Dead."""
    async with FakeCluster(
        brokers=3, api_versions={"ShareGroupDescribe": None, "StreamsGroupDescribe": None}
    ) as c:
        seed_types(c)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(IDS)
            assert result.failures == {}
            assert kinds(result) == EXPECTED
            assert result.values["share"].members == ()  # a listing has no members
            assert counts(c) == {
                "Metadata": 1,
                "FindCoordinator": 1,
                "DescribeGroups": 3,
                "ConsumerGroupDescribe": 2,
                "ListGroups": 1,
            }
            [listing] = c.requests("ListGroups", NEW_NODE)
            assert sorted(listing.request.types_filter) == ["share", "streams"]

            c.reset_counts()
            await client.list_groups()
            c.reset_counts()
            listed = await client.describe_groups(["share", "streams-not-ready"])
            assert kinds(listed) == {g: EXPECTED[g] for g in ("share", "streams-not-ready")}
            # the listing's types: straight to the coordinator's typed listing, one request
            assert counts(c) == {"ListGroups": 1}
            assert sorted(c.requests("ListGroups", NEW_NODE)[0].request.types_filter) == ["share", "streams"]


async def test_old_broker_dead_means_dead_after_consumer_group_describe():
    """Below DescribeGroups v6 (before Kafka 4.0) Dead is ambiguous; ConsumerGroupDescribe
    settles it; such a broker has no share or streams groups, so they are not asked."""
    async with FakeCluster(
        brokers=1,
        api_versions={"DescribeGroups": 5, "ShareGroupDescribe": None, "StreamsGroupDescribe": None},
    ) as c:
        c.add_group("classic")
        c.add_group("consumer", group_type="consumer")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(["classic", "consumer", "absent"])
        assert {g: (d.group_type, d.state) for g, d in result.values.items()} == {
            "classic": ("classic", GroupState.EMPTY),
            "consumer": ("consumer", GroupState.EMPTY),
            "absent": ("classic", GroupState.DEAD),
        }
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": 1,
            "DescribeGroups": 1,
            "ConsumerGroupDescribe": 1,
        }
        assert sorted(c.requests("ConsumerGroupDescribe")[0].request.group_ids) == ["absent", "consumer"]


async def test_share_describe_failure_is_that_groups_failure():
    async with FakeCluster(brokers=3) as c:
        seed_types(c)
        c.inject_error("ShareGroupDescribe", Err.GROUP_AUTHORIZATION_FAILED, key="share")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_groups(["share", "streams"])
        assert {g: f.code for g, f in result.failures.items()} == {
            "share": ErrorCode.GROUP_AUTHORIZATION_FAILED
        }
        assert kinds(result) == {"streams": EXPECTED["streams"]}


async def test_stale_share_type_on_a_broker_without_share_describe_goes_on_to_describe_groups():
    """Listed as share, since replaced by a classic group, on a coordinator without
    ShareGroupDescribe: its typed listing no longer lists it, DescribeGroups describes it."""
    async with FakeCluster(brokers=3, api_versions={"ShareGroupDescribe": None}) as c:
        seed_types(c)
        async with AsyncGroupsClient(config(c)) as client:
            await client.list_groups()
            c.delete_group("share")
            c.add_group("share", coordinator=NEW_NODE)
            c.reset_counts()
            result = await client.describe_groups(["share"])
        assert kinds(result) == {"share": ("classic", GroupState.EMPTY, "consumer")}
        assert counts(c) == {"ListGroups": 1, "DescribeGroups": 1}  # coordinator known from the listing
        assert list(c.requests("ListGroups", NEW_NODE)[0].request.types_filter) == ["share"]
