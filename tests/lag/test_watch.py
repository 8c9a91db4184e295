"""Consecutive consumed ranges (pure): each starts where the last ended, ends at a barrier fixed
when it opened (or, in threshold mode, at the groups' lowest commit once the lag is small
enough); empty ranges and unreadable polls report nothing. A range watch is the lag gate
re-armed after each range: its waits and failures are the gate's (values, not sentences)."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.client.errors import ErrorCode, Failure
from airflow_provider_kgroups.lag.gate_decision import FailureKind, GateStatus
from airflow_provider_kgroups.lag.gate_spec import GateSpec
from airflow_provider_kgroups.lag.model import LagFlag, LagSnapshot
from airflow_provider_kgroups.lag.verdicts import Verdict
from airflow_provider_kgroups.lag.watch import RangeWatch, Waiting, nested_offsets
from tests.support.builders import MINUTE, T0, group, partition, snapshot, tp


def poll(
    minute: int,
    a: tuple[int | None, int | None],
    b: tuple[int | None, int | None],
    end: tuple[int, int],
    *,
    other: int | None = None,
) -> LagSnapshot:
    """Groups "a" and "b" on topic t (2 partitions); ``other``: "a"'s commit on another topic."""
    a_parts = [partition("t", 0, a[0], end[0]), partition("t", 1, a[1], end[1])]
    if other is not None:
        a_parts.append(partition("u", 0, other, 100))
    return snapshot(
        T0 + minute * MINUTE,
        group("a", *a_parts),
        group("b", partition("t", 0, b[0], end[0]), partition("t", 1, b[1], end[1])),
    )


def ranges(event) -> tuple[dict, dict]:
    payload = event.to_payload()
    return json.loads(payload["startingOffsets"]), json.loads(payload["endingOffsets"])


def test_a_barrier_range_finishes_when_every_group_passed_it_and_the_next_starts_there():
    watch = RangeWatch(GateSpec.parse(group_ids=("a", "b"), topics=("t",)))
    assert watch.observe(poll(0, (5, 7), (6, 7), (10, 12), other=1)) is None  # barrier {0: 10, 1: 12}
    assert (watch.waiting, watch.pending_groups) == (Waiting.GATE_CLOSED, ("a", "b"))
    assert watch.observe(poll(1, (10, 12), (9, 12), (15, 20))) is None  # b not there; the barrier stays
    assert watch.pending_groups == ("b",)
    first = watch.observe(poll(2, (11, 12), (10, 13), (18, 25)))
    assert ranges(first) == ({"t": {"0": 5, "1": 7}}, {"t": {"0": 10, "1": 12}})  # from the lowest commit
    assert first.mode == "barrier" and first.opened_at_ms == T0 and first.finished_at_ms == T0 + 2 * MINUTE
    assert first.total_lag == (18 - 11) + (25 - 12) + (18 - 10) + (25 - 13)
    assert watch.observe(poll(3, (11, 12), (10, 13), (18, 25))) is None  # new barrier {0: 18, 1: 25}
    second = watch.observe(poll(4, (18, 25), (20, 26), (30, 30)))
    assert ranges(second) == ({"t": {"0": 10, "1": 12}}, {"t": {"0": 18, "1": 25}})  # no gap, no overlap


def test_an_empty_range_is_never_reported_and_its_barrier_moves_with_new_records():
    watch = RangeWatch(
        GateSpec.parse(group_ids=("a",), topics=("t",)), start=nested_offsets({"t": {"0": 10, "1": 12}})
    )
    solo = lambda minute, c, e: snapshot(
        T0 + minute * MINUTE, group("a", partition("t", 0, c[0], e[0]), partition("t", 1, c[1], e[1]))
    )
    assert watch.observe(solo(0, (10, 12), (10, 12))) is None and watch.waiting is Waiting.EMPTY_RANGE
    assert watch.observe(solo(1, (10, 12), (11, 12))) is None  # a record arrived: barrier {0: 11, 1: 12}
    done = watch.observe(solo(2, (11, 12), (11, 12)))
    assert ranges(done) == ({"t": {"0": 10, "1": 12}}, {"t": {"0": 11, "1": 12}})


def test_a_group_that_never_committed_starts_from_earliest_and_blocks_until_it_commits():
    watch = RangeWatch(GateSpec.parse(group_ids=("a", "b"), topics=("t",)))
    assert watch.observe(poll(0, (5, 7), (None, 7), (10, 12))) is None
    assert watch.observe(poll(1, (10, 12), (None, 12), (10, 12))) is None and watch.pending_groups == ("b",)
    done = watch.observe(poll(2, (10, 12), (10, 12), (10, 12)))
    assert ranges(done)[0] == {"t": {"0": -2, "1": 7}}  # earliest where a group had no commit


def test_an_unreadable_poll_reports_nothing_and_says_why():
    watch = RangeWatch(GateSpec.parse(group_ids=("a", "b"), topics=("t",)))
    broken = LagSnapshot(T0, {"a": group("a", partition("t", 0, 5, None), partition("t", 1, 7, 12))})
    assert watch.observe(broken) is None and (watch.waiting, watch.unread[:2]) == (
        Waiting.UNREADABLE,
        ("a", tp("t", 0)),
    )
    missing = LagSnapshot(T0, {"a": group("a", partition("t", 0, 5, 10))}, failures={"b": Failure(30)})
    assert watch.observe(missing) is None
    assert watch.unread[0] == "b" and watch.unread[2].code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert watch.start is None  # nothing was decided from an unreadable poll


def test_threshold_mode_ends_at_the_lowest_commit_once_the_lag_is_small_enough():
    watch = RangeWatch(
        GateSpec.parse(group_ids=("a", "b"), topics=("t",), lag_mode="threshold", max_total_lag=4)
    )
    assert watch.observe(poll(0, (5, 7), (6, 7), (10, 12))) is None  # lag a: 5+5, b: 4+5, each > 4
    assert (watch.waiting, watch.pending_groups) == (Waiting.GATE_CLOSED, ("a", "b"))
    done = watch.observe(poll(1, (10, 11), (9, 12), (10, 12)))  # lag 0+1+1+0 = 2
    assert ranges(done) == ({"t": {"0": 5, "1": 7}}, {"t": {"0": 9, "1": 11}}) and done.mode == "threshold"
    assert watch.observe(poll(2, (10, 11), (9, 12), (10, 12))) is None  # nothing new consumed by both


def test_a_commit_past_the_log_end_read_counts_as_no_lag_not_negative_lag():
    """A commit that raced ahead of the ListOffsets read (committed 20 > log end 15, flagged
    clamped) has lag 0, never -5: a negative part would pull the total under max_total_lag while
    the other group is 4 records behind."""
    watch = RangeWatch(
        GateSpec.parse(group_ids=("a", "b"), topics=("t",), lag_mode="threshold", max_total_lag=3)
    )
    raced = snapshot(T0, group("a", partition("t", 0, 20, 15)), group("b", partition("t", 0, 11, 15)))
    assert watch.observe(raced) is None
    assert watch.pending_groups == ("b",)  # a counts 0 (not -5); b's 4 is over 3


def test_a_watch_is_the_gate_so_a_group_that_stopped_consuming_the_topic_fails_it_as_abandoned():
    """The gate's verdicts reach event-driven DAGs with no code of the watch's own: a group Stable
    with members, none assigned t, its commit stuck, is ABANDONED; the watch reports no range and
    keeps the gate's failure for the trigger to log."""
    watch = RangeWatch(GateSpec.parse(group_ids=("a",), topics=("t",)))
    left = [LagFlag.TOPIC_UNASSIGNED]
    for minute in range(0, 16, 2):
        assert (
            watch.observe(
                snapshot(
                    T0 + minute * MINUTE,
                    group("a", partition("t", 0, 100, 200 + minute, flags=left), members=2),
                )
            )
            is None
        )
    assert watch.waiting is Waiting.GATE_FAILED
    assert (watch.last.status, watch.last.kind) == (GateStatus.FAIL, FailureKind.VERDICT)
    assert watch.last.held.partition.verdict is Verdict.ABANDONED
    done = watch.observe(snapshot(T0 + 16 * MINUTE, group("a", partition("t", 0, 216, 216), members=2)))
    assert ranges(done) == (
        {"t": {"0": 100}},
        {"t": {"0": 200}},
    )  # consuming again: the range (to its barrier) finishes


def test_a_dead_group_fails_the_watch_gate_as_missing_and_no_range_is_reported():
    watch = RangeWatch(GateSpec.parse(group_ids=("a",), topics=("t",)))
    dead = snapshot(T0, group("a", partition("t", 0, None, 10), state="Dead", members=0))
    assert watch.observe(dead) is None and watch.last.kind is FailureKind.MISSING


def test_a_watch_takes_the_gates_spec_its_start_policy_and_thresholds():
    """The first range starts at the spec's previous_barrier (a stored range end wins over it); a
    threshold watch on max_lag_per_partition finishes at the lowest commit; the range's total is
    the gate's (None when a partition's lag is unknown, never summed as 0)."""
    spec = GateSpec.parse(
        group_ids=("a",), topics=("t",), previous_barrier={"t": {"0": 3, "1": 4}}, fail_on_verdicts=[]
    )
    solo = lambda minute, c, e: snapshot(
        T0 + minute * MINUTE, group("a", partition("t", 0, c[0], e[0]), partition("t", 1, c[1], e[1]))
    )
    watch = RangeWatch(spec)
    assert watch.observe(solo(0, (5, 6), (10, 12))) is None
    done = watch.observe(solo(1, (10, 12), (10, 12)))
    assert ranges(done) == ({"t": {"0": 3, "1": 4}}, {"t": {"0": 10, "1": 12}}) and done.total_lag == 0
    stored = RangeWatch(spec, start=nested_offsets({"t": {"0": 7, "1": 8}}))
    stored.observe(solo(0, (7, 8), (10, 12)))
    assert ranges(stored.observe(solo(1, (10, 12), (10, 12))))[0] == {"t": {"0": 7, "1": 8}}

    per_partition = RangeWatch(
        GateSpec.parse(group_ids=("a", "b"), topics=("t",), lag_mode="threshold", max_lag_per_partition=2)
    )
    assert per_partition.observe(poll(0, (5, 9), (8, 10), (10, 12))) is None  # a's t[0] is 5 behind
    done = per_partition.observe(poll(1, (8, 11), (9, 10), (10, 12)))
    assert ranges(done)[1] == {"t": {"0": 8, "1": 10}} and done.total_lag == 2 + 1 + 1 + 2

    # no commit on t[1], whose log start passed the barrier: reached, but its lag is unknown
    watch = RangeWatch(GateSpec.parse(group_ids=("a",), topics=("t",)), start={tp("t", 0): 0, tp("t", 1): 0})
    fresh = lambda minute, c: snapshot(
        T0 + minute * MINUTE, group("a", partition("t", 0, c, 10), partition("t", 1, None, 5, log_start=5))
    )
    assert watch.observe(fresh(0, 4)) is None
    assert watch.observe(fresh(1, 10)).total_lag is None


def test_a_watch_whose_spec_reads_more_than_the_poll_is_observed_with_a_client():
    watch = RangeWatch(
        GateSpec.parse(group_ids=("a",), topics=("t",), lag_mode="threshold", max_lag_seconds=60)
    )
    with pytest.raises(ValueError, match="observe it with a client, await aobserve"):
        watch.observe(poll(0, (5, 7), (6, 7), (10, 12)))
    with pytest.raises(ValueError, match="needs its groups by id and its topics"):
        RangeWatch(GateSpec.parse(group_ids=("a",)))
