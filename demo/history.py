"""A past for groups created a minute ago: the history the snapshot DAG (``kgroups_snapshot``)
would have written over the last days, so the dead-group cleanup has the evidence it needs
("no commit progress for N hours") without waiting days.

The points are built from a *real* snapshot of the broker (this project's client), shifted
back in time; for a point, each group's committed offsets are either the ones read now or
lower by ``behind`` records per partition (progress made since). Nothing in the product is
bypassed: the cleanup reads this history through the same store it always reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from airflow_provider_kgroups.client import ClientConfig, GroupsClient
from airflow_provider_kgroups.client.results import GroupState
from airflow_provider_kgroups.history.store import HistoryStore
from airflow_provider_kgroups.lag.model import GroupLag, LagSnapshot
from airflow_provider_kgroups.lag.snapshot import take_snapshot

__all__ = ["backfill_history", "HOUR_MS"]

HOUR_MS = 3_600_000


def _at(group: GroupLag, behind: int) -> GroupLag:
    """The group as an Empty group ``behind`` records per partition earlier."""
    parts = []
    for p in group.partitions:
        committed = None if p.committed is None else max(0, p.committed - behind)
        log_end = p.log_end
        lag = None if committed is None or log_end is None else max(0, log_end - committed)
        parts.append(dataclasses.replace(p, committed=committed, lag=lag, assigned_to=None))
    return dataclasses.replace(group, state=GroupState.EMPTY, members=0, partitions=tuple(parts))


def backfill_history(
    history_url: str,
    bootstrap: str,
    points: Mapping[str, Sequence[tuple[float, int]]],
    *,
    now_ms: int | None = None,
) -> list[str]:
    """For each group, ``(age_hours, behind)`` points: a stored snapshot ``age_hours`` ago in
    which the group was Empty with its current committed offsets minus ``behind``. Groups whose
    points share an age share a snapshot (as one snapshot run would). Returns the files written."""
    config = ClientConfig.create(bootstrap, call_timeout_s=30)
    with GroupsClient(config) as client:
        now = client.run(take_snapshot(client.aclient, list(points)))
    if now.failures:
        raise RuntimeError(f"could not snapshot {sorted(now.failures)}: {dict(now.failures)}")
    at_ms = now.taken_at_ms if now_ms is None else now_ms
    by_age: dict[float, dict[str, GroupLag]] = {}
    for group_id, entries in points.items():
        for age_hours, behind in entries:
            by_age.setdefault(age_hours, {})[group_id] = _at(now.groups[group_id], behind)
    store = HistoryStore(history_url)
    written: list[str] = []
    for age_hours in sorted(by_age, reverse=True):
        written += store.append(
            LagSnapshot(taken_at_ms=at_ms - int(age_hours * HOUR_MS), groups=by_age[age_hours])
        )
    return written
