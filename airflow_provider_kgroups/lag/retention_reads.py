"""The reads behind the retention margin (:mod:`.retention`): the lagging partitions' first unread
records' timestamps (:func:`.seconds.lag_seconds`, every lagging partition) and their topics'
retention settings (one DescribeConfigs for all the topics). Answers, per group, each lagging
partition's :class:`~.retention.RetentionMargin` keyed ``(topic, partition)``, as
:func:`.verdicts.group_verdicts` takes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .model import LagSnapshot
from .retention import PartitionRisk, RetentionMargin, at_risk, catch_up, retention_margin
from .seconds import GroupLagSeconds, LagSecondsBasis, lag_seconds
from .verdicts import LagPoint

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

Margins = dict[str, dict[tuple[str, int], RetentionMargin]]


async def retention_margins(
    client: AsyncGroupsClient,
    snapshot: LagSnapshot,
    *,
    seconds: Mapping[str, GroupLagSeconds] | None = None,
    read_committed: bool = False,
    timeout_s: float | None = None,
) -> Margins:
    """Every lagging partition's margin as of the snapshot (``seconds``: already measured for every
    lagging partition, else measured here)."""
    if seconds is None:
        seconds = await lag_seconds(
            client, snapshot, worst_n=None, read_committed=read_committed, timeout_s=timeout_s
        )
    topics = {p.topic for measured in seconds.values() for p in measured.partitions}
    settings = await client.describe_topic_retention(topics, timeout_s=timeout_s) if topics else None
    out: Margins = {}
    for group_id, measured in seconds.items():
        margins = out.setdefault(group_id, {})
        for p in measured.partitions:
            margins[(p.topic, p.partition)] = retention_margin(
                p.seconds,
                p.basis is LagSecondsBasis.RECORD,
                p.record_timestamp_ms,
                settings.values.get(p.topic) if settings is not None else None,
                snapshot.taken_at_ms,
                lagging=p.basis is not LagSecondsBasis.CAUGHT_UP,
            )
    return out


def tightest(margins: Mapping[tuple[str, int], RetentionMargin]) -> RetentionMargin | None:
    """The group's shortest known margin (None: none known)."""
    known = [m for m in margins.values() if m.seconds is not None]
    return min(known, key=lambda m: m.seconds, default=None)  # type: ignore[arg-type, return-value]


def partition_risks(
    latest: LagSnapshot,
    margins: Mapping[str, Mapping[tuple[str, int], RetentionMargin]] | None,
    earlier: LagSnapshot | None,
    floor_s: float,
) -> dict[str, dict[tuple[str, int], PartitionRisk]]:
    """Per group, each lagging partition of ``latest``: its margin (from ``margins``), its catch-up
    time from ``earlier`` to ``latest`` (unknown without ``earlier``) and whether it is AT_RISK."""
    out: dict[str, dict[tuple[str, int], PartitionRisk]] = {}
    for group_id, group in latest.groups.items():
        before = (
            {(p.topic, p.partition): p for p in earlier.groups[group_id].partitions}
            if (earlier is not None and group_id in earlier.groups)
            else {}
        )
        per = out.setdefault(group_id, {})
        for p in group.partitions:
            if not p.lag:
                continue
            key = (p.topic, p.partition)
            points = [LagPoint.of(latest.taken_at_ms, p)]
            if key in before:
                points.insert(0, LagPoint.of(earlier.taken_at_ms, before[key]))  # type: ignore[union-attr]
            eta = catch_up(points)
            margin = (margins or {}).get(group_id, {}).get(key)
            per[key] = PartitionRisk(margin, eta, at_risk(margin, eta, floor_s))
    return out
