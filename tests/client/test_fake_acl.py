"""The client under per-principal ACLs (tests/support/fakekafka/acl.py, modelled on KafkaApis):
GROUP_AUTHORIZATION_FAILED (30) fails its group alone and is never retried, whichever API
answers it; topics the principal may not Describe vanish from all-partitions answers and are
NOT_VISIBLE, not ABSENT, when named. Each test asserts every key's outcome and the requests."""

from __future__ import annotations

from airflow_provider_kgroups.client import AsyncGroupsClient, GroupDeletion, TopicExistence, TopicPartition
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakeutil import committed, config, counts

GAF = Err.GROUP_AUTHORIZATION_FAILED


def codes(result) -> dict:
    return {k: f.code for k, f in result.failures.items()}


async def test_find_coordinator_30_fails_that_group_alone_without_a_retry():
    """KafkaApis.getCoordinator (FindCoordinator v4+, per key): a group the principal may not
    Describe is 30; the others are fetched. The all-partitions fetch leaves out the topic the
    principal may not Describe (KafkaApis.fetchAllOffsetsForGroup)."""
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 3)
        c.add_topic("payroll", 1)
        mine = [f"mine-{i}" for i in range(6)]
        for i, g in enumerate(mine):
            c.add_group(g, offsets={("orders", i % 3): 10 + i, ("payroll", 0): 99})
        c.add_group("theirs", offsets={("orders", 0): 1})
        for g in mine:
            c.allow("ANONYMOUS", "group", g, "Describe")
        c.allow("ANONYMOUS", "topic", "orders", "Describe")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(mine + ["theirs"])
        assert committed(result) == {g: {TopicPartition("orders", i % 3): 10 + i} for i, g in enumerate(mine)}
        assert codes(result) == {"theirs": GAF}
        coordinators = {c.coordinator_of(g) for g in mine}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": len(coordinators)}


async def test_find_coordinator_below_v4_30_is_the_whole_response_and_fails_its_key_alone():
    """KafkaApis.handleFindCoordinatorRequestLessThanV4: one key per request, the error is the
    response's; the other keys' requests succeed."""
    async with FakeCluster(brokers=2, api_versions={"FindCoordinator": 3}) as c:
        c.add_topic("orders", 1)
        c.add_group("mine", offsets={("orders", 0): 5})
        c.add_group("theirs", offsets={("orders", 0): 6})
        c.allow("ANONYMOUS", "group", "mine", "Describe")
        c.allow("ANONYMOUS", "topic", "orders", "Describe")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(["mine", "theirs"])
        assert committed(result) == {"mine": {TopicPartition("orders", 0): 5}}
        assert codes(result) == {"theirs": GAF}
        assert result.failures["theirs"].message == "Group authorization failed."
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 2, "OffsetFetch": 1}


async def test_offset_fetch_and_describe_groups_30_per_group_fail_alone_without_a_retry():
    """KafkaApis.handleOffsetFetchRequestFromCoordinator / handleDescribeGroupsRequest answer
    30 per group (here injected: with ACLs FindCoordinator refuses the same groups first)."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 1)
        for g in ("a", "b", "c"):
            c.add_group(g, offsets={("orders", 0): 7})
        fetch = c.inject_error("OffsetFetch", GAF, key="b")
        describe = c.inject_error("DescribeGroups", GAF, key="c")
        async with AsyncGroupsClient(config(c)) as client:
            offsets = await client.fetch_committed_offsets(["a", "b", "c"])
            described = await client.describe_groups(["a", "b", "c"])
        assert committed(offsets) == {
            "a": {TopicPartition("orders", 0): 7},
            "c": {TopicPartition("orders", 0): 7},
        }
        assert codes(offsets) == {"b": GAF}
        assert {g: d.state.value for g, d in described.values.items()} == {"a": "Empty", "b": "Empty"}
        assert codes(described) == {"c": GAF}
        assert (fetch.hits, describe.hits) == (1, 1)
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 1, "DescribeGroups": 1}


async def test_delete_groups_needs_group_delete_30_fails_alone_without_a_retry():
    """KafkaApis.handleDeleteGroupsRequest: Describe lets FindCoordinator answer, but deleting
    needs group Delete; the group the principal may not delete stays, the other is deleted."""
    async with FakeCluster(brokers=1) as c:
        c.add_group("mine")
        c.add_group("look-only")
        c.allow("ANONYMOUS", "group", "mine", "Delete")
        c.allow("ANONYMOUS", "group", "look-only", "Describe")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.delete_groups(["mine", "look-only", "hidden"])
        assert dict(result.values) == {"mine": GroupDeletion.DELETED}
        assert codes(result) == {"look-only": GAF, "hidden": GAF}
        assert not c.has_group("mine") and c.has_group("look-only")
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "DeleteGroups": 1}
        [find] = c.requests("FindCoordinator")
        assert sorted(find.request.coordinator_keys) == ["hidden", "look-only", "mine"]


async def test_list_groups_shows_only_describable_groups_unless_cluster_describe():
    """KafkaApis.handleListGroupsRequest: groups the principal may not Describe are left out,
    with no error: the listing is complete for this principal only."""
    async with FakeCluster(brokers=2, sasl={"PLAIN": {"ops": "pw"}}) as c:
        for i in range(4):
            c.add_group(f"g{i}", coordinator=i % 2)
        c.allow("ANONYMOUS", "group", "g1", "Describe")
        c.allow("ops", "cluster", "kafka-cluster", "Describe")
        ops = config(
            c,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_username="ops",
            sasl_password="pw",
        )
        async with AsyncGroupsClient(ops) as client:
            every = await client.list_groups()
        assert [g.group_id for g in every.groups] == ["g0", "g1", "g2", "g3"] and every.broker_failures == {}
        c.sasl = None
        async with AsyncGroupsClient(config(c)) as client:
            anonymous = await client.list_groups()
        assert [g.group_id for g in anonymous.groups] == ["g1"] and anonymous.broker_failures == {}
        assert counts(c) == {"Metadata": 2, "ListGroups": 4}


async def test_check_topics_under_acls_cannot_tell_a_hidden_topic_from_a_missing_one():
    """KafkaApis.handleTopicMetadataRequest: 29 for named topics the principal may not Describe,
    whether or not they exist; only a describable missing topic is ABSENT."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 1)
        c.add_topic("payroll", 1)
        c.allow("ANONYMOUS", "topic", "orders", "Describe")
        c.allow("ANONYMOUS", "topic", "deleted", "Describe")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.check_topics(["orders", "payroll", "never-was", "deleted"])
            every = await client.describe_topics()
        assert dict(result.values) == {
            "orders": TopicExistence.EXISTS,
            "payroll": TopicExistence.NOT_VISIBLE,
            "never-was": TopicExistence.NOT_VISIBLE,
            "deleted": TopicExistence.ABSENT,
        }
        assert result.failures == {}
        assert list(every) == ["orders"]  # all topics: payroll is left out, silently
        assert counts(c) == {"Metadata": 2}


async def test_log_end_offsets_of_a_hidden_topic_fail_with_29_without_a_retry():
    """KafkaApis.handleTopicMetadataRequest answers the leader lookup with 29 for a topic the
    principal may not Describe: its partitions fail alone; no ListOffsets is sent for them."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 2, end_offsets=50)
        c.add_topic("payroll", 1, end_offsets=9)
        c.allow("ANONYMOUS", "topic", "orders", "Describe")
        wanted = [TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("payroll", 0)]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.log_end_offsets(wanted)
        assert {tp: v.offset for tp, v in result.values.items()} == {wanted[0]: 50, wanted[1]: 50}
        assert codes(result) == {wanted[2]: Err.TOPIC_AUTHORIZATION_FAILED}
        assert counts(c) == {"Metadata": 2, "ListOffsets": 1}


async def test_commit_offsets_needs_group_read_and_topic_read():
    """KafkaApis.handleOffsetCommitRequest: without group Read every partition is 30; without
    topic Read that topic's partitions are 29; neither is retried."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 1)
        c.add_topic("payroll", 1)
        c.allow("ANONYMOUS", "group", "restore", "Read")
        c.allow("ANONYMOUS", "group", "look-only", "Describe")
        c.allow("ANONYMOUS", "topic", "orders", "Read")
        offsets = {TopicPartition("orders", 0): 3, TopicPartition("payroll", 0): 4}
        async with AsyncGroupsClient(config(c)) as client:
            restored = await client.commit_offsets("restore", offsets)
            refused = await client.commit_offsets("look-only", offsets)
        assert dict(restored.values) == {TopicPartition("orders", 0): 3}
        assert codes(restored) == {TopicPartition("payroll", 0): Err.TOPIC_AUTHORIZATION_FAILED}
        assert refused.values == {} and codes(refused) == {tp: GAF for tp in offsets}
        assert c.committed("restore") == {("orders", 0): 3} and not c.has_group("look-only")
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 2, "OffsetCommit": 2}
