"""Verdicts over a window of snapshots, per partition and per group: time-based, not
commit-count-based, so detection time does not depend on how often a group commits.

Each rule returns a value: the verdict, a :class:`VerdictReason` and the numbers it measured
(:class:`VerdictFinding`); no sentence is written here. :mod:`.verdict_text` renders findings
for the CLI, the UI, the logs and the gate's messages (``PartitionVerdict.reason`` and
``GroupVerdict.reason`` are its rendering).

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
4. **ABANDONED** / **STOP** / **STALL** - the committed offset has been stuck: the trailing
   run of points with the same committed offset *and* lag > ``allowed_lag`` spans at least
   ``stuck_after_ms``. The run starts only when there was something to read, so a commit
   that stayed put through hours of idleness counts from the first record that arrived.
   ABANDONED when, at every point of that run, the group was Stable with members and none of
   them was assigned a partition of the topic (``LagFlag.TOPIC_UNASSIGNED``, set by the
   snapshot): the group stopped consuming the topic and its old commits stay behind. Else
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
STOP < ABANDONED < REWIND < LOST; its reason is ``topic[partition]: <that partition's reason>``,
plus how many other partitions share the verdict, plus the member count and state for
ABANDONED, STOP and STALL. Only the partitions the group has in the latest snapshot are judged. A group absent
from the latest snapshot is UNKNOWN, and so is a group with no partitions (nothing shows it is
fine).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..client.errors import ConfigurationError
from ..client.frozen import fast_init
from ..client.numbers import check_int
from ..client.results import GroupState
from .model import GroupLag, LagFlag, LagSnapshot, PartitionLag
from .retention import RetentionMargin, at_risk, catch_up
from .verdict_findings import GroupReason, Verdict, VerdictFinding, VerdictReason
from .verdict_text import finding_text, group_text

__all__ = [
    "Verdict",
    "VerdictReason",
    "VerdictFinding",
    "GroupReason",
    "VerdictRules",
    "LagPoint",
    "PartitionVerdict",
    "GroupVerdict",
    "judge_partition",
    "partition_verdict",
    "group_verdicts",
    "lag_slope_per_s",
    "partition_series",
]


@dataclass(frozen=True, slots=True)
class VerdictRules:
    window_ms: int = 30 * 60_000
    stuck_after_ms: int = 10 * 60_000
    min_points: int = 3
    allowed_lag: int = 0  # e.g. 1 on transactional topics read without read_committed
    margin_floor_ms: int = 60 * 60_000  # AT_RISK below this retention margin, whatever the catch-up time

    def __post_init__(self) -> None:
        for name in ("window_ms", "stuck_after_ms", "min_points", "allowed_lag", "margin_floor_ms"):
            check_int(name, getattr(self, name), at_least=0, must_be="a non-negative int")
        if self.window_ms <= 0:
            raise ConfigurationError(f"window_ms must be > 0, got {self.window_ms}.")
        if self.stuck_after_ms > self.window_ms:
            raise ConfigurationError(
                f"stuck_after_ms ({self.stuck_after_ms}) must not exceed window_ms "
                f"({self.window_ms}): a stuck offset is judged inside the window."
            )
        if self.min_points < 2:
            raise ConfigurationError(
                f"min_points must be >= 2 (a trend needs two points), got {self.min_points}."
            )


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
    def of(cls, at_ms: int, p: PartitionLag) -> LagPoint:
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
    finding: VerdictFinding
    lag: int | None = None
    points: int = 0

    @property
    def reason(self) -> str:
        """The finding in words (:mod:`.verdict_text`)."""
        return finding_text(self.finding)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "finding": self.finding.to_dict(),
            "lag": self.lag,
            "points": self.points,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """A group's verdict. ``worst``: the partition it comes from (WORST_PARTITION, ALL_OK), ``same``
    how many partitions share it; ``members`` and ``state`` as in the latest snapshot."""

    group_id: str
    verdict: Verdict
    cause: GroupReason
    partitions: tuple[PartitionVerdict, ...] = ()
    worst: PartitionVerdict | None = None
    same: int = 0
    members: int = 0
    state: GroupState | None = None

    @property
    def reason(self) -> str:
        """The verdict in words (:mod:`.verdict_text`)."""
        return group_text(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "cause": self.cause.value,
            "partitions": [p.to_dict() for p in self.partitions],
        }


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


def _no_commit_verdict(window: list[LagPoint], rules: VerdictRules) -> VerdictFinding:
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
        return VerdictFinding(
            Verdict.STOP, VerdictReason.NEVER_COMMITTED, lag=latest.lag, grew_by=growth, for_ms=never_ms
        )
    if latest.log_end == latest.log_start or (latest.lag is not None and latest.lag <= rules.allowed_lag):
        return VerdictFinding(Verdict.OK, VerdictReason.NOTHING_TO_READ, lag=latest.lag)
    return VerdictFinding(Verdict.UNKNOWN, VerdictReason.NO_COMMIT)


def judge_partition(
    points: Sequence[LagPoint], rules: VerdictRules = VerdictRules(), margin: RetentionMargin | None = None
) -> VerdictFinding:
    """What the rules find for one partition's points (any order); with its retention ``margin``,
    AT_RISK where :func:`.retention.at_risk` says so and no record is lost yet."""
    found = _judge(points, rules)
    if margin is None or margin.seconds is None or found.verdict is Verdict.LOST:
        return found
    latest = max(points, key=lambda p: p.at_ms)
    if latest.lag is None or latest.lag <= rules.allowed_lag:
        return found
    window = [p for p in points if p.at_ms >= latest.at_ms - rules.window_ms]
    eta = catch_up(window)
    floor_s = rules.margin_floor_ms / 1000.0
    if not at_risk(margin, eta, floor_s):
        return found
    return VerdictFinding(
        Verdict.AT_RISK,
        VerdictReason.MAY_BE_DELETED,
        committed=latest.committed,
        lag=latest.lag,
        margin_s=margin.seconds,
        catch_up_s=eta.seconds,
        never_catches_up=eta.never,
        margin_floor_s=floor_s,
        then=None if found.verdict is Verdict.OK else found.verdict.value,
    )


def _judge(points: Sequence[LagPoint], rules: VerdictRules) -> VerdictFinding:
    ordered = sorted(points, key=lambda p: p.at_ms)
    if not ordered:
        return VerdictFinding(Verdict.UNKNOWN, VerdictReason.NO_SNAPSHOT)
    latest = ordered[-1]
    window = [p for p in ordered if p.at_ms >= latest.at_ms - rules.window_ms]
    if not latest.readable:
        return VerdictFinding(Verdict.UNKNOWN, VerdictReason.UNREADABLE)
    if latest.committed is None:
        return _no_commit_verdict(window, rules)
    found = _committed_verdict(latest, window, rules)
    # LOST needs the log start; without it, records the group never read may have been deleted,
    # unless the group is at the log end (log start <= log end <= committed)
    if latest.log_start is not None or latest.committed >= latest.log_end:  # type: ignore[operator]
        return found
    verdict = Verdict.UNKNOWN if found.verdict is Verdict.OK else found.verdict
    return replace(found, verdict=verdict, log_start_unread=True)


def partition_verdict(
    points: Sequence[LagPoint], rules: VerdictRules = VerdictRules()
) -> tuple[Verdict, str]:
    """The verdict and its one-sentence reason for one partition's points (any order):
    :func:`judge_partition` rendered by :mod:`.verdict_text`."""
    found = judge_partition(points, rules)
    return found.verdict, finding_text(found)


def _committed_verdict(latest: LagPoint, window: list[LagPoint], rules: VerdictRules) -> VerdictFinding:
    """Rules 1-6 for a partition whose latest point is readable and has a committed offset: the
    first of :data:`_COMMITTED_RULES` that finds something, else rule 6."""
    assert latest.committed is not None and latest.log_end is not None
    known = [p for p in window if p.readable and p.committed is not None and p.lag is not None]
    for rule in _COMMITTED_RULES:
        found = rule(latest, latest.committed, known, rules)
        if found is not None:
            return found
    return _settled(latest, latest.committed, known, rules)


def _lost(
    latest: LagPoint, committed: int, known: list[LagPoint], rules: VerdictRules
) -> VerdictFinding | None:
    """1. LOST: the committed offset is below the log start."""
    if latest.log_start is None or committed >= latest.log_start:
        return None
    return VerdictFinding(
        Verdict.LOST,
        VerdictReason.BELOW_LOG_START,
        committed,
        latest.lag,
        latest.log_start,
        deleted=latest.log_start - committed,
    )


def _rewind(
    latest: LagPoint, committed: int, known: list[LagPoint], rules: VerdictRules
) -> VerdictFinding | None:
    """2. REWIND: below the highest committed offset earlier in the window."""
    earlier_max = max((p.committed for p in known[:-1] if p.committed is not None), default=None)
    if earlier_max is None or committed >= earlier_max:
        return None
    return VerdictFinding(
        Verdict.REWIND,
        VerdictReason.WENT_BACK,
        committed,
        latest.lag,
        went_back_from=earlier_max,
        window_ms=rules.window_ms,
    )


def _caught_up(
    latest: LagPoint, committed: int, known: list[LagPoint], rules: VerdictRules
) -> VerdictFinding | None:
    """3. OK: the lag is within ``allowed_lag``."""
    lag = latest.lag
    if lag is None or lag > rules.allowed_lag:
        return None
    if lag == 0:
        return VerdictFinding(Verdict.OK, VerdictReason.CAUGHT_UP, committed, lag)
    return VerdictFinding(
        Verdict.OK, VerdictReason.WITHIN_ALLOWED, committed, lag, allowed_lag=rules.allowed_lag
    )


def _stuck(
    latest: LagPoint, committed: int, known: list[LagPoint], rules: VerdictRules
) -> VerdictFinding | None:
    """4. ABANDONED / STOP / STALL: the trailing run of points with this committed offset and
    something to read spans ``stuck_after_ms``."""
    run = []
    for point in reversed(known):
        if point.committed != committed or point.lag is None or point.lag <= rules.allowed_lag:
            break
        run.append(point)
    run.reverse()
    stuck_ms = latest.at_ms - run[0].at_ms if run else 0
    if stuck_ms < rules.stuck_after_ms or stuck_ms <= 0:
        return None
    lag = latest.lag
    growth = latest.log_end - run[0].log_end  # type: ignore[operator]
    if all(LagFlag.TOPIC_UNASSIGNED in p.flags for p in run):
        return VerdictFinding(
            Verdict.ABANDONED, VerdictReason.TOPIC_LEFT, committed, lag, grew_by=growth, for_ms=stuck_ms
        )
    if growth > 0:
        return VerdictFinding(
            Verdict.STOP, VerdictReason.STUCK_WHILE_GROWING, committed, lag, grew_by=growth, for_ms=stuck_ms
        )
    return VerdictFinding(Verdict.STALL, VerdictReason.STUCK, committed, lag, for_ms=stuck_ms)


def _growing(
    latest: LagPoint, committed: int, known: list[LagPoint], rules: VerdictRules
) -> VerdictFinding | None:
    """5. WARN: enough points, a positive slope, most steps rising, and the lag above the first."""
    if len(known) < rules.min_points:
        return None
    slope = lag_slope_per_s(known)
    steps = list(itertools.pairwise(known))
    rises = sum(1 for a, b in steps if (b.lag or 0) > (a.lag or 0))  # known: every lag is read
    lag, first_lag = latest.lag, known[0].lag
    assert lag is not None and first_lag is not None
    if slope <= 0 or 2 * rises <= len(steps) or lag - first_lag <= rules.allowed_lag:
        return None
    return VerdictFinding(
        Verdict.WARN,
        VerdictReason.GROWING,
        committed,
        lag,
        slope_per_s=slope,
        for_ms=latest.at_ms - known[0].at_ms,
        first_lag=first_lag,
        rises=rises,
        steps=len(steps),
    )


def _settled(latest: LagPoint, committed: int, known: list[LagPoint], rules: VerdictRules) -> VerdictFinding:
    """6. OK, when the window shows it: the committed offset moved, or enough points for the
    trend rule (5) to have seen a growing lag; fewer points with a lag and no commit prove nothing."""
    if known and known[0].committed != committed:
        return VerdictFinding(Verdict.OK, VerdictReason.MOVING, committed, latest.lag)
    if len(known) >= rules.min_points:
        return VerdictFinding(Verdict.OK, VerdictReason.NOT_GROWING, committed, latest.lag)
    return VerdictFinding(
        Verdict.UNKNOWN,
        VerdictReason.TOO_FEW_POINTS,
        committed,
        latest.lag,
        points=len(known),
        points_needed=rules.min_points,
        window_ms=rules.window_ms,
    )


#: Rules 1-5 of the module docstring, in order: the first that finds something wins.
_COMMITTED_RULES: tuple[
    Callable[[LagPoint, int, list[LagPoint], VerdictRules], VerdictFinding | None], ...
] = (_lost, _rewind, _caught_up, _stuck, _growing)


def partition_series(
    snapshots: Sequence[LagSnapshot], group_id: str
) -> dict[tuple[str, int], list[LagPoint]]:
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


def _group_verdict(
    group_id: str,
    latest: GroupLag | None,
    snapshots: Sequence[LagSnapshot],
    rules: VerdictRules,
    margins: Mapping[tuple[str, int], RetentionMargin],
) -> GroupVerdict:
    if latest is None:
        return GroupVerdict(group_id, Verdict.UNKNOWN, GroupReason.NOT_READ)
    current = {(p.topic, p.partition) for p in latest.partitions}
    verdicts = []
    for key, points in sorted(partition_series(snapshots, group_id).items()):
        if key not in current:
            continue  # the group no longer has this partition
        found = judge_partition(points, rules, margins.get(key))
        window_start = points[-1].at_ms - rules.window_ms
        verdicts.append(
            PartitionVerdict(
                *key, found.verdict, found, points[-1].lag, sum(1 for p in points if p.at_ms >= window_start)
            )
        )
    if not verdicts:  # nothing shows it is fine (the threshold gate waits on such a group too)
        return GroupVerdict(
            group_id, Verdict.UNKNOWN, GroupReason.NO_PARTITIONS, members=latest.members, state=latest.state
        )
    worst = max(verdicts, key=lambda v: v.verdict.severity)
    same = sum(1 for v in verdicts if v.verdict is worst.verdict)
    cause = (
        GroupReason.ALL_OK
        if worst.verdict is Verdict.OK and len(verdicts) > 1
        else GroupReason.WORST_PARTITION
    )
    return GroupVerdict(
        group_id, worst.verdict, cause, tuple(verdicts), worst, same, latest.members, latest.state
    )


def group_verdicts(
    snapshots: Iterable[LagSnapshot],
    rules: VerdictRules = VerdictRules(),
    *,
    group_ids: Iterable[str] | None = None,
    margins: Mapping[str, Mapping[tuple[str, int], RetentionMargin]] | None = None,
) -> dict[str, GroupVerdict]:
    """Verdicts of ``group_ids`` (default: every group in the latest snapshot) from snapshots
    in any order; the latest one decides which groups and partitions exist. ``margins``: per
    group, each partition's retention margin (``(topic, partition)`` keys), for AT_RISK."""
    ordered = sorted(snapshots, key=lambda s: s.taken_at_ms)
    if not ordered:
        raise ConfigurationError("no snapshots: verdicts need at least one snapshot.")
    newest = ordered[-1]
    window = [s for s in ordered if s.taken_at_ms >= newest.taken_at_ms - rules.window_ms]
    ids = list(group_ids) if group_ids is not None else list(newest.groups)
    margins = margins or {}
    return {g: _group_verdict(g, newest.groups.get(g), window, rules, margins.get(g, {})) for g in ids}
