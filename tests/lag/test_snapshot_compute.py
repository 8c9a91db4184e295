"""compute_lag / partition_lag: the per-partition rules, the policy and the group totals, no broker."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError, Failure
from airflow_provider_kgroups.client.results import (
    CommittedOffset,
    GroupOffsets,
    GroupState,
    KeyedResults,
    ListedOffset,
)
from airflow_provider_kgroups.lag.model import HISTORY_COLUMNS, LagFlag, UnknownLagPolicy
from airflow_provider_kgroups.lag.snapshot import compute_lag, partition_lag
from airflow_provider_kgroups.lag.totals import topic_lags, worst_partitions
from tests.support.builders import T0, description, group, offsets, partition, snapshot, tp

P = UnknownLagPolicy


def test_lag_is_log_end_minus_committed():
    lag = partition_lag(tp("t", 0), committed=90, log_start=0, log_end=100, policy=P.FAIL)
    assert lag.lag == 10 and lag.flags == frozenset()


def test_commit_past_log_end_is_clamped_to_zero_and_flagged():
    lag = partition_lag(tp("t", 0), committed=105, log_start=0, log_end=100, policy=P.FAIL)
    assert lag.lag == 0 and lag.flags == {LagFlag.CLAMPED}


def test_commit_below_log_start_is_lost_and_still_counts_the_gap():
    lag = partition_lag(tp("t", 0), committed=10, log_start=50, log_end=100, policy=P.FAIL)
    assert lag.lag == 90 and lag.flags == {LagFlag.LOST}


@pytest.mark.parametrize(
    "policy, expected", [(P.FAIL, None), (P.IGNORE, None), (P.FROM_EARLIEST, 70), (P.FROM_LATEST, 0)]
)
def test_no_commit_follows_the_policy(policy, expected):
    lag = partition_lag(tp("t", 0), committed=None, log_start=30, log_end=100, policy=policy)
    assert lag.lag == expected and LagFlag.NO_COMMIT in lag.flags


def test_from_earliest_without_a_log_start_is_an_error_not_a_guess():
    lag = partition_lag(tp("t", 0), committed=None, log_start=None, log_end=100, policy=P.FROM_EARLIEST)
    assert lag.lag is None and {LagFlag.NO_COMMIT, LagFlag.ERROR} <= lag.flags


def test_unknown_policy_name_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="unknown lag policy 'zero'.*'fail'"):
        compute_lag({}, {}, {}, {}, "zero", T0)


def test_policy_accepts_its_name():
    snap = compute_lag({}, {}, {}, {}, "From_Earliest", T0)
    assert snap.policy is P.FROM_EARLIEST


def _inputs():
    t0, t1, u0 = tp("t", 0), tp("t", 1), tp("u", 0)
    descriptions = {"g": description("g", members={"m-1": [t0, t1, u0]})}
    committed = {"g": offsets("g", {t0: 90, t1: 40})}  # u0 is assigned but never committed
    starts = {t0: 0, t1: 0, u0: 5}
    ends = {t0: 100, t1: 50, u0: 25}
    return descriptions, committed, starts, ends


def test_assigned_partitions_without_a_commit_are_listed_with_their_member():
    snap = compute_lag(*_inputs(), P.FAIL, T0)
    by_tp = {p.tp: p for p in snap.groups["g"].partitions}
    assert by_tp[tp("u", 0)].flags == {LagFlag.NO_COMMIT}
    assert by_tp[tp("u", 0)].assigned_to == "m-1"
    assert by_tp[tp("u", 0)].committed is None
    assert snap.taken_at_ms == T0 and snap.groups["g"].members == 1


def test_fail_policy_makes_the_group_total_unknown_not_partial():
    snap = compute_lag(*_inputs(), P.FAIL, T0)
    assert snap.groups["g"].total_lag is None


def test_ignore_policy_leaves_no_commit_partitions_out_of_totals():
    snap = compute_lag(*_inputs(), P.IGNORE, T0)
    assert snap.groups["g"].total_lag == 20
    assert any(LagFlag.NO_COMMIT in p.flags for p in snap.groups["g"].partitions)  # still listed


def test_from_earliest_counts_the_whole_retained_log():
    assert compute_lag(*_inputs(), P.FROM_EARLIEST, T0).groups["g"].total_lag == 40


def test_from_latest_counts_zero():
    assert compute_lag(*_inputs(), P.FROM_LATEST, T0).groups["g"].total_lag == 20


def test_partition_error_makes_total_unknown_under_every_policy():
    descriptions, committed, starts, ends = _inputs()
    ends = KeyedResults(
        {k: ListedOffset(v) for k, v in ends.items() if k != tp("t", 1)},
        {tp("t", 1): Failure(6, "not leader")},
    )
    for policy in P:
        snap = compute_lag(descriptions, committed, starts, ends, policy, T0)
        bad = next(p for p in snap.groups["g"].partitions if p.tp == tp("t", 1))
        assert bad.flags == {LagFlag.ERROR} and bad.error.code == 6
        assert snap.groups["g"].total_lag is None


def test_committed_offset_read_with_an_error_is_an_error_partition():
    committed = {"g": GroupOffsets("g", {tp("t", 0): CommittedOffset(None, error=Failure(88))})}
    snap = compute_lag(
        {"g": description("g")}, committed, {tp("t", 0): 0}, {tp("t", 0): 10}, P.FROM_LATEST, T0
    )
    (only,) = snap.groups["g"].partitions
    assert LagFlag.ERROR in only.flags and only.lag is None and only.error.code == 88


@pytest.mark.parametrize("policy", list(P))
def test_a_commit_read_as_no_offset_is_a_partition_without_a_commit(policy):
    """An answer's -1 (CommittedOffset(None), no error: what OffsetFetch says of a named partition
    the group never committed) is decided by the policy, as if the partition had no commit."""
    committed = {"g": GroupOffsets("g", {tp("t", 0): CommittedOffset(None)})}
    snap = compute_lag({"g": description("g")}, committed, {tp("t", 0): 4}, {tp("t", 0): 10}, policy, T0)
    (only,) = snap.groups["g"].partitions
    assert only == partition_lag(tp("t", 0), None, 4, 10, policy)
    assert LagFlag.NO_COMMIT in only.flags


def test_groups_whose_offsets_failed_are_failures_and_described_only_groups_keep_their_lag():
    committed = KeyedResults({"b": offsets("b", {tp("t", 0): 5})}, {"a": Failure(30, "denied")})
    described = KeyedResults({"a": description("a")}, {"b": Failure(15)})
    snap = compute_lag(
        described, committed, {tp("t", 0): 0}, {tp("t", 0): 10}, P.FAIL, T0, group_ids=["a", "b"]
    )
    assert snap.failures["a"].code == 30 and "a" not in snap.groups
    assert snap.groups["b"].state is GroupState.UNKNOWN and snap.groups["b"].error.code == 15
    assert snap.groups["b"].total_lag == 5


def test_a_group_without_partitions_whose_description_failed_has_no_total():
    """No committed offset and no description: which partitions it is assigned, and whether it
    exists at all, are unknown; its total is unknown, never 0 (a described Empty group without
    commits has nothing to lag: 0)."""
    committed = KeyedResults({"lost": offsets("lost", {}), "empty": offsets("empty", {})}, {})
    described = KeyedResults({"empty": description("empty")}, {"lost": Failure(-100, "deadline")})
    snap = compute_lag(described, committed, {}, {}, P.FAIL, T0, group_ids=["lost", "empty"])
    lost, empty = snap.groups["lost"], snap.groups["empty"]
    assert (lost.state, lost.partitions, lost.total_lag) == (GroupState.UNKNOWN, (), None)
    assert lost.to_dict()["total_lag"] is None and lost.error.code == -100
    assert empty.total_lag == 0


def test_topics_restrict_and_complete_the_partitions():
    t0, t1, x0 = tp("t", 0), tp("t", 1), tp("x", 0)
    committed = {"g": offsets("g", {t0: 1, x0: 3})}
    snap = compute_lag(
        {"g": description("g")}, committed, {}, {t0: 5, t1: 7, x0: 9}, P.FROM_LATEST, T0, topics={"t": [0, 1]}
    )
    assert [p.tp for p in snap.groups["g"].partitions] == [t0, t1]
    assert snap.groups["g"].partitions[1].flags == {LagFlag.NO_COMMIT}


def test_totals_and_worst_per_topic():
    g = group(
        "g",
        partition("t", 0, 90, 100),
        partition("t", 1, 10, 100),
        partition("u", 0, 0, 5),
        partition("u", 1, None, 9),
    )
    topics = topic_lags(g)
    assert topics["t"].total_lag == 100 and topics["t"].worst.partition == 1
    assert topics["u"].total_lag is None and topics["u"].unknown == 1  # FAIL policy: unknown, not 5
    assert g.worst.tp == tp("t", 1)
    assert [p.tp for p in worst_partitions(g, 2)] == [tp("t", 1), tp("t", 0)]


def test_rows_follow_the_history_schema_and_keep_groups_without_partitions():
    snap = snapshot(T0, group("g", partition("t", 0, 90, 100)), group("empty", state="Empty", members=0))
    rows = snap.rows()
    assert all(tuple(r) == HISTORY_COLUMNS for r in rows)
    assert {(r["group_id"], r["topic"], r["lag"]) for r in rows} == {("g", "t", 10), ("empty", None, None)}


def test_to_dict_is_json_ready():
    import json

    snap = compute_lag(*_inputs(), P.FROM_EARLIEST, T0)
    data = json.loads(json.dumps(snap.to_dict()))
    assert data["groups"]["g"]["total_lag"] == 40 and data["groups"]["g"]["policy"] == "from_earliest"


def test_a_partition_whose_end_offset_was_not_read_is_an_error_and_keeps_its_log_start():
    committed = {"g": offsets("g", {tp("t", 0): 5, tp("t", 1): 5})}
    snap = compute_lag(
        {"g": description("g")}, committed, {tp("t", 0): 2, tp("t", 1): 3}, {tp("t", 0): 10}, P.FAIL, T0
    )
    read, unread = snap.groups["g"].partitions
    assert (read.lag, read.log_start, read.flags) == (5, 2, frozenset())
    assert (unread.lag, unread.log_start, unread.log_end, unread.flags) == (None, 3, None, {LagFlag.ERROR})
    assert unread.error.message == "log end offset unknown" and snap.groups["g"].total_lag is None


def test_an_end_offset_error_on_a_partition_without_a_commit_is_an_error_and_no_commit():
    lag = partition_lag(
        tp("t", 0),
        committed=None,
        log_start=None,
        log_end=None,
        policy=P.FROM_LATEST,
        error=Failure(6, "not leader"),
    )
    assert lag.lag is None and lag.flags == {LagFlag.ERROR, LagFlag.NO_COMMIT} and lag.error.code == 6


def test_a_commit_below_the_log_start_and_past_the_log_end_is_clamped_and_lost():
    lag = partition_lag(tp("t", 0), committed=20, log_start=50, log_end=10, policy=P.FAIL)
    assert lag.lag == 0 and lag.flags == {LagFlag.CLAMPED, LagFlag.LOST}


# -- a topic the group no longer reads (TOPIC_UNASSIGNED) -------------------------------------------


def _left_inputs(state="Stable", members=None, protocol_type="consumer"):
    members = {"m1": [tp("orders", 0)]} if members is None else members
    desc = description("g", state, members, protocol_type=protocol_type)
    committed = offsets("g", {tp("orders", 0): 5, tp("legacy", 0): 40, tp("legacy", 1): 41})
    ends = {tp("orders", 0): 10, tp("legacy", 0): 90, tp("legacy", 1): 91}
    return {"g": desc}, {"g": committed}, {t: 0 for t in ends}, ends


def _flagged(snap):
    return {str(p.tp) for p in snap.groups["g"].partitions if LagFlag.TOPIC_UNASSIGNED in p.flags}


def test_a_committed_topic_no_member_is_assigned_is_flagged_on_each_of_its_partitions():
    snap = compute_lag(*_left_inputs(), P.FAIL, T0)
    assert _flagged(snap) == {str(tp("legacy", 0)), str(tp("legacy", 1))}
    assert snap.rows()[1]["flags"] == "topic_unassigned"  # kept in the history store's rows


@pytest.mark.parametrize(
    "inputs",
    [
        _left_inputs(state="PreparingRebalance"),  # assignments in flux
        _left_inputs(members={}),  # Empty of members: the dead-group rules judge it
        _left_inputs(members={"m1": []}),  # no assignment read at all: proves nothing
        _left_inputs(protocol_type="connect"),  # assignments are not topic partitions
    ],
)
def test_the_flag_needs_a_stable_consumer_group_whose_assignments_were_read(inputs):
    assert _flagged(compute_lag(*inputs, P.FAIL, T0)) == set()


@pytest.mark.parametrize("policy", list(P))
def test_compute_lag_decides_every_partition_as_partition_lag_does(policy):
    """compute_lag decides the common case (committed, log end read, nothing failed) inline for
    speed; every combination of committed / log start / log end / errors / members must come out
    as partition_lag's rules make it."""
    import itertools

    from airflow_provider_kgroups.client.results import GroupDescription, MemberDescription, TopicPartition

    failed = Failure(-1, "broker said no")
    values = (None, 0, 49, 50, 51, 100, 101)
    cases = list(itertools.product(values, values, values, (False, True), (False, True)))
    tps = [TopicPartition("t", i) for i in range(len(cases))] + [TopicPartition("u", 0)]
    committed, starts, ends, end_failures = {}, {}, {}, {}
    for tp_, (commit, start, end, commit_failed, end_failed) in zip(tps, cases):
        if commit is not None or commit_failed:
            committed[tp_] = CommittedOffset(commit, error=failed if commit_failed else None)
        if start is not None:
            starts[tp_] = ListedOffset(start)
        if end_failed:
            end_failures[tp_] = failed
        elif end is not None:
            ends[tp_] = ListedOffset(end)
    committed[TopicPartition("u", 0)] = CommittedOffset(7)
    ends[TopicPartition("u", 0)] = ListedOffset(9)
    member = MemberDescription("m-1", None, "c", "h", tuple(tps[:5]))
    for members in ((), (member,)):
        desc = GroupDescription(
            "g", GroupState.STABLE if members else GroupState.EMPTY, "consumer", "range", members, 0
        )
        result = compute_lag(
            {"g": desc},
            {"g": GroupOffsets("g", committed)},
            KeyedResults(starts, {}),
            KeyedResults(ends, end_failures),
            policy,
        )
        owners = {tp_: m.member_id for m in members for tp_ in m.assignment}
        left = {"u"} if members else set()
        for got in result.groups["g"].partitions:
            tp_ = got.tp
            commit = committed.get(tp_)
            expected = partition_lag(
                tp_,
                commit.offset if commit is not None else None,
                starts[tp_].offset if tp_ in starts else None,
                ends[tp_].offset if tp_ in ends else None,
                policy,
                assigned_to=owners.get(tp_),
                error=(commit.error if commit is not None else None) or end_failures.get(tp_),
                topic_unassigned=tp_.topic in left,
            )
            assert got == expected, tp_


@pytest.mark.parametrize(
    "start, exact, log_start, log_end, lag, flags",
    [
        (40, 45, 0, 100, 45, set()),  # the broker's lag, below log end - start (delivered records)
        (40, None, 0, 100, None, {LagFlag.LAG_AT_MOST}),  # Kafka 4.1 / -1: only a bound, no lag
        (5, None, 10, 100, None, {LagFlag.LAG_AT_MOST, LagFlag.LOST}),  # below the log start too
        (100, None, 0, 100, 0, set()),  # at the log end: nothing above it, exactly 0 on any broker
        (120, 0, 0, 100, 0, set()),  # past the log end with the broker's lag: its 0, not clamped
        (None, None, 0, 100, None, {LagFlag.NO_COMMIT}),  # never initialized: unknown under FAIL
        (40, 45, 0, None, None, {LagFlag.ERROR}),  # the log end unread: no lag, whatever the broker said
    ],
)
def test_a_share_partition_lag_is_the_brokers_value_never_the_bound(
    start, exact, log_start, log_end, lag, flags
):
    from airflow_provider_kgroups.lag.compute import share_partition_lag

    got = share_partition_lag(tp("t", 0), start, exact, log_start, log_end, P.FAIL)
    assert (got.committed, got.lag, set(got.flags)) == (start, lag, flags)
