"""Dead-group scenarios shared by the rules' tests (tests/lag/test_deadgroups.py) and the cleanup's
(evidence words, permission, reads): one clock, the rules, committed and log-end offsets of topic
"orders", a history of idle points, and ``report`` (cleanup's classify_group over them)."""

from __future__ import annotations

from airflow_provider_kgroups.cleanup.report import classify_group
from airflow_provider_kgroups.client.errors import Failure
from airflow_provider_kgroups.client.results import CommittedOffset, GroupOffsets, GroupState
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.observation import GroupHistoryPoint
from tests.support.builders import HOUR, T0, description, offsets, tp

NOW = T0 + 200 * HOUR  # 2023-11-23 06:13 UTC
RULES = DeadGroupRules(idle_hours=48, offsets_retention_minutes=7 * 24 * 60)
WEEK = 7 * 24 * HOUR
COMMITTED = {tp("orders", 0): 100}
BACKLOG = {tp("orders", 0): 150}  # 50 records to read
CAUGHT_UP = {tp("orders", 0): 100}


def idle_history(
    hours: float,
    committed=COMMITTED,
    state=GroupState.EMPTY,
    every_hours: int = 6,
    log_end=BACKLOG,
    members: int = 0,
):
    """Points every ``every_hours`` from ``hours`` ago to before now."""
    start = NOW - int(hours * HOUR)
    return [
        GroupHistoryPoint(t, state, members, committed, log_end)
        for t in range(start, NOW, every_hours * HOUR)
    ]


UNREADABLE = GroupOffsets(
    "app", {tp("orders", 0): CommittedOffset(None, error=Failure(88)), tp("old", 0): CommittedOffset(5)}
)


def report(
    group_id="app",
    state="Empty",
    committed=COMMITTED,
    history=(),
    topics=("orders",),
    rules=RULES,
    members=None,
    protocol_type="consumer",
    group_type="classic",
    checks=None,
    group_offsets=None,
):
    return classify_group(
        group_id,
        description(group_id, state, members, protocol_type, group_type),
        group_offsets or offsets(group_id, committed),
        None if topics is None else set(topics),
        list(history),
        rules,
        NOW,
        topic_checks=checks,
    )
