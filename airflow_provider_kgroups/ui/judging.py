"""Verdicts and dead-group evidence from the history alone, by the engine's own rules.

* :func:`latest_verdicts`: :func:`..lag.verdicts.group_verdicts` over the latest snapshots.
* :func:`verdict_changes`: the verdict as it was at each snapshot (judged over the window
  ending there), reduced to the moments it changed: what the group page marks on its time axis.
* :func:`history_report`: :func:`..lag.deadgroups.classify_group` with the latest stored
  snapshot as "now": the state, member count and committed offsets it recorded, and the
  snapshots before it as the stored history. The history keeps no topic check by name and no
  Kafka Connect answer, so those rules say "cannot tell" exactly as the engine words it; the
  cleanup decides with a live read, this only shows why a group is (or is not) a candidate.
* :func:`facts_report`: the same report from the per-snapshot facts a rollup keeps
  (:mod:`..history.rollup`) instead of the rows: what the overview judges every Empty group by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..cleanup.report import GroupHealthReport, classify
from ..client.results import CLASSIC, GroupState, TopicPartition
from ..history.store import RECORDED_ERROR
from ..lag.deadgroups import DeadGroupRules
from ..lag.model import LagSnapshot
from ..lag.observation import GroupHistoryPoint, GroupObservation, history_points
from ..lag.verdicts import GroupVerdict, Verdict, VerdictRules, group_verdicts

__all__ = ["latest_verdicts", "verdict_changes", "history_report", "facts_report", "MAX_EVALUATIONS"]

#: At most this many snapshots are judged for the verdict timeline; above it, evenly spaced ones.
MAX_EVALUATIONS = 2_000
#: Committed offsets no stored snapshot can have (no partition -1): stands for "different from now".
_OTHER_OFFSETS = {TopicPartition("", -1): -1}
#: Stands for "a committed offset could not be read" (only whether there is one is read).
_UNREADABLE = frozenset({TopicPartition("", -1)})


def latest_verdicts(
    snapshots: Sequence[LagSnapshot], rules: VerdictRules = VerdictRules()
) -> dict[str, GroupVerdict]:
    """Verdicts of the groups in the newest of ``snapshots`` (any order)."""
    if not snapshots:
        return {}
    return group_verdicts(snapshots, rules)


def verdict_changes(
    snapshots: Sequence[LagSnapshot], group_id: str, rules: VerdictRules = VerdictRules()
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
        verdict = group_verdicts(ordered[start : i + 1], rules, group_ids=[group_id])[group_id]
        if verdict.verdict is not previous:
            changes.append({"at_ms": at, "verdict": verdict.verdict.value, "reason": verdict.reason})
            previous = verdict.verdict
    return changes, len(picked), len(ordered)


def history_report(
    snapshots: Sequence[LagSnapshot], group_id: str, rules: DeadGroupRules
) -> GroupHealthReport | None:
    """The dead-group report of ``group_id`` as of its latest stored snapshot (None: never seen)."""
    points = history_points(snapshots, group_id)
    if not points:
        return None
    at = points[-1].at_ms
    latest = next(s for s in snapshots if s.taken_at_ms == at).groups[group_id]
    return classify(GroupObservation.of_snapshot(latest, at), points[:-1], rules)


def _stand_in_log_end(
    committed: Mapping[TopicPartition, int], to_read: bool, ends_known: bool
) -> dict[TopicPartition, int]:
    """Log ends over ``committed`` with the two facts the rules read from them: a record to read
    (``has_records_to_read``), and every committed partition's log end known."""
    items = list(committed.items())
    if ends_known:
        return {tp: c + 1 if to_read else c for tp, c in items}
    return (
        {items[0][0]: items[0][1] + 1} if to_read else {}
    )  # to_read and a missing end: two partitions or more


def facts_report(
    group_id: str,
    facts: Mapping[str, np.ndarray],
    states: Sequence[GroupState],
    protocol_type: str,
    committed: Mapping[TopicPartition, int],
    unreadable: frozenset[TopicPartition],
    rules: DeadGroupRules,
) -> GroupHealthReport:
    """:func:`history_report` from the group's per-snapshot facts, oldest first, the last one
    being "now": ``at``, ``state`` (indexes into ``states``), ``members``, ``changed`` (committed
    offsets differ from the point before), ``unreadable`` (a committed offset read with an
    error), ``to_read``, ``ends_known``; ``committed`` and ``unreadable``: its partitions now.

    The rules read from a stored point its time, state and members, whether its committed
    offsets equal those of now or of the point before, whether they are empty or unreadable,
    whether a partition had records to read and whether every log end was read
    (``lag.deadgroups``: ``_idle_run``; ``lag.observation``: ``last_progress``, ``empty_since``;
    and the first point's time). So the points kept are the first one and the first and last of
    each stretch where those facts stay the same; a point from the last change of offsets on has
    the offsets of now (exactly: none changed since), one before it offsets that differ (only
    "different from now" is ever read of them). Those points give the report the full history
    gives (tests/ui/test_judging.py)."""
    at, state, members = facts["at"], facts["state"], facts["members"]
    n = len(at) - 1  # the last point is now; the history is 0..n-1
    changes = np.flatnonzero(facts["changed"][1:] == 1) + 1
    last_change = int(changes[-1]) if len(changes) else 0  # 0: offsets of now throughout
    history = [
        _stand_in_point(facts, states, committed, i, now_offsets=i >= last_change)
        for i in _points_kept(facts, states, last_change)
    ]
    obs = GroupObservation(
        group_id,
        int(at[n]),
        states[int(state[n])],
        int(members[n]),
        protocol_type,
        CLASSIC,
        dict(committed),
        {tp: RECORDED_ERROR for tp in sorted(unreadable)},
    )
    return classify(obs, history, rules)


def _points_kept(facts: Mapping[str, np.ndarray], states: Sequence[GroupState], last_change: int) -> Any:
    """Of the stored points 0..n-1: the first and the last of each stretch where the facts the
    rules read stay the same (:func:`facts_report`)."""
    at, state, members = facts["at"], facts["state"], facts["members"]
    n = len(at) - 1
    empty = np.isin(state, [i for i, s in enumerate(states) if s is GroupState.EMPTY]) & (members == 0)
    stretch = np.arange(n + 1) >= max(0, last_change - 1)  # before it, only "Empty without members" is read
    signature = np.stack(
        [
            empty,
            stretch,
            np.where(stretch, state, 0),
            np.where(stretch, members, 0),
            stretch & (np.arange(n + 1) >= last_change),
            stretch & facts["unreadable"],
            stretch & facts["to_read"],
            stretch & facts["ends_known"],
        ]
    )
    differs = (signature[:, 1:] != signature[:, :-1]).any(axis=0)
    return np.flatnonzero(np.r_[True, differs[: n - 1]] | np.r_[differs[: n - 1], True]) if n else []


def _stand_in_point(
    facts: Mapping[str, np.ndarray],
    states: Sequence[GroupState],
    committed: Mapping[TopicPartition, int],
    i: int,
    *,
    now_offsets: bool,
) -> GroupHistoryPoint:
    """Stored point ``i`` with the facts the rules read of it: the offsets of now from the last
    change of offsets on, offsets that differ from now before it."""
    to_read, ends_known = facts["to_read"], facts["ends_known"]
    offsets = committed if now_offsets else _OTHER_OFFSETS
    log_end = (
        _stand_in_log_end(committed, bool(to_read[i]), bool(ends_known[i]))
        if now_offsets and committed
        else {}
    )
    return GroupHistoryPoint(
        int(facts["at"][i]),
        states[int(facts["state"][i])],
        int(facts["members"][i]),
        offsets,
        log_end,
        _UNREADABLE if facts["unreadable"][i] else frozenset(),
    )
