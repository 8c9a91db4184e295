"""The cleanup never deletes an AT_RISK group (issue 37): a group dead by the idle rule whose unread
records retention has not taken yet (30-day retention, first unread record 10 days old) is kept,
the margin in its reason; the same group on a topic never deleted by time (retention.ms=-1) goes;
so does one whose unread records are already gone (LOST: nothing left to lose)."""

from __future__ import annotations

import time

import pytest

from airflow_provider_kgroups.cleanup import ChangeContext, CleanupPolicy, Outcome, run_cleanup
from airflow_provider_kgroups.client.selection import GroupSelector
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from tests.support.builders import HOUR, group, partition, snapshot
from tests.support.fakeworld import with_fake_cluster

DAY_MS = 24 * HOUR
NOW = int(time.time() * 1000)


def history(ids, since_ms):
    """Empty, 50 records behind, no commit for 100 h: dead by the idle rule (idle_hours=48)."""
    return [
        snapshot(
            NOW - h * HOUR,
            *(group(g, partition("orders", 0, 50, 100), state="Empty", members=0) for g in ids),
        )
        for h in (100, 50, 10)
    ]


@pytest.mark.parametrize(
    "retention_ms, log_start, kept",
    [
        (30 * DAY_MS, 0, True),  # 20 days left before retention may take the first unread record
        (-1, 0, False),  # never deleted by time: nothing at risk
        (30 * DAY_MS, 60, False),  # records 50..59 already gone: LOST, no margin to protect
    ],
)
async def test_a_dead_group_whose_unread_records_retention_may_still_take_is_kept(
    tmp_path, retention_ms, log_start, kept
):
    def setup(cluster) -> None:
        cluster.add_topic("orders", 1, config={"retention.ms": str(retention_ms)})
        cluster.append("orders", 0, 100, timestamp_ms=lambda offset: NOW - 10 * DAY_MS + offset * 1000)
        if log_start:
            cluster.set_offsets("orders", 0, start=log_start)
        cluster.add_group("old-job", offsets={("orders", 0): 50})

    async def body(cluster, client):
        policy = CleanupPolicy(
            rules=DeadGroupRules(idle_hours=48),
            selector=GroupSelector(patterns=("*",)),
            max_deletions_percent=100,
            dry_run=False,
        )
        result = await run_cleanup(ChangeContext(client, str(tmp_path)), policy, history=history, now_ms=NOW)
        return result, cluster.has_group("old-job")

    result, exists = await with_fake_cluster(body, brokers=1, setup=setup)
    decision = result.decisions["old-job"]
    assert exists is kept, decision
    if kept:
        assert decision.outcome is Outcome.KEEP and decision.reason.startswith(
            "AT_RISK: retention may delete"
        )
        assert "20.0 d at the earliest" in decision.reason or "19.9 d" in decision.reason, decision.reason
    else:
        assert decision.outcome is Outcome.DELETED, decision
