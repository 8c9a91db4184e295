"""The one renderer of lag verdicts: findings (:mod:`.verdicts`) in, the sentences the CLI, the
UI, the logs, the Spark job and the gate's messages show. Nothing decides here."""

from __future__ import annotations

from typing import Protocol

from ..client.results import GroupState
from .retention import duration
from .verdict_findings import GroupReason, Verdict, VerdictFinding, VerdictReason

__all__ = [
    "GroupVerdictLike",
    "PartitionVerdictLike",
    "finding_text",
    "group_text",
    "minutes",
    "partition_line",
]

#: The reasons of an OK verdict: without the log start they become UNKNOWN (LOST not ruled out).
_OK_REASONS = frozenset(
    {
        VerdictReason.CAUGHT_UP,
        VerdictReason.WITHIN_ALLOWED,
        VerdictReason.MOVING,
        VerdictReason.NOT_GROWING,
        VerdictReason.NOTHING_TO_READ,
    }
)
#: Verdicts whose group line says how many members the group has and in which state.
_WITH_MEMBERS = frozenset({Verdict.ABANDONED, Verdict.STOP, Verdict.STALL})


class PartitionVerdictLike(Protocol):
    """What the renderer reads of a :class:`.verdicts.PartitionVerdict`."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def finding(self) -> VerdictFinding: ...


class GroupVerdictLike(Protocol):
    """What the renderer reads of a :class:`.verdicts.GroupVerdict`."""

    @property
    def verdict(self) -> Verdict: ...
    @property
    def cause(self) -> GroupReason: ...
    @property
    def partitions(self) -> tuple[PartitionVerdictLike, ...]: ...
    @property
    def worst(self) -> PartitionVerdictLike | None: ...
    @property
    def same(self) -> int: ...
    @property
    def members(self) -> int: ...
    @property
    def state(self) -> GroupState | None: ...


def minutes(ms: int | None) -> str:
    return f"{(ms or 0) / 60_000:.1f} min"


def risk_text(f: VerdictFinding) -> str:
    """AT_RISK: the margin (a lower bound), the catch-up time and which of the two rules it met."""
    margin = (
        f"retention may delete its first unread record in {duration(max(f.margin_s, 0.0))} at the earliest"
        if f.margin_s is not None
        else "retention may delete its first unread record"
    )
    if f.never_catches_up:
        eta = "at current rates it never catches up (it reads slower than the producers write)"
    elif f.catch_up_s is not None:
        eta = f"at current rates it catches up in {duration(f.catch_up_s)}"
    else:
        eta = "its catch-up time is not known yet (one check)"
    floor = (
        f"; below the floor of {duration(f.margin_floor_s)}"
        if f.margin_floor_s is not None and f.margin_s is not None and f.margin_s < f.margin_floor_s
        else ""
    )
    return f"{margin} (lag {f.lag}); {eta}{floor}" + (f"; the other rules said {f.then}" if f.then else "")


def _rule_text(f: VerdictFinding) -> str:
    reason = f.reason
    if reason is VerdictReason.NO_SNAPSHOT:
        return "no snapshot of this partition"
    if reason is VerdictReason.UNREADABLE:
        return "its offsets could not be read in the latest snapshot"
    if reason is VerdictReason.NEVER_COMMITTED:
        return f"no committed offset for {minutes(f.for_ms)} while the log grew by {f.grew_by} records"
    if reason is VerdictReason.NOTHING_TO_READ:
        return "no committed offset, and nothing to read"
    if reason is VerdictReason.NO_COMMIT:
        return "no committed offset: the lag is unknown under the chosen policy"
    if reason is VerdictReason.BELOW_LOG_START:
        return (
            f"committed offset {f.committed} is below the log start {f.log_start}: {f.deleted} records were "
            "deleted by retention unread"
        )
    if reason is VerdictReason.WENT_BACK:
        return (
            f"committed offset went back from {f.went_back_from} to {f.committed} in the last "
            f"{minutes(f.window_ms)} and has not caught up with where it was"
        )
    if reason is VerdictReason.CAUGHT_UP:
        return "caught up"
    if reason is VerdictReason.WITHIN_ALLOWED:
        return f"lag {f.lag} is within the allowed {f.allowed_lag}"
    if reason is VerdictReason.TOPIC_LEFT:
        return (
            f"the group stopped consuming the topic: no member is assigned a partition of it, and the committed "
            f"offset stayed at {f.committed} for {minutes(f.for_ms)} (lag {f.lag}): its old commit stays behind"
        )
    if reason is VerdictReason.STUCK_WHILE_GROWING:
        return (
            f"committed offset stuck at {f.committed} for {minutes(f.for_ms)} while the log grew by "
            f"{f.grew_by} records (lag {f.lag})"
        )
    if reason is VerdictReason.STUCK:
        return (
            f"committed offset stuck at {f.committed} for {minutes(f.for_ms)} with {f.lag} records to read "
            "(the log end is not moving)"
        )
    if reason is VerdictReason.GROWING:
        return (
            f"lag growing by {f.slope_per_s:.2f} records/s over {minutes(f.for_ms)} ({f.first_lag} -> {f.lag}; "
            f"rose in {f.rises} of {f.steps} steps)"
        )
    if reason is VerdictReason.MOVING:
        return f"lag {f.lag}, committed offset moving"
    if reason is VerdictReason.NOT_GROWING:
        return f"lag {f.lag}, not growing"
    if reason is VerdictReason.MAY_BE_DELETED:
        return risk_text(f)
    assert reason is VerdictReason.TOO_FEW_POINTS
    return (
        f"lag {f.lag} and the committed offset has not moved, with {f.points} of the {f.points_needed} "
        f"snapshots in the last {minutes(f.window_ms)} needed to tell whether the lag is growing"
    )


def finding_text(f: VerdictFinding) -> str:
    """A partition's finding as one sentence."""
    text = _rule_text(f)
    if not f.log_start_unread:
        return text
    if f.reason in _OK_REASONS:
        return (
            f"its log start could not be read in the latest snapshot, so LOST (records deleted by retention "
            f"unread) cannot be ruled out; the other rules found: {text}"
        )
    return f"{text}; its log start could not be read, so LOST cannot be ruled out"


def partition_line(v: PartitionVerdictLike) -> str:
    """``topic[partition]: <the finding>``."""
    return f"{v.topic}[{v.partition}]: {finding_text(v.finding)}"


def group_text(v: GroupVerdictLike) -> str:
    """A group's verdict as one sentence: its worst partition's finding (and how many share it)."""
    if v.cause is GroupReason.NOT_READ:
        return "the group could not be read in the latest snapshot"
    if v.cause is GroupReason.NO_PARTITIONS:
        return "the group has no partitions (no committed offset, no assigned partition): nothing to judge"
    if v.cause is GroupReason.ALL_OK:
        return f"all {len(v.partitions)} partitions OK"
    worst = v.worst
    assert worst is not None
    if v.verdict is Verdict.OK:
        return finding_text(worst.finding)
    more = f" ({v.same - 1} more partition(s) {v.verdict.value})" if v.same > 1 else ""
    text = f"{partition_line(worst)}{more}"
    if v.verdict in _WITH_MEMBERS:
        state = v.state.value if v.state is not None else "unknown"
        text += f"; the group has {v.members} member(s), state {state}"
    return text
