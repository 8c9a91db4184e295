"""``find_dead_groups``: the reads (lag/deadgroup_reads.py: which topics are checked by name,
when the cluster's topics are listed) and the reports (evidence + permission), against a stand-in
client and the fake cluster.

KafkaApis.handleTopicMetadataRequest: a named absent topic answers UNKNOWN_TOPIC_OR_PARTITION, a
named topic the principal may not Describe TOPIC_AUTHORIZATION_FAILED (cannot tell), an
all-topics request leaves it out; KafkaApis.handleOffsetFetchRequest leaves hidden topics out of
an all-partitions fetch.
"""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.cleanup import find_dead_groups
from airflow_provider_kgroups.client.errors import Failure
from airflow_provider_kgroups.client.results import (
    CommittedOffset,
    GroupOffsets,
    KeyedResults,
    TopicExistence,
)
from airflow_provider_kgroups.lag.deadfindings import (
    CommitsUnreadable,
    DeadReason,
    Finding,
    GroupHealth,
    Reason,
    TopicsFinding,
    TopicsUnknown,
)
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from tests.support.builders import HOUR, description, group, offsets, partition, snapshot, tp
from tests.support.deadgroups import NOW, RULES, idle_history, report
from tests.support.fakekafka import Err, Member
from tests.support.fakeutil import counts
from tests.support.fakeworld import with_fake_cluster

EXISTS, ABSENT, NOT_VISIBLE = TopicExistence.EXISTS, TopicExistence.ABSENT, TopicExistence.NOT_VISIBLE
NO_COMMITS_UNSEEN = Finding(Reason.NO_COMMITS_UNSEEN)


def reasons(result) -> dict[str, tuple]:
    return {g: (r.health, tuple(DeadReason(d) for d in r.dead_reasons)) for g, r in result.reports.items()}


def test_report_to_dict_carries_reasons_findings_and_permission():
    out = report(topics=("other",), checks={"orders": NOT_VISIBLE}, history=idle_history(72)).to_dict()
    assert out["health"] == "dead" and out["dead_reasons"] == ["idle"] and out["group_type"] == "classic"
    assert out["cannot_tell"] == [
        "cannot tell whether every committed topic was deleted: orders not visible to this "
        "principal (TOPIC_AUTHORIZATION_FAILED)"
    ]
    assert out["idle_since_ms"] == NOW - 72 * HOUR and out["deletable"] and out["permitted"]
    assert [f["reason"] for f in out["findings"]] == ["topics_unknown", "no_progress", "idle", "expires"]
    assert out["permission"] == {"reason": "no_deny", "permitted": True, "pattern": None, "topics": []}


class StandInClient:
    """The client verbs find_dead_groups uses, answering like Kafka with an ACL that hides
    topic "secret": the all-topics listing leaves it out, a named check answers
    TOPIC_AUTHORIZATION_FAILED (KafkaApis.handleTopicMetadataRequest)."""

    def __init__(self, descriptions, committed, existing, hidden):
        self.descriptions, self.committed, self.existing, self.hidden = (
            descriptions,
            committed,
            existing,
            hidden,
        )
        self.calls: list[tuple[str, object]] = []

    async def describe_groups(self, ids, timeout_s=None):
        self.calls.append(("describe_groups", list(ids)))
        return KeyedResults({g: self.descriptions[g] for g in ids})

    async def fetch_committed_offsets(self, ids, timeout_s=None):
        self.calls.append(("fetch_committed_offsets", list(ids)))
        return KeyedResults(
            {
                g: self.committed[g]
                if isinstance(self.committed[g], GroupOffsets)
                else offsets(g, self.committed[g])
                for g in ids
            }
        )

    async def check_topics(self, topics, timeout_s=None):
        topics = list(topics)
        self.calls.append(("check_topics", topics))
        return KeyedResults(
            {
                t: NOT_VISIBLE if t in self.hidden else EXISTS if t in self.existing else ABSENT
                for t in topics
                if t != "flaky"
            },
            {"flaky": Failure(7, "")} if "flaky" in topics else {},
        )

    async def describe_topics(self, topics, timeout_s=None):
        self.calls.append(("describe_topics", topics))
        return {t: None for t in self.existing}


async def test_find_dead_groups_checks_the_committed_topics_of_empty_groups_by_name():
    descriptions = {g: description(g, "Empty") for g in ("hidden", "gone", "mixed", "flaky", "unread")}
    descriptions["live"] = description("live", "Stable", {"m": [tp("live-topic", 0)]})
    descriptions["shared"] = description("shared", "Empty", protocol_type="share", group_type="share")
    committed = {
        "hidden": {tp("secret", 0): 1},
        "gone": {tp("old", 0): 1},
        "mixed": {tp("old", 0): 1, tp("a", 0): 1},
        "flaky": {tp("flaky", 0): 1},
        "live": {tp("live-topic", 0): 1},
        "shared": {tp("s", 0): 1},
        # its offset on "b" was read with an error: "b" is still one of its topics, checked by name
        "unread": GroupOffsets(
            "unread", {tp("old", 1): CommittedOffset(1), tp("b", 0): CommittedOffset(None, error=Failure(88))}
        ),
    }
    client = StandInClient(descriptions, committed, existing={"a", "b", "live-topic", "s"}, hidden={"secret"})
    ids = list(descriptions)
    result = await find_dead_groups(client, ids, rules=RULES, now_ms=NOW)
    assert client.calls == [
        ("describe_groups", ids),
        ("fetch_committed_offsets", ids),
        ("check_topics", ["a", "b", "flaky", "old", "secret"]),
        ("describe_topics", None),
    ]
    paused = (GroupHealth.PAUSED, ())
    assert reasons(result) == {
        "hidden": paused,
        "gone": (GroupHealth.DEAD, (DeadReason.TOPICS_DELETED,)),
        "mixed": paused,
        "flaky": paused,
        "unread": paused,
        "live": (GroupHealth.ACTIVE, ()),
        "shared": paused,
    }
    assert result.deletable == ["gone"]
    assert result.reports["hidden"].found.cannot_tell[0] == TopicsUnknown(
        Reason.TOPICS_UNKNOWN, hidden=("secret",)
    )
    assert result.reports["flaky"].found.cannot_tell[0] == TopicsUnknown(
        Reason.TOPICS_UNKNOWN, failed=(("flaky", Failure(7, "")),)
    )
    assert result.reports["unread"].findings[:2] == (
        CommitsUnreadable(Reason.COMMITS_UNREADABLE, ((tp("b", 0), Failure(88)),)),
        TopicsFinding(Reason.SOME_TOPICS_DELETED, ("old",), 2),
    )


async def test_find_dead_groups_lists_topics_only_for_the_streams_heuristic():
    client = StandInClient({"g": description("g", "Empty")}, {"g": {}}, existing=set(), hidden=set())
    rules = DeadGroupRules(idle_hours=48, deny_streams_apps=False)
    result = await find_dead_groups(client, ["g"], rules=rules, now_ms=NOW)
    assert client.calls == [("describe_groups", ["g"]), ("fetch_committed_offsets", ["g"])]
    assert result.reports["g"].health is GroupHealth.PAUSED


# -- against the fake cluster -----------------------------------------------------------------------


def seed(cluster):
    cluster.add_topic("orders", partitions=1, end_offsets=100)
    cluster.add_topic("secret", partitions=1, end_offsets=10)
    cluster.add_group("live", offsets={("orders", 0): 90}, members=[Member("m", assignment={"orders": [0]})])
    cluster.add_group("abandoned", offsets={("gone", 0): 5})
    cluster.add_group("weekly", offsets={("orders", 0): 50})
    cluster.add_group("connect-sink", offsets={("gone", 0): 5})
    cluster.add_group("hidden", offsets={("secret", 0): 5})
    # a topic this principal may not Describe: named, it answers TOPIC_AUTHORIZATION_FAILED
    cluster.inject_error("Metadata", Err.TOPIC_AUTHORIZATION_FAILED, key="secret")


async def find_on_fake_cluster(setup, **kwargs):
    """find_dead_groups of every group: (result, requests per API, topics each Metadata named)."""

    async def body(cluster, client):
        result = await find_dead_groups(client, now_ms=NOW, **kwargs)
        named = [
            None if r.request.topics is None else sorted(t.name for t in r.request.topics)
            for r in cluster.requests("Metadata")
        ]
        return result, counts(cluster), named

    return await with_fake_cluster(body, setup=setup)


async def test_find_dead_groups_of_every_group_refuses_an_incomplete_listing():
    """KafkaAdminClient.listConsumerGroups reports each broker whose listing failed: "every group"
    with a broker's listing missing is not every group, so nothing is classified."""
    from airflow_provider_kgroups.client.errors import IncompleteListingError

    async def body(cluster, client):
        cluster.inject_error("ListGroups", -1, node=cluster.coordinator_of("abandoned"))
        with pytest.raises(
            IncompleteListingError, match=f"broker {cluster.coordinator_of('abandoned')}: UNKNOWN"
        ):
            await find_dead_groups(client, rules=RULES, now_ms=NOW)
        return counts(cluster)

    requests = await with_fake_cluster(body, setup=seed)
    assert requests == {"Metadata": 1, "ListGroups": 3}  # nothing described, read or checked


async def test_find_dead_groups_checks_topics_by_name_and_classifies_without_deleting():
    result, requests, named = await find_on_fake_cluster(seed, rules=RULES)
    assert reasons(result) == {
        "live": (GroupHealth.ACTIVE, ()),
        "abandoned": (GroupHealth.DEAD, (DeadReason.TOPICS_DELETED,)),
        "weekly": (GroupHealth.PAUSED, ()),
        "connect-sink": (GroupHealth.DEAD, (DeadReason.TOPICS_DELETED,)),
        "hidden": (GroupHealth.PAUSED, ()),
    }
    assert result.reports["hidden"].found.cannot_tell[0] == TopicsUnknown(
        Reason.TOPICS_UNKNOWN, hidden=("secret",)
    )
    assert result.deletable == ["abandoned"]  # connect-sink: a system group
    # bootstrap, the named check of the Empty groups' committed topics, the listing (Streams heuristic only)
    assert named == [[], ["gone", "orders", "secret"], None]
    # (no FindCoordinator: each group's coordinator is the broker that listed it)
    assert requests == {"ListGroups": 3, "DescribeGroups": 2, "OffsetFetch": 2, "Metadata": 3}


def seed_types(cluster):
    cluster.add_topic("orders", partitions=1, end_offsets=150)
    cluster.add_group("share-idle", group_type="share")
    cluster.add_group("streams-idle", group_type="streams", offsets={("gone", 0): 5})
    cluster.add_group("sink", protocol_type="connect", offsets={("orders", 0): 100})
    cluster.add_group("kip848", group_type="consumer", offsets={("orders", 0): 100})
    cluster.add_group("was-live", offsets={("orders", 0): 150})


def types_history():
    """Hourly for 72 h: sink, kip848 and streams-idle Empty with records to read; was-live Stable
    with three members, caught up, until an hour ago."""
    snaps = []
    for at in range(NOW - 72 * HOUR, NOW, HOUR):
        groups = [
            group(g, partition("orders", 0, 100, 150), state="Empty", members=0, protocol_type=protocol)
            for g, protocol in (("sink", "connect"), ("kip848", "consumer"))
        ]
        groups.append(
            group(
                "streams-idle", partition("gone", 0, 5, 9), state="Empty", members=0, protocol_type="streams"
            )
        )
        if at <= NOW - HOUR:
            groups.append(group("was-live", partition("orders", 0, 150, 150), state="Stable", members=3))
        snaps.append(snapshot(at, *groups))
    return snaps


async def test_find_dead_groups_by_group_and_protocol_type():
    """Each group described by its own API (GroupMetadataManager.describeGroups / consumerGroupDescribe /
    shareGroupDescribe / streamsGroupDescribe): share and streams groups are never judged by these rules,
    even with every other rule pointing at them; a connect-protocol group is not dead for being idle; a
    KIP-848 consumer group is; a group with members an hour ago is not."""
    rules = DeadGroupRules(idle_hours=48, assume_full_visibility=True)

    result, requests, named = await find_on_fake_cluster(seed_types, history=types_history(), rules=rules)
    got = {g: (r.group_type, r.health, r.dead_reasons, r.deletable) for g, r in result.reports.items()}
    assert got == {
        "share-idle": ("share", GroupHealth.PAUSED, (), False),
        "streams-idle": ("streams", GroupHealth.PAUSED, (), False),
        "sink": ("classic", GroupHealth.PAUSED, (), False),
        "kip848": ("consumer", GroupHealth.DEAD, ("idle",), True),
        "was-live": ("classic", GroupHealth.PAUSED, (), False),
    }
    assert result.failures == {}
    assert result.reports["streams-idle"].found.cannot_tell == (Finding(Reason.NOT_JUDGED_TYPE),)
    assert result.reports["kip848"].found.finding(Reason.IDLE).at_least_ms == 72 * HOUR
    assert named == [[], ["orders"], None]  # share/streams groups' topics are not checked: never judged
    assert requests == {
        "ListGroups": 3,
        "DescribeGroups": 2,
        "ConsumerGroupDescribe": 1,
        "ShareGroupDescribe": 1,
        "StreamsGroupDescribe": 1,
        "OffsetFetch": 3,
        "Metadata": 3,
    }


def seed_acls(cluster):
    cluster.add_topic("orders", partitions=1, end_offsets=150)
    cluster.add_topic("secret", partitions=1, end_offsets=150)
    cluster.add_group("acl-hidden", offsets={("secret", 0): 100})
    cluster.add_group("acl-mixed", offsets={("orders", 0): 100, ("secret", 0): 100})
    cluster.add_group("dropped-visible", offsets={("dropped", 0): 7})
    cluster.add_group("dropped-hidden", offsets={("dropped-too", 0): 7})
    cluster.allow("ANONYMOUS", "group", "*", "Describe")
    cluster.allow("ANONYMOUS", "topic", "orders", "Describe")
    cluster.allow("ANONYMOUS", "topic", "dropped", "Describe")


async def test_find_dead_groups_under_acls_keeps_what_it_cannot_see():
    """Issue 9 on a cluster with ACLs (KafkaApis.handleOffsetFetchRequest leaves the topics the
    principal may not Describe out of a group's offsets; handleTopicMetadataRequest out of the
    listing, and answers 3 for a named absent topic it may Describe). The old rules called
    acl-hidden and dropped-hidden dead ("no committed offset at all") and deletable."""
    result, requests, named = await find_on_fake_cluster(seed_acls, rules=RULES)
    got = {g: (r.health, r.dead_reasons, r.deletable) for g, r in result.reports.items()}
    assert got == {
        "acl-hidden": (GroupHealth.PAUSED, (), False),
        "acl-mixed": (GroupHealth.PAUSED, (), False),
        "dropped-visible": (GroupHealth.DEAD, ("topics_deleted",), True),
        "dropped-hidden": (GroupHealth.PAUSED, (), False),
    }
    assert result.reports["acl-hidden"].found.cannot_tell[0] == NO_COMMITS_UNSEEN
    assert result.reports["dropped-hidden"].found.cannot_tell[0] == NO_COMMITS_UNSEEN
    assert result.failures == {}
    assert named == [[], ["dropped", "orders"], None]
    # (no FindCoordinator: each group's coordinator is the broker that listed it)
    assert requests == {"ListGroups": 3, "DescribeGroups": 2, "OffsetFetch": 2, "Metadata": 3}
