"""Active / paused / dead with evidence, deny and allow patterns, protocol types, KIP-211 horizon."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.results import GroupState
from airflow_provider_kgroups.lag.deadgroups import (
    DeadGroupRules, GroupHealth, GroupHistoryPoint, classify_group, find_dead_groups, history_points,
)
from tests.support.fakekafka import Member

from .builders import HOUR, T0, description, group, offsets, partition, snapshot, tp
from .fake import with_fake_cluster

NOW = T0 + 200 * HOUR
RULES = DeadGroupRules(idle_hours=48, offsets_retention_minutes=7 * 24 * 60)
COMMITTED = {tp("orders", 0): 100}


def idle_history(hours: float, committed=COMMITTED, state=GroupState.EMPTY, every_hours: int = 6):
    start = NOW - int(hours * HOUR)
    return [GroupHistoryPoint(t, state, 0, committed) for t in range(start, NOW, every_hours * HOUR)]


def classify(group_id="app", state="Empty", committed=COMMITTED, history=(), topics=("orders",), rules=RULES,
             members=None, protocol_type="consumer"):
    return classify_group(group_id, description(group_id, state, members, protocol_type),
                          offsets(group_id, committed), None if topics is None else set(topics), list(history),
                          rules, NOW)


def test_members_make_a_group_active():
    report = classify(state="Stable", members={"m": [tp("orders", 0)]}, history=idle_history(100))
    assert report.health is GroupHealth.ACTIVE and not report.deletable
    assert report.evidence[0] == "state Stable with 1 member(s)"


def test_rebalancing_is_active():
    assert classify(state="PreparingRebalance").health is GroupHealth.ACTIVE


def test_dead_state_is_dead_but_nothing_to_delete():
    report = classify(state="Dead", committed={})
    assert report.health is GroupHealth.DEAD and not report.deletable


def test_empty_with_long_idle_history_is_dead_and_deletable():
    report = classify(history=idle_history(72))
    assert report.health is GroupHealth.DEAD and report.deletable
    assert report.evidence[0].startswith("dead: no commit progress for at least 72.0 h")


def test_empty_with_short_history_is_paused_not_dead():
    report = classify(history=idle_history(12))
    assert report.health is GroupHealth.PAUSED and not report.deletable
    assert any("shorter than the 48 h" in e for e in report.evidence)


def test_empty_without_history_is_paused():
    report = classify()
    assert report.health is GroupHealth.PAUSED
    assert "no stored history: how long it has been idle is unknown" in report.evidence


def test_recent_commit_progress_keeps_a_paused_group_alive():
    history = idle_history(100)[:-2] + [GroupHistoryPoint(NOW - 6 * HOUR, GroupState.EMPTY, 0, {tp("orders", 0): 150}),
                                        GroupHistoryPoint(NOW - 1 * HOUR, GroupState.EMPTY, 0, {tp("orders", 0): 150})]
    report = classify(committed={tp("orders", 0): 150}, history=history)
    assert report.health is GroupHealth.PAUSED
    assert report.last_progress_ms == NOW - 6 * HOUR
    assert any(e.startswith("last commit progress 6.0 h ago") for e in report.evidence)


def test_every_committed_topic_deleted_is_dead():
    report = classify(topics=("other",))
    assert report.health is GroupHealth.DEAD and report.deletable
    assert "every committed topic was deleted: orders" in report.evidence


def test_some_committed_topics_deleted_is_only_evidence():
    report = classify(committed={tp("orders", 0): 1, tp("gone", 0): 1})
    assert report.health is GroupHealth.PAUSED
    assert "1 of 2 committed topics no longer exist: gone" in report.evidence


def test_no_committed_offsets_is_dead_for_plain_consumers_only():
    assert classify(committed={}).health is GroupHealth.DEAD
    report = classify(committed={}, protocol_type="connect")
    assert report.health is GroupHealth.PAUSED
    assert any("protocol type 'connect' is not a plain consumer group" in e for e in report.evidence)


def test_non_consumer_protocol_can_still_be_dead_on_real_evidence():
    report = classify(group_id="conn-worker", protocol_type="connect", history=idle_history(72))
    assert report.health is GroupHealth.DEAD


def test_kip211_expiry_horizon_from_when_it_became_empty():
    history = [GroupHistoryPoint(NOW - 30 * HOUR, GroupState.STABLE, 2, COMMITTED)] + idle_history(24)
    report = classify(history=history)
    assert report.empty_since_ms == NOW - 24 * HOUR
    assert report.expires_at_ms == NOW - 24 * HOUR + 7 * 24 * HOUR
    assert any("offsets.retention.minutes=10080" in e and "KIP-211" in e for e in report.evidence)


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
])
def test_bad_rules_are_configuration_errors(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        DeadGroupRules(**kwargs)


def test_history_points_from_snapshots():
    snaps = [snapshot(T0, group("g", partition("t", 0, 5, 9), state="Empty", members=0))]
    (point,) = history_points(snaps, "g")
    assert point.state is GroupState.EMPTY and point.committed == {tp("t", 0): 5}


# -- against the fake cluster -----------------------------------------------------------------------

def seed(cluster):
    cluster.add_topic("orders", partitions=1, end_offsets=100)
    cluster.add_group("live", offsets={("orders", 0): 90}, members=[Member("m", assignment={"orders": [0]})])
    cluster.add_group("abandoned", offsets={("gone", 0): 5})
    cluster.add_group("weekly", offsets={("orders", 0): 50})
    cluster.add_group("connect-sink", offsets={("gone", 0): 5})


def test_find_dead_groups_lists_describes_and_classifies_without_deleting():
    async def body(cluster, client):
        result = await find_dead_groups(client, rules=RULES, now_ms=NOW)
        return result, cluster.requests_by_api()

    result, requests = with_fake_cluster(body, setup=seed)
    health = {g: r.health for g, r in result.reports.items()}
    assert health == {"live": GroupHealth.ACTIVE, "abandoned": GroupHealth.DEAD, "weekly": GroupHealth.PAUSED,
                      "connect-sink": GroupHealth.DEAD}
    assert result.deletable == ["abandoned"]
    assert "DeleteGroups" not in requests
