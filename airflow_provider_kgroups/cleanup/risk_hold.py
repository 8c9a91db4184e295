"""The cleanup never deletes an AT_RISK group: a deletable group whose unread records retention
has not yet taken (its retention margin is known, :mod:`..lag.retention`) and that will not read
them first is kept, with the margin in the reason. Deleting it would hide the loss the verdict
warns of; once retention has taken those records (LOST) or the group caught up, it may go.

A group judged dead does not move, so its catch-up time over the history is *never* and a known
margin makes it AT_RISK; with a single snapshot (no history) only the margin floor can say so.
A margin that cannot be read (the topic's settings, the record) is unknown, never AT_RISK: the
group is judged as before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..lag.model import LagSnapshot
from ..lag.retention import at_risk, catch_up, duration
from ..lag.retention_reads import retention_margins
from ..lag.snapshot import take_snapshot
from ..lag.verdicts import VerdictRules, partition_series
from .decisions import GroupDecision, Outcome

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient


async def keep_at_risk(
    aclient: AsyncGroupsClient, candidates: list[GroupDecision], history: Sequence[LagSnapshot]
) -> tuple[list[GroupDecision], list[GroupDecision]]:
    """``candidates`` split into those that may still go and those kept as AT_RISK (as decisions)."""
    if not candidates:
        return candidates, []
    ids = [d.group_id for d in candidates]
    now = await take_snapshot(aclient, ids)
    margins = await retention_margins(aclient, now)
    floor_s = VerdictRules().margin_floor_ms / 1000.0
    keep: list[GroupDecision] = []
    go: list[GroupDecision] = []
    for decision in candidates:
        group = now.groups.get(decision.group_id)
        series = partition_series([*history, now], decision.group_id)
        risky = [
            (key, margin)
            for key, margin in (margins.get(decision.group_id) or {}).items()
            if group is not None and at_risk(margin, catch_up(series.get(key, [])), floor_s)
        ]
        if not risky:
            go.append(decision)
            continue
        (topic, partition), margin = min(risky, key=lambda found: found[1].seconds or 0.0)
        keep.append(
            decision.becomes(
                Outcome.KEEP,
                f"AT_RISK: retention may delete its unread records on {topic}[{partition}] in "
                f"{duration(max(margin.seconds or 0.0, 0.0))} at the earliest and it will not read them first; "
                "the cleanup never deletes an AT_RISK group (that would hide the loss): it may go once "
                f"retention has taken them or it caught up; without this: {decision.reason}",
            )
        )
    return go, keep
