"""The lag-history job in local[2]: exact numbers on a hand-made history, and the same verdicts,
reasons and dead-group evidence as the Python engine on a generated one (the job runs that engine
per group: these check which snapshots, evaluation times and topic list each call is given)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.history.store import HistoryStore
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.verdicts import VerdictRules
from airflow_provider_kgroups.spark.lag_history import OUTPUTS, main, run_lag_history
from tests.support import python_engine
from tests.support.spark_histories import HOUR, MINUTE, T0, hand_made_history, random_history, table

WINDOW_MS = HOUR


def _write(path: Path, rows) -> str:
    HistoryStore(str(path)).append_table(table(rows))
    return str(path)


def _rows(spark, result, name):
    return spark.read.parquet(result.outputs[name]).collect()


# -- a hand-made history: exact numbers -------------------------------------------------------------

HAND_RULES = DeadGroupRules(idle_hours=0.5)


@pytest.fixture(scope="module")
def hand(spark_factory, tmp_path_factory):
    spark = spark_factory()
    root = tmp_path_factory.mktemp("hand")
    history = _write(root / "history", hand_made_history())
    (root / "history" / "_backups").mkdir()  # backups and audit records live next to the history: skipped
    (root / "history" / "_backups" / "junk.parquet").write_bytes(b"not parquet")
    result = run_lag_history(spark, history, str(root / "out"), window_minutes=60, dead_rules=HAND_RULES)
    out = {name: _rows(spark, result, name) for name in OUTPUTS}
    return result, out


def test_outputs_and_summary(hand):
    result, out = hand
    assert result.as_of_ms == T0 + 55 * MINUTE and result.windows == 1
    assert result.rows == {name: len(rows) for name, rows in out.items()}
    assert result.rows["group_status"] == 13 and result.rows["partition_verdicts"] == 14
    assert result.verdicts == {
        "OK": 4,
        "WARN": 1,
        "STOP": 1,
        "STALL": 2,
        "REWIND": 1,
        "LOST": 1,
        "UNKNOWN": 3,
    }


def test_lag_percentiles_over_the_window(hand):
    _, out = hand
    windows = {(r.group_id, r.topic): r for r in out["lag_windows"]}
    pct = windows[("pct", "orders")]  # topic lag per snapshot: 10, 20, ..., 120 (two partitions of 5*(i+1))
    assert (pct.window_start_ms, pct.window_end_ms, pct.snapshots, pct.partitions) == (T0, T0 + HOUR, 12, 2)
    assert pct.lag_p50 == pytest.approx(65.0) and pct.lag_p95 == pytest.approx(114.5)
    assert pct.lag_p99 == pytest.approx(118.9)
    assert (pct.lag_max, pct.max_partition_lag, pct.last_lag, pct.unknown_lag_snapshots) == (120, 60, 120, 0)
    blind = windows[("blind", "orders")]  # unreadable once: that snapshot's topic lag is unknown, not 0
    assert (blind.unknown_lag_snapshots, blind.lag_p50, blind.lag_max, blind.last_lag) == (1, 0.0, 0, None)


def test_every_verdict_with_its_reason(hand):
    _, out = hand
    verdicts = {(r.group_id, r.topic, r.partition): (r.verdict, r.reason) for r in out["partition_verdicts"]}
    warn = "lag growing by 0.02 records/s over 30.0 min (30 -> 60; rose in 6 of 6 steps)"
    assert verdicts == {
        ("caught", "orders", 0): ("OK", "caught up"),
        ("pct", "orders", 0): ("WARN", warn),
        ("pct", "orders", 1): ("WARN", warn),
        ("stopper", "orders", 0): (
            "STOP",
            "committed offset stuck at 40 for 30.0 min while the log grew by 60 records (lag 70)",
        ),
        ("staller", "orders", 0): (
            "STALL",
            "committed offset stuck at 20 for 30.0 min with 30 records to read (the log end is not moving)",
        ),
        ("rewinder", "orders", 0): (
            "REWIND",
            "committed offset went back from 110 to 40 in the last 30.0 min and "
            "has not caught up with where it was",
        ),
        ("loser", "orders", 0): (
            "LOST",
            "committed offset 311 is below the log start 500: 189 records were deleted by retention unread",
        ),
        ("blind", "orders", 0): ("OK", "caught up"),
        ("blind", "orders", 1): ("UNKNOWN", "its offsets could not be read in the latest snapshot"),
        ("old-batch", "orders", 0): ("OK", "caught up"),
        ("abandoned", "orders", 0): (
            "STALL",
            "committed offset stuck at 5 for 30.0 min with 4 records to read (the log end is not moving)",
        ),
        ("weekly", "orders", 0): ("OK", "caught up"),
        ("connect-sink", "orders", 0): ("OK", "caught up"),
        ("orphan", "old-topic", 0): ("UNKNOWN", "its offsets could not be read in the latest snapshot"),
    }
    status = {r.group_id: r for r in out["group_status"]}
    assert (status["pct"].verdict, status["pct"].reason) == (
        "WARN",
        f"orders[0]: {warn} (1 more partition(s) WARN)",
    )
    assert status["stopper"].reason.endswith("; the group has 1 member(s), state Stable")
    assert (status["ghost"].verdict, status["ghost"].reason) == (  # no partition: nothing shows it is fine
        "UNKNOWN",
        "the group has no partitions (no committed offset, no assigned partition): nothing to judge",
    )
    topic = {(r.group_id, r.topic): r for r in out["lag_windows"]}
    assert (topic[("blind", "orders")].verdict, topic[("blind", "orders")].verdict_partition) == (
        "UNKNOWN",
        1,
    )
    assert (topic[("blind", "orders")].judged_partitions, topic[("blind", "orders")].not_ok_partitions) == (
        2,
        1,
    )


def test_time_since_last_progress(hand):
    _, out = hand
    now = T0 + 55 * MINUTE
    part = {(r.group_id, r.topic, r.partition): r for r in out["partition_verdicts"]}
    stopper = part[("stopper", "orders", 0)]  # committed moved last at 00:20
    assert (stopper.last_progress_ms, stopper.since_progress_ms, stopper.history_from_ms) == (
        T0 + 20 * MINUTE,
        35 * MINUTE,
        T0,
    )
    assert part[("staller", "orders", 0)].last_progress_ms is None  # never moved in the history
    assert part[("caught", "orders", 0)].since_progress_ms == 0
    topic = {(r.group_id, r.topic): r for r in out["lag_windows"]}
    assert topic[("stopper", "orders")].since_progress_ms == 35 * MINUTE
    status = {r.group_id: r for r in out["group_status"]}
    assert (status["weekly"].last_progress_ms, status["weekly"].since_progress_ms) == (
        T0 + 40 * MINUTE,
        15 * MINUTE,
    )
    assert status["stopper"].since_progress_ms == now - (T0 + 20 * MINUTE)


def test_dead_candidates_paused_and_system_groups(hand):
    _, out = hand
    status = {r.group_id: r for r in out["group_status"]}
    candidates = {r.group_id: r for r in out["dead_candidates"]}
    assert set(candidates) == {"abandoned"}
    abandoned = candidates["abandoned"]
    assert list(abandoned.evidence) == [
        "dead: no commit progress for at least 55 min while Empty with records to read (idle_hours=0.5)",
        "state Empty: no members",
        "no commit progress in the 55 min of stored history (since 2024-05-01 00:00 UTC)",
        "idle for at least 55 min: Empty, with records to read and no commit progress, at every stored snapshot "
        "since 2024-05-01 00:00 UTC",
        "Empty since at least 2024-05-01 00:00 UTC: Kafka will expire its offsets at or before 2024-05-08 00:00 UTC "
        "(offsets.retention.minutes=10080, KIP-211)",
        "matches no deny pattern",
    ]
    assert list(abandoned.dead_reasons) == ["idle"]
    assert (abandoned.empty_since_ms, abandoned.expires_at_ms, abandoned.idle_since_ms) == (
        T0,
        T0 + 7 * 24 * HOUR,
        T0,
    )
    # caught up on a quiet topic: as Empty and unmoving as "abandoned", but nothing to read, so never idle
    quiet = status["old-batch"]
    assert (quiet.health, quiet.deletable, quiet.idle_since_ms) == ("paused", False, None)
    assert (
        "not idle by the history: it had nothing to read at 2024-05-01 00:50 UTC (caught up on every "
        "partition); idle time counts only while Empty with records to read and no commit progress"
    ) in quiet.evidence
    # its only topic unread in the last snapshots: not checked by name here, so cannot tell (the Python
    # engine's find_dead_groups checks it by name; this job never has more candidates than that); its
    # log end unread since 00:40: how long it has been idle is unknown too
    orphan = status["orphan"]
    assert (orphan.health, orphan.deletable, list(orphan.dead_reasons)) == ("paused", False, [])
    assert list(orphan.cannot_tell) == [
        "cannot tell whether every committed topic was deleted: old-topic not in the topic list (which leaves out "
        "topics the principal may not Describe) and not checked by name",
        "cannot tell whether it has been idle for more than idle_hours=0.5: nothing to read was known at "
        "2024-05-01 00:50 UTC (log end offsets not read)",
    ]
    ghost = status["ghost"]  # no visible commit: evidence only under assume_full_visibility
    assert (ghost.health, ghost.deletable) == ("paused", False)
    assert ghost.cannot_tell[0].startswith("cannot tell whether it has no committed offset at all")
    weekly = status["weekly"]  # paused: Empty, but it committed 15 minutes ago
    assert (weekly.health, weekly.deletable) == ("paused", False)
    assert "last commit progress 15 min ago (2024-05-01 00:40 UTC)" in weekly.evidence
    system = status[
        "connect-sink"
    ]  # idle, but "connect" is not a plain consumer protocol: never dead for that
    assert (system.health, system.deletable) == ("paused", False)
    assert (
        system.evidence[-1] == "matches the default deny pattern 'connect-*' (a system group): not deletable"
    )
    assert (
        "protocol type 'connect' is not a plain consumer group: neither a missing commit nor a lack of commit "
        "progress is evidence against it"
    ) in system.evidence
    assert (status["caught"].health, status["caught"].deletable) == ("active", False)


def test_hand_made_dead_groups_equal_the_python_engine(hand):
    _, out = hand
    python = python_engine.dead_reports(python_engine.snapshots(hand_made_history()), HAND_RULES)
    spark = {r.group_id: r for r in out["group_status"]}
    assert set(python) == set(spark)
    for group_id, report in python.items():
        row = spark[group_id]
        assert (
            row.health,
            row.deletable,
            list(row.evidence),
            list(row.dead_reasons),
            list(row.cannot_tell),
            row.idle_since_ms,
        ) == (
            report.health.value,
            report.deletable,
            list(report.evidence),
            list(report.dead_reasons),
            list(report.cannot_tell),
            report.idle_since_ms,
        ), group_id


# -- parity with the Python engine on a generated history ------------------------------------------

PARITY_RULES = VerdictRules(window_ms=25 * MINUTE, stuck_after_ms=10 * MINUTE, min_points=3, allowed_lag=1)
# assume_full_visibility: so that "no committed offset at all" is evidence here too (the hand-made
# history covers the default, cannot tell)
PARITY_DEAD = DeadGroupRules(idle_hours=0.5, deny=("app-13",), assume_full_visibility=True)


@pytest.fixture(scope="module")
def parity(spark_factory, tmp_path_factory):
    spark = spark_factory()
    rows = random_history(seed=7)
    root = tmp_path_factory.mktemp("parity")
    result = run_lag_history(
        spark,
        _write(root / "history", rows),
        str(root / "out"),
        window_minutes=60,
        rules=PARITY_RULES,
        dead_rules=PARITY_DEAD,
    )
    return rows, {name: _rows(spark, result, name) for name in OUTPUTS}


def test_partition_verdicts_and_reasons_equal_the_python_engine_in_every_window(parity):
    rows, out = parity
    snaps = python_engine.snapshots(rows)
    times = python_engine.evaluation_times(snaps, WINDOW_MS)
    by_time: dict[int, dict] = {}
    for r in out["partition_verdicts"]:
        by_time.setdefault(r.at_ms, {})[(r.group_id, r.topic, r.partition)] = (r.verdict, r.reason)
    assert sorted(by_time) == times and len(times) >= 3
    seen = Counter()
    for at in times:
        expected = python_engine.partition_verdicts(snaps, at, PARITY_RULES)
        assert by_time[at] == expected, at
        seen.update(v for v, _ in expected.values())
        seen.update("LOST open" for v, reason in expected.values() if "LOST cannot be ruled out" in reason)
    assert set(seen) == {"OK", "UNKNOWN", "WARN", "STALL", "STOP", "REWIND", "LOST", "LOST open"}, seen


def test_group_verdicts_equal_the_python_engine(parity):
    rows, out = parity
    expected = python_engine.group_level(python_engine.snapshots(rows), PARITY_RULES)
    got = {r.group_id: (r.verdict, r.reason) for r in out["group_status"]}
    assert got == {g: (v.verdict.value, v.reason) for g, v in expected.items()}
    assert "UNKNOWN" in {v for v, _ in got.values()}  # a group missing from the latest snapshot


def test_dead_group_evidence_equals_the_python_engine(parity):
    rows, out = parity
    python = python_engine.dead_reports(python_engine.snapshots(rows), PARITY_DEAD)
    status = {r.group_id: r for r in out["group_status"]}
    for group_id, report in python.items():
        row = status[group_id]
        assert (
            row.health,
            row.deletable,
            list(row.evidence),
            row.empty_since_ms,
            row.expires_at_ms,
            list(row.dead_reasons),
            list(row.cannot_tell),
            row.idle_since_ms,
        ) == (
            report.health.value,
            report.deletable,
            list(report.evidence),
            report.empty_since_ms,
            report.expires_at_ms,
            list(report.dead_reasons),
            list(report.cannot_tell),
            report.idle_since_ms,
        ), group_id
        if report.health.value != "active":
            assert row.last_progress_ms == report.last_progress_ms, group_id
    assert {r.health.value for r in python.values()} == {"active", "paused", "dead"}
    assert {r.group_id for r in out["dead_candidates"]} == {g for g, r in python.items() if r.deletable}
    # The job checks no topic by name, so "every committed topic was deleted" never fires in it. The Python
    # engine checks by name: at most it finds every missing topic absent, and then it has at least the job's
    # candidates (the job is never less conservative than the engine).
    checked = python_engine.dead_reports(python_engine.snapshots(rows), PARITY_DEAD, checked_by_name=True)
    assert {r.group_id for r in out["dead_candidates"]} <= {g for g, r in checked.items() if r.deletable}
    missing = [g for g, r in status.items() if not r.in_latest_snapshot]
    assert missing and all(status[g].health is None and not status[g].deletable for g in missing)


# -- retention margins over time (issue 37) ------------------------------------------------------


def test_retention_margins_over_time_and_at_risk(spark, tmp_path):
    """With each topic's retention.ms the job gives every lagging partition's margin, placed by
    the history's log ends (the record at pct's committed 150 was appended after the 00:25
    snapshot, whose log end was 150; stopper's at 40 after 00:20), as
    lag.retention_history.history_margin says, and judges AT_RISK under the floor, the group's
    status too."""
    history = _write(tmp_path / "history", hand_made_history())
    result = run_lag_history(
        spark, history, str(tmp_path / "out"), dead_rules=HAND_RULES, retention_ms={"orders": HOUR}
    )
    latest = {
        (r.group_id, r.partition): r
        for r in _rows(spark, result, "partition_verdicts")
        if r.at_ms == result.as_of_ms and r.topic == "orders"
    }
    pct, stopper = latest[("pct", 0)], latest[("stopper", 0)]
    assert (pct.retention_margin_s, pct.margin_basis, pct.verdict) == (30 * 60.0, "history", "AT_RISK")
    assert (stopper.retention_margin_s, stopper.margin_basis, stopper.verdict) == (
        25 * 60.0,
        "history",
        "AT_RISK",
    )
    assert stopper.reason.endswith("the other rules said STOP")
    caught_up = [r for r in latest.values() if r.lag == 0]
    assert caught_up and {r.margin_basis for r in caught_up} == {"nothing_unread"}
    status = {r.group_id: r for r in _rows(spark, result, "group_status")}
    assert (status["stopper"].verdict, status["stopper"].retention_margin_s) == ("AT_RISK", 25 * 60.0)
    assert status["pct"].retention_margin_s == 30 * 60.0
    assert result.verdicts.get("AT_RISK", 0) >= 2


# -- arguments ---------------------------------------------------------------------


def test_bad_arguments_are_refused_before_spark_runs(spark, tmp_path):
    with pytest.raises(ConfigurationError, match="window_minutes"):
        run_lag_history(spark, "h", "o", window_minutes=0)
    with pytest.raises(ConfigurationError, match="has no time zone"):
        run_lag_history(spark, "h", "o", since="2024-05-01T00:00:00")
    with pytest.raises(ConfigurationError, match="must be after since"):
        run_lag_history(spark, "h", "o", since=T0, until=T0)
    with pytest.raises(ConfigurationError, match="not a valid regular expression"):
        run_lag_history(spark, "h", "o", dead_rules=DeadGroupRules(deny=("re:(",)))
    with pytest.raises(ConfigurationError, match=r"retention_ms\['orders'\] must be retention.ms"):
        run_lag_history(spark, "h", "o", retention_ms={"orders": -5})
    with pytest.raises(ConfigurationError, match="must map each topic to its retention.ms"):
        run_lag_history(spark, "h", "o", retention_ms=604800000)
    with pytest.raises(ConfigurationError, match="cannot be read by Spark"):
        run_lag_history(spark, str(tmp_path / "nowhere"), str(tmp_path / "out"))
    history = _write(tmp_path / "history", hand_made_history())
    with pytest.raises(ConfigurationError, match="no snapshot in the requested range"):
        run_lag_history(spark, history, str(tmp_path / "out"), since="2030-01-01")
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_pyspark_python_files_of_another_version_than_spark_are_refused(spark, monkeypatch, tmp_path):
    """pyspark-client 4.2 installed over pyspark 4.3 (the Airflow Spark provider's dependency) breaks
    every Arrow UDF with a Py4J error; the job says which versions differ and how to fix it, and
    writes nothing."""
    import pyspark

    history = _write(tmp_path / "history", hand_made_history())
    monkeypatch.setattr(pyspark, "__version__", "0.1.0")
    with pytest.raises(
        ConfigurationError,
        match=rf"version 0\.1\.0 but Spark is {spark.version}.*"
        rf"pyspark=={spark.version}",
    ):
        run_lag_history(spark, history, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_command_line_refuses_inconsistent_rules_with_exit_2(capsys):
    assert (
        main(
            [
                "--history",
                "h",
                "--output",
                "o",
                "--verdict-window-minutes",
                "5",
                "--stuck-after-minutes",
                "10",
            ]
        )
        == 2
    )
    assert "stuck_after_ms" in capsys.readouterr().err
