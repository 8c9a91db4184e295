"""The fake cluster's group types: classic, consumer (KIP-848), share (KIP-932), streams
(KIP-1071), each described only by its own API, and the per-shard duplicates of Kafka 3.7 to
late 2024 (GroupCoordinatorService.consumerGroupDescribe / shareGroupDescribe)."""

from __future__ import annotations

from kafka.protocol.admin import DescribeGroupsRequest, ListGroupsRequest

from tests.support.fakekafka import ApiKey, Err, FakeCluster, Member, Subtopology
from tests.support.fakekafka.codec import API_CLASSES
from tests.support.fakekafka.wireclient import roundtrip


def seed_types(c: FakeCluster) -> None:
    c.add_topic("in", 2)
    c.add_group("classic", members=[Member("c1", {"in": [0]})])
    c.add_group("consumer", group_type="consumer", members=[Member("k1", {"in": [1]})])
    c.add_group("share", group_type="share", members=[Member("s1", {"in": [0, 1]})])
    c.add_topic("app-by-value-repartition", 2)
    c.add_topic("app-counts-changelog", 2)
    c.add_group(
        "streams",
        group_type="streams",
        topology={
            "0": ["in"],
            "1": Subtopology(
                repartition_sources=("app-by-value-repartition",), changelogs=("app-counts-changelog",)
            ),
        },
        members=[Member("t1", {"0": [0, 1], "1": [1]})],
        generation=3,
    )
    c.add_group("streams-not-ready", group_type="streams", state="NotReady")


def describe(api: ApiKey, ids: list[str]):
    return API_CLASSES[api][0](group_ids=ids, include_authorized_operations=False)


IDS = ["classic", "consumer", "share", "streams", "streams-not-ready", "absent"]


async def test_each_type_answers_only_to_its_own_describe_api():
    """GroupMetadataManager.describeGroups (classicGroup: "Group X is not a classic group." from
    DescribeGroups v6, a bare Dead below), consumerGroupDescribe, shareGroupDescribe,
    streamsGroupDescribe: GROUP_ID_NOT_FOUND for every other group."""
    async with FakeCluster(brokers=1) as c:
        seed_types(c)
        addr = c.address(0)
        v6 = await roundtrip(*addr, DescribeGroupsRequest(groups=IDS, include_authorized_operations=False), 6)
        assert {g.group_id: (g.error_code, g.group_state, g.error_message) for g in v6.groups} == {
            "classic": (0, "Stable", None),
            **{g: (69, "Dead", f"Group {g} is not a classic group.") for g in IDS[1:5]},
            "absent": (69, "Dead", "Group absent not found."),
        }
        v5 = await roundtrip(*addr, DescribeGroupsRequest(groups=IDS, include_authorized_operations=False), 5)
        assert {g.group_id: (g.error_code, g.group_state) for g in v5.groups} == {
            "classic": (0, "Stable"),
            **{g: (0, "Dead") for g in IDS[1:]},
        }

        for api, own in [
            (ApiKey.ConsumerGroupDescribe, {"consumer"}),
            (ApiKey.ShareGroupDescribe, {"share"}),
            (ApiKey.StreamsGroupDescribe, {"streams", "streams-not-ready"}),
        ]:
            resp = await roundtrip(*addr, describe(api, IDS), 1 if api == ApiKey.ShareGroupDescribe else 0)
            assert [g.group_id for g in resp.groups] == IDS
            kind = {
                ApiKey.ConsumerGroupDescribe: "consumer",
                ApiKey.ShareGroupDescribe: "share",
                ApiKey.StreamsGroupDescribe: "streams",
            }[api]
            for g in resp.groups:
                if g.group_id in own:
                    assert g.error_code == 0
                elif g.group_id == "absent":
                    assert (g.error_code, g.error_message) == (69, "Group absent not found.")
                else:
                    assert (g.error_code, g.error_message) == (
                        69,
                        f"Group {g.group_id} is not a {kind} group.",
                    )

        share = (await roundtrip(*addr, describe(ApiKey.ShareGroupDescribe, ["share"]), 1)).groups[0]
        assert (share.group_state, share.assignor_name) == ("Stable", "simple")
        assert [
            (
                m.member_id,
                m.subscribed_topic_names,
                [(t.topic_name, t.partitions) for t in m.assignment.topic_partitions],
            )
            for m in share.members
        ] == [("s1", ["in"], [("in", [0, 1])])]
        streams = await roundtrip(
            *addr, describe(ApiKey.StreamsGroupDescribe, ["streams", "streams-not-ready"]), 0
        )
        s, nr = streams.groups
        assert s.group_state == "Stable" and nr.group_state == "NotReady" and nr.topology is None
        # As Kafka 4.4 answers for a real Kafka Streams app (tests/apachekafka/test_streams_groups.py):
        # repartition and changelog topics apart from the sources, as TopicInfo with their partition
        # count; the topology's own epoch (0), not the group epoch.
        assert (s.group_epoch, s.topology.epoch, s.members[0].topology_epoch) == (3, 0, 0)
        assert [
            (
                x.subtopology_id,
                x.source_topics,
                [(t.name, t.partitions) for t in x.repartition_source_topics],
                [(t.name, t.partitions) for t in x.state_changelog_topics],
            )
            for x in s.topology.subtopologies
        ] == [
            ("0", ["in"], [], []),
            ("1", [], [("app-by-value-repartition", 2)], [("app-counts-changelog", 2)]),
        ]
        assert [(t.subtopology_id, t.partitions) for t in s.members[0].assignment.active_tasks] == [
            ("0", [0, 1]),
            ("1", [1]),
        ]
        # v1 (Kafka 4.4): the coordinator's task assignor; no topology description stored
        [v1] = (await roundtrip(*addr, describe(ApiKey.StreamsGroupDescribe, ["streams"]), 1)).groups
        assert (v1.assignor_name, v1.topology_description_status, v1.topology_description) == (
            "sticky",
            0,
            None,
        )

        listed = await roundtrip(*addr, ListGroupsRequest(states_filter=[], types_filter=[]), 5)
        assert {g.group_id: (g.group_type, g.group_state, g.protocol_type) for g in listed.groups} == {
            "classic": ("classic", "Stable", "consumer"),
            "consumer": ("consumer", "Stable", "consumer"),
            "share": ("share", "Stable", "share"),
            "streams": ("streams", "Stable", "streams"),
            "streams-not-ready": ("streams", "NotReady", "streams"),
        }
        typed = await roundtrip(
            *addr, ListGroupsRequest(states_filter=[], types_filter=["share", "streams"]), 5
        )
        assert sorted(g.group_id for g in typed.groups) == ["share", "streams", "streams-not-ready"]


async def test_per_shard_describe_duplicates_every_id_once_per_shard():
    """GroupCoordinatorService.consumerGroupDescribe (3.7 to late 2024) hands every requested id
    to each shard among them: one entry per id and shard, the owner's real answer among 69s
    without a message."""
    async with FakeCluster(brokers=1) as c:
        c.add_group("k-a", group_type="consumer")
        c.add_group("k-b", group_type="consumer")
        c.add_group("s-a", group_type="share")
        ids = ["k-a", "k-b", "s-a"]
        shards = {c.offsets_partition_of(g) for g in ids}
        assert len(shards) == 3
        c.set_describe_per_shard()
        for api, own, version in [
            (ApiKey.ConsumerGroupDescribe, {"k-a", "k-b"}, 0),
            (ApiKey.ShareGroupDescribe, {"s-a"}, 1),
        ]:
            resp = await roundtrip(*c.address(0), describe(api, ids), version)
            assert len(resp.groups) == len(ids) * len(shards)
            for g in ids:
                entries = [(e.error_code, e.error_message) for e in resp.groups if e.group_id == g]
                real = (
                    (0, None)
                    if g in own
                    else (
                        69,
                        f"Group {g} is not a {'consumer' if api == ApiKey.ConsumerGroupDescribe else 'share'} group.",
                    )
                )
                assert sorted(entries, key=str) == sorted([real] + [(69, None)] * (len(shards) - 1), key=str)
        # streams describe came after the fix: never duplicated
        resp = await roundtrip(*c.address(0), describe(ApiKey.StreamsGroupDescribe, ids), 0)
        assert [g.group_id for g in resp.groups] == ids


def _describe_share_offsets(group_id: str, partitions: list[int] | None = None):
    R = API_CLASSES[ApiKey.DescribeShareGroupOffsets][0]
    G = R.DescribeShareGroupOffsetsRequestGroup
    topics = (
        None
        if partitions is None
        else [G.DescribeShareGroupOffsetsRequestTopic(topic_name="in", partitions=partitions)]
    )
    return R(groups=[G(group_id=group_id, topics=topics)])


async def test_describe_share_group_offsets_v1_answers_the_lag_as_kafka_computes_it():
    """GroupCoordinatorService.computeShareGroupLagAndBuildResponse (KIP-1226, Kafka 4.2+): Lag =
    the high watermark - the start offset - the delivery-complete count; -1 for a share-partition
    never initialized, or whose coordinator keeps no count. v0 carries no Lag (it reads as the
    field's default, -1). The share-partition a broker initializes with AlterShareGroupOffsets
    has delivered nothing yet: its lag is every record from the start offset on."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("in", 3, end_offsets=50)
        c.add_group("s", group_type="share")
        c.set_share_offsets(
            "s", {("in", 0): 10, ("in", 1): 20}, delivery_complete={("in", 0): 5, ("in", 1): -1}
        )
        addr = c.address(0)
        v1 = await roundtrip(*addr, _describe_share_offsets("s", [0, 1, 2]), 1)
        [group] = v1.groups
        rows = {
            p.partition_index: (p.start_offset, p.lag, p.error_code)
            for t in group.topics
            for p in t.partitions
        }
        assert rows == {0: (10, 35, 0), 1: (20, -1, 0), 2: (-1, -1, 0)}
        v0 = await roundtrip(*addr, _describe_share_offsets("s", [0, 1, 2]), 0)
        rows = {p.partition_index: (p.start_offset, p.lag) for t in v0.groups[0].topics for p in t.partitions}
        assert rows == {0: (10, -1), 1: (20, -1), 2: (-1, -1)}

        A = API_CLASSES[ApiKey.AlterShareGroupOffsets][0]
        T = A.AlterShareGroupOffsetsRequestTopic
        c.add_group("fresh", group_type="share")
        altered = await roundtrip(
            *addr,
            A(
                group_id="fresh",
                topics=[
                    T(
                        topic_name="in",
                        partitions=[
                            T.AlterShareGroupOffsetsRequestPartition(partition_index=2, start_offset=44)
                        ],
                    )
                ],
            ),
            0,
        )
        assert altered.error_code == 0
        v1 = await roundtrip(*addr, _describe_share_offsets("fresh"), 1)
        assert [
            (p.partition_index, p.start_offset, p.lag) for t in v1.groups[0].topics for p in t.partitions
        ] == [(2, 44, 6)]
