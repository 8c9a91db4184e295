"""Verdicts and dead-group evidence from the history alone, by the engine's own rules.

* :func:`latest_verdicts`: :func:`..lag.verdicts.group_verdicts` over the latest snapshots.
* :func:`verdict_changes`: the verdict as it was at each snapshot (judged over the window
  ending there), reduced to the moments it changed: what the group page marks on its time axis.
* :func:`history_report`: :func:`..lag.deadgroups.classify_group` with the latest stored
  snapshot as "now": the state, member count and committed offsets it recorded, and the
  snapshots before it as the stored history. The history keeps no topic check by name and no
  Kafka Connect answer, so those rules say "cannot tell" exactly as the engine words it; the
  cleanup decides with a live read, this only shows why a group is (or is not) a candidate.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..client.results import GroupDescription, GroupOffsets, CommittedOffset, GroupState, MemberDescription
from ..lag.deadgroups import DeadGroupRules, GroupHealthReport, classify_group, history_points
from ..lag.model import LagSnapshot
from ..lag.verdicts import GroupVerdict, Verdict, VerdictRules, group_verdicts

__all__ = ["latest_verdicts", "verdict_changes", "history_report", "MAX_EVALUATIONS"]

#: At most this many snapshots are judged for the verdict timeline; above it, evenly spaced ones.
MAX_EVALUATIONS = 2_000


def latest_verdicts(snapshots: Sequence[LagSnapshot], rules: VerdictRules = VerdictRules()) -> dict[str, GroupVerdict]:
    """Verdicts of the groups in the newest of ``snapshots`` (any order)."""
    if not snapshots:
        return {}
    return group_verdicts(snapshots, rules)


def verdict_changes(snapshots: Sequence[LagSnapshot], group_id: str, rules: VerdictRules = VerdictRules()
                    ) -> tuple[list[dict[str, Any]], int, int]:
    """``(changes, judged, snapshots)``: each change of the group's verdict (time, verdict,
    reason), the first judged snapshot included; how many snapshots were judged of how many."""
    ordered = sorted((s for s in snapshots if group_id in s.groups), key=lambda s: s.taken_at_ms)
    if not ordered:
        return [], 0, 0
    step = max(1, -(-len(ordered) // MAX_EVALUATIONS))
    picked = list(range(0, len(ordered), step))
    if picked[-1] != len(ordered) - 1:
        picked.append(len(ordered) - 1)
    changes: list[dict[str, Any]] = []
    start = 0
    previous: Verdict | None = None
    for i in picked:
        at = ordered[i].taken_at_ms
        while ordered[start].taken_at_ms < at - rules.window_ms:
            start += 1
        verdict = group_verdicts(ordered[start:i + 1], rules, group_ids=[group_id])[group_id]
        if verdict.verdict is not previous:
            changes.append({"at_ms": at, "verdict": verdict.verdict.value, "reason": verdict.reason})
            previous = verdict.verdict
    return changes, len(picked), len(ordered)


def _placeholder_members(count: int) -> tuple[MemberDescription, ...]:
    """The history keeps how many members a group had, not who: the rules use only the count."""
    return tuple(MemberDescription(f"member-{i + 1}", None, "", "", ()) for i in range(count))


def history_report(snapshots: Iterable[LagSnapshot], group_id: str, rules: DeadGroupRules
                   ) -> GroupHealthReport | None:
    """The dead-group report of ``group_id`` as of its latest stored snapshot (None: never seen)."""
    points = history_points(snapshots, group_id)
    if not points:
        return None
    ordered = sorted((s for s in snapshots if group_id in s.groups), key=lambda s: s.taken_at_ms)
    latest = ordered[-1].groups[group_id]
    description = GroupDescription(group_id, latest.state, latest.protocol_type, "", _placeholder_members(latest.members),
                                   -1)
    offsets = GroupOffsets(group_id, {p.tp: CommittedOffset(p.committed) for p in latest.partitions
                                      if p.committed is not None})
    if latest.state is GroupState.DEAD and not offsets.partitions:
        offsets = None
    return classify_group(group_id, description, offsets, None, points[:-1], rules, now_ms=points[-1].at_ms)
