"""The cleanup's evidence and its bounds (issue 18 item 2): a lower bound or an unknown value
never proves a group deletable; at or below the threshold it is unknown, and the group is kept
with the reason. Through plan_cleanup on the fake cluster (a dry run: what a real run would do)."""

from __future__ import annotations

from airflow_provider_kgroups.cleanup import CleanupPolicy, Outcome, plan_cleanup
from airflow_provider_kgroups.client.selection import GroupSelector
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from tests.support.builders import HOUR, group, partition, snapshot
from tests.support.fakeworld import on_fake_cluster

NOW = 1_700_000_000_000 + 400 * HOUR
POLICY = CleanupPolicy(
    rules=DeadGroupRules(idle_hours=48), selector=GroupSelector(patterns=("*",)), max_deletions_percent=100
)
#: group -> hours ago of its idle snapshots; the first one is where the history begins
IDLE = {"at-threshold": (48, 24, 1), "over-threshold": (49, 24, 1), "short": (30, 1)}


def history(ids, since_ms):
    return [
        snapshot(NOW - h * HOUR, group(g, partition("orders", 0, 50, 100), state="Empty", members=0))
        for g, hours in IDLE.items()
        for h in hours
    ]


async def plan():
    return await on_fake_cluster(
        IDLE, lambda client, cluster: plan_cleanup(client, POLICY, history=history, now_ms=NOW)
    )


async def test_an_idle_lower_bound_at_the_threshold_keeps_the_group_with_the_reason():
    """Idle at every snapshot since exactly idle_hours ago, where the history begins: at least
    48 h is not more than 48 h. The old plan chose it for deletion."""
    decisions = (await plan()).decisions
    assert {g: d.outcome for g, d in decisions.items()} == {
        "at-threshold": Outcome.KEEP,
        "over-threshold": Outcome.WOULD_DELETE,
        "short": Outcome.KEEP,
    }
    kept = decisions["at-threshold"]
    assert kept.health == "paused" and kept.dead_reasons == ()
    assert kept.cannot_tell == (
        "cannot tell whether it has been idle for more than idle_hours=48: idle at every stored "
        "snapshot since 2023-11-29 14:13 UTC, the first: the history does not reach further "
        "back",
    )
    assert [f.reason.value for f in kept.findings if f.effect.value == "cannot_tell"] == ["idle_unknown"]
    audit = kept.to_dict()
    assert audit["findings"][1] == {
        "reason": "idle_unknown",
        "effect": "cannot_tell",
        "idle_hours": 48,
        "since_ms": NOW - 48 * HOUR,
        "at_least_ms": 48 * HOUR,
        "at_most_ms": None,
        "before": None,
    }
    assert decisions["short"].cannot_tell[0].startswith("cannot tell whether it has been idle for more than")
