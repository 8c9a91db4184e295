"""The overview's dead-group reports, judged from a rollup's per-snapshot facts, are the reports
the engine gives from the full stored history (classify_group over every point), for any window."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_provider_kgroups.client.results import GroupState, TopicPartition
from airflow_provider_kgroups.history.rollup import rollup_table
from airflow_provider_kgroups.history.store import snapshot_table, table_snapshots
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.model import LagFlag
from airflow_provider_kgroups.ui.judging import facts_report, history_report
from tests.support.ui_histories import idle_history, random_history

STATES = [GroupState.STABLE, GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.DEAD]


def _facts(groups: pa.Table, group_id: str, since: int) -> dict[str, np.ndarray]:
    rows = groups.filter(
        pc.and_(pc.equal(groups["group_id"], group_id), pc.greater_equal(groups["snapshot_ms"], since))
    )
    names = [s.value for s in STATES]
    return {
        "at": rows["snapshot_ms"].to_numpy(),
        "state": np.array([names.index(s) for s in rows["group_state"].to_pylist()]),
        "members": rows["members"].to_numpy(),
        "changed": np.array(
            [-1 if c is None else int(c) for c in rows["changed"].to_pylist()], dtype=np.int8
        ),
        "unreadable": rows["unreadable"].to_numpy(zero_copy_only=False),
        "to_read": rows["to_read"].to_numpy(zero_copy_only=False),
        "ends_known": rows["ends_known"].to_numpy(zero_copy_only=False),
    }


@pytest.mark.parametrize("seed", range(60))
def test_reports_from_facts_equal_the_engines_reports_from_every_point(seed):
    rng = random.Random(seed)
    snapshots = (random_history if seed % 2 else idle_history)(seed, groups=8, points=rng.choice([5, 40, 80]))
    rows = pa.concat_tables([snapshot_table(s) for s in snapshots])
    stored = table_snapshots(rows)  # what the history keeps of them
    since = rng.choice([stored[0].taken_at_ms, stored[len(stored) // 3].taken_at_ms])
    window = [s for s in stored if s.taken_at_ms >= since]
    rollup = rollup_table(rows)
    rules = DeadGroupRules(idle_hours=rng.choice([0.25, 1.0, 3.0]), assume_full_visibility=rng.random() < 0.3)
    seen = set()
    for group_id in sorted({g for s in window for g in s.groups}):
        expected = history_report(window, group_id, rules)
        latest = [s for s in window if group_id in s.groups][-1].groups[group_id]
        committed = {
            TopicPartition(p.topic, p.partition): p.committed
            for p in latest.partitions
            if p.committed is not None
        }
        unreadable = frozenset(
            TopicPartition(p.topic, p.partition)
            for p in latest.partitions
            if p.committed is None and LagFlag.ERROR in p.flags
        )
        got = facts_report(
            group_id,
            _facts(rollup.groups, group_id, since),
            STATES,
            latest.protocol_type,
            committed,
            unreadable,
            rules,
        )
        assert got == expected, group_id
        seen.add(got.health)
    assert seen  # every group was judged


def test_the_history_keeps_an_abandoned_topic_so_the_pages_verdicts_show_it():
    """The snapshot's TOPIC_UNASSIGNED flag is stored with the rows; the UI's verdicts, judged from
    the history alone, find the group ABANDONED on that topic (klag issue 92)."""
    from airflow_provider_kgroups.lag.verdicts import Verdict, VerdictReason, VerdictRules
    from airflow_provider_kgroups.ui.judging import latest_verdicts, verdict_changes
    from tests.support.builders import MINUTE, T0, group, partition, snapshot

    snaps = [
        snapshot(
            T0 + m * MINUTE,
            group("g", partition("orders", 0, 100, 200 + m, flags=[LagFlag.TOPIC_UNASSIGNED]), members=2),
        )
        for m in range(0, 13, 2)
    ]
    stored = table_snapshots(pa.concat_tables([snapshot_table(s) for s in snaps]))
    rules = VerdictRules(window_ms=30 * MINUTE, stuck_after_ms=10 * MINUTE)
    verdict = latest_verdicts(stored, rules)["g"]
    assert verdict.verdict is Verdict.ABANDONED
    assert verdict.partitions[0].finding.reason is VerdictReason.TOPIC_LEFT
    changes, _, _ = verdict_changes(stored, "g", rules)
    assert changes[-1]["verdict"] == "ABANDONED"
