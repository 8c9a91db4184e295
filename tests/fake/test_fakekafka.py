"""The fake Kafka cluster (tests/support/fakekafka) against raw codec requests and the peers.

Every test drives the fake over real sockets; no sleeps: waits are bounded by deadlines.
"""

from __future__ import annotations

import asyncio
import gc
import time

import pytest
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    OffsetCommitRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from kafka.record.memory_records import MemoryRecords

from tests.support.fakekafka import (
    ApiKey,
    ConnectionClosed,
    Err,
    FakeCluster,
    Member,
    WireClient,
    client_ssl_context,
    make_self_signed_cert,
    roundtrip,
    server_ssl_context,
)
from tests.support.fakekafka.codec import API_CLASSES
from tests.support.fakekafka.model import java_string_hash, kafka_partition_for
from tests.support.fakeutil import within
from tests.support.raw_requests import (
    WIRE_TEST_DEADLINE_S,
    fetch_request,
    find_coordinator,
    list_offsets,
    offset_fetch_single,
    offset_fetch_v8,
    offsets_of,
    sasl_exchange,
)


def broker_not(cluster: FakeCluster, node: int) -> int:
    return next(n for n in cluster.node_ids if n != node)


# ------------------------------------------------------------------ codec and versions


@within(WIRE_TEST_DEADLINE_S)
async def test_api_versions_negotiation_falls_back_to_v0_with_the_api_list():
    async with FakeCluster(brokers=2, broker_api_versions={1: {"FindCoordinator": 3, "OffsetFetch": 7}}) as c:
        host, port = c.address(0)
        too_new = await roundtrip(
            host, port, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4
        )
        assert too_new.version == 0 and too_new.error_code == Err.UNSUPPORTED_VERSION
        advertised = {k.api_key: (k.min_version, k.max_version) for k in too_new.api_keys}
        assert advertised[ApiKey.ApiVersions] == (0, 3)

        v3 = await roundtrip(
            host, port, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
        )
        assert v3.error_code == 0
        versions = {k.api_key: (k.min_version, k.max_version) for k in v3.api_keys}
        assert versions[ApiKey.FindCoordinator] == (0, 6)
        assert versions[ApiKey.OffsetFetch] == (1, 9)
        assert versions[ApiKey.DescribeGroups] == (0, 6)
        assert versions[ApiKey.ListGroups] == (0, 5)
        assert versions[ApiKey.DeleteGroups] == (0, 2)
        assert versions[ApiKey.ConsumerGroupDescribe] == (0, 0)
        assert versions[ApiKey.Metadata][1] >= 12

        old = await roundtrip(*c.address(1), ApiVersionsRequest(), 0)
        old_versions = {k.api_key: (k.min_version, k.max_version) for k in old.api_keys}
        assert old_versions[ApiKey.FindCoordinator] == (0, 3)
        assert old_versions[ApiKey.OffsetFetch] == (1, 7)
        assert c.count("ApiVersions") == 3


@within(WIRE_TEST_DEADLINE_S)
async def test_a_version_above_the_broker_maximum_closes_the_connection():
    async with FakeCluster(brokers=1, api_versions={"OffsetFetch": 7}) as c:
        c.add_group("g", offsets={("t", 0): 1})
        with pytest.raises(ConnectionClosed):
            await roundtrip(*c.address(0), offset_fetch_v8({"g": None}), 8)
        ok = await roundtrip(*c.address(0), offset_fetch_single("g"), 7)
        assert offsets_of(ok) == {("t", 0): (1, 0)}


def test_coordinator_hash_is_kafkas_partition_for():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Utils.abs(MIN_VALUE) == 0
    assert kafka_partition_for("polygenelubricants", 50) == 0
    assert kafka_partition_for("hello", 50) == 99162322 % 50
    c = FakeCluster(brokers=3)
    assert c.coordinator_of("hello") == (99162322 % 50) % 3


@within(WIRE_TEST_DEADLINE_S)
async def test_metadata_lists_brokers_topics_and_leaders():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("a", 4, end_offsets=10)
        resp = await roundtrip(
            *c.address(2), MetadataRequest(topics=None, allow_auto_topic_creation=False), 12
        )
        assert {(b.node_id, b.port) for b in resp.brokers} == {(n, c.address(n)[1]) for n in c.node_ids}
        assert resp.controller_id == 0
        (topic,) = resp.topics
        assert [p.leader_id for p in topic.partitions] == [0, 1, 2, 0]
        assert all(p.replica_nodes == [p.leader_id] for p in topic.partitions)
        T = MetadataRequest.MetadataRequestTopic
        missing = await roundtrip(
            *c.address(0), MetadataRequest(topics=[T(name="nope")], allow_auto_topic_creation=False), 12
        )
        assert missing.topics[0].error_code == Err.UNKNOWN_TOPIC_OR_PARTITION


# ------------------------------------------------------------------ FindCoordinator


@within(WIRE_TEST_DEADLINE_S)
async def test_find_coordinator_batched_v4_and_single_key_v3():
    async with FakeCluster(brokers=3) as c:
        c.add_group("g1")
        c.add_group("g2", coordinator=2)
        resp = await roundtrip(*c.address(0), find_coordinator("g1", "g2", "not-yet-a-group"), 4)
        got = {x.key: (x.error_code, x.node_id, x.port) for x in resp.coordinators}
        for key in ("g1", "g2", "not-yet-a-group"):
            node = c.coordinator_of(key)
            assert got[key] == (0, node, c.address(node)[1])
        assert got["g2"][1] == 2

        single = await roundtrip(*c.address(1), FindCoordinatorRequest(key="g2", key_type=0), 3)
        assert (single.error_code, single.node_id, single.port) == (0, 2, c.address(2)[1])
        assert c.count("FindCoordinator") == 2 and c.count("FindCoordinator", node=1) == 1


@within(WIRE_TEST_DEADLINE_S)
async def test_find_coordinator_per_key_error_injection():
    async with FakeCluster(brokers=3) as c:
        inj = c.inject_error("FindCoordinator", Err.COORDINATOR_NOT_AVAILABLE, key="g2", times=1)
        resp = await roundtrip(*c.address(0), find_coordinator("g1", "g2"), 4)
        errors = {x.key: (x.error_code, x.node_id) for x in resp.coordinators}
        assert errors["g1"][0] == 0 and errors["g2"] == (Err.COORDINATOR_NOT_AVAILABLE, -1)
        again = await roundtrip(*c.address(0), find_coordinator("g2"), 4)
        assert again.coordinators[0].error_code == 0
        assert inj.hits == 1

        c.inject_error("FindCoordinator", Err.COORDINATOR_LOAD_IN_PROGRESS, key="g3")
        single = await roundtrip(*c.address(0), FindCoordinatorRequest(key="g3", key_type=0), 3)
        assert single.error_code == Err.COORDINATOR_LOAD_IN_PROGRESS and single.node_id == -1


# ------------------------------------------------------------------ OffsetFetch


@within(WIRE_TEST_DEADLINE_S)
async def test_offset_fetch_v8_batched_per_coordinator():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("t", 3, end_offsets=100)
        c.add_group("a", coordinator=1, offsets={("t", 0): 10, ("t", 1): (11, "meta", 4)})
        c.add_group("b", coordinator=1, offsets={"t": {2: 20}})
        c.add_group("elsewhere", coordinator=2, offsets={("t", 0): 1})
        c.move_coordinator("unknown", 1)  # absent groups have a coordinator too
        c.move_coordinator("unknown-explicit", 1)
        resp = await roundtrip(
            *c.address(1),
            offset_fetch_v8(
                {
                    "a": None,
                    "b": {"t": [0, 2]},
                    "unknown": None,
                    "unknown-explicit": {"t": [1]},
                    "elsewhere": None,
                }
            ),
            8,
        )
        groups = {g.group_id: g for g in resp.groups}
        assert offsets_of(groups["a"]) == {("t", 0): (10, 0), ("t", 1): (11, 0)}
        meta = {
            p.partition_index: (p.metadata, p.committed_leader_epoch)
            for p in groups["a"].topics[0].partitions
        }
        assert meta == {0: ("", -1), 1: ("meta", 4)}
        assert offsets_of(groups["b"]) == {("t", 0): (-1, 0), ("t", 2): (20, 0)}
        assert groups["unknown"].error_code == 0 and groups["unknown"].topics == []
        assert offsets_of(groups["unknown-explicit"]) == {("t", 1): (-1, 0)}
        assert groups["elsewhere"].error_code == Err.NOT_COORDINATOR and groups["elsewhere"].topics == []
        assert c.count("OffsetFetch") == 1


@within(WIRE_TEST_DEADLINE_S)
async def test_offset_fetch_single_group_versions_and_not_coordinator():
    async with FakeCluster(brokers=2) as c:
        c.add_group("g", coordinator=0, offsets={("t", 0): 5, ("u", 1): 6})
        v7 = await roundtrip(*c.address(0), offset_fetch_single("g"), 7)
        assert v7.error_code == 0 and offsets_of(v7) == {("t", 0): (5, 0), ("u", 1): (6, 0)}

        wrong7 = await roundtrip(*c.address(1), offset_fetch_single("g"), 7)
        assert wrong7.error_code == Err.NOT_COORDINATOR and wrong7.topics == []
        wrong1 = await roundtrip(*c.address(1), offset_fetch_single("g", {"t": [0, 1]}), 1)
        assert offsets_of(wrong1) == {
            ("t", 0): (-1, Err.NOT_COORDINATOR),
            ("t", 1): (-1, Err.NOT_COORDINATOR),
        }


@within(WIRE_TEST_DEADLINE_S)
async def test_error_injection_counts_and_scopes():
    async with FakeCluster(brokers=3) as c:
        groups = [f"g{i}" for i in range(5)]
        for g in groups:
            c.add_group(g, coordinator=0, offsets={("t", 0): 1})
        load = c.inject_error("OffsetFetch", Err.COORDINATOR_LOAD_IN_PROGRESS, key="g0", times=3)
        denied = c.inject_error("OffsetFetch", Err.GROUP_AUTHORIZATION_FAILED, key="g3")
        unstable = c.inject_error("OffsetFetch", Err.UNSTABLE_OFFSET_COMMIT, key=("g4", "t", 0), times=1)
        seen = []
        for _ in range(4):
            resp = await roundtrip(*c.address(0), offset_fetch_v8({g: None for g in groups}), 8)
            seen.append({g.group_id: g.error_code for g in resp.groups})
        assert [s["g0"] for s in seen] == [14, 14, 14, 0]
        assert all(s["g3"] == 30 for s in seen)
        assert all(s[g] == 0 for s in seen for g in ("g1", "g2", "g4"))
        assert load.hits == 3 and load.times == 0 and denied.hits == 4 and unstable.hits == 1
        assert c.count("OffsetFetch") == 4 and c.count("OffsetFetch", node=1) == 0

        # a wildcard injection on one broker answers every group of the next request only
        c.clear_faults()
        c.inject_error("OffsetFetch", Err.COORDINATOR_NOT_AVAILABLE, node=0, times=1)
        first = await roundtrip(*c.address(0), offset_fetch_v8({g: None for g in groups}), 8)
        second = await roundtrip(*c.address(0), offset_fetch_v8({g: None for g in groups}), 8)
        assert {g.error_code for g in first.groups} == {15}
        assert {g.error_code for g in second.groups} == {0}


@within(WIRE_TEST_DEADLINE_S)
async def test_moving_a_coordinator():
    async with FakeCluster(brokers=3) as c:
        c.add_group("g", coordinator=0, offsets={("t", 0): 7})
        c.move_coordinator("g", 2)
        old = await roundtrip(*c.address(0), offset_fetch_v8({"g": None}), 8)
        assert old.groups[0].error_code == Err.NOT_COORDINATOR
        found = await roundtrip(*c.address(1), find_coordinator("g"), 4)
        assert found.coordinators[0].node_id == 2
        new = await roundtrip(*c.address(2), offset_fetch_v8({"g": None}), 8)
        assert offsets_of(new.groups[0]) == {("t", 0): (7, 0)}
        assert c.groups_coordinated_by(2) == ["g"] and c.groups_coordinated_by(0) == []


# ------------------------------------------------------------------ group APIs


@within(WIRE_TEST_DEADLINE_S)
async def test_describe_groups_classic_kip848_missing_and_wrong_broker():
    async with FakeCluster(brokers=2) as c:
        c.add_topic("t", 2)
        c.add_group(
            "stable", coordinator=0, members=[Member("m1", {"t": [0, 1]}, client_id="c1", host="/10.0.0.1")]
        )
        c.add_group(
            "rebalancing", coordinator=0, state="PreparingRebalance", members=[Member("m2", {"t": [0]})]
        )
        c.add_group("new", coordinator=0, group_type="consumer", members=[Member("m3", {"t": [1]})])
        c.add_group(
            "connect",
            coordinator=0,
            protocol_type="connect",
            protocol="sessioned",
            members=[Member("w1", assignment_bytes=b"\x00\x01opaque", metadata_bytes=b"meta")],
        )
        c.move_coordinator("missing", 0)
        ids = ["stable", "rebalancing", "new", "missing", "connect"]
        v6 = await roundtrip(
            *c.address(0), DescribeGroupsRequest(groups=ids, include_authorized_operations=False), 6
        )
        d = {g.group_id: g for g in v6.groups}
        s = d["stable"]
        assert (s.error_code, s.group_state, s.protocol_type, s.protocol_data) == (
            0,
            "Stable",
            "consumer",
            "range",
        )
        (m,) = s.members
        assert (m.member_id, m.client_id, m.client_host) == ("m1", "c1", "/10.0.0.1")
        assignment = ConsumerProtocolAssignment.decode(m.member_assignment)
        assert sorted(assignment.partitions()) == [("t", 0), ("t", 1)]
        assert ConsumerProtocolSubscription.decode(m.member_metadata).topics == ["t"]
        r = d["rebalancing"]
        assert r.group_state == "PreparingRebalance" and r.protocol_data == ""
        assert r.members[0].member_assignment == b""  # Kafka describes no metadata unless Stable
        assert (d["new"].error_code, d["new"].group_state) == (Err.GROUP_ID_NOT_FOUND, "Dead")
        assert "not a classic group" in d["new"].error_message
        assert (d["missing"].error_code, d["missing"].group_state) == (Err.GROUP_ID_NOT_FOUND, "Dead")
        assert d["connect"].protocol_type == "connect"
        assert d["connect"].members[0].member_assignment == b"\x00\x01opaque"

        v5 = await roundtrip(
            *c.address(0), DescribeGroupsRequest(groups=["missing"], include_authorized_operations=False), 5
        )
        assert (v5.groups[0].error_code, v5.groups[0].group_state) == (0, "Dead")
        wrong = await roundtrip(
            *c.address(1), DescribeGroupsRequest(groups=["stable"], include_authorized_operations=False), 6
        )
        assert wrong.groups[0].error_code == Err.NOT_COORDINATOR


@within(WIRE_TEST_DEADLINE_S)
async def test_consumer_group_describe_for_kip848_groups_only():
    Req = API_CLASSES[ApiKey.ConsumerGroupDescribe][0]
    async with FakeCluster(brokers=1) as c:
        c.add_topic("t", 3)
        c.add_group(
            "new",
            group_type="consumer",
            state="Reconciling",
            generation=5,
            members=[Member("m1", {"t": [0, 2]}, member_epoch=4, target_assignment={"t": [0, 1, 2]})],
        )
        c.add_group("old", members=[Member("m2", {"t": [1]})])
        resp = await roundtrip(
            *c.address(0), Req(group_ids=["new", "old", "missing"], include_authorized_operations=False), 0
        )
        d = {g.group_id: g for g in resp.groups}
        new = d["new"]
        assert (new.error_code, new.group_state, new.group_epoch, new.assignor_name) == (
            0,
            "Reconciling",
            5,
            "uniform",
        )
        (m,) = new.members
        assert m.member_epoch == 4 and m.subscribed_topic_names == ["t"]
        assert [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions] == [("t", [0, 2])]
        assert m.assignment.topic_partitions[0].topic_id == c.topics["t"].topic_id
        assert m.target_assignment.topic_partitions[0].partitions == [0, 1, 2]
        assert d["old"].error_code == Err.GROUP_ID_NOT_FOUND
        assert d["missing"].error_code == Err.GROUP_ID_NOT_FOUND


@within(WIRE_TEST_DEADLINE_S)
async def test_list_groups_per_broker_with_state_and_type_filters():
    async with FakeCluster(brokers=2) as c:
        c.add_group("e0", coordinator=0)
        c.add_group("s0", coordinator=0, members=[Member("m", {"t": [0]})])
        c.add_group("n0", coordinator=0, group_type="consumer", state="Assigning")
        c.add_group("e1", coordinator=1)
        every = await roundtrip(*c.address(0), ListGroupsRequest(states_filter=[], types_filter=[]), 5)
        assert {(g.group_id, g.group_state, g.group_type) for g in every.groups} == {
            ("e0", "Empty", "classic"),
            ("s0", "Stable", "classic"),
            ("n0", "Assigning", "consumer"),
        }
        empty = await roundtrip(*c.address(0), ListGroupsRequest(states_filter=["empty"]), 4)
        assert [g.group_id for g in empty.groups] == ["e0"]
        kip848 = await roundtrip(
            *c.address(0), ListGroupsRequest(states_filter=[], types_filter=["consumer"]), 5
        )
        assert [g.group_id for g in kip848.groups] == ["n0"]
        other = await roundtrip(*c.address(1), ListGroupsRequest(), 0)
        assert [g.group_id for g in other.groups] == ["e1"]


@within(WIRE_TEST_DEADLINE_S)
async def test_delete_groups_outcomes():
    async with FakeCluster(brokers=2) as c:
        c.add_group("empty", coordinator=0, offsets={("t", 0): 3})
        c.add_group("stable", coordinator=0, members=[Member("m", {"t": [0]})])
        c.add_group(
            "completing", coordinator=0, state="CompletingRebalance", members=[Member("m", {"t": [0]})]
        )
        c.add_group("reconciling", coordinator=0, group_type="consumer", state="Reconciling")
        c.add_group("dead", coordinator=0, state="Dead")
        c.add_group("elsewhere", coordinator=1)
        c.move_coordinator("missing", 0)
        names = ["empty", "stable", "completing", "reconciling", "dead", "missing", "elsewhere"]
        resp = await roundtrip(*c.address(0), DeleteGroupsRequest(groups_names=names), 2)
        assert {r.group_id: r.error_code for r in resp.results} == {
            "empty": 0,
            "stable": 68,
            "completing": 68,
            "reconciling": 68,
            "dead": 69,
            "missing": 69,
            "elsewhere": 16,
        }
        assert not c.has_group("empty") and c.committed("empty") == {}
        after = await roundtrip(*c.address(0), offset_fetch_v8({"empty": None}), 8)
        assert after.groups[0].topics == []


@within(WIRE_TEST_DEADLINE_S)
async def test_offset_commit_creates_a_simple_group_and_validates_members():
    async with FakeCluster(brokers=1) as c:
        c.add_topic("t", 2)
        c.add_group("busy", members=[Member("m1", {"t": [0]})], generation=3)
        T = OffsetCommitRequest.OffsetCommitRequestTopic
        P = T.OffsetCommitRequestPartition

        def commit(group, generation=-1, member=""):
            return OffsetCommitRequest(
                group_id=group,
                generation_id_or_member_epoch=generation,
                member_id=member,
                group_instance_id=None,
                topics=[
                    T(
                        name="t",
                        partitions=[
                            P(
                                partition_index=0,
                                committed_offset=42,
                                committed_leader_epoch=1,
                                committed_metadata="x",
                            ),
                            P(partition_index=9, committed_offset=1, committed_metadata=None),
                        ],
                    )
                ],
            )

        resp = await roundtrip(*c.address(0), commit("fresh"), 8)
        assert [p.error_code for p in resp.topics[0].partitions] == [0, Err.UNKNOWN_TOPIC_OR_PARTITION]
        group = c.group("fresh")
        assert group.state == "Empty" and group.protocol_type == ""
        assert (group.offsets[("t", 0)].offset, group.offsets[("t", 0)].metadata) == (42, "x")

        rejected = await roundtrip(*c.address(0), commit("busy"), 8)
        assert rejected.topics[0].partitions[0].error_code == Err.UNKNOWN_MEMBER_ID
        member = await roundtrip(*c.address(0), commit("busy", generation=3, member="m1"), 8)
        assert member.topics[0].partitions[0].error_code == 0 and c.committed("busy") == {("t", 0): 42}


# ------------------------------------------------------------------ ListOffsets and Fetch


@within(WIRE_TEST_DEADLINE_S)
async def test_list_offsets_leader_check_and_specs():
    async with FakeCluster(brokers=2) as c:
        c.add_topic("t", 2, end_offsets=[50, 60], start_offsets=[10, 0], leaders=[0, 1])
        c.append("t", 0, 3, timestamp_ms=[1000, 3000, 2000])  # offsets 50, 51, 52
        c.set_offsets("t", 0, last_stable=51)
        resp = await roundtrip(*c.address(0), list_offsets({("t", 0): -1, ("t", 1): -1, ("t", 7): -1}), 9)
        got = {p.partition_index: (p.error_code, p.offset) for p in resp.topics[0].partitions}
        assert got == {
            0: (0, 53),
            1: (Err.NOT_LEADER_OR_FOLLOWER, -1),
            7: (Err.UNKNOWN_TOPIC_OR_PARTITION, -1),
        }

        async def one(ts, isolation=0, version=9):
            r = await roundtrip(*c.address(0), list_offsets({("t", 0): ts}, isolation), version)
            p = r.topics[0].partitions[0]
            return p.error_code, p.offset, p.timestamp

        assert await one(-2) == (0, 10, -1)
        assert await one(-1, isolation=1) == (0, 51, -1)
        assert await one(-3) == (0, 51, 3000)
        assert await one(1500) == (0, 51, 3000)
        assert await one(2500) == (0, 51, 3000)
        assert await one(9999) == (0, -1, -1)  # Kafka: no record at or after the timestamp
        assert await one(2500, isolation=1) == (0, -1, -1)  # found offset 51 is not below the LSO

        c.move_leader("t", 0, 1)
        moved = await roundtrip(*c.address(0), list_offsets({("t", 0): -1}), 9)
        assert moved.topics[0].partitions[0].error_code == Err.NOT_LEADER_OR_FOLLOWER
        new_leader = await roundtrip(*c.address(1), list_offsets({("t", 0): -1}), 9)
        assert new_leader.topics[0].partitions[0].leader_epoch == 1


@within(WIRE_TEST_DEADLINE_S)
async def test_fetch_returns_a_record_batch_with_timestamps():
    async with FakeCluster(brokers=1) as c:
        c.add_topic("t", 1, end_offsets=100)
        c.append("t", 0, 5, timestamp_ms=lambda offset: offset * 10, value=lambda o: b"v%d" % o)  # 100..104
        for version, topic_id in ((12, None), (13, c.topics["t"].topic_id)):
            resp = await roundtrip(*c.address(0), fetch_request("t", 0, 102, topic_id=topic_id), version)
            part = resp.responses[0].partitions[0]
            assert (part.error_code, part.high_watermark) == (0, 105)
            records = [r for batch in MemoryRecords(bytes(part.records)) for r in batch]
            assert [(r.offset, r.timestamp, r.value) for r in records] == [
                (102, 1020, b"v102"),
                (103, 1030, b"v103"),
                (104, 1040, b"v104"),
            ]
        gap = await roundtrip(*c.address(0), fetch_request("t", 0, 50), 12)
        first = next(iter(MemoryRecords(bytes(gap.responses[0].partitions[0].records))))
        assert first.base_offset == 100  # offsets seeded without records are skipped
        out = await roundtrip(*c.address(0), fetch_request("t", 0, 500), 12)
        assert out.responses[0].partitions[0].error_code == Err.OFFSET_OUT_OF_RANGE


@within(WIRE_TEST_DEADLINE_S)
async def test_produce_appends_records_and_acks_zero_gets_no_answer():
    from kafka.protocol.producer import ProduceRequest
    from kafka.record.memory_records import MemoryRecordsBuilder

    def produce(partition: int, timestamps: list[int], acks: int = -1):
        builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
        for ts in timestamps:
            builder.append(timestamp=ts, key=None, value=b"v")
        builder.close()
        T = ProduceRequest.TopicProduceData
        return ProduceRequest(
            transactional_id=None,
            acks=acks,
            timeout_ms=1000,
            topic_data=[
                T(
                    name="t",
                    partition_data=[T.PartitionProduceData(index=partition, records=builder.buffer())],
                )
            ],
        )

    async with FakeCluster(brokers=2) as c:
        c.add_topic("t", 2, end_offsets=7, leaders=[0, 1])
        resp = await roundtrip(*c.address(0), produce(0, [100, 200]), 9)
        row = resp.responses[0].partition_responses[0]
        assert (row.error_code, row.base_offset) == (0, 7) and c.end_offset("t", 0) == 9
        wrong = await roundtrip(*c.address(0), produce(1, [1]), 9)
        assert wrong.responses[0].partition_responses[0].error_code == Err.NOT_LEADER_OR_FOLLOWER
        async with WireClient(*c.address(0)) as client:
            client.write_request(produce(0, [300], acks=0), 9)
            assert (await client.send(ApiVersionsRequest(), 0)).error_code == 0  # the next answer is this one
        assert [(r.offset, r.timestamp) for r in c.topics["t"].partitions[0].records] == [
            (7, 100),
            (8, 200),
            (9, 300),
        ]


@within(WIRE_TEST_DEADLINE_S)
async def test_api_versions_change_at_run_time():
    async with FakeCluster(brokers=2) as c:
        c.set_api_versions({"OffsetFetch": 7, "ConsumerGroupDescribe": None}, node=1)
        resp = await roundtrip(*c.address(1), ApiVersionsRequest(), 0)
        versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert versions[ApiKey.OffsetFetch] == (1, 7) and ApiKey.ConsumerGroupDescribe not in versions
        other = await roundtrip(*c.address(0), ApiVersionsRequest(), 0)
        assert {k.api_key: k.max_version for k in other.api_keys}[ApiKey.OffsetFetch] == 9


# ------------------------------------------------------------------ connection faults and delays


@within(WIRE_TEST_DEADLINE_S)
async def test_drop_mid_response_then_recover():
    async with FakeCluster(brokers=1) as c:
        c.add_group("g", offsets={("t", 0): 1})
        drop = c.drop_mid_response("OffsetFetch", times=1)
        with pytest.raises(ConnectionClosed) as info:
            await roundtrip(*c.address(0), offset_fetch_v8({"g": None}), 8)
        assert len(info.value.partial) > 4  # a size prefix and part of the frame arrived
        ok = await roundtrip(*c.address(0), offset_fetch_v8({"g": None}), 8)
        assert offsets_of(ok.groups[0]) == {("t", 0): (1, 0)}
        assert drop.hits == 1 and c.count("OffsetFetch") == 2


@within(WIRE_TEST_DEADLINE_S)
async def test_blackhole_stalls_until_switched_off():
    async with FakeCluster(brokers=2) as c:
        c.blackhole(0)
        async with WireClient(*c.address(0), timeout=0.3) as client:
            client.write_request(ApiVersionsRequest(), 0)
            with pytest.raises(asyncio.TimeoutError):
                await client.read_frame()
            assert c.count("ApiVersions", node=0) == 1  # read and logged, not answered
            await roundtrip(*c.address(1), ApiVersionsRequest(), 0)  # other brokers unaffected
            c.blackhole(0, on=False)
            client.timeout = 5.0
            await client.read_response(ApiVersionsRequest, 0)


@within(WIRE_TEST_DEADLINE_S)
async def test_broker_down_and_back_on_the_same_port():
    async with FakeCluster(brokers=2) as c:
        host, port = c.address(1)
        async with WireClient(host, port) as client:
            await client.send(ApiVersionsRequest(), 0)
            await c.stop_broker(1)
            with pytest.raises((ConnectionClosed, ConnectionError)):
                await client.send(ApiVersionsRequest(), 0)
        with pytest.raises(OSError):
            await roundtrip(host, port, ApiVersionsRequest(), 0)
        await c.start_broker(1)
        assert c.address(1) == (host, port)
        resp = await roundtrip(host, port, ApiVersionsRequest(), 0)
        assert resp.error_code == 0


def test_delays_resolve_per_field_from_the_most_specific_scope():
    c = FakeCluster(brokers=2, processing_s=0.01, latency_s=0.002)
    c.set_delay(node=1, latency_s=0.5)
    c.set_delay(api="OffsetFetch", processing_s=0.2)
    assert c.faults.delay_for(0, ApiKey.Metadata) == (0.01, 0.002)
    assert c.faults.delay_for(1, ApiKey.Metadata) == (0.01, 0.5)
    assert c.faults.delay_for(1, ApiKey.OffsetFetch) == (0.2, 0.5)


def test_blackhole_switched_from_another_thread():
    import socket
    import struct

    with FakeCluster.running_in_thread(brokers=1) as c:
        c.blackhole(0)
        req = ApiVersionsRequest()
        req.with_header(correlation_id=5, client_id="t")
        with socket.create_connection(c.address(0), timeout=0.3) as sock:
            sock.sendall(bytes(req.encode(version=0, header=True, framed=True)))
            with pytest.raises(socket.timeout):
                sock.recv(4)
            c.blackhole(0, on=False)
            sock.settimeout(5)
            (size,) = struct.unpack(">i", sock.recv(4))
            assert size > 4 and c.count("ApiVersions") == 1


@within(WIRE_TEST_DEADLINE_S)
async def test_pipelined_requests_answer_in_order_latency_overlaps_processing_serialises():
    async with FakeCluster(brokers=1, latency_s=0.1) as c:
        async with WireClient(*c.address(0)) as client:
            start = time.monotonic()
            ids = [client.write_request(ApiVersionsRequest(), 0) for _ in range(5)]
            got = [int.from_bytes((await client.read_frame())[:4], "big") for _ in ids]
            elapsed = time.monotonic() - start
        assert got == ids
        assert 0.1 <= elapsed < 0.4  # five 100 ms network delays overlap
        c.set_delay(processing_s=0.05, latency_s=0.0)
        async with WireClient(*c.address(0)) as client:
            start = time.monotonic()
            ids = [client.write_request(ApiVersionsRequest(), 0) for _ in range(4)]
            got = [int.from_bytes((await client.read_frame())[:4], "big") for _ in ids]
            assert got == ids and time.monotonic() - start >= 0.2  # broker work is one at a time


# ------------------------------------------------------------------ SASL and TLS


@within(WIRE_TEST_DEADLINE_S)
async def test_sasl_plain_happy_and_failing_paths():
    async with FakeCluster(brokers=1, sasl={"PLAIN": {"alice": "secret"}}) as c:
        c.add_group("g", offsets={("t", 0): 9})
        async with WireClient(*c.address(0)) as client:
            (auth,) = await sasl_exchange(client, "PLAIN", b"\x00alice\x00secret")
            assert auth.error_code == 0
            resp = await client.send(offset_fetch_v8({"g": None}), 8)
            assert offsets_of(resp.groups[0]) == {("t", 0): (9, 0)}
        async with WireClient(*c.address(0)) as client:
            (bad,) = await sasl_exchange(client, "PLAIN", b"\x00alice\x00wrong")
            assert bad.error_code == Err.SASL_AUTHENTICATION_FAILED and bad.error_message
            with pytest.raises(ConnectionClosed):  # Kafka closes after a failed authentication
                await client.send(ApiVersionsRequest(), 0)
        async with WireClient(*c.address(0)) as client:
            unknown = await client.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
            assert unknown.error_code == Err.UNSUPPORTED_SASL_MECHANISM and unknown.mechanisms == ["PLAIN"]
        async with WireClient(*c.address(0)) as client:
            assert (await client.send(ApiVersionsRequest(), 0)).error_code == 0  # allowed before auth
            with pytest.raises(ConnectionClosed):
                await client.send(offset_fetch_v8({"g": None}), 8)


@within(WIRE_TEST_DEADLINE_S)
async def test_sasl_scram_sha_512_happy_and_failing_paths():
    users = {"bob": "pa55"}
    async with FakeCluster(brokers=1, sasl={"SCRAM-SHA-512": users, "SCRAM-SHA-256": users}) as c:
        for password, expect_ok in (("pa55", True), ("nope", False)):
            scram = ScramClient("bob", password, "SCRAM-SHA-512")
            async with WireClient(*c.address(0)) as client:
                (first,) = await sasl_exchange(client, "SCRAM-SHA-512", scram.first_message())
                assert first.error_code == 0
                scram.process_server_first_message(bytes(first.auth_bytes))
                final = await client.send(SaslAuthenticateRequest(auth_bytes=scram.final_message()), 2)
                if expect_ok:
                    assert final.error_code == 0
                    scram.process_server_final_message(bytes(final.auth_bytes))  # checks the server signature
                    assert (await client.send(ListGroupsRequest(), 0)).error_code == 0
                else:
                    assert final.error_code == Err.SASL_AUTHENTICATION_FAILED
                    assert "SCRAM-SHA-512" in final.error_message


@within(WIRE_TEST_DEADLINE_S)
async def test_sasl_handshake_v0_then_raw_tokens():
    async with FakeCluster(brokers=1, sasl={"PLAIN": {"alice": "secret"}}) as c:
        async with WireClient(*c.address(0)) as client:
            assert (await client.send(SaslHandshakeRequest(mechanism="PLAIN"), 0)).error_code == 0
            client.write_raw(b"\x00alice\x00secret")
            assert await client.read_frame() == b""
            assert (await client.send(ListGroupsRequest(), 0)).error_code == 0


@within(WIRE_TEST_DEADLINE_S)
async def test_tls_handshake(tmp_path):
    files = make_self_signed_cert(tmp_path)
    async with FakeCluster(brokers=2, ssl_context=server_ssl_context(files)) as c:
        async with WireClient(*c.address(1), ssl_context=client_ssl_context(files)) as client:
            resp = await client.send(
                ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
            )
            assert resp.error_code == 0
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError)):
            await roundtrip(*c.address(0), ApiVersionsRequest(), 0, timeout=2.0)  # plaintext to a TLS port


# ------------------------------------------------------------------ scale


@within(WIRE_TEST_DEADLINE_S)
async def test_benchmark_sized_cluster_answers_batched_requests():
    async with FakeCluster(brokers=9, latency_s=0.002) as c:
        for t in range(30):
            c.add_topic(f"topic-{t}", 12, end_offsets=1000)
        for g in range(3000):
            c.add_group(f"group-{g}", offsets={(f"topic-{g % 30}", p): 500 for p in range(12)})
        start = time.monotonic()
        total = 0
        for node in c.node_ids:
            mine = c.groups_coordinated_by(node)
            resp = await roundtrip(*c.address(node), offset_fetch_v8({g: None for g in mine}), 8)
            assert all(g.error_code == 0 and len(g.topics[0].partitions) == 12 for g in resp.groups)
            total += len(resp.groups)
        assert total == 3000
        assert time.monotonic() - start < 5.0
        assert sum(len(c.groups_coordinated_by(n)) for n in c.node_ids) == 3000


# ------------------------------------------------------------------ thread mode and peers


def test_threaded_cluster_with_kafka_python_admin():
    from kafka import KafkaAdminClient

    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("t", 3, end_offsets=100)
        c.add_group("g", offsets={("t", 0): 5, ("t", 1): (7, "m", 2)})
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
        try:
            offsets = admin.list_group_offsets("g")["g"]
            assert {
                (tp.topic, tp.partition): (om.offset, om.metadata, om.leader_epoch)
                for tp, om in offsets.items()
            } == {("t", 0): (5, "", -1), ("t", 1): (7, "m", 2)}
            c.add_group("later", offsets={("t", 2): 11})  # seeding from this thread while serving
            assert admin.list_group_offsets("later")["later"]
            c.stop_broker(2)
            c.start_broker(2)
        finally:
            admin.close()


def test_confluent_kafka_admin_lists_group_offsets():
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("t", 3, end_offsets=100)
        c.add_group("g", offsets={("t", 0): 5, ("t", 1): (7, "m", 2)})
        admin = AdminClient({"bootstrap.servers": c.bootstrap, "log_level": 0})
        futures = admin.list_consumer_group_offsets(
            [ck.ConsumerGroupTopicPartitions("g")], request_timeout=10
        )
        result = futures["g"].result(timeout=15)
        assert {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions} == {
            ("t", 0): 5,
            ("t", 1): 7,
        }
        used = c.requests_by_api()
        assert used.get("FindCoordinator") and used.get("OffsetFetch") == 1
        del admin, futures
        gc.collect()


def test_librdkafka_produces_and_consumes_by_assignment():
    from confluent_kafka import Consumer, Producer, TopicPartition

    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("t", 3, end_offsets=10)
        producer = Producer({"bootstrap.servers": c.bootstrap, "log_level": 0})
        for i in range(3):
            producer.produce("t", value=b"x%d" % i, partition=2, timestamp=5000 + i)
        assert producer.flush(10) == 0
        assert c.end_offset("t", 2) == 13
        consumer = Consumer(
            {
                "bootstrap.servers": c.bootstrap,
                "group.id": "reader",
                "log_level": 0,
                "enable.auto.commit": False,
            }
        )
        try:
            consumer.assign([TopicPartition("t", 2, 11)])
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None
            assert (msg.offset(), msg.timestamp()[1], msg.value()) == (11, 5001, b"x1")
        finally:
            consumer.close()
        del producer
        gc.collect()


def test_peers_over_sasl_scram():
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient

    with FakeCluster.running_in_thread(brokers=2, sasl={"SCRAM-SHA-512": {"bob": "pa55"}}) as c:
        c.add_group("g", offsets={("t", 0): 3})
        kp = KafkaAdminClient(
            bootstrap_servers=c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="bob",
            sasl_plain_password="pa55",
            request_timeout_ms=10000,
        )
        try:
            assert {tp.partition: om.offset for tp, om in kp.list_group_offsets("g")["g"].items()} == {0: 3}
        finally:
            kp.close()
        rd = AdminClient(
            {
                "bootstrap.servers": c.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "bob",
                "sasl.password": "pa55",
                "log_level": 0,
            }
        )
        result = rd.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")], request_timeout=10)
        assert [tp.offset for tp in result["g"].result(timeout=15).topic_partitions] == [3]
        del rd, result
        gc.collect()
        assert c.count("SaslAuthenticate") >= 4
