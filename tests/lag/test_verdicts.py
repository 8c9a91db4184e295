"""Every verdict rule on sequences of snapshots built here, including Burrow's blind spots. The
rules return values (a reason and the numbers measured); the sentences are verdict_text's, tested
once at the end."""

from __future__ import annotations

import itertools

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.lag.model import LagFlag
from airflow_provider_kgroups.lag.verdict_text import finding_text
from airflow_provider_kgroups.lag.verdicts import (
    GroupReason,
    LagPoint,
    Verdict,
    VerdictFinding,
    VerdictRules,
    group_verdicts,
    judge_partition,
    lag_slope_per_s,
    partition_verdict,
)
from airflow_provider_kgroups.lag.verdicts import (
    VerdictReason as R,
)
from tests.support.builders import MINUTE, T0, group, partition, series, snapshot

RULES = VerdictRules(window_ms=30 * MINUTE, stuck_after_ms=10 * MINUTE, min_points=3)


def verdict_of(points, rules=RULES, log_start=0) -> tuple[Verdict, VerdictFinding]:
    """(minute, committed, log_end) points -> (verdict, finding) of the one partition."""
    verdicts = group_verdicts(series("g", points, log_start=log_start), rules)
    return verdicts["g"].verdict, verdicts["g"].partitions[0].finding


def moving(lags, step=1000, every=2):
    """Committed offset moves by ``step`` each point; lag follows ``lags``."""
    return [(i * every, i * step, i * step + lag) for i, lag in enumerate(lags)]


# -- LOST -----------------------------------------------------------------------------------------


def test_lost_when_committed_is_below_log_start():
    verdict, found = verdict_of([(0, 10, 500), (2, 10, 600)], log_start=50)
    assert verdict is Verdict.LOST
    assert (found.reason, found.committed, found.log_start, found.deleted) == (R.BELOW_LOG_START, 10, 50, 40)


def test_lost_beats_every_other_rule():
    # also stuck for 20 min while the log grows (STOP) - but losing data is worse
    verdict, _ = verdict_of([(m, 10, 500 + m * 10) for m in range(0, 21, 2)], log_start=50)
    assert verdict is Verdict.LOST


# -- REWIND ---------------------------------------------------------------------------------------


def test_rewind_when_offset_goes_back_and_has_not_recovered():
    verdict, found = verdict_of([(0, 1000, 1100), (2, 2000, 2100), (4, 500, 2200)])
    assert verdict is Verdict.REWIND
    assert (found.reason, found.went_back_from, found.committed) == (R.WENT_BACK, 2000, 500)


def test_rewind_clears_once_the_group_passes_where_it_was():
    verdict, _ = verdict_of([(0, 1000, 1100), (2, 2000, 2100), (4, 500, 2200), (6, 2150, 2200)])
    assert verdict is not Verdict.REWIND


def test_rewind_outside_the_window_is_forgotten():
    points = [(0, 2000, 2100), (2, 500, 2100)] + [
        (m, 500 + m * 40, 500 + m * 40 + 10) for m in range(40, 70, 5)
    ]
    assert verdict_of(points)[0] is Verdict.OK


# -- OK: caught up, slow topics -------------------------------------------------------------------


def test_caught_up_is_ok():
    assert verdict_of(moving([0, 0, 0, 0]))[0] is Verdict.OK


def test_slow_topic_with_nothing_to_read_is_ok_not_stop():
    # No commit for an hour, but the log end does not move and the lag is 0: Burrow says STOP.
    verdict, found = verdict_of([(m, 500, 500) for m in range(0, 61, 5)])
    assert verdict is Verdict.OK and found.reason is R.CAUGHT_UP


def test_first_record_after_a_long_idle_spell_is_not_stop():
    # Idle (lag 0) for 50 min, then one record arrives: the stuck clock starts at that record.
    points = [(m, 500, 500) for m in range(0, 51, 5)] + [(52, 500, 501)]
    assert verdict_of(points)[0] is Verdict.OK


def test_allowed_lag_tolerates_transaction_markers():
    points = [(m, 500, 501) for m in range(0, 31, 5)]  # lag 1 forever: the commit marker
    assert verdict_of(points, VerdictRules(window_ms=30 * MINUTE, allowed_lag=1))[0] is Verdict.OK
    assert verdict_of(points)[0] is Verdict.STALL


# -- STOP / STALL ---------------------------------------------------------------------------------


def test_stop_when_offset_is_stuck_while_the_log_grows():
    verdict, found = verdict_of([(m, 100, 200 + m * 10) for m in range(0, 13, 2)])
    assert verdict is Verdict.STOP
    assert (found.reason, found.committed, found.for_ms, found.grew_by) == (
        R.STUCK_WHILE_GROWING,
        100,
        12 * MINUTE,
        120,
    )
    verdict = group_verdicts(series("g", [(m, 100, 200 + m * 10) for m in range(0, 13, 2)]), RULES)["g"]
    assert verdict.members == 1


def test_stop_needs_the_full_stuck_time():
    points = [(m, 100, 200 + m * 10) for m in range(0, 9, 2)]  # 8 min < 10 min
    assert verdict_of(points)[0] is not Verdict.STOP


def test_stop_detection_time_does_not_depend_on_the_sampling_rate():
    every_minute = [(m, 100, 200 + m * 10) for m in range(0, 11)]
    every_five = [(m, 100, 200 + m * 10) for m in range(0, 11, 5)]
    assert verdict_of(every_minute)[0] is Verdict.STOP
    assert verdict_of(every_five)[0] is Verdict.STOP
    assert verdict_of(every_minute[:-1])[0] is not Verdict.STOP


def test_stall_when_offset_is_stuck_with_lag_and_the_log_end_does_not_move():
    verdict, found = verdict_of([(m, 100, 150) for m in range(0, 13, 2)])
    assert verdict is Verdict.STALL
    assert (found.reason, found.lag, found.for_ms) == (R.STUCK, 50, 12 * MINUTE)


def test_stop_reports_the_members_so_a_stopped_consumer_is_visible():
    snaps = [
        snapshot(T0 + m * MINUTE, group("g", partition("t", 0, 100, 200 + m), state="Empty", members=0))
        for m in range(0, 13, 2)
    ]
    verdict = group_verdicts(snaps, RULES)["g"]
    assert verdict.verdict is Verdict.STOP and (verdict.members, verdict.state.value) == (0, "Empty")


# -- ABANDONED: the group stopped consuming the topic (klag issue 92) --------------------------------


def left(minutes, *, flagged=lambda m: True, state="Stable", members=3, log_end=lambda m: 200 + m * 10):
    """Group g, Stable with members, its commit on t[0] stuck at 100; flagged TOPIC_UNASSIGNED
    (no member assigned a partition of t) at the minutes where ``flagged(m)``."""
    return [
        snapshot(
            T0 + m * MINUTE,
            group(
                "g",
                partition("t", 0, 100, log_end(m), flags=[LagFlag.TOPIC_UNASSIGNED] if flagged(m) else []),
                state=state,
                members=members,
            ),
        )
        for m in minutes
    ]


def test_abandoned_when_no_member_is_assigned_the_topic_and_the_commit_stays_behind():
    verdict = group_verdicts(left(range(0, 13, 2)), RULES)["g"]
    assert verdict.verdict is Verdict.ABANDONED
    found = verdict.partitions[0].finding
    assert (found.reason, found.committed, found.for_ms, found.grew_by) == (
        R.TOPIC_LEFT,
        100,
        12 * MINUTE,
        120,
    )
    assert (verdict.members, verdict.state.value) == (3, "Stable")


def test_abandoned_replaces_stall_too_when_nothing_new_is_written():
    verdict = group_verdicts(left(range(0, 13, 2), log_end=lambda m: 150), RULES)["g"]
    assert verdict.verdict is Verdict.ABANDONED


def test_abandoned_needs_the_stuck_time_and_the_flag_at_every_point_of_the_run():
    assert group_verdicts(left(range(0, 9, 2)), RULES)["g"].verdict is not Verdict.ABANDONED  # 8 min < 10
    # a member held the topic at minute 4: the group was reading it; the commit not moving is STOP
    assert group_verdicts(left(range(0, 13, 2), flagged=lambda m: m != 4), RULES)["g"].verdict is Verdict.STOP


def test_a_caught_up_topic_no_member_reads_is_ok():
    assert group_verdicts(left(range(0, 13, 2), log_end=lambda m: 100), RULES)["g"].verdict is Verdict.OK


def test_abandoned_ranks_between_stop_and_rewind():
    assert Verdict.STOP.severity < Verdict.ABANDONED.severity < Verdict.REWIND.severity


# -- WARN -----------------------------------------------------------------------------------------


def test_warn_when_lag_grows_steadily():
    verdict, found = verdict_of(moving([100, 200, 300, 400, 500]))
    assert verdict is Verdict.WARN and (found.reason, found.first_lag, found.lag) == (R.GROWING, 100, 500)


def test_one_dip_does_not_hide_a_growing_trend():
    lags = [100, 200, 300, 50, 400, 500, 600]
    assert any(b < a for a, b in itertools.pairwise(lags))  # Burrow: "lag fell once" -> OK
    verdict, found = verdict_of(moving(lags))
    assert verdict is Verdict.WARN and (found.rises, found.steps) == (5, 6)


def test_one_burst_does_not_make_a_shrinking_lag_a_trend():
    assert verdict_of(moving([100, 90, 80, 70, 500]))[0] is Verdict.OK


def test_noise_around_a_level_is_not_a_trend():
    assert verdict_of(moving([5, 3, 5, 3, 5, 3, 5]))[0] is Verdict.OK


def test_warn_needs_min_points():
    assert verdict_of(moving([100, 500]))[0] is Verdict.OK


def test_one_snapshot_with_a_lag_and_no_commit_movement_is_unknown_not_ok():
    # one point (or two with the committed offset unchanged) shows neither a moving group nor a
    # lag that is not growing: "OK" would be a guess (unknown is never fine)
    for points in ([(0, 100, 500)], [(0, 100, 500), (2, 100, 500)]):
        verdict, found = verdict_of(points)
        assert verdict is Verdict.UNKNOWN, points
        assert (found.reason, found.points, found.points_needed) == (R.TOO_FEW_POINTS, len(points), 3)


def test_a_committed_offset_that_moved_is_ok_with_two_points_and_a_flat_lag_with_three():
    assert verdict_of([(0, 100, 500), (2, 200, 600)])[0] is Verdict.OK
    assert verdict_of([(0, 100, 500), (2, 100, 500), (4, 100, 500)]) == (
        Verdict.OK,
        VerdictFinding(Verdict.OK, R.NOT_GROWING, committed=100, lag=400),
    )


def test_shrinking_lag_is_ok():
    verdict, found = verdict_of(moving([500, 400, 300, 200]))
    assert verdict is Verdict.OK and found.reason is R.MOVING


def test_lag_slope_is_least_squares():
    points = [LagPoint(T0 + s * 1000, 0, 0, lag, lag) for s, lag in [(0, 0), (1, 2), (2, 4)]]
    assert lag_slope_per_s(points) == pytest.approx(2.0)


# -- no commit, unreadable ------------------------------------------------------------------------


def test_never_committed_while_the_log_grows_is_stop():
    verdict, found = verdict_of([(m, None, 10 * m) for m in range(0, 13, 2)])
    assert verdict is Verdict.STOP and (found.reason, found.for_ms) == (R.NEVER_COMMITTED, 12 * MINUTE)


def test_never_committed_on_an_empty_partition_is_ok():
    assert verdict_of([(m, None, 0) for m in range(0, 13, 2)])[0] is Verdict.OK


def test_never_committed_with_records_but_no_growth_is_unknown_not_ok():
    assert verdict_of([(m, None, 40) for m in range(0, 13, 2)])[0] is Verdict.UNKNOWN


def test_unreadable_latest_point_is_unknown():
    verdict, found = verdict_of([(0, 10, 20), (2, 12, None)])
    assert verdict is Verdict.UNKNOWN and found.reason is R.UNREADABLE


def test_partition_verdict_without_points():
    assert partition_verdict([])[0] is Verdict.UNKNOWN
    assert judge_partition([]).reason is R.NO_SNAPSHOT


# -- an unread log start: LOST cannot be ruled out --------------------------------------------------


def test_an_unread_log_start_makes_a_moving_group_unknown_not_ok():
    verdict, found = verdict_of(moving([100, 90, 80, 70]), log_start=None)
    assert verdict is Verdict.UNKNOWN
    assert found == VerdictFinding(Verdict.UNKNOWN, R.MOVING, committed=3000, lag=70, log_start_unread=True)


def test_an_unread_log_start_within_the_allowed_lag_is_unknown():
    rules = VerdictRules(window_ms=30 * MINUTE, allowed_lag=1)
    assert verdict_of([(0, 99, 100), (2, 199, 200)], rules, log_start=None)[0] is Verdict.UNKNOWN


def test_an_unread_log_start_rules_nothing_out_at_the_log_end():
    """log start <= log end <= committed: nothing the group has not read can have been deleted."""
    assert verdict_of([(0, 100, 100), (2, 200, 200)], log_start=None) == (
        Verdict.OK,
        VerdictFinding(Verdict.OK, R.CAUGHT_UP, committed=200, lag=0),
    )
    assert verdict_of([(0, 100, 100), (2, 210, 200)], log_start=None)[0] is Verdict.OK  # clamped


def test_an_unread_log_start_keeps_a_worse_verdict_and_says_lost_is_open():
    verdict, found = verdict_of([(m, 10, 500 + m * 10) for m in range(0, 21, 2)], log_start=None)
    assert verdict is Verdict.STOP
    assert (found.reason, found.lag, found.log_start_unread) == (R.STUCK_WHILE_GROWING, 690, True)


# -- groups ---------------------------------------------------------------------------------------


def test_group_verdict_is_the_worst_partition_with_its_reason():
    snaps = [
        snapshot(
            T0 + m * MINUTE,
            group(
                "g",
                partition("t", 0, 1000 * m, 1000 * m),
                partition("t", 1, 100, 200 + 10 * m),
                partition("t", 2, 100, 200 + 10 * m),
            ),
        )
        for m in range(0, 13, 2)
    ]
    verdict = group_verdicts(snaps, RULES)["g"]
    assert verdict.verdict is Verdict.STOP and verdict.cause is GroupReason.WORST_PARTITION
    assert (verdict.worst.topic, verdict.worst.partition, verdict.same) == ("t", 1, 2)
    assert [p.verdict for p in verdict.partitions] == [Verdict.OK, Verdict.STOP, Verdict.STOP]


def test_group_missing_from_the_latest_snapshot_or_without_partitions_is_unknown_not_ok():
    """A group with no partition (no commit, nothing assigned) has nothing that shows it is fine."""
    snaps = [snapshot(T0, group("g", partition("t", 0, 1, 1)), group("e", state="Empty", members=0))]
    verdicts = group_verdicts(snaps, RULES, group_ids=["g", "e", "missing"])
    assert verdicts["missing"].verdict is Verdict.UNKNOWN and verdicts["g"].verdict is Verdict.OK
    assert (verdicts["e"].verdict, verdicts["e"].partitions) == (Verdict.UNKNOWN, ())
    assert (verdicts["e"].cause, verdicts["missing"].cause) == (
        GroupReason.NO_PARTITIONS,
        GroupReason.NOT_READ,
    )


def test_partitions_the_group_no_longer_has_are_ignored():
    snaps = [
        snapshot(T0 + m * MINUTE, group("g", partition("t", 0, 100, 200 + 10 * m))) for m in range(0, 13, 2)
    ]
    snaps.append(snapshot(T0 + 14 * MINUTE, group("g", partition("u", 0, 5, 5))))
    assert group_verdicts(snaps, RULES)["g"].verdict is Verdict.OK


def test_snapshot_order_does_not_matter():
    snaps = series("g", moving([100, 200, 300, 400]))
    assert group_verdicts(list(reversed(snaps)), RULES)["g"].verdict is Verdict.WARN


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"window_ms": -1}, "window_ms must be a non-negative int"),
        ({"window_ms": 0}, "window_ms must be > 0"),
        ({"stuck_after_ms": 40 * MINUTE}, "must not exceed window_ms"),
        ({"min_points": 1}, "min_points must be >= 2"),
        ({"allowed_lag": -3}, "allowed_lag must be a non-negative int"),
    ],
)
def test_bad_rules_are_configuration_errors(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        VerdictRules(**kwargs)


def test_no_snapshots_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="at least one snapshot"):
        group_verdicts([], RULES)


# -- the words (verdict_text), once --------------------------------------------------------------


def test_the_renderer_words_each_finding():
    assert finding_text(VerdictFinding(Verdict.OK, R.CAUGHT_UP, 5, 0)) == "caught up"
    assert finding_text(
        VerdictFinding(Verdict.STOP, R.STUCK_WHILE_GROWING, 100, 50, grew_by=120, for_ms=12 * MINUTE)
    ) == ("committed offset stuck at 100 for 12.0 min while the log grew by 120 records (lag 50)")
    assert finding_text(VerdictFinding(Verdict.UNKNOWN, R.MOVING, 3000, 70, log_start_unread=True)) == (
        "its log start could not be read in the latest snapshot, so LOST (records deleted by retention unread) "
        "cannot be ruled out; the other rules found: lag 70, committed offset moving"
    )
    assert finding_text(
        VerdictFinding(
            Verdict.STOP, R.STUCK_WHILE_GROWING, 10, 690, grew_by=200, for_ms=MINUTE, log_start_unread=True
        )
    ).endswith("(lag 690); its log start could not be read, so LOST cannot be ruled out")
    assert "stopped consuming the topic" in finding_text(
        VerdictFinding(Verdict.ABANDONED, R.TOPIC_LEFT, 100, 50, grew_by=0, for_ms=MINUTE)
    )
    for reason in R:  # no reason is left without words
        assert finding_text(VerdictFinding(Verdict.OK, reason, 1, 1, 0, 1, 1, 1, 1, 1, 1.0, 1, 1, 1, 1, 3, 0))


def test_the_group_line_names_the_worst_partition_how_many_share_it_and_the_members():
    snaps = [
        snapshot(
            T0 + m * MINUTE,
            group(
                "g",
                partition("t", 1, 100, 200 + 10 * m),
                partition("t", 2, 100, 200 + 10 * m),
                state="Empty",
                members=0,
            ),
        )
        for m in range(0, 13, 2)
    ]
    reason = group_verdicts(snaps, RULES)["g"].reason
    assert reason.startswith("t[1]: committed offset stuck at 100 for 12.0 min")
    assert reason.endswith("(1 more partition(s) STOP); the group has 0 member(s), state Empty")
