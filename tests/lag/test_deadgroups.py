"""The dead-group rules over observations: active / paused / dead, and the findings behind the
verdict as values (reasons and what each rule measured). Their words are one renderer's
(tests/cleanup/test_evidence_text.py); the patterns are cleanup's (tests/cleanup/test_permission.py);
the reads are tested in tests/cleanup/test_find_dead_groups.py.

The visibility rules follow Kafka's authorization: KafkaApis.handleOffsetFetchRequest (all
partitions of a group: topics the principal may not Describe are left out, no error) and
KafkaApis.handleTopicMetadataRequest (all topics: unauthorized ones left out; named topics:
TOPIC_AUTHORIZATION_FAILED whether or not they exist, UNKNOWN_TOPIC_OR_PARTITION when absent).
"""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError, Failure
from airflow_provider_kgroups.client.results import CommittedOffset, GroupOffsets, GroupState, TopicExistence
from airflow_provider_kgroups.lag.deadfindings import (
    BreakReason,
    CommitsUnreadable,
    DeadReason,
    ExpiryFinding,
    Finding,
    GroupHealth,
    IdleBreak,
    IdleFinding,
    ProgressFinding,
    Reason,
    TopicsFinding,
    TopicsUnknown,
)
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules, judge_group
from airflow_provider_kgroups.lag.model import LagFlag
from airflow_provider_kgroups.lag.observation import GroupHistoryPoint, GroupObservation, history_points
from tests.support.builders import HOUR, T0, description, group, offsets, partition, snapshot, tp
from tests.support.deadgroups import BACKLOG, CAUGHT_UP, COMMITTED, NOW, RULES, UNREADABLE, idle_history

WEEK = 7 * 24 * HOUR
EXISTS, ABSENT, NOT_VISIBLE = TopicExistence.EXISTS, TopicExistence.ABSENT, TopicExistence.NOT_VISIBLE
NO_HISTORY = IdleFinding(Reason.NO_HISTORY, 48)


def observe(
    group_id="app",
    state="Empty",
    committed=COMMITTED,
    members=None,
    protocol_type="consumer",
    group_type="classic",
    group_offsets=None,
) -> GroupObservation:
    return GroupObservation.of(
        description(group_id, state, members, protocol_type, group_type),
        group_offsets or offsets(group_id, committed),
        NOW,
    )


def judge(history=(), topics=("orders",), rules=RULES, checks=None, **observed):
    return judge_group(
        observe(**observed),
        list(history),
        rules,
        topic_checks=checks,
        existing_topics=None if topics is None else set(topics),
    )


def idle(reason, since_h=None, at_most_h=None, before=None, at_least_ms=None):
    since = None if since_h is None else NOW - since_h * HOUR
    at_least = at_least_ms if at_least_ms is not None else (0 if since is None else NOW - since)
    return IdleFinding(reason, 48, since, at_least, None if at_most_h is None else at_most_h * HOUR, before)


def expires(empty_since_h):
    return ExpiryFinding(Reason.EXPIRES, 10080, NOW - empty_since_h * HOUR, NOW - empty_since_h * HOUR + WEEK)


def test_members_make_a_group_active():
    found = judge(state="Stable", members={"m": [tp("orders", 0)]}, history=idle_history(100))
    assert (found.health, found.findings, found.dead_reasons, found.cannot_tell) == (
        GroupHealth.ACTIVE,
        (Finding(Reason.ACTIVE),),
        (),
        (),
    )


def test_rebalancing_is_active():
    assert judge(state="PreparingRebalance").health is GroupHealth.ACTIVE


def test_dead_state_is_dead_but_nothing_to_delete():
    found = judge(state="Dead", committed={})
    assert (found.health, found.findings, found.dead_reasons) == (
        GroupHealth.DEAD,
        (Finding(Reason.STATE_DEAD),),
        (DeadReason.STATE_DEAD,),
    )


# -- the idle rule ----------------------------------------------------------------------------------


def test_empty_idle_with_records_to_read_for_longer_than_idle_hours_is_dead():
    found = judge(history=idle_history(72))
    assert (
        found.health is GroupHealth.DEAD
        and found.dead_reasons == (DeadReason.IDLE,)
        and found.cannot_tell == ()
    )
    assert found.idle_since_ms == NOW - 72 * HOUR
    assert found.findings == (
        ProgressFinding(Reason.NO_PROGRESS, NOW - 72 * HOUR),
        idle(Reason.IDLE, 72),
        expires(72),
    )


def test_bug_members_an_hour_ago_on_a_quiet_topic_is_not_idle():
    """Issue 9: Stable with three members in the history until 1 h ago, caught up on a quiet
    topic, Empty now. The old rule said "no commit progress for at least 216.0 h" and deleted it."""
    history = idle_history(216, state=GroupState.STABLE, members=3, log_end=CAUGHT_UP, every_hours=1)
    history = [p for p in history if p.at_ms <= NOW - HOUR]
    found = judge(history=history)
    assert found.health is GroupHealth.PAUSED and found.dead_reasons == () and found.idle_since_ms is None
    assert found.findings == (
        ProgressFinding(Reason.NO_PROGRESS, NOW - 216 * HOUR),
        idle(
            Reason.NOT_IDLE,
            at_most_h=1,
            before=IdleBreak(BreakReason.MEMBERS, NOW - HOUR, GroupState.STABLE, 3),
        ),
        expires(0),
    )


def test_members_twelve_hours_ago_with_records_to_read_counts_only_the_empty_hour():
    history = [
        *idle_history(216, state=GroupState.STABLE, members=3)[:-1],
        GroupHistoryPoint(NOW - HOUR, GroupState.EMPTY, 0, COMMITTED, BACKLOG),
    ]
    found = judge(history=history)
    assert found.health is GroupHealth.PAUSED and found.idle_since_ms == NOW - HOUR
    assert found.finding(Reason.IDLE_SHORT) == idle(
        Reason.IDLE_SHORT,
        1,
        at_most_h=12,
        before=IdleBreak(BreakReason.MEMBERS, NOW - 12 * HOUR, GroupState.STABLE, 3),
    )


def test_a_caught_up_group_on_a_quiet_topic_is_never_idle():
    found = judge(history=idle_history(216, log_end=CAUGHT_UP))
    assert found.health is GroupHealth.PAUSED and found.idle_since_ms is None
    assert found.finding(Reason.NOT_IDLE) == idle(
        Reason.NOT_IDLE, at_most_h=6, before=IdleBreak(BreakReason.CAUGHT_UP, NOW - 6 * HOUR)
    )


def test_idle_time_starts_when_records_arrived():
    history = idle_history(216, log_end=CAUGHT_UP)[:-2] + idle_history(12)  # new records 12 h ago
    found = judge(history=history)
    assert found.health is GroupHealth.PAUSED and found.idle_since_ms == NOW - 12 * HOUR
    assert found.finding(Reason.IDLE_SHORT) == idle(
        Reason.IDLE_SHORT, 12, at_most_h=18, before=IdleBreak(BreakReason.CAUGHT_UP, NOW - 18 * HOUR)
    )


def test_unread_log_ends_are_not_records_to_read_and_leave_idleness_unknown():
    found = judge(history=idle_history(216, log_end={}))
    assert found.health is GroupHealth.PAUSED and found.idle_since_ms is None
    unknown = idle(Reason.IDLE_UNKNOWN, before=IdleBreak(BreakReason.LOG_END_UNKNOWN, NOW - 6 * HOUR))
    assert found.finding(Reason.IDLE_UNKNOWN) == unknown and found.cannot_tell == (unknown,)


def test_empty_for_less_than_idle_hours_is_paused():
    history = idle_history(100, state=GroupState.STABLE, members=2)[:-5] + idle_history(30)
    found = judge(history=history)
    assert found.health is GroupHealth.PAUSED and found.cannot_tell == ()
    assert found.idle_since_ms == NOW - 30 * HOUR and found.empty_since_ms == NOW - 30 * HOUR
    assert found.finding(Reason.IDLE_SHORT).at_most_ms == 34 * HOUR


def test_a_short_history_proves_nothing_and_says_it_cannot_tell():
    """12 h of idle snapshots, and the history begins there: at least 12 h, with no upper bound.
    Kept, and the reason is a cannot-tell (the old rule only noted "less than idle_hours")."""
    found = judge(history=idle_history(12))
    assert found.health is GroupHealth.PAUSED
    assert found.cannot_tell == (idle(Reason.IDLE_UNKNOWN, 12),)


def test_an_idle_lower_bound_exactly_at_idle_hours_is_cannot_tell_not_dead():
    """Issue 18: a lower bound proves "more than", never "at least as much as": idle at every
    snapshot since exactly 48 h ago, where the history begins, is at least 48 h - not more than
    idle_hours=48. The old rule (>=) called it dead and deletable."""
    found = judge(history=idle_history(48))
    assert found.health is GroupHealth.PAUSED and found.dead_reasons == ()
    assert found.cannot_tell == (idle(Reason.IDLE_UNKNOWN, 48),)
    assert (
        judge(
            history=[GroupHistoryPoint(NOW - 48 * HOUR - 1, GroupState.EMPTY, 0, COMMITTED, BACKLOG)]
        ).health
        is GroupHealth.DEAD
    )


def test_a_history_that_stopped_longer_ago_than_idle_hours_cannot_tell():
    """History coverage: the last stored snapshot, 100 h ago, saw members; none since. The group
    may have been idle for up to 100 h (more than idle_hours=48): cannot tell, never "not idle"."""
    history = [
        p for p in idle_history(300, state=GroupState.STABLE, members=2) if p.at_ms <= NOW - 100 * HOUR
    ]
    found = judge(history=history)
    before = IdleBreak(BreakReason.MEMBERS, history[-1].at_ms, GroupState.STABLE, 2)
    assert found.health is GroupHealth.PAUSED
    assert found.cannot_tell == (
        IdleFinding(Reason.IDLE_UNKNOWN, 48, None, 0, NOW - history[-1].at_ms, before),
    )


def test_empty_without_history_is_paused_and_cannot_tell():
    found = judge()
    assert found.health is GroupHealth.PAUSED
    assert found.findings == (NO_HISTORY, ExpiryFinding(Reason.EXPIRY_UNKNOWN, 10080))
    assert found.cannot_tell == (NO_HISTORY,)


def test_recent_commit_progress_keeps_a_paused_group_alive():
    history = idle_history(100)[:-2] + [
        GroupHistoryPoint(
            NOW - 6 * HOUR, GroupState.EMPTY, 0, {tp("orders", 0): 150}, {tp("orders", 0): 160}
        ),
        GroupHistoryPoint(
            NOW - 1 * HOUR, GroupState.EMPTY, 0, {tp("orders", 0): 150}, {tp("orders", 0): 160}
        ),
    ]
    found = judge(committed={tp("orders", 0): 150}, history=history)
    assert found.health is GroupHealth.PAUSED
    assert found.last_progress_ms == NOW - 6 * HOUR and found.idle_since_ms == NOW - 6 * HOUR
    assert found.finding(Reason.LAST_PROGRESS) == ProgressFinding(Reason.LAST_PROGRESS, NOW - 6 * HOUR)
    assert found.finding(Reason.IDLE_SHORT).before == IdleBreak(BreakReason.OFFSETS_CHANGED, NOW - 16 * HOUR)


def test_progress_since_the_last_snapshot_is_not_idle():
    found = judge(committed={tp("orders", 0): 120}, history=idle_history(100))
    assert found.health is GroupHealth.PAUSED and found.last_progress_ms == NOW
    assert found.finding(Reason.NOT_IDLE) == idle(
        Reason.NOT_IDLE, at_most_h=4, before=IdleBreak(BreakReason.OFFSETS_CHANGED, NOW - 4 * HOUR)
    )


def test_idle_threshold_to_the_millisecond():
    rules = DeadGroupRules(idle_hours=0.02)  # 72 s
    dead = judge(
        history=[GroupHistoryPoint(NOW - 72_500, GroupState.EMPTY, 0, COMMITTED, BACKLOG)], rules=rules
    )
    assert dead.dead_reasons == (DeadReason.IDLE,) and dead.finding(Reason.IDLE).at_least_ms == 72_500
    short = judge(
        history=[GroupHistoryPoint(NOW - 71_900, GroupState.EMPTY, 0, COMMITTED, BACKLOG)], rules=rules
    )
    assert short.health is GroupHealth.PAUSED and short.finding(Reason.IDLE_UNKNOWN).at_least_ms == 71_900


def test_a_stored_snapshot_with_unreadable_commits_ends_the_idle_run_without_proving_progress():
    """A stored row without a committed offset but with the error flag is unknown, not "other
    offsets": the idle time before it has no upper bound."""
    snaps = [
        snapshot(
            NOW - h * HOUR,
            group(
                "app",
                partition("orders", 0, 100, 150, flags=())
                if h != 60
                else partition("orders", 0, None, 150, flags=(LagFlag.ERROR,)),
                state="Empty",
                members=0,
            ),
        )
        for h in (90, 60, 30, 20, 10)
    ]
    found = judge(history=history_points(snaps, "app"))
    assert found.finding(Reason.IDLE_UNKNOWN) == idle(
        Reason.IDLE_UNKNOWN, 30, before=IdleBreak(BreakReason.UNREADABLE, NOW - 60 * HOUR)
    )


# -- committed offsets that could not be read ------------------------------------------------------


def test_commits_read_with_an_error_are_unknown_never_no_commit():
    """Issue 18: under assume_full_visibility, a group whose every committed offset was read with
    an error was "dead: it has no committed offset at all" and deletable. It is unknown."""
    rules = DeadGroupRules(idle_hours=48, assume_full_visibility=True)
    only_errors = GroupOffsets("app", {tp("orders", 0): CommittedOffset(None, error=Failure(88))})
    found = judge(group_offsets=only_errors, rules=rules)
    assert found.health is GroupHealth.PAUSED and found.dead_reasons == ()
    unreadable = CommitsUnreadable(Reason.COMMITS_UNREADABLE, ((tp("orders", 0), Failure(88)),))
    assert found.cannot_tell == (unreadable, NO_HISTORY)
    assert found.finding(Reason.NO_COMMITS) is None


def test_a_topic_whose_offsets_could_not_be_read_still_counts_for_topics_deleted():
    """Issue 18: committed on "old" (absent by name) and "orders" (its offset read with an error):
    the old rule saw only "old" and called every committed topic deleted. "orders" exists."""
    found = judge(group_offsets=UNREADABLE, checks={"old": ABSENT, "orders": EXISTS})
    assert found.health is GroupHealth.PAUSED and found.dead_reasons == ()
    assert found.finding(Reason.SOME_TOPICS_DELETED) == TopicsFinding(Reason.SOME_TOPICS_DELETED, ("old",), 2)
    gone = judge(group_offsets=UNREADABLE, checks={"old": ABSENT, "orders": ABSENT})
    assert gone.dead_reasons == (DeadReason.TOPICS_DELETED,)
    assert gone.finding(Reason.TOPICS_DELETED) == TopicsFinding(Reason.TOPICS_DELETED, ("old", "orders"), 2)


def test_unreadable_commits_now_leave_idleness_unknown():
    found = judge(
        group_offsets=UNREADABLE, history=idle_history(100, committed={tp("orders", 0): 4, tp("old", 0): 5})
    )
    assert found.health is GroupHealth.PAUSED
    assert found.finding(Reason.IDLE_UNKNOWN).before == IdleBreak(BreakReason.UNREADABLE, NOW)


# -- the topics_deleted rule: checked by name -------------------------------------------------------


def test_every_committed_topic_absent_by_name_is_dead():
    found = judge(topics=("other",), checks={"orders": ABSENT})
    assert found.health is GroupHealth.DEAD and found.dead_reasons == (DeadReason.TOPICS_DELETED,)
    assert found.findings[0] == TopicsFinding(Reason.TOPICS_DELETED, ("orders",), 1)
    assert found.cannot_tell == (NO_HISTORY,)


def test_bug_a_topic_hidden_by_acls_is_cannot_tell_not_deleted():
    """Issue 9: the topic listing (all-topics Metadata) leaves out a topic the principal may not
    Describe; named, it answers TOPIC_AUTHORIZATION_FAILED. The old rule called it deleted."""
    found = judge(topics=("other",), checks={"orders": NOT_VISIBLE})
    assert found.health is GroupHealth.PAUSED and found.dead_reasons == ()
    assert found.cannot_tell == (TopicsUnknown(Reason.TOPICS_UNKNOWN, hidden=("orders",)), NO_HISTORY)


def test_a_topic_missing_from_the_listing_alone_is_cannot_tell():
    found = judge(topics=("other",))
    assert found.health is GroupHealth.PAUSED
    assert found.cannot_tell[0] == TopicsFinding(Reason.TOPICS_NOT_LISTED, ("orders",), 1)


def test_a_failed_or_missing_check_is_cannot_tell():
    committed = {tp("a", 0): 1, tp("b", 0): 1, tp("c", 0): 1, tp("d", 0): 1}
    timed_out = Failure(7, "timed out")
    found = judge(committed=committed, topics=(), checks={"a": ABSENT, "b": NOT_VISIBLE, "c": timed_out})
    assert found.health is GroupHealth.PAUSED and found.dead_reasons == ()
    assert found.findings[:2] == (
        TopicsFinding(Reason.SOME_TOPICS_DELETED, ("a",), 4),
        TopicsUnknown(Reason.TOPICS_UNKNOWN, ("b",), (("c", timed_out),), ("d",)),
    )


def test_some_committed_topics_deleted_is_only_evidence():
    found = judge(committed={tp("orders", 0): 1, tp("gone", 0): 1}, checks={"orders": EXISTS, "gone": ABSENT})
    assert found.health is GroupHealth.PAUSED
    assert found.findings[0] == TopicsFinding(Reason.SOME_TOPICS_DELETED, ("gone",), 2)
    assert found.cannot_tell == (NO_HISTORY,)


# -- the no_commits rule: only under assume_full_visibility ---------------------------------------


def test_no_visible_commit_is_cannot_tell_by_default():
    found = judge(committed={})
    assert found.health is GroupHealth.PAUSED
    assert found.findings[:2] == (Finding(Reason.NO_VISIBLE_COMMITS), Finding(Reason.NO_COMMITS_UNSEEN))
    assert found.cannot_tell[0] == Finding(Reason.NO_COMMITS_UNSEEN)


def test_no_commit_at_all_is_dead_under_assume_full_visibility_for_plain_consumers_only():
    rules = DeadGroupRules(idle_hours=48, assume_full_visibility=True)
    found = judge(committed={}, rules=rules)
    assert found.health is GroupHealth.DEAD and found.dead_reasons == (DeadReason.NO_COMMITS,)
    connect = judge(committed={}, rules=rules, protocol_type="connect")
    assert connect.health is GroupHealth.PAUSED and connect.cannot_tell == (NO_HISTORY,)
    assert connect.findings[:2] == (Finding(Reason.NOT_PLAIN_CONSUMER), Finding(Reason.NO_VISIBLE_COMMITS))


# -- protocol and group types ------------------------------------------------------------------------


def test_bug_a_connect_protocol_group_is_never_dead_for_lack_of_commit_progress():
    """Issue 9: a `connect` protocol group was called dead for lack of commit progress."""
    found = judge(group_id="conn-worker", protocol_type="connect", history=idle_history(72))
    assert found.health is GroupHealth.PAUSED and found.dead_reasons == ()
    assert found.findings[0] == Finding(Reason.NOT_PLAIN_CONSUMER)
    assert found.finding(Reason.IDLE_NOT_EVIDENCE) == idle(Reason.IDLE_NOT_EVIDENCE, 72)
    assert found.idle_since_ms == NOW - 72 * HOUR  # still reported, never evidence


def test_a_non_consumer_protocol_group_is_dead_when_every_topic_is_absent_by_name():
    found = judge(group_id="conn-worker", protocol_type="connect", checks={"orders": ABSENT})
    assert found.health is GroupHealth.DEAD and found.dead_reasons == (DeadReason.TOPICS_DELETED,)


@pytest.mark.parametrize("group_type", ["share", "streams"])
def test_share_and_streams_groups_are_not_judged_by_consumer_group_rules(group_type):
    rules = DeadGroupRules(idle_hours=48, assume_full_visibility=True)
    for committed, checks in (({}, None), (COMMITTED, {"orders": ABSENT})):
        found = judge(
            group_type=group_type,
            protocol_type=group_type,
            committed=committed,
            checks=checks,
            history=idle_history(72),
            rules=rules,
        )
        assert (found.health, found.findings, found.dead_reasons) == (
            GroupHealth.PAUSED,
            (Finding(Reason.NOT_JUDGED_TYPE),),
            (),
        )
        assert found.cannot_tell == (Finding(Reason.NOT_JUDGED_TYPE),)
    active = judge(group_type=group_type, state="Stable", members={"m": [tp("orders", 0)]})
    assert (active.health, active.findings) == (GroupHealth.ACTIVE, (Finding(Reason.NOT_JUDGED_TYPE),))


def test_kip211_expiry_horizon_from_when_it_became_empty():
    history = [GroupHistoryPoint(NOW - 30 * HOUR, GroupState.STABLE, 2, COMMITTED)] + idle_history(24)
    found = judge(history=history)
    assert found.empty_since_ms == NOW - 24 * HOUR and found.expires_at_ms == NOW - 24 * HOUR + WEEK
    assert found.finding(Reason.EXPIRES) == expires(24)


# -- values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"idle_hours": -1}, "idle_hours must be a positive"),
        ({"offsets_retention_minutes": 0}, "offsets_retention_minutes must be a positive"),
        ({"allow": "app-*"}, "not the single string"),
        ({"deny": ["re:("]}, "not a valid regular expression"),
        ({"assume_full_visibility": "yes"}, "assume_full_visibility must be True or False"),
    ],
)
def test_bad_rules_are_configuration_errors(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        DeadGroupRules(**kwargs)


def test_history_points_from_snapshots_carry_log_ends_and_unreadable_commits():
    snaps = [
        snapshot(
            T0,
            group(
                "g",
                partition("t", 0, 5, 9),
                partition("t", 1, None, 4),
                partition("t", 2, 3, None),
                partition("t", 3, None, 4, flags=(LagFlag.ERROR,)),
                state="Empty",
                members=0,
            ),
        )
    ]
    (point,) = history_points(snaps, "g")
    assert point.state is GroupState.EMPTY and point.committed == {tp("t", 0): 5, tp("t", 2): 3}
    assert point.log_end == {tp("t", 0): 9, tp("t", 1): 4, tp("t", 3): 4} and point.has_records_to_read
    assert point.unreadable == {tp("t", 3)}


def test_findings_are_plain_json_values():
    found = judge(history=idle_history(72), topics=("other",), checks={"orders": NOT_VISIBLE})
    out = found.to_dict()
    assert out["health"] == "dead" and out["observation"]["committed"] == {"orders[0]": 100}
    assert out["findings"][0] == {
        "reason": "topics_unknown",
        "effect": "cannot_tell",
        "hidden": ["orders"],
        "failed": [],
        "unchecked": [],
    }
    assert out["findings"][2] == {
        "reason": "idle",
        "effect": "dead",
        "idle_hours": 48,
        "since_ms": NOW - 72 * HOUR,
        "at_least_ms": 72 * HOUR,
        "at_most_ms": None,
        "before": None,
    }
