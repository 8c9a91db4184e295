"""Verdicts over a window of snapshots, per partition and per group: time-based, not
commit-count-based, so detection time does not depend on how often a group commits.

Inputs: a partition's points (snapshot time, committed, log start, log end, lag) from a
sequence of snapshots, such as the history store returns. *Now* is the time of the latest
point; the *window* is the points taken in the last ``window_ms`` before it. Kafka does not
expose commit times, so "no commits" below means "the committed offset did not change".
Defaults (:class:`VerdictRules`): ``window_ms`` 30 min, ``stuck_after_ms`` 10 min (at most
the window), ``min_points`` 3, ``allowed_lag`` 0. Points whose offsets could not be read are
left out of every rule.

Rules for a partition, the first that matches wins:

1. **LOST** - at the latest point the committed offset is below the log-start offset:
   records the group never read were deleted by retention.
2. **REWIND** - the latest committed offset is lower than the highest committed offset
   seen earlier in the window: the group went back (a reset) and has not yet passed where
   it had been.
3. **OK** - the latest lag is <= ``allowed_lag``: caught up. A slow topic with nothing new
   to read (log end not moving, lag 0) is OK, however long since the last commit.
4. **STOP** / **STALL** - the committed offset has been stuck: the trailing run of points
   with the same committed offset *and* lag > ``allowed_lag`` spans at least
   ``stuck_after_ms``. The run starts only when there was something to read, so a commit
   that stayed put through hours of idleness counts from the first record that arrived.
   STOP when the log end grew during that run (no commits while the log grows); STALL when
   it did not (offset not moving while lag > 0, nothing new being produced).
5. **WARN** - the lag is growing over the window: at least ``min_points`` points, the
   least-squares slope of lag over time is positive, the lag rose in more than half of the
   steps between consecutive points, and the latest lag exceeds the window's first lag by
   more than ``allowed_lag``. The regression keeps one dip from hiding a growing trend
   (Burrow's "lag never fell" rule is reset by a single dip); the majority of rising steps
   keeps one burst, or one new record after an idle spell, from counting as a trend.
6. **OK** - otherwise, when the window shows it: the committed offset moved, or there are at
   least ``min_points`` points (so rule 5 would have seen a growing lag). With fewer points, a
   lag and no commit in the window, the partition is **UNKNOWN**: one snapshot proves nothing.

A partition without a committed offset at the latest point: **STOP** if it has had no
commit for at least ``stuck_after_ms`` while its log end grew; **OK** if there is nothing
to read (empty partition, or the unknown-lag policy gives a lag <= ``allowed_lag``);
otherwise **UNKNOWN**. A partition whose offsets could not be read at the latest point is
**UNKNOWN**: a verdict is never OK by default. A partition whose log start could not be read
(its log end could) cannot be ruled LOST or not: where the rules above say **OK** it is
**UNKNOWN**, and any other verdict's reason says that LOST cannot be ruled out; at the log end
(committed >= log end >= log start) nothing unread can have been deleted, so it is judged as usual.

A group's verdict is its worst partition's, in the order OK < UNKNOWN < WARN < STALL <
STOP < REWIND < LOST; its reason is ``topic[partition]: <that partition's reason>``, plus how
many other partitions share the verdict, plus the member count and state for STOP and
STALL. Only the partitions the group has in the latest snapshot are judged. A group absent
from the latest snapshot is UNKNOWN, and so is a group with no partitions (nothing shows it is
fine).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, Sequence

from ..client.errors import ConfigurationError
from ..client.frozen import fast_init
from ..client.numbers import check_int
from .model import GroupLag, LagFlag, LagSnapshot, PartitionLag

__all__ = ["Verdict", "VerdictRules", "LagPoint", "PartitionVerdict", "GroupVerdict", "partition_verdict",
           "group_verdicts", "lag_slope_per_s"]

_SEVERITY = ("OK", "UNKNOWN", "WARN", "STALL", "STOP", "REWIND", "LOST")


class Verdict(str, Enum):
    OK = "OK"
    UNKNOWN = "UNKNOWN"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"
    REWIND = "REWIND"
    LOST = "LOST"

    @property
    def severity(self) -> int:
        return _SEVERITY.index(self.value)


@dataclass(frozen=True, slots=True)
class VerdictRules:
    window_ms: int = 30 * 60_000
    stuck_after_ms: int = 10 * 60_000
    min_points: int = 3
    allowed_lag: int = 0  # e.g. 1 on transactional topics read without read_committed

    def __post_init__(self) -> None:
        for name in ("window_ms", "stuck_after_ms", "min_points", "allowed_lag"):
            check_int(name, getattr(self, name), at_least=0, must_be="a non-negative int")
        if self.window_ms <= 0:
            raise ConfigurationError(f"window_ms must be > 0, got {self.window_ms}.")
        if self.stuck_after_ms > self.window_ms:
            raise ConfigurationError(f"stuck_after_ms ({self.stuck_after_ms}) must not exceed window_ms "
                                     f"({self.window_ms}): a stuck offset is judged inside the window.")
        if self.min_points < 2:
            raise ConfigurationError(f"min_points must be >= 2 (a trend needs two points), got {self.min_points}.")


@fast_init  # one per partition and snapshot a verdict looks back on
@dataclass(frozen=True, slots=True)
class LagPoint:
    at_ms: int
    committed: int | None
    log_start: int | None
    log_end: int | None
    lag: int | None
    flags: frozenset[LagFlag] = frozenset()

    @classmethod
    def of(cls, at_ms: int, p: PartitionLag) -> "LagPoint":
        return cls(at_ms, p.committed, p.log_start, p.log_end, p.lag, p.flags)

    @property
    def readable(self) -> bool:
        return LagFlag.ERROR not in self.flags and self.log_end is not None


@fast_init
@dataclass(frozen=True, slots=True)
class PartitionVerdict:
    topic: str
    partition: int
    verdict: Verdict
    reason: str
    lag: int | None = None
    points: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "verdict": self.verdict.value,
                "reason": self.reason, "lag": self.lag, "points": self.points}


@fast_init
@dataclass(frozen=True, slots=True)
class GroupVerdict:
    group_id: str
    verdict: Verdict
    reason: str
    partitions: tuple[PartitionVerdict, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "verdict": self.verdict.value, "reason": self.reason,
                "partitions": [p.to_dict() for p in self.partitions]}


def lag_slope_per_s(points: Sequence[LagPoint]) -> float:
    """Least-squares slope of lag over time, in offsets per second (0 with < 2 distinct times)."""
    xs = [(p.at_ms - points[0].at_ms) / 1000.0 for p in points]
    ys = [float(p.lag) for p in points]  # type: ignore[arg-type]
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / var


def _minutes(ms: int) -> str:
    return f"{ms / 60_000:.1f} min"


def _no_commit_verdict(window: list[LagPoint], rules: VerdictRules) -> tuple[Verdict, str]:
    latest = window[-1]
    run = []
    for point in reversed(window):
        if point.committed is not None or not point.readable:
            break
        run.append(point)
    run.reverse()
    never_ms = latest.at_ms - run[0].at_ms if run else 0
    growth = latest.log_end - run[0].log_end if run else 0  # type: ignore[operator]
    if run and never_ms >= rules.stuck_after_ms and growth > 0:
        return Verdict.STOP, f"no committed offset for {_minutes(never_ms)} while the log grew by {growth} records"
    if latest.log_end == latest.log_start or (latest.lag is not None and latest.lag <= rules.allowed_lag):
        return Verdict.OK, "no committed offset, and nothing to read"
    return Verdict.UNKNOWN, "no committed offset: the lag is unknown under the chosen policy"


def partition_verdict(points: Sequence[LagPoint], rules: VerdictRules = VerdictRules()) -> tuple[Verdict, str]:
    """The verdict and its one-sentence reason for one partition's points (any order)."""
    ordered = sorted(points, key=lambda p: p.at_ms)
    if not ordered:
        return Verdict.UNKNOWN, "no snapshot of this partition"
    latest = ordered[-1]
    window = [p for p in ordered if p.at_ms >= latest.at_ms - rules.window_ms]
    if not latest.readable:
        return Verdict.UNKNOWN, "its offsets could not be read in the latest snapshot"
    if latest.committed is None:
        return _no_commit_verdict(window, rules)
    verdict, reason = _committed_verdict(latest, window, rules)
    # LOST needs the log start; without it, records the group never read may have been deleted,
    # unless the group is at the log end (log start <= log end <= committed)
    if latest.log_start is not None or latest.committed >= latest.log_end:  # type: ignore[operator]
        return verdict, reason
    if verdict is Verdict.OK:
        return Verdict.UNKNOWN, (f"its log start could not be read in the latest snapshot, so LOST (records deleted "
                                 f"by retention unread) cannot be ruled out; the other rules found: {reason}")
    return verdict, f"{reason}; its log start could not be read, so LOST cannot be ruled out"


def _committed_verdict(latest: LagPoint, window: list[LagPoint], rules: VerdictRules) -> tuple[Verdict, str]:
    """Rules 1-6 for a partition whose latest point is readable and has a committed offset."""
    assert latest.committed is not None
    known = [p for p in window if p.readable and p.committed is not None and p.lag is not None]
    # 1. LOST
    if latest.log_start is not None and latest.committed < latest.log_start:
        return Verdict.LOST, (f"committed offset {latest.committed} is below the log start {latest.log_start}: "
                              f"{latest.log_start - latest.committed} records were deleted by retention unread")
    # 2. REWIND
    earlier_max = max((p.committed for p in known[:-1]), default=None)
    if earlier_max is not None and latest.committed < earlier_max:
        return Verdict.REWIND, (f"committed offset went back from {earlier_max} to {latest.committed} in the last "
                                f"{_minutes(rules.window_ms)} and has not caught up with where it was")
    # 3. caught up
    if latest.lag is not None and latest.lag <= rules.allowed_lag:
        return Verdict.OK, ("caught up" if latest.lag == 0
                            else f"lag {latest.lag} is within the allowed {rules.allowed_lag}")
    # 4. STOP / STALL
    run = []
    for point in reversed(known):
        if point.committed != latest.committed or point.lag is None or point.lag <= rules.allowed_lag:
            break
        run.append(point)
    run.reverse()
    stuck_ms = latest.at_ms - run[0].at_ms if run else 0
    if stuck_ms >= rules.stuck_after_ms and stuck_ms > 0:
        growth = latest.log_end - run[0].log_end  # type: ignore[operator]
        if growth > 0:
            return Verdict.STOP, (f"committed offset stuck at {latest.committed} for {_minutes(stuck_ms)} while the "
                                  f"log grew by {growth} records (lag {latest.lag})")
        return Verdict.STALL, (f"committed offset stuck at {latest.committed} for {_minutes(stuck_ms)} with "
                               f"{latest.lag} records to read (the log end is not moving)")
    # 5. WARN
    if len(known) >= rules.min_points:
        slope = lag_slope_per_s(known)
        steps = list(zip(known, known[1:]))
        rises = sum(1 for a, b in steps if b.lag > a.lag)  # type: ignore[operator]
        growth = latest.lag - known[0].lag  # type: ignore[operator]
        if slope > 0 and 2 * rises > len(steps) and growth > rules.allowed_lag:
            span = _minutes(latest.at_ms - known[0].at_ms)
            return Verdict.WARN, (f"lag growing by {slope:.2f} records/s over {span} "
                                  f"({known[0].lag} -> {latest.lag}; rose in {rises} of {len(steps)} steps)")
    # 6. OK, when the window shows it: the committed offset moved, or enough points for the
    #    trend rule (5) to have seen a growing lag; fewer points with a lag and no commit prove nothing
    moved = known[0].committed != latest.committed if known else False
    if moved:
        return Verdict.OK, f"lag {latest.lag}, committed offset moving"
    if len(known) >= rules.min_points:
        return Verdict.OK, f"lag {latest.lag}, not growing"
    return Verdict.UNKNOWN, (f"lag {latest.lag} and the committed offset has not moved, with {len(known)} of the "
                             f"{rules.min_points} snapshots in the last {_minutes(rules.window_ms)} needed to tell "
                             "whether the lag is growing")


def _series(snapshots: Sequence[LagSnapshot], group_id: str) -> dict[tuple[str, int], list[LagPoint]]:
    """Each partition's points, keyed ``(topic, partition)`` (sorts as ``TopicPartition`` does;
    a tuple key costs a third of building and hashing one per point)."""
    series: dict[tuple[str, int], list[LagPoint]] = {}
    for snapshot in snapshots:
        group = snapshot.groups.get(group_id)
        if group is None:
            continue
        for p in group.partitions:
            series.setdefault((p.topic, p.partition), []).append(LagPoint.of(snapshot.taken_at_ms, p))
    return series


def _group_verdict(group_id: str, latest: GroupLag | None, snapshots: Sequence[LagSnapshot],
                   rules: VerdictRules) -> GroupVerdict:
    if latest is None:
        return GroupVerdict(group_id, Verdict.UNKNOWN, "the group could not be read in the latest snapshot")
    current = {(p.topic, p.partition) for p in latest.partitions}
    verdicts = []
    for key, points in sorted(_series(snapshots, group_id).items()):
        if key not in current:
            continue  # the group no longer has this partition
        verdict, reason = partition_verdict(points, rules)
        window_start = points[-1].at_ms - rules.window_ms
        verdicts.append(PartitionVerdict(*key, verdict, reason, points[-1].lag,
                                         sum(1 for p in points if p.at_ms >= window_start)))
    if not verdicts:  # nothing shows it is fine (the threshold gate waits on such a group too)
        return GroupVerdict(group_id, Verdict.UNKNOWN, "the group has no partitions (no committed offset, no "
                                                       "assigned partition): nothing to judge")
    worst = max(verdicts, key=lambda v: v.verdict.severity)
    same = sum(1 for v in verdicts if v.verdict is worst.verdict)
    more = f" ({same - 1} more partition(s) {worst.verdict.value})" if same > 1 else ""
    if worst.verdict is Verdict.OK:
        reason = worst.reason if len(verdicts) == 1 else f"all {len(verdicts)} partitions OK"
    else:
        reason = f"{worst.topic}[{worst.partition}]: {worst.reason}{more}"
    if worst.verdict in (Verdict.STOP, Verdict.STALL):
        reason += f"; the group has {latest.members} member(s), state {latest.state.value}"
    return GroupVerdict(group_id, worst.verdict, reason, tuple(verdicts))


def group_verdicts(snapshots: Iterable[LagSnapshot], rules: VerdictRules = VerdictRules(), *,
                   group_ids: Iterable[str] | None = None) -> dict[str, GroupVerdict]:
    """Verdicts of ``group_ids`` (default: every group in the latest snapshot) from snapshots
    in any order; the latest one decides which groups and partitions exist."""
    ordered = sorted(snapshots, key=lambda s: s.taken_at_ms)
    if not ordered:
        raise ConfigurationError("no snapshots: verdicts need at least one snapshot.")
    newest = ordered[-1]
    window = [s for s in ordered if s.taken_at_ms >= newest.taken_at_ms - rules.window_ms]
    ids = list(group_ids) if group_ids is not None else list(newest.groups)
    return {g: _group_verdict(g, newest.groups.get(g), window, rules) for g in ids}
