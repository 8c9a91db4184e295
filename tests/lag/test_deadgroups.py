"""Active / paused / dead with evidence, what cannot be told, deny and allow patterns, protocol
and group types, KIP-211 horizon.

The visibility rules follow Kafka's authorization: KafkaApis.handleOffsetFetchRequest (all
partitions of a group: topics the principal may not Describe are left out, no error) and
KafkaApis.handleTopicMetadataRequest (all topics: unauthorized ones left out; named topics:
TOPIC_AUTHORIZATION_FAILED whether or not they exist, UNKNOWN_TOPIC_OR_PARTITION when absent).
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError, Failure
from airflow_provider_kgroups.client.results import GroupState, KeyedResults, TopicExistence
from airflow_provider_kgroups.lag.deadgroups import (
    DeadGroupRules, GroupHealth, GroupHistoryPoint, classify_group, find_dead_groups, format_duration, history_points,
)
from tests.client.fakeutil import counts
from tests.support.fakekafka import Err, Member

from .builders import HOUR, MINUTE, T0, description, group, offsets, partition, snapshot, tp
from .fake import with_fake_cluster

NOW = T0 + 200 * HOUR  # 2023-11-23 06:13 UTC
RULES = DeadGroupRules(idle_hours=48, offsets_retention_minutes=7 * 24 * 60)
COMMITTED = {tp("orders", 0): 100}
BACKLOG = {tp("orders", 0): 150}  # 50 records to read
CAUGHT_UP = {tp("orders", 0): 100}
EXISTS, ABSENT, NOT_VISIBLE = TopicExistence.EXISTS, TopicExistence.ABSENT, TopicExistence.NOT_VISIBLE
PERMITTED = "matches no deny pattern"


def idle_history(hours: float, committed=COMMITTED, state=GroupState.EMPTY, every_hours: int = 6, log_end=BACKLOG,
                 members: int = 0):
    """Points every ``every_hours`` from ``hours`` ago to before now."""
    start = NOW - int(hours * HOUR)
    return [GroupHistoryPoint(t, state, members, committed, log_end) for t in range(start, NOW, every_hours * HOUR)]


def classify(group_id="app", state="Empty", committed=COMMITTED, history=(), topics=("orders",), rules=RULES,
             members=None, protocol_type="consumer", group_type="classic", checks=None):
    return classify_group(group_id, description(group_id, state, members, protocol_type, group_type),
                          offsets(group_id, committed), None if topics is None else set(topics), list(history),
                          rules, NOW, topic_checks=checks)


def test_members_make_a_group_active():
    report = classify(state="Stable", members={"m": [tp("orders", 0)]}, history=idle_history(100))
    assert report.health is GroupHealth.ACTIVE and not report.deletable
    assert report.evidence == ("state Stable with 1 member(s)", PERMITTED)
    assert (report.dead_reasons, report.cannot_tell) == ((), ())


def test_rebalancing_is_active():
    assert classify(state="PreparingRebalance").health is GroupHealth.ACTIVE


def test_dead_state_is_dead_but_nothing_to_delete():
    report = classify(state="Dead", committed={})
    assert report.health is GroupHealth.DEAD and not report.deletable
    assert report.dead_reasons == ("state_dead",)


# -- the idle rule ----------------------------------------------------------------------------------

def test_empty_idle_with_records_to_read_for_long_enough_is_dead_and_deletable():
    report = classify(history=idle_history(72))
    assert report.health is GroupHealth.DEAD and report.deletable
    assert report.dead_reasons == ("idle",) and report.cannot_tell == ()
    assert report.idle_since_ms == NOW - 72 * HOUR
    assert report.evidence == (
        "dead: no commit progress for at least 72 h while Empty with records to read (idle_hours=48)",
        "state Empty: no members",
        "no commit progress in the 72 h of stored history (since 2023-11-20 06:13 UTC)",
        "idle for at least 72 h: Empty, with records to read and no commit progress, at every stored snapshot "
        "since 2023-11-20 06:13 UTC",
        "Empty since at least 2023-11-20 06:13 UTC: Kafka will expire its offsets at or before 2023-11-27 06:13 UTC "
        "(offsets.retention.minutes=10080, KIP-211)",
        PERMITTED)


def test_bug_members_an_hour_ago_on_a_quiet_topic_is_not_idle():
    """Issue 9: Stable with three members in the history until 1 h ago, caught up on a quiet
    topic, Empty now. The old rule said "no commit progress for at least 216.0 h" and deleted it."""
    history = idle_history(216, state=GroupState.STABLE, members=3, log_end=CAUGHT_UP, every_hours=1)
    history = [p for p in history if p.at_ms <= NOW - HOUR]
    report = classify(history=history)
    assert report.health is GroupHealth.PAUSED and not report.deletable
    assert report.dead_reasons == () and report.idle_since_ms is None
    assert report.evidence == (
        "paused: Empty, but no evidence that it is abandoned",
        "state Empty: no members",
        "no commit progress in the 216 h of stored history (since 2023-11-14 06:13 UTC)",
        "not idle by the history: it had 3 member(s) in state Stable at 2023-11-23 05:13 UTC; idle time counts only "
        "while Empty with records to read and no commit progress",
        "Empty since at least 2023-11-23 06:13 UTC: Kafka will expire its offsets at or before 2023-11-30 06:13 UTC "
        "(offsets.retention.minutes=10080, KIP-211)",
        PERMITTED)


def test_members_an_hour_ago_with_records_to_read_counts_only_the_empty_hour():
    history = [*idle_history(216, state=GroupState.STABLE, members=3)[:-1],
               GroupHistoryPoint(NOW - HOUR, GroupState.EMPTY, 0, COMMITTED, BACKLOG)]
    report = classify(history=history)
    assert report.health is GroupHealth.PAUSED and report.idle_since_ms == NOW - HOUR
    assert ("idle for at least 1 h: Empty, with records to read and no commit progress, at every stored snapshot "
            "since 2023-11-23 05:13 UTC (before that, it had 3 member(s) in state Stable at 2023-11-22 18:13 UTC); "
            "less than idle_hours=48") in report.evidence


def test_a_caught_up_group_on_a_quiet_topic_is_never_idle():
    report = classify(history=idle_history(216, log_end=CAUGHT_UP))
    assert report.health is GroupHealth.PAUSED and report.idle_since_ms is None
    assert ("not idle by the history: it had nothing to read at 2023-11-23 00:13 UTC (caught up on every "
            "partition); idle time counts only while Empty with records to read and no commit progress"
            ) in report.evidence


def test_idle_time_starts_when_records_arrived():
    history = idle_history(216, log_end=CAUGHT_UP)[:-2] + idle_history(12)  # new records 12 h ago
    report = classify(history=history)
    assert report.health is GroupHealth.PAUSED and report.idle_since_ms == NOW - 12 * HOUR
    assert ("idle for at least 12 h: Empty, with records to read and no commit progress, at every stored snapshot "
            "since 2023-11-22 18:13 UTC (before that, it had nothing to read at 2023-11-22 12:13 UTC (caught up on "
            "every partition)); less than idle_hours=48") in report.evidence


def test_unread_log_ends_are_not_records_to_read():
    report = classify(history=idle_history(216, log_end={}))
    assert report.health is GroupHealth.PAUSED and report.idle_since_ms is None
    assert any("nothing to read was known at 2023-11-23 00:13 UTC (log end offsets not read)" in e
               for e in report.evidence)


def test_empty_for_less_than_idle_hours_is_paused():
    history = idle_history(100, state=GroupState.STABLE, members=2)[:-5] + idle_history(30)
    report = classify(history=history)
    assert report.health is GroupHealth.PAUSED and not report.deletable
    assert report.idle_since_ms == NOW - 30 * HOUR and report.empty_since_ms == NOW - 30 * HOUR
    assert report.evidence[0] == "paused: Empty, but no evidence that it is abandoned"


def test_a_short_history_proves_nothing():
    report = classify(history=idle_history(12))
    assert report.health is GroupHealth.PAUSED and not report.deletable
    assert ("idle for at least 12 h: Empty, with records to read and no commit progress, at every stored snapshot "
            "since 2023-11-22 18:13 UTC; less than idle_hours=48") in report.evidence


def test_empty_without_history_is_paused_and_cannot_tell():
    report = classify()
    assert report.health is GroupHealth.PAUSED
    assert report.cannot_tell == ("cannot tell how long it has been idle: no stored history",)
    assert report.evidence == (
        "paused: Empty, but no evidence that it is abandoned", "state Empty: no members",
        "cannot tell how long it has been idle: no stored history",
        "Kafka expires its offsets 10080 min after it became Empty (KIP-211); when that was is not in the history",
        PERMITTED)


def test_recent_commit_progress_keeps_a_paused_group_alive():
    history = idle_history(100)[:-2] + [GroupHistoryPoint(NOW - 6 * HOUR, GroupState.EMPTY, 0, {tp("orders", 0): 150},
                                                          {tp("orders", 0): 160}),
                                        GroupHistoryPoint(NOW - 1 * HOUR, GroupState.EMPTY, 0, {tp("orders", 0): 150},
                                                          {tp("orders", 0): 160})]
    report = classify(committed={tp("orders", 0): 150}, history=history)
    assert report.health is GroupHealth.PAUSED
    assert report.last_progress_ms == NOW - 6 * HOUR and report.idle_since_ms == NOW - 6 * HOUR
    assert "last commit progress 6 h ago (2023-11-23 00:13 UTC)" in report.evidence
    assert any("(before that, its committed offsets changed after 2023-11-22 14:13 UTC)" in e for e in report.evidence)


def test_progress_since_the_last_snapshot_is_not_idle():
    report = classify(committed={tp("orders", 0): 120}, history=idle_history(100))
    assert report.health is GroupHealth.PAUSED and report.last_progress_ms == NOW
    assert ("not idle by the history: its committed offsets changed after 2023-11-23 02:13 UTC; idle time counts "
            "only while Empty with records to read and no commit progress") in report.evidence


def test_durations_are_floored_and_never_contradict_the_threshold():
    """The old text said "no commit progress for at least 0.0 h (>= 0.02 h)"."""
    rules = DeadGroupRules(idle_hours=0.02)  # 72 s
    history = [GroupHistoryPoint(NOW - 72_500, GroupState.EMPTY, 0, COMMITTED, BACKLOG)]
    report = classify(history=history, rules=rules)
    assert report.evidence[0] == ("dead: no commit progress for at least 1 min 12 s while Empty with records to "
                                  "read (idle_hours=0.02)")
    short = classify(history=[GroupHistoryPoint(NOW - 71_900, GroupState.EMPTY, 0, COMMITTED, BACKLOG)], rules=rules)
    assert short.health is GroupHealth.PAUSED
    assert any(e.startswith("idle for at least 1 min 11 s:") and e.endswith("; less than idle_hours=0.02")
               for e in short.evidence)


@pytest.mark.parametrize("ms, text", [(0, "0 s"), (999, "0 s"), (59_999, "59 s"), (60_000, "1 min"),
                                      (72_500, "1 min 12 s"), (HOUR - 1, "59 min 59 s"), (HOUR, "1 h"),
                                      (HOUR + 59_999, "1 h"), (216 * HOUR + 5 * MINUTE + 59_000, "216 h 5 min"),
                                      (-5, "0 s")])
def test_format_duration(ms, text):
    assert format_duration(ms) == text


# -- the topics_deleted rule: checked by name -------------------------------------------------------

def test_every_committed_topic_absent_by_name_is_dead():
    report = classify(topics=("other",), checks={"orders": ABSENT})
    assert report.health is GroupHealth.DEAD and report.deletable
    assert report.dead_reasons == ("topics_deleted",)
    assert report.cannot_tell == ("cannot tell how long it has been idle: no stored history",)
    assert report.evidence[0] == "dead: every topic it committed to was deleted"
    assert "every committed topic was deleted (UNKNOWN_TOPIC_OR_PARTITION by name): orders" in report.evidence


def test_bug_a_topic_hidden_by_acls_is_cannot_tell_not_deleted():
    """Issue 9: the topic listing (all-topics Metadata) leaves out a topic the principal may not
    Describe; named, it answers TOPIC_AUTHORIZATION_FAILED. The old rule called it deleted."""
    report = classify(topics=("other",), checks={"orders": NOT_VISIBLE})
    assert report.health is GroupHealth.PAUSED and not report.deletable and report.dead_reasons == ()
    text = ("cannot tell whether every committed topic was deleted: orders not visible to this principal "
            "(TOPIC_AUTHORIZATION_FAILED)")
    assert report.cannot_tell == (text, "cannot tell how long it has been idle: no stored history")
    assert text in report.evidence


def test_a_topic_missing_from_the_listing_alone_is_cannot_tell():
    report = classify(topics=("other",))
    assert report.health is GroupHealth.PAUSED and not report.deletable
    assert report.cannot_tell[0] == ("cannot tell whether every committed topic was deleted: orders not in the topic "
                                     "list (which leaves out topics the principal may not Describe) and not checked "
                                     "by name")


def test_a_failed_or_missing_check_is_cannot_tell():
    committed = {tp("a", 0): 1, tp("b", 0): 1, tp("c", 0): 1, tp("d", 0): 1}
    report = classify(committed=committed, topics=(), checks={
        "a": ABSENT, "b": NOT_VISIBLE, "c": Failure(7, "timed out")})
    assert report.health is GroupHealth.PAUSED and report.dead_reasons == ()
    assert report.cannot_tell[0] == ("cannot tell whether every committed topic was deleted: b not visible to this "
                                     "principal (TOPIC_AUTHORIZATION_FAILED); the check of c (REQUEST_TIMED_OUT: "
                                     "timed out) failed; d not checked by name")
    assert "1 of 4 committed topics no longer exist (checked by name): a" in report.evidence


def test_some_committed_topics_deleted_is_only_evidence():
    report = classify(committed={tp("orders", 0): 1, tp("gone", 0): 1}, checks={"orders": EXISTS, "gone": ABSENT})
    assert report.health is GroupHealth.PAUSED
    assert "1 of 2 committed topics no longer exist (checked by name): gone" in report.evidence
    assert report.cannot_tell == ("cannot tell how long it has been idle: no stored history",)


# -- the no_commits rule: only under assume_full_visibility ---------------------------------------

def test_no_visible_commit_is_cannot_tell_by_default():
    report = classify(committed={})
    assert report.health is GroupHealth.PAUSED and not report.deletable
    assert report.cannot_tell[0] == (
        "cannot tell whether it has no committed offset at all: a fetch of all its offsets leaves out topics the "
        "principal may not Describe (set assume_full_visibility only if it may Describe every topic and group)")


def test_no_commit_at_all_is_dead_under_assume_full_visibility_for_plain_consumers_only():
    rules = DeadGroupRules(idle_hours=48, assume_full_visibility=True)
    report = classify(committed={}, rules=rules)
    assert report.health is GroupHealth.DEAD and report.deletable and report.dead_reasons == ("no_commits",)
    assert report.evidence[0] == "dead: it has no committed offset at all (assume_full_visibility)"
    connect = classify(committed={}, rules=rules, protocol_type="connect")
    assert connect.health is GroupHealth.PAUSED and connect.cannot_tell == (
        "cannot tell how long it has been idle: no stored history",)


# -- protocol and group types ------------------------------------------------------------------------

def test_bug_a_connect_protocol_group_is_never_dead_for_lack_of_commit_progress():
    """Issue 9: a `connect` protocol group was called dead for lack of commit progress."""
    report = classify(group_id="conn-worker", protocol_type="connect", history=idle_history(72))
    assert report.health is GroupHealth.PAUSED and not report.deletable and report.dead_reasons == ()
    assert report.evidence[:2] == ("paused: Empty, but no evidence that it is abandoned", "state Empty: no members")
    assert ("protocol type 'connect' is not a plain consumer group: neither a missing commit nor a lack of commit "
            "progress is evidence against it") in report.evidence
    assert report.idle_since_ms == NOW - 72 * HOUR  # still reported, never evidence


def test_a_non_consumer_protocol_group_is_dead_when_every_topic_is_absent_by_name():
    report = classify(group_id="conn-worker", protocol_type="connect", checks={"orders": ABSENT})
    assert report.health is GroupHealth.DEAD and report.dead_reasons == ("topics_deleted",)


@pytest.mark.parametrize("group_type", ["share", "streams"])
def test_share_and_streams_groups_are_not_judged_by_consumer_group_rules(group_type):
    rules = DeadGroupRules(idle_hours=48, assume_full_visibility=True)
    note = (f"a {group_type} group: the consumer-group rules do not apply to it, so it is never dead or deletable "
            "by them")
    for committed, checks in (({}, None), (COMMITTED, {"orders": ABSENT})):
        report = classify(group_type=group_type, protocol_type=group_type, committed=committed, checks=checks,
                          history=idle_history(72), rules=rules)
        assert report.health is GroupHealth.PAUSED and not report.deletable and report.dead_reasons == ()
        assert report.evidence == (f"paused: state Empty, {note}", PERMITTED) and report.cannot_tell == (note,)
    active = classify(group_type=group_type, state="Stable", members={"m": [tp("orders", 0)]})
    assert active.health is GroupHealth.ACTIVE and active.evidence == ("state Stable with 1 member(s)", note, PERMITTED)


def test_kip211_expiry_horizon_from_when_it_became_empty():
    history = [GroupHistoryPoint(NOW - 30 * HOUR, GroupState.STABLE, 2, COMMITTED)] + idle_history(24)
    report = classify(history=history)
    assert report.empty_since_ms == NOW - 24 * HOUR
    assert report.expires_at_ms == NOW - 24 * HOUR + 7 * 24 * HOUR
    assert any("offsets.retention.minutes=10080" in e and "KIP-211" in e for e in report.evidence)


# -- patterns -------------------------------------------------------------------------------------

@pytest.mark.parametrize("group_id", ["connect-s3-sink", "_confluent-ksql-default", "__internal",
                                      "schema-registry"])
def test_system_groups_are_denied_by_default(group_id):
    report = classify(group_id=group_id, history=idle_history(72))
    assert report.health is GroupHealth.DEAD and not report.deletable
    assert any("default deny pattern" in e for e in report.evidence)


def test_streams_application_ids_are_denied_by_default():
    report = classify(group_id="wordcount", topics=("orders", "wordcount-counts-store-changelog"),
                      history=idle_history(72))
    assert not report.deletable and any("Kafka Streams application id" in e for e in report.evidence)


def test_user_allow_overrides_default_deny_and_user_deny_wins():
    allow = DeadGroupRules(idle_hours=48, allow=("connect-old-*",))
    assert classify(group_id="connect-old-1", history=idle_history(72), rules=allow).deletable
    assert not classify(group_id="app", history=idle_history(72), rules=allow).deletable  # not in the allow list
    both = DeadGroupRules(idle_hours=48, allow=("re:.*",), deny=("keep-*",))
    report = classify(group_id="keep-me", history=idle_history(72), rules=both)
    assert not report.deletable and "matches the deny pattern 'keep-*': never deletable" in report.evidence


@pytest.mark.parametrize("kwargs, message", [
    ({"idle_hours": -1}, "idle_hours must be a positive"),
    ({"offsets_retention_minutes": 0}, "offsets_retention_minutes must be a positive"),
    ({"allow": "app-*"}, "not the single string"),
    ({"deny": ["re:("]}, "not a valid regular expression"),
    ({"assume_full_visibility": "yes"}, "assume_full_visibility must be True or False"),
])
def test_bad_rules_are_configuration_errors(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        DeadGroupRules(**kwargs)


def test_history_points_from_snapshots_carry_log_ends():
    snaps = [snapshot(T0, group("g", partition("t", 0, 5, 9), partition("t", 1, None, 4), partition("t", 2, 3, None),
                                state="Empty", members=0))]
    (point,) = history_points(snaps, "g")
    assert point.state is GroupState.EMPTY and point.committed == {tp("t", 0): 5, tp("t", 2): 3}
    assert point.log_end == {tp("t", 0): 9, tp("t", 1): 4} and point.has_records_to_read


def test_report_to_dict_carries_reasons_and_cannot_tell():
    out = classify(topics=("other",), checks={"orders": NOT_VISIBLE}, history=idle_history(72)).to_dict()
    assert out["health"] == "dead" and out["dead_reasons"] == ["idle"] and out["group_type"] == "classic"
    assert out["cannot_tell"] == ["cannot tell whether every committed topic was deleted: orders not visible to this "
                                  "principal (TOPIC_AUTHORIZATION_FAILED)"]
    assert out["idle_since_ms"] == NOW - 72 * HOUR


# -- find_dead_groups: which topics are checked by name ---------------------------------------------

class StandInClient:
    """The client verbs find_dead_groups uses, answering like Kafka with an ACL that hides
    topic "secret": the all-topics listing leaves it out, a named check answers
    TOPIC_AUTHORIZATION_FAILED (KafkaApis.handleTopicMetadataRequest)."""

    def __init__(self, descriptions, committed, existing, hidden):
        self.descriptions, self.committed, self.existing, self.hidden = descriptions, committed, existing, hidden
        self.calls: list[tuple[str, object]] = []

    async def describe_groups(self, ids, timeout_s=None):
        self.calls.append(("describe_groups", list(ids)))
        return KeyedResults({g: self.descriptions[g] for g in ids})

    async def fetch_committed_offsets(self, ids, timeout_s=None):
        self.calls.append(("fetch_committed_offsets", list(ids)))
        return KeyedResults({g: offsets(g, self.committed[g]) for g in ids})

    async def check_topics(self, topics, timeout_s=None):
        topics = list(topics)
        self.calls.append(("check_topics", topics))
        return KeyedResults({t: NOT_VISIBLE if t in self.hidden else EXISTS if t in self.existing else ABSENT
                             for t in topics if t != "flaky"}, {"flaky": Failure(7, "")} if "flaky" in topics else {})

    async def describe_topics(self, topics, timeout_s=None):
        self.calls.append(("describe_topics", topics))
        return {t: None for t in self.existing}


def test_find_dead_groups_checks_the_committed_topics_of_empty_groups_by_name():
    descriptions = {g: description(g, "Empty") for g in ("hidden", "gone", "mixed", "flaky")}
    descriptions["live"] = description("live", "Stable", {"m": [tp("live-topic", 0)]})
    descriptions["shared"] = description("shared", "Empty", protocol_type="share", group_type="share")
    committed = {"hidden": {tp("secret", 0): 1}, "gone": {tp("old", 0): 1}, "mixed": {tp("old", 0): 1, tp("a", 0): 1},
                 "flaky": {tp("flaky", 0): 1}, "live": {tp("live-topic", 0): 1}, "shared": {tp("s", 0): 1}}
    client = StandInClient(descriptions, committed, existing={"a", "live-topic", "s"}, hidden={"secret"})
    ids = list(descriptions)
    result = asyncio.run(find_dead_groups(client, ids, rules=RULES, now_ms=NOW))
    assert client.calls == [("describe_groups", ids), ("fetch_committed_offsets", ids),
                            ("check_topics", ["a", "flaky", "old", "secret"]), ("describe_topics", None)]
    health = {g: (r.health, r.dead_reasons) for g, r in result.reports.items()}
    assert health == {"hidden": (GroupHealth.PAUSED, ()), "gone": (GroupHealth.DEAD, ("topics_deleted",)),
                      "mixed": (GroupHealth.PAUSED, ()), "flaky": (GroupHealth.PAUSED, ()),
                      "live": (GroupHealth.ACTIVE, ()), "shared": (GroupHealth.PAUSED, ())}
    assert result.deletable == ["gone"]
    assert result.reports["hidden"].cannot_tell[0] == (
        "cannot tell whether every committed topic was deleted: secret not visible to this principal "
        "(TOPIC_AUTHORIZATION_FAILED)")
    assert result.reports["flaky"].cannot_tell[0] == (
        "cannot tell whether every committed topic was deleted: the check of flaky (REQUEST_TIMED_OUT) failed")


def test_find_dead_groups_lists_topics_only_for_the_streams_heuristic():
    client = StandInClient({"g": description("g", "Empty")}, {"g": {}}, existing=set(), hidden=set())
    rules = DeadGroupRules(idle_hours=48, deny_streams_apps=False)
    result = asyncio.run(find_dead_groups(client, ["g"], rules=rules, now_ms=NOW))
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


def test_find_dead_groups_of_every_group_refuses_an_incomplete_listing():
    """KafkaAdminClient.listConsumerGroups reports each broker whose listing failed: "every group"
    with a broker's listing missing is not every group, so nothing is classified."""
    from airflow_provider_kgroups.client.errors import IncompleteListingError

    async def body(cluster, client):
        cluster.inject_error("ListGroups", -1, node=cluster.coordinator_of("abandoned"))
        with pytest.raises(IncompleteListingError, match=f"broker {cluster.coordinator_of('abandoned')}: UNKNOWN"):
            await find_dead_groups(client, rules=RULES, now_ms=NOW)
        return counts(cluster)

    requests = with_fake_cluster(body, setup=seed)
    assert requests == {"Metadata": 1, "ListGroups": 3}  # nothing described, read or checked


def test_find_dead_groups_checks_topics_by_name_and_classifies_without_deleting():
    """KafkaApis.handleTopicMetadataRequest: a named absent topic answers UNKNOWN_TOPIC_OR_PARTITION,
    a named topic the principal may not Describe TOPIC_AUTHORIZATION_FAILED (cannot tell)."""
    async def body(cluster, client):
        result = await find_dead_groups(client, rules=RULES, now_ms=NOW)
        named = [None if r.request.topics is None else sorted(t.name for t in r.request.topics)
                 for r in cluster.requests("Metadata")]
        return result, counts(cluster), named

    result, requests, named = with_fake_cluster(body, setup=seed)
    health = {g: (r.health, r.dead_reasons) for g, r in result.reports.items()}
    assert health == {"live": (GroupHealth.ACTIVE, ()), "abandoned": (GroupHealth.DEAD, ("topics_deleted",)),
                      "weekly": (GroupHealth.PAUSED, ()), "connect-sink": (GroupHealth.DEAD, ("topics_deleted",)),
                      "hidden": (GroupHealth.PAUSED, ())}
    assert result.reports["hidden"].cannot_tell[0] == (
        "cannot tell whether every committed topic was deleted: secret not visible to this principal "
        "(TOPIC_AUTHORIZATION_FAILED)")
    assert result.deletable == ["abandoned"]  # connect-sink: a system group
    # bootstrap, the named check of the Empty groups' committed topics, the listing (Streams heuristic only)
    assert named == [[], ["gone", "orders", "secret"], None]
    assert requests == {"ListGroups": 3, "FindCoordinator": 1, "DescribeGroups": 2, "OffsetFetch": 2, "Metadata": 3}


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
        groups = [group(g, partition("orders", 0, 100, 150), state="Empty", members=0, protocol_type=protocol)
                  for g, protocol in (("sink", "connect"), ("kip848", "consumer"))]
        groups.append(group("streams-idle", partition("gone", 0, 5, 9), state="Empty", members=0,
                            protocol_type="streams"))
        if at <= NOW - HOUR:
            groups.append(group("was-live", partition("orders", 0, 150, 150), state="Stable", members=3))
        snaps.append(snapshot(at, *groups))
    return snaps


def test_find_dead_groups_by_group_and_protocol_type():
    """Each group described by its own API (GroupMetadataManager.describeGroups / consumerGroupDescribe /
    shareGroupDescribe / streamsGroupDescribe): share and streams groups are never judged by these rules,
    even with every other rule pointing at them; a connect-protocol group is not dead for being idle; a
    KIP-848 consumer group is; a group with members an hour ago is not."""
    rules = DeadGroupRules(idle_hours=48, assume_full_visibility=True)

    async def body(cluster, client):
        result = await find_dead_groups(client, history=types_history(), rules=rules, now_ms=NOW)
        named = [None if r.request.topics is None else sorted(t.name for t in r.request.topics)
                 for r in cluster.requests("Metadata")]
        return result, counts(cluster), named

    result, requests, named = with_fake_cluster(body, setup=seed_types)
    got = {g: (r.group_type, r.health, r.dead_reasons, r.deletable) for g, r in result.reports.items()}
    assert got == {"share-idle": ("share", GroupHealth.PAUSED, (), False),
                   "streams-idle": ("streams", GroupHealth.PAUSED, (), False),
                   "sink": ("classic", GroupHealth.PAUSED, (), False),
                   "kip848": ("consumer", GroupHealth.DEAD, ("idle",), True),
                   "was-live": ("classic", GroupHealth.PAUSED, (), False)}
    assert result.failures == {}
    assert result.reports["streams-idle"].cannot_tell == (
        "a streams group: the consumer-group rules do not apply to it, so it is never dead or deletable by them",)
    assert result.reports["kip848"].evidence[0] == ("dead: no commit progress for at least 72 h while Empty with "
                                                    "records to read (idle_hours=48)")
    assert named == [[], ["orders"], None]  # share/streams groups' topics are not checked: never judged
    assert requests == {"ListGroups": 3, "FindCoordinator": 1, "DescribeGroups": 2, "ConsumerGroupDescribe": 1,
                        "ShareGroupDescribe": 1, "StreamsGroupDescribe": 1, "OffsetFetch": 3, "Metadata": 3}


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


def test_find_dead_groups_under_acls_keeps_what_it_cannot_see():
    """Issue 9 on a cluster with ACLs (KafkaApis.handleOffsetFetchRequest leaves the topics the
    principal may not Describe out of a group's offsets; handleTopicMetadataRequest out of the
    listing, and answers 3 for a named absent topic it may Describe). The old rules called
    acl-hidden and dropped-hidden dead ("no committed offset at all") and deletable."""
    async def body(cluster, client):
        result = await find_dead_groups(client, rules=RULES, now_ms=NOW)
        named = [None if r.request.topics is None else sorted(t.name for t in r.request.topics)
                 for r in cluster.requests("Metadata")]
        return result, counts(cluster), named

    result, requests, named = with_fake_cluster(body, setup=seed_acls)
    got = {g: (r.health, r.dead_reasons, r.deletable) for g, r in result.reports.items()}
    assert got == {"acl-hidden": (GroupHealth.PAUSED, (), False), "acl-mixed": (GroupHealth.PAUSED, (), False),
                   "dropped-visible": (GroupHealth.DEAD, ("topics_deleted",), True),
                   "dropped-hidden": (GroupHealth.PAUSED, (), False)}
    no_commit = ("cannot tell whether it has no committed offset at all: a fetch of all its offsets leaves out topics "
                 "the principal may not Describe (set assume_full_visibility only if it may Describe every topic and "
                 "group)")
    assert result.reports["acl-hidden"].cannot_tell[0] == no_commit
    assert result.reports["dropped-hidden"].cannot_tell[0] == no_commit
    assert result.failures == {}
    assert named == [[], ["dropped", "orders"], None]
    assert requests == {"ListGroups": 3, "FindCoordinator": 1, "DescribeGroups": 2, "OffsetFetch": 2, "Metadata": 3}
