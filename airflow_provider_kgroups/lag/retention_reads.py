"""The reads behind the retention margin (:mod:`.retention`): the lagging partitions' first unread
records' timestamps (:func:`.seconds.lag_seconds`, every lagging partition) and their topics'
retention settings (one DescribeConfigs for all the topics). Answers, per group, each lagging
partition's :class:`~.retention.RetentionMargin` keyed ``(topic, partition)``, as
:func:`.verdicts.group_verdicts` takes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .model import LagSnapshot
from .retention import RetentionMargin, retention_margin
from .seconds import GroupLagSeconds, LagSecondsBasis, lag_seconds

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
