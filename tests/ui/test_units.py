"""The page's pure parts: the seconds estimate against the engine's reference, downsampling,
the history rollups, gates in serialized DAGs, request checks, redaction, the vendored files."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from airflow_provider_kgroups.lag.seconds import interpolate_produce_time
from airflow_provider_kgroups.ui.gates import gates_in
from airflow_provider_kgroups.ui.series import (
    LogEndIndex,
    downsample_indices,
    lag_seconds_series,
    produce_times,
)
from airflow_provider_kgroups.ui.settings import (
    BadRequest,
    PageSettings,
    parse_group_id,
    parse_pattern,
    parse_points,
    parse_window,
)
from airflow_provider_kgroups.ui.trail import backup_name, redact
from tests.support.builders import T0

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("seed", range(20))
def test_produce_times_equal_the_engines_interpolation_point_by_point(seed):
    rng = random.Random(seed)
    samples, end, at = [], rng.randint(0, 50), T0
    for _ in range(rng.randint(1, 40)):
        at += rng.choice([60_000, 300_000])
        end = (
            rng.randint(0, 30) if rng.random() < 0.05 else end + rng.choice([0, 0, 1, 7, 40])
        )  # recreated now and then
        samples.append((at, end))
    queries = [(rng.choice(samples)[0] + rng.choice([0, 1, -1]), rng.randint(0, end + 5)) for _ in range(60)]
    estimate, bound = produce_times(
        np.array([t for t, _ in samples], dtype=np.float64),
        np.array([e for _, e in samples]),
        np.array([q[0] for q in queries], dtype=np.float64),
        np.array([q[1] for q in queries]),
    )
    for i, (t, offset) in enumerate(queries):
        expected = interpolate_produce_time([s for s in samples if s[0] <= t], offset)
        if expected is None:
            assert np.isnan(estimate[i]) and np.isnan(bound[i]), (t, offset)
        elif expected[0] is None:
            assert np.isnan(estimate[i]) and bound[i] == expected[1]
        else:
            assert estimate[i] == pytest.approx(expected[0]) and np.isnan(bound[i])


@pytest.mark.parametrize("seed", range(10))
def test_one_index_over_many_partitions_answers_each_as_the_engine_does_within_the_window(seed):
    rng = random.Random(seed)
    samples: dict[int, list[tuple[int, int]]] = {}
    for p in range(rng.randint(1, 6)):
        at, end = T0 + rng.randint(0, 10) * 60_000, rng.randint(0, 50)
        samples[p] = []
        for _ in range(rng.randint(0, 30)):
            at += rng.choice([60_000, 300_000])
            end = rng.randint(0, 30) if rng.random() < 0.05 else end + rng.choice([0, 1, 7, 40])
            samples[p].append((at, end))
    flat = [(p, t, e) for p, points in samples.items() for t, e in points]
    rng.shuffle(flat)
    index = LogEndIndex(
        np.array([f[0] for f in flat], dtype=np.int64),
        np.array([f[1] for f in flat], dtype=np.int64),
        np.array([f[2] for f in flat], dtype=np.int64),
    )
    since = T0 + rng.randint(0, 60) * 60_000
    queries = [
        (rng.randint(-1, 6), T0 + rng.randint(0, 200) * 60_000, rng.randint(0, 800)) for _ in range(300)
    ]
    estimate, bound = index.produce_times(
        np.array([q[0] for q in queries]),
        np.array([q[1] for q in queries]),
        np.array([q[2] for q in queries]),
        since,
    )
    for i, (p, t, offset) in enumerate(queries):
        expected = interpolate_produce_time([s for s in samples.get(p, []) if since <= s[0] <= t], offset)
        if expected is None:
            assert np.isnan(estimate[i]) and np.isnan(bound[i]), (p, t, offset)
        elif expected[0] is None:
            assert np.isnan(estimate[i]) and bound[i] == expected[1], (p, t, offset)
        else:
            assert estimate[i] == pytest.approx(expected[0]) and np.isnan(bound[i]), (p, t, offset)


def test_lag_seconds_are_zero_when_caught_up_unknown_without_commit_and_bounded_when_too_old():
    t = np.array([0, 60_000, 120_000], dtype=np.float64)
    e = np.array([100, 160, 220])
    seconds, at_least = lag_seconds_series(
        t,
        e,
        np.array([120_000, 120_000, 120_000, 120_000], dtype=np.float64),
        np.array([220, np.nan, 50, 130]),
        np.array([0, np.nan, 170, 90]),
    )
    assert seconds[0] == 0 and np.isnan(seconds[1])
    assert (seconds[2], at_least[2]) == (120.0, True)  # older than the first sample: at least 120 s
    assert at_least[3] == np.False_ and 60 <= seconds[3] <= 120


def test_downsampling_keeps_the_budget_the_spike_and_the_gaps():
    x = np.arange(200_000, dtype=np.float64)
    y = np.sin(x / 5_000) * 100 + 200
    y[123_456] = 99_999  # a spike
    y[50_000:50_010] = np.nan  # unknown for a while
    keep = downsample_indices(x, y, 2_000)
    assert len(keep) <= 2_000 and 123_456 in keep
    assert any(np.isnan(y[i]) for i in keep)  # the gap stays a gap
    assert list(downsample_indices(x[:50], y[:50], 2_000)) == list(range(50))
    # a short known stretch among gaps gets a share below 3 points (MinMaxLTTB panicked on 2)
    short = np.array([1.0, np.nan, 2.0, 3.0, 4.0, 5.0, np.nan, 6.0, np.nan, 7.0, 8.0, 9.0, 10.0])
    keep = downsample_indices(np.arange(len(short), dtype=np.float64), short, 4)
    assert {1, 6, 8} <= set(keep) and 0 in keep and 12 in keep


def test_gates_are_found_by_id_or_pattern_with_thresholds_and_templates():
    def dag(**task):
        return {
            "dag": {
                "tasks": [
                    {
                        "__type": "operator",
                        "__var": {
                            "task_id": "gate",
                            "task_type": "ConsumerLagSensor",
                            "_task_module": "airflow_provider_kgroups.sensors.lag",
                            **task,
                        },
                    }
                ]
            }
        }

    dags = {
        "by_id": dag(group_ids=["orders"], lag_mode="threshold", max_total_lag=100),
        "by_pattern": dag(
            group_patterns=["ord*"], exclude_patterns=["orders-old"], max_lag_seconds="{{ x }}"
        ),
        "other": dag(group_ids=["billing"]),
        "templated": dag(group_ids="{{ params.groups }}"),
    }
    gates = gates_in(dags, "orders")
    assert [(g["dag_id"], g["thresholds"]) for g in gates] == [
        ("by_id", {"max_total_lag": {"value": 100}}),
        ("by_pattern", {"max_lag_seconds": {"template": "{{ x }}"}}),
        ("templated", {}),
    ]
    assert [g["dag_id"] for g in gates_in(dags, "orders-old")] == ["templated"]


def test_a_blank_page_connection_option_means_the_default_connection(monkeypatch):
    # PageSettings has slots: the class attribute is a slot descriptor, not the field's default
    monkeypatch.setenv("AIRFLOW__KGROUPS__UI_KAFKA_CONN_ID", " ")
    assert PageSettings.from_airflow().kafka_conn_id == "kgroups_default"
    monkeypatch.setenv("AIRFLOW__KGROUPS__UI_KAFKA_CONN_ID", "kgroups_prod")
    assert PageSettings.from_airflow().kafka_conn_id == "kgroups_prod"


def test_request_parameters_are_checked():
    assert parse_window("6h") == ("6h", 6 * 3_600_000)
    assert parse_pattern("orders").match("eu-orders-1") and not parse_pattern("orders").match("billing")
    assert parse_pattern("re:^eu-.*").match("eu-x")
    for call, value in (
        (parse_window, "0d"),
        (parse_window, "93d"),
        (parse_window, "1w"),
        (parse_pattern, "re:("),
        (parse_group_id, ""),
        (parse_group_id, "a\nb"),
        (parse_points, "99"),
        (parse_points, "x"),
    ):
        with pytest.raises(BadRequest):
            call(value)


def test_redaction_blanks_userinfo_and_backup_names_are_strict():
    assert redact({"u": ["https://ops:pw@connect:8083/x", "s3://bucket/k"]}) == {
        "u": ["https://***@connect:8083/x", "s3://bucket/k"]
    }
    assert (
        backup_name("s3://b/h/_backups/20241027T031320Z-54315a3098ff.json")
        == "20241027T031320Z-54315a3098ff.json"
    )
    assert backup_name("/h/_backups/../../etc/passwd") is None


def test_the_vendored_echarts_matches_its_manifest():
    check = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "vendor_echarts.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_only_a_real_cleanup_run_marks_a_group_deleted(tmp_path):
    from airflow_provider_kgroups.history.audit import write_audit
    from airflow_provider_kgroups.ui.trail import cleanup_runs, deletions

    base = str(tmp_path / "h")
    write_audit(
        base,
        {
            "version": 1,
            "dry_run": False,
            "started_ms": 1_000,
            "who": {},
            "summary": {"backup_url": f"{base}/_backups/20240101T000000Z-0123456789ab.json"},
            "decisions": {"gone": {"decision": "deleted"}, "kept": {"decision": "keep"}},
        },
        started_ms=1_000,
    )
    write_audit(
        base,
        {
            "version": 1,
            "dry_run": True,
            "started_ms": 2_000,
            "who": {},
            "decisions": {"dry": {"decision": "would_delete"}},
        },
        started_ms=2_000,
    )
    write_audit(
        base,
        {
            "version": 1,
            "action": "delete-offsets",
            "dry_run": False,
            "started_ms": 3_000,
            "who": {},
            "decisions": {"offsets-only": {"decision": "deleted"}},
        },
        started_ms=3_000,
    )
    marks = deletions(base)
    assert set(marks) == {"gone"} and marks["gone"]["at_ms"] == 1_000
    assert (
        marks["gone"]["restore"] == f"kgroups restore {base}/_backups/20240101T000000Z-0123456789ab.json gone"
    )
    assert [r["action"] for r in cleanup_runs(base)] == ["delete-offsets", "delete-groups", "delete-groups"]


def test_the_trail_shows_an_interrupted_run_its_undo_and_runs_without_an_outcome(tmp_path):
    from airflow_provider_kgroups.history.audit import write_audit
    from airflow_provider_kgroups.history.journal import Journal
    from airflow_provider_kgroups.ui.trail import cleanup_runs, deletions, group_cleanups, open_runs

    base = str(tmp_path / "h")
    first, second = (f"{base}/_backups/20240101T00000{i}Z-0123456789a{i}.json" for i in (1, 2))
    # the run that died, as the next run reconciled it: g1 deleted, g2 not
    write_audit(
        base,
        {
            "version": 1,
            "action": "delete-groups",
            "dry_run": False,
            "started_ms": 1_000,
            "who": {"by": "kgroups delete"},
            "run_id": "dead",
            "backup_url": first,
            "interrupted": {
                "why": "its process 7 on this host is gone",
                "reconciled_ms": 2_000,
                "reconciled_by": {"run_id": "rerun"},
            },
            "undo": {"g1": first},
            "decisions": {
                "g1": {
                    "decision": "interrupted",
                    "interrupted": "changed",
                    "reason": "interrupted: changed (...)",
                    "undo_backup": first,
                },
                "g2": {
                    "decision": "interrupted",
                    "interrupted": "not_changed",
                    "reason": "interrupted: not changed (...)",
                    "undo_backup": first,
                },
            },
        },
        started_ms=1_000,
    )
    # the rerun: deletes both again; g1's undo is the dead run's backup, not its own of the empty group
    write_audit(
        base,
        {
            "version": 1,
            "dry_run": False,
            "started_ms": 2_000,
            "who": {},
            "run_id": "rerun",
            "summary": {"backup_url": second},
            "undo": {"g1": first, "g2": second},
            "reconciled": [{"audit": "x", "run_id": "dead"}],
            "decisions": {"g1": {"decision": "deleted"}, "g2": {"decision": "deleted"}},
        },
        started_ms=2_000,
    )
    Journal(base).write_intent(
        "20240101T000003Z-0123456789ac.json",
        {
            "run_id": "live",
            "action": "reset-offsets",
            "started_ms": 3_000,
            "who": {"dag_id": "d", "task_id": "t"},
            "owner": {"host": "h", "pid": 1, "run_id": "live"},
            "groups": {"g3": {}},
            "backup_url": second,
        },
    )

    rerun, dead = cleanup_runs(base)
    assert dead["interrupted"]["why"] == "its process 7 on this host is gone" and dead["restore"] is None
    assert [(u["backup_url"], u["groups"]) for u in dead["undo"]] == [(first, ["g1"])]
    assert {d["group_id"]: d["interrupted"] for d in dead["decisions"]} == {
        "g1": "changed",
        "g2": "not_changed",
    }
    assert rerun["restore"] is None  # two backups: one command each
    assert [(u["backup_url"], u["groups"]) for u in rerun["undo"]] == [(first, ["g1"]), (second, ["g2"])]
    assert rerun["undo"][0]["cli"] == f"kgroups restore {first} g1"
    marks = deletions(base)
    assert marks["g1"]["restore"] == f"kgroups restore {first} g1" and marks["g2"]["restore"].endswith(
        f"{second} g2"
    )
    assert [c["backup_url"] for c in group_cleanups(base, "g1")] == [first, first]
    assert [(o["run_id"], o["groups"], o["who"]["dag_id"]) for o in open_runs(base)] == [
        ("live", ["g3"], "d")
    ]
