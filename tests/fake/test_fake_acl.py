"""Authorization and small-fidelity facts of the fake cluster, over raw codec requests.

Each test names the Apache Kafka source it follows (trunk, late 2024): KafkaApis.scala for
the ACL checks, StandardAuthorizerData for implied Describe, ClassicGroup.validateOffsetCommit,
ReplicaManager.fetchOffset / ListOffsetsRequest.duplicatePartitions.
"""

from __future__ import annotations

import pytest
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import OffsetCommitRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from tests.support.fakekafka import ApiKey, Err, FakeCluster, Member, WireClient, roundtrip
from tests.support.fakekafka.acl import Acls
from tests.support.fakekafka.codec import API_CLASSES
from tests.support.fakeutil import within
from tests.support.raw_requests import (
    WIRE_TEST_DEADLINE_S,
    find_coordinator,
    list_offsets,
    offset_fetch_single,
    offset_fetch_v8,
    offsets_of,
    sasl_exchange,
)


def metadata(*names: str | None):
    topics = None if names == (None,) else [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
    return MetadataRequest(topics=topics, allow_auto_topic_creation=False)


def test_acls_off_until_the_first_rule_and_read_delete_imply_describe():
    """StandardAuthorizerData.IMPLIES_DESCRIBE: Describe is allowed by Describe, Read, Write,
    Delete, Alter (and All); nothing implies Read or Delete. No rule at all: no authorizer."""
    acls = Acls()
    assert acls.authorized("anyone", "group", "g", "Delete")
    acls.allow("alice", "group", "g", ("Read",))
    acls.allow("*", "topic", "*", ("Describe",))
    acls.allow("bob", "group", "*", ("Delete",))
    assert acls.authorized("alice", "group", "g", "Describe") and acls.authorized(
        "alice", "group", "g", "Read"
    )
    assert not acls.authorized("alice", "group", "g", "Delete")
    assert not acls.authorized("alice", "group", "other", "Describe")
    assert acls.authorized("bob", "group", "any", "Describe") and not acls.authorized(
        "bob", "group", "any", "Read"
    )
    assert acls.authorized("carol", "topic", "t", "Describe") and not acls.authorized(
        "carol", "topic", "t", "Read"
    )
    with pytest.raises(ValueError, match="resource type"):
        acls.allow("alice", "topics", "t", ("Describe",))
    with pytest.raises(ValueError, match="operations"):
        acls.allow("alice", "topic", "t", ("Descibe",))


@within(WIRE_TEST_DEADLINE_S)
async def test_metadata_hides_unauthorized_topics_from_all_topics_and_answers_29_for_named_ones():
    """KafkaApis.handleTopicMetadataRequest: all topics -> the unauthorized ones are left out;
    named -> TOPIC_AUTHORIZATION_FAILED whether or not the topic exists; authorized and
    absent -> UNKNOWN_TOPIC_OR_PARTITION."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("visible", 2)
        c.add_topic("hidden", 1)
        c.allow("ANONYMOUS", "topic", "visible", "Describe")
        c.allow("ANONYMOUS", "topic", "gone", "Describe")
        every = await roundtrip(*c.address(0), metadata(None), 9)
        assert [(t.name, t.error_code) for t in every.topics] == [("visible", 0)]
        every_v0 = await roundtrip(*c.address(0), MetadataRequest(topics=[]), 0)
        assert [t.name for t in every_v0.topics] == ["visible"]
        named = await roundtrip(*c.address(0), metadata("visible", "hidden", "never-was", "gone"), 12)
        assert {t.name: (t.error_code, len(t.partitions)) for t in named.topics} == {
            "visible": (0, 2),
            "hidden": (Err.TOPIC_AUTHORIZATION_FAILED, 0),
            "never-was": (Err.TOPIC_AUTHORIZATION_FAILED, 0),
            "gone": (Err.UNKNOWN_TOPIC_OR_PARTITION, 0),
        }
        ids = {t.name: t.topic_id for t in named.topics}
        assert (
            ids["hidden"] is None and ids["visible"] == c.topics["visible"].topic_id
        )  # zero uuid: not disclosed
        assert c.count("Metadata") == 3


@within(WIRE_TEST_DEADLINE_S)
async def test_find_coordinator_30_per_key_from_v4_without_message_and_for_the_whole_response_below():
    """KafkaApis.getCoordinator: group Describe or GROUP_AUTHORIZATION_FAILED with Node.noNode;
    handleFindCoordinatorRequestV4AndAbove sets no ErrorMessage per key;
    handleFindCoordinatorRequestLessThanV4 -> FindCoordinatorResponse.prepareOldResponse with
    Errors.message()."""
    async with FakeCluster(brokers=3) as c:
        c.allow("ANONYMOUS", "group", "mine", "Describe")
        resp = await roundtrip(*c.address(0), find_coordinator("mine", "theirs"), 4)
        got = {x.key: (x.error_code, x.error_message, x.node_id, x.host, x.port) for x in resp.coordinators}
        node = c.coordinator_of("mine")
        assert got == {
            "mine": (0, None, node, "127.0.0.1", c.address(node)[1]),
            "theirs": (Err.GROUP_AUTHORIZATION_FAILED, None, -1, "", -1),
        }
        old = await roundtrip(*c.address(0), FindCoordinatorRequest(key="theirs", key_type=0), 3)
        assert (old.error_code, old.error_message, old.node_id) == (
            Err.GROUP_AUTHORIZATION_FAILED,
            "Group authorization failed.",
            -1,
        )
        assert c.count("FindCoordinator") == 2


@within(WIRE_TEST_DEADLINE_S)
async def test_find_coordinator_v4_per_key_errors_carry_no_error_message():
    """KafkaApis.handleFindCoordinatorRequestV4AndAbove builds each Coordinator with key, error
    code, host, node id and port only: no ErrorMessage, whatever the error."""
    async with FakeCluster(brokers=3) as c:
        c.inject_error("FindCoordinator", Err.COORDINATOR_NOT_AVAILABLE, key="g1")
        c.inject_error("FindCoordinator", Err.COORDINATOR_LOAD_IN_PROGRESS, key="g2")
        resp = await roundtrip(*c.address(0), find_coordinator("g1", "g2"), 4)
        assert [(x.key, x.error_code, x.error_message) for x in resp.coordinators] == [
            ("g1", Err.COORDINATOR_NOT_AVAILABLE, None),
            ("g2", Err.COORDINATOR_LOAD_IN_PROGRESS, None),
        ]
        old = await roundtrip(*c.address(0), FindCoordinatorRequest(key="g1", key_type=0), 3)
        assert (old.error_code, old.error_message) == (
            Err.COORDINATOR_NOT_AVAILABLE,
            "The coordinator is not available.",
        )


@within(WIRE_TEST_DEADLINE_S)
async def test_offset_fetch_group_30_on_any_broker_and_topics_hidden_or_29():
    """KafkaApis.handleOffsetFetchRequestFromCoordinator: group Describe checked first (30 on
    any broker, before NOT_COORDINATOR); fetchAllOffsetsForGroup leaves out the topics the
    principal may not Describe, silently; fetchOffsetsForGroup answers them -1 with 29."""
    async with FakeCluster(brokers=2) as c:
        c.add_topic("seen", 2)
        c.add_topic("secret", 1)
        c.add_group("mine", coordinator=0, offsets={("seen", 0): 5, ("secret", 0): 7})
        c.add_group("theirs", coordinator=0, offsets={("seen", 1): 9})
        c.allow("ANONYMOUS", "group", "mine", "Read")
        c.allow("ANONYMOUS", "topic", "seen", "Describe")
        every = await roundtrip(*c.address(0), offset_fetch_v8({"mine": None, "theirs": None}), 8)
        mine, theirs = every.groups
        assert (mine.error_code, offsets_of(mine)) == (0, {("seen", 0): (5, 0)})
        assert (theirs.group_id, theirs.error_code, theirs.topics) == (
            "theirs",
            Err.GROUP_AUTHORIZATION_FAILED,
            [],
        )
        named = await roundtrip(*c.address(0), offset_fetch_v8({"mine": {"seen": [0, 1], "secret": [0]}}), 8)
        assert offsets_of(named.groups[0]) == {
            ("seen", 0): (5, 0),
            ("seen", 1): (-1, 0),
            ("secret", 0): (-1, Err.TOPIC_AUTHORIZATION_FAILED),
        }
        elsewhere = await roundtrip(*c.address(1), offset_fetch_v8({"mine": None, "theirs": None}), 8)
        assert [g.error_code for g in elsewhere.groups] == [
            Err.NOT_COORDINATOR,
            Err.GROUP_AUTHORIZATION_FAILED,
        ]
        single = await roundtrip(*c.address(0), offset_fetch_single("theirs"), 7)
        assert (single.error_code, single.topics) == (Err.GROUP_AUTHORIZATION_FAILED, [])


@within(WIRE_TEST_DEADLINE_S)
async def test_describe_groups_and_consumer_group_describe_put_30_first_without_message():
    """KafkaApis.handleDescribeGroupsRequest (DescribeGroupsResponse.groupError) and
    handleConsumerGroupDescribe: unauthorized groups first, error 30 and nothing else."""
    async with FakeCluster(brokers=1) as c:
        c.add_group("mine", members=[Member("m", {"t": [0]})])
        c.add_group("theirs")
        c.add_group("new", group_type="consumer", state="Stable", members=[Member("n", {"t": [0]})])
        c.allow("ANONYMOUS", "group", "mine", "Describe")
        c.allow("ANONYMOUS", "group", "new", "Describe")
        resp = await roundtrip(
            *c.address(0),
            DescribeGroupsRequest(groups=["mine", "theirs"], include_authorized_operations=False),
            5,
        )
        assert [
            (g.group_id, g.error_code, g.group_state, g.protocol_type, len(g.members)) for g in resp.groups
        ] == [("theirs", Err.GROUP_AUTHORIZATION_FAILED, "", "", 0), ("mine", 0, "Stable", "consumer", 1)]
        Req = API_CLASSES[ApiKey.ConsumerGroupDescribe][0]
        modern = await roundtrip(
            *c.address(0), Req(group_ids=["new", "theirs"], include_authorized_operations=False), 0
        )
        assert [(g.group_id, g.error_code, g.error_message) for g in modern.groups] == [
            ("theirs", Err.GROUP_AUTHORIZATION_FAILED, None),
            ("new", 0, None),
        ]


@within(WIRE_TEST_DEADLINE_S)
async def test_list_groups_shows_describable_groups_or_all_with_cluster_describe():
    """KafkaApis.handleListGroupsRequest: cluster Describe lists every group; otherwise only
    the groups the principal may Describe, the rest left out with no error."""
    async with FakeCluster(brokers=1, sasl={"PLAIN": {"admin": "a"}}) as c:
        c.add_group("mine")
        c.add_group("theirs")
        c.allow("ANONYMOUS", "group", "mine", "Read")
        c.allow("admin", "cluster", "kafka-cluster", "Describe")
        async with WireClient(*c.address(0)) as client:
            (auth,) = await sasl_exchange(client, "PLAIN", b"\x00admin\x00a")
            assert auth.error_code == 0
            every = await client.send(ListGroupsRequest(states_filter=[], types_filter=[]), 5)
            assert sorted(g.group_id for g in every.groups) == ["mine", "theirs"]
        c.sasl = None  # the same cluster, now PLAINTEXT: connections are ANONYMOUS
        mine = await roundtrip(*c.address(0), ListGroupsRequest(states_filter=[], types_filter=[]), 5)
        assert (mine.error_code, [g.group_id for g in mine.groups]) == (0, ["mine"])


@within(WIRE_TEST_DEADLINE_S)
async def test_delete_groups_needs_group_delete_and_answers_30_last():
    """KafkaApis.handleDeleteGroupsRequest: ids de-duplicated, partitioned by group Delete;
    the unauthorized ones are appended after the coordinator's results (30 on any broker)."""
    async with FakeCluster(brokers=2) as c:
        c.add_group("mine", coordinator=0)
        c.add_group("readable", coordinator=0)
        c.allow("ANONYMOUS", "group", "mine", "Delete")
        c.allow("ANONYMOUS", "group", "readable", "Read", "Describe")
        resp = await roundtrip(
            *c.address(0), DeleteGroupsRequest(groups_names=["readable", "mine", "mine"]), 2
        )
        assert [(r.group_id, r.error_code) for r in resp.results] == [
            ("mine", 0),
            ("readable", Err.GROUP_AUTHORIZATION_FAILED),
        ]
        assert not c.has_group("mine") and c.has_group("readable")
        elsewhere = await roundtrip(*c.address(1), DeleteGroupsRequest(groups_names=["readable"]), 2)
        assert [(r.group_id, r.error_code) for r in elsewhere.results] == [
            ("readable", Err.GROUP_AUTHORIZATION_FAILED)
        ]


@within(WIRE_TEST_DEADLINE_S)
async def test_the_sasl_user_is_the_principal():
    """The principal is the authenticated SASL user (KafkaPrincipal User:<name>); a PLAINTEXT
    connection is User:ANONYMOUS (KafkaPrincipal.ANONYMOUS) or the cluster's default principal."""
    async with FakeCluster(brokers=1, sasl={"PLAIN": {"alice": "a", "bob": "b"}}) as c:
        c.add_group("g", offsets={("t", 0): 9})
        c.allow("alice", "group", "g", "Describe")
        c.allow("alice", "topic", "t", "Describe")
        for user, expected in ((b"alice", 0), (b"bob", Err.GROUP_AUTHORIZATION_FAILED)):
            async with WireClient(*c.address(0)) as client:
                (auth,) = await sasl_exchange(client, "PLAIN", b"\x00" + user + b"\x00" + user[:1])
                assert auth.error_code == 0
                resp = await client.send(offset_fetch_v8({"g": None}), 8)
                assert resp.groups[0].error_code == expected
        c.sasl = None
        c.default_principal = "alice"
        resp = await roundtrip(*c.address(0), offset_fetch_v8({"g": None}), 8)
        assert (resp.groups[0].error_code, offsets_of(resp.groups[0])) == (0, {("t", 0): (9, 0)})


def _commit(group: str, topic: str = "t"):
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            T(
                name=topic,
                partitions=[
                    T.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=3, committed_metadata=""
                    )
                ],
            )
        ],
    )


@within(WIRE_TEST_DEADLINE_S)
async def test_offset_commit_needs_group_read_and_topic_read():
    """KafkaApis.handleOffsetCommitRequest: group Read or every partition 30; a topic without
    Read answers 29 for its partitions."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("t", 1)
        c.add_topic("u", 1)
        c.allow("ANONYMOUS", "group", "ok", "Read")
        c.allow("ANONYMOUS", "group", "look", "Describe")
        c.allow("ANONYMOUS", "topic", "t", "Read")
        denied = await roundtrip(*c.address(0), _commit("look"), 8)
        assert denied.topics[0].partitions[0].error_code == Err.GROUP_AUTHORIZATION_FAILED
        hidden = await roundtrip(*c.address(0), _commit("ok", "u"), 8)
        assert hidden.topics[0].partitions[0].error_code == Err.TOPIC_AUTHORIZATION_FAILED
        done = await roundtrip(*c.address(0), _commit("ok"), 8)
        assert done.topics[0].partitions[0].error_code == 0
        assert c.committed("ok") == {("t", 0): 3} and not c.has_group("look")


@within(WIRE_TEST_DEADLINE_S)
async def test_offset_commit_into_a_dead_classic_group_is_coordinator_not_available():
    """ClassicGroup.validateOffsetCommit: ``if (isInState(DEAD)) throw COORDINATOR_NOT_AVAILABLE``;
    the commit does not create a new group."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("t", 1)
        c.add_group("dead", state="Dead", offsets={("t", 0): 1})
        resp = await roundtrip(*c.address(0), _commit("dead"), 8)
        assert resp.topics[0].partitions[0].error_code == Err.COORDINATOR_NOT_AVAILABLE
        assert c.group("dead").state == "Dead" and c.committed("dead") == {("t", 0): 1}


@within(WIRE_TEST_DEADLINE_S)
async def test_list_offsets_duplicate_partitions_are_invalid_request_and_unauthorized_topics_29():
    """ListOffsetsRequest.duplicatePartitions + ReplicaManager.fetchOffset: a partition named
    twice is answered once, INVALID_REQUEST, offset and timestamp -1; the others normally.
    KafkaApis.handleListOffsetRequestV1AndAbove: topics without Describe answer 29, last."""
    from kafka.protocol.consumer import ListOffsetsRequest

    T = ListOffsetsRequest.ListOffsetsTopic
    P = T.ListOffsetsPartition
    async with FakeCluster(brokers=1) as c:
        c.add_topic("t", 2, end_offsets=40)
        c.add_topic("u", 1, end_offsets=40)
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[
                T(
                    name="t",
                    partitions=[
                        P(partition_index=0, timestamp=-1, current_leader_epoch=-1),
                        P(partition_index=1, timestamp=-1, current_leader_epoch=-1),
                    ],
                ),
                T(name="t", partitions=[P(partition_index=0, timestamp=-2, current_leader_epoch=-1)]),
            ],
        )
        resp = await roundtrip(*c.address(0), request, 9)
        rows = [
            (t.name, p.partition_index, p.error_code, p.offset, p.timestamp)
            for t in resp.topics
            for p in t.partitions
        ]
        assert rows == [("t", 0, Err.INVALID_REQUEST, -1, -1), ("t", 1, 0, 40, -1)]
        c.allow("ANONYMOUS", "topic", "t", "Describe")
        both = await roundtrip(*c.address(0), list_offsets({("u", 0): -1, ("t", 0): -1}), 9)
        assert [(t.name, [(p.error_code, p.offset) for p in t.partitions]) for t in both.topics] == [
            ("t", [(0, 40)]),
            ("u", [(Err.TOPIC_AUTHORIZATION_FAILED, -1)]),
        ]
