"""What the pure-Python lag engine says about a history, in the Spark job's terms: the
reference the Spark outputs are compared with."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from airflow_provider_kgroups.cleanup.report import GroupHealthReport, classify_group
from airflow_provider_kgroups.client.errors import Failure
from airflow_provider_kgroups.client.results import CommittedOffset, GroupOffsets, TopicExistence
from airflow_provider_kgroups.history.store import table_snapshots
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from airflow_provider_kgroups.lag.model import LagFlag, LagSnapshot
from airflow_provider_kgroups.lag.observation import history_points
from airflow_provider_kgroups.lag.verdicts import GroupVerdict, VerdictRules, group_verdicts
from tests.support.builders import description
from tests.support.spark_histories import table


def snapshots(rows: list[dict[str, Any]]) -> list[LagSnapshot]:
    return table_snapshots(table(rows))


def evaluation_times(snaps: Iterable[LagSnapshot], window_ms: int) -> list[int]:
    """The latest snapshot of each tumbling window."""
    latest: dict[int, int] = {}
    for s in snaps:
        k = s.taken_at_ms // window_ms
        latest[k] = max(latest.get(k, 0), s.taken_at_ms)
    return sorted(latest.values())


def partition_verdicts(
    snaps: list[LagSnapshot], at_ms: int, rules: VerdictRules
) -> dict[tuple, tuple[str, str]]:
    """(group, topic, partition) -> (verdict, reason), as group_verdicts says at ``at_ms``."""
    verdicts = group_verdicts([s for s in snaps if s.taken_at_ms <= at_ms], rules)
    return {
        (g, p.topic, p.partition): (p.verdict.value, p.reason)
        for g, v in verdicts.items()
        for p in v.partitions
    }


def group_level(snaps: list[LagSnapshot], rules: VerdictRules) -> dict[str, GroupVerdict]:
    """Every group of the history, as of its latest snapshot (UNKNOWN if missing from it)."""
    every = sorted({g for s in snaps for g in s.groups})
    return group_verdicts(snaps, rules, group_ids=every)


def dead_reports(
    snaps: list[LagSnapshot],
    rules: DeadGroupRules,
    gone_after_snapshots: int = 3,
    *,
    checked_by_name: bool = False,
) -> dict[str, GroupHealthReport]:
    """classify_group for each group of the latest snapshot, its row there standing for the
    live DescribeGroups / OffsetFetch (a row without a committed offset but with the error flag:
    a partition whose offset was read with an error), and the topics read in the last snapshots
    for the topic list.
    ``checked_by_name``: as find_dead_groups does, with every topic missing from that list
    answering UNKNOWN_TOPIC_OR_PARTITION by name (the most the Python engine can conclude)."""
    ordered = sorted(snaps, key=lambda s: s.taken_at_ms)
    latest, earlier = ordered[-1], ordered[:-1]
    recent = ordered[-gone_after_snapshots:]
    existing = {
        p.topic
        for s in recent
        for g in s.groups.values()
        for p in g.partitions
        if p.log_end is not None and p.error is None
    }
    out = {}
    for group_id, lag in latest.groups.items():
        desc = description(
            group_id,
            lag.state.value,
            {f"member-{i}": () for i in range(lag.members)},
            protocol_type=lag.protocol_type,
        )
        committed = GroupOffsets(
            group_id,
            {
                p.tp: CommittedOffset(
                    p.committed,
                    error=Failure(-1) if (p.committed is None and LagFlag.ERROR in p.flags) else None,
                )
                for p in lag.partitions
            },
        )
        checks = {
            p.topic: TopicExistence.EXISTS if p.topic in existing else TopicExistence.ABSENT
            for p in lag.partitions
        }
        out[group_id] = classify_group(
            group_id,
            desc,
            committed,
            existing,
            history_points(earlier, group_id),
            rules,
            now_ms=latest.taken_at_ms,
            topic_checks=checks if checked_by_name else None,
        )
    return out
