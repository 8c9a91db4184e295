"""The lag-history job's per-group judging (spark/judging.py) without Spark: one group's history
rows in, its ``group_status`` row out. The latest row stands for the live reads as a
GroupObservation (no invented members); a committed offset the snapshot could not read is
unknown there, never "no commit"."""

from __future__ import annotations

from airflow_provider_kgroups.history.store import table_snapshots
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.verdicts import VerdictRules
from airflow_provider_kgroups.spark import judging
from tests.support.spark_histories import MINUTE, T0, row, table

FULL = DeadGroupRules(idle_hours=0.5, assume_full_visibility=True)


def status(rows, rules=FULL) -> dict:
    snapshots = table_snapshots(table(rows))
    return judging.group_status(
        "g", snapshots, snapshots[-1].taken_at_ms, frozenset({"orders"}), VerdictRules(), rules
    ).to_pylist()[0]


def test_a_latest_row_whose_commit_could_not_be_read_is_unknown_not_no_commit():
    """Issue 18: the job read the row (committed null, flag "error") as "no committed offset at
    all" and, under assume_full_visibility, listed the group as a dead candidate."""
    empty = {"state": "Empty", "members": 0}
    rows = [row(T0 + i * 5 * MINUTE, "g", "orders", 0, committed=None, error=True, **empty) for i in range(3)]
    got = status(rows)
    assert (got["health"], got["deletable"], got["dead_reasons"]) == ("paused", False, [])
    assert (
        got["cannot_tell"][0] == "cannot tell what it committed on orders[0] (CLIENT_RECORDED_ERROR: error "
        "recorded in the history): its committed offsets there could not be read"
    )
    no_commit = status(
        [row(T0 + i * 5 * MINUTE, "g", "orders", 0, committed=None, log_end=5, **empty) for i in range(3)]
    )
    assert (no_commit["health"], no_commit["deletable"], no_commit["dead_reasons"]) == (
        "dead",
        True,
        ["no_commits"],
    )


def test_members_come_from_the_row_count():
    got = status([row(T0, "g", "orders", 0, committed=5, log_end=9, members=3)])
    assert (got["health"], got["members"], got["evidence"][0]) == (
        "active",
        3,
        "state Stable with 3 member(s)",
    )


def verdict_rows(rows, retention_ms, rules=VerdictRules()) -> list[dict]:
    snapshots = table_snapshots(table(rows))
    evaluations = frozenset(s.taken_at_ms for s in snapshots)
    return judging.partition_verdicts(
        "g", snapshots, evaluations, 60 * MINUTE, rules, retention_ms
    ).to_pylist()


def test_the_retention_margin_over_time_comes_from_the_log_end_history():
    """Issue 37: the job's partition verdicts carry each evaluation's retention margin, placed by
    the history's log-end samples (the record at committed 100 was appended after the snapshot
    at T0 + 5 min, whose log end was 100), and a margin below the floor is AT_RISK."""
    rows = [
        row(T0, "g", "orders", 0, committed=100, log_end=50),
        row(T0 + 5 * MINUTE, "g", "orders", 0, committed=100, log_end=100),
        row(T0 + 10 * MINUTE, "g", "orders", 0, committed=100, log_end=300),
        row(T0 + 15 * MINUTE, "g", "orders", 0, committed=100, log_end=500),
    ]
    got = verdict_rows(rows, {"orders": 20 * MINUTE})
    assert [(r["retention_margin_s"], r["margin_basis"]) for r in got] == [
        (None, "nothing_unread"),  # committed 100 >= log end 50: nothing to read
        (None, "nothing_unread"),
        (15 * 60.0, "history"),  # appended after T0 + 5 min, kept 20 min: 15 min left at T0 + 10 min
        (10 * 60.0, "history"),
    ]
    # the default floor is an hour: 10-15 min left is AT_RISK, and the reason names the margin
    assert [r["verdict"] for r in got[2:]] == ["AT_RISK", "AT_RISK"]
    assert got[3]["reason"].startswith("retention may delete its first unread record in 10.0 min")
    # without retention settings: no margin, and the verdicts are what they were
    plain = verdict_rows(rows, None)
    assert {r["retention_margin_s"] for r in plain} == {None}
    assert "AT_RISK" not in {r["verdict"] for r in plain}
    # a topic whose retention is not given has an unknown margin, never a made-up one
    other = verdict_rows(rows, {"payments": 20 * MINUTE})
    assert [r["margin_basis"] for r in other[2:]] == ["unknown", "unknown"]
