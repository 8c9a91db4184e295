"""Lag in seconds: how old the oldest record the group has not read yet is.

Exact when the record is there: seconds = snapshot time - timestamp of the record at the
committed offset, read with a small bounded Fetch (one request per partition leader for all
the partitions it serves; the client's ``fetch_record_timestamps``). Only the worst ``worst_n``
partitions of each group by offset lag are measured (all lagging ones with ``worst_n=None``).

When the record is gone the answer is an *estimate* and says so (``estimate=True``, and a
``basis`` naming where it comes from), never a silent extrapolation:

* ``record`` - exact: the record at the committed offset (transaction markers skipped).
* ``caught_up`` - exact: nothing to read, 0 s.
* ``history`` - estimate: the record was deleted by retention (``LOST``) or compacted; the
  time it was produced is interpolated between the two history samples whose log-end
  offsets bracket the committed offset; ``bounds`` gives the interval the truth lies in.
* ``history_bound`` - estimate, lower bound (``at_least=True``): the committed offset is
  older than the oldest history sample, so all we know is "at least this old".
* ``next_record`` - estimate, lower bound: the record at the committed offset was compacted
  and the history cannot bracket it; the next surviving record is younger than the missing
  one, so its age is a lower bound.
* ``unknown`` - no number (``seconds=None``) and the reason why.

A lower bound can prove a group is over a threshold, never that it is under
(:mod:`.bounds`; :attr:`PartitionLagSeconds.interval`). A bound of 0 s says nothing at all:
when the oldest history sample is the snapshot itself (all ``check_gate`` and the CLI have),
or the next record is no older than the snapshot, the answer is ``unknown`` with the reason,
never "at least 0 s". A partition that counts but whose offset lag is unknown (no commit under
the ``fail`` policy, an error) is listed as ``unknown`` too, so a group's age is never a number
while one of its partitions cannot be dated.

A record timestamp later than the snapshot time (producer clock skew, or CreateTime set by
the application) gives 0 s and says so in the reason. A partition without a commit that the
``from_earliest`` policy counted is measured from its log start (what the group would read
first); under the other policies it has no lag to date.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from functools import partial
from typing import TYPE_CHECKING, Any

from ..client.errors import CLIENT_INCOMPLETE_RESPONSE, CLIENT_UNDECODABLE, Failure
from ..client.numbers import check_int
from ..client.results import KeyedResults, RecordPosition, RecordTimestamp, TopicPartition
from .bounds import Interval
from .model import LagFlag, LagSnapshot, PartitionLag
from .totals import worst_partitions

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = [
    "LagSecondsBasis",
    "PartitionLagSeconds",
    "GroupLagSeconds",
    "lag_seconds",
    "resolve_lag_seconds",
    "log_end_history",
    "interpolate_produce_time",
    "reading_position",
]

#: Per partition, (time ms, log-end offset) samples sorted by time.
LogEndHistory = Mapping[TopicPartition, Sequence[tuple[int, int]]]


class LagSecondsBasis(str, Enum):
    RECORD = "record"
    CAUGHT_UP = "caught_up"
    HISTORY = "history"
    HISTORY_BOUND = "history_bound"
    NEXT_RECORD = "next_record"
    UNKNOWN = "unknown"

    @property
    def estimate(self) -> bool:
        return self not in (LagSecondsBasis.RECORD, LagSecondsBasis.CAUGHT_UP)


@dataclass(frozen=True, slots=True)
class PartitionLagSeconds:
    group_id: str
    topic: str
    partition: int
    committed: int | None
    lag: int | None  # in offsets, from the snapshot
    seconds: float | None
    basis: LagSecondsBasis
    reason: str
    at_least: bool = False  # ``seconds`` is a lower bound
    bounds: tuple[float, float] | None = None  # an interpolated estimate lies between these
    record_offset: int | None = None
    record_timestamp_ms: int | None = None
    failure: Failure | None = None  # why the record could not be read (e.g. an UndecodableFailure)

    @property
    def estimate(self) -> bool:
        return self.basis.estimate

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def interval(self) -> Interval:
        """What is known of the age: exact, between an estimate's bounds, a lower bound, or nothing."""
        if self.seconds is None:
            return Interval()
        if self.at_least:
            return Interval.at_least(self.seconds)
        if self.bounds is not None:
            return Interval(*self.bounds)
        return Interval.exact(self.seconds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "topic": self.topic,
            "partition": self.partition,
            "committed": self.committed,
            "lag": self.lag,
            "seconds": self.seconds,
            "basis": self.basis.value,
            "estimate": self.estimate,
            "at_least": self.at_least,
            "bounds": list(self.bounds) if self.bounds else None,
            "record_offset": self.record_offset,
            "record_timestamp_ms": self.record_timestamp_ms,
            "reason": self.reason,
            "error": self.failure.to_dict() if self.failure is not None else None,
        }


@dataclass(frozen=True, slots=True)
class GroupLagSeconds:
    group_id: str
    #: the measured partitions, worst offset lag first, then those whose offset lag is unknown
    partitions: tuple[PartitionLagSeconds, ...]
    unmeasured: int = 0  # lagging partitions beyond worst_n, not measured

    @property
    def worst(self) -> PartitionLagSeconds | None:
        """The measured partition with the most seconds (None when none could be measured)."""
        known = [p for p in self.partitions if p.seconds is not None]
        return max(known, key=lambda p: p.seconds, default=None)  # type: ignore[arg-type, return-value]  # known: seconds not None

    @property
    def max_seconds(self) -> float | None:
        """0.0 when nothing lags; None when a lagging partition could not be measured at all."""
        if any(p.seconds is None for p in self.partitions):
            return None
        worst = self.worst
        return worst.seconds if worst is not None else 0.0

    @property
    def at_least(self) -> bool:
        """``max_seconds`` is only a lower bound: a measured partition is known only from below."""
        return any(p.at_least for p in self.partitions)

    @property
    def interval(self) -> Interval:
        """What is known of the age of the group's oldest unread record; a lagging partition left
        unmeasured (beyond ``worst_n``) may be older than any measured one, so nothing bounds it then."""
        known = Interval.largest(p.interval for p in self.partitions)
        return Interval(known.low, None) if self.unmeasured else known

    def to_dict(self) -> dict[str, Any]:
        worst = self.worst
        return {
            "group_id": self.group_id,
            "max_seconds": self.max_seconds,
            "estimate": bool(worst and worst.estimate),
            "at_least": self.at_least,
            "unmeasured": self.unmeasured,
            "partitions": [p.to_dict() for p in self.partitions],
        }


# -- pure parts ---------------------------------------------------------------------------------


def log_end_history(snapshots: Iterable[LagSnapshot]) -> dict[TopicPartition, list[tuple[int, int]]]:
    """(time, log end) samples per partition from snapshots, sorted, one per time."""
    points: dict[TopicPartition, dict[int, int]] = {}
    for snapshot in snapshots:
        for group in snapshot.groups.values():
            for p in group.partitions:
                if p.log_end is not None:
                    points.setdefault(p.tp, {})[snapshot.taken_at_ms] = p.log_end
    return {tp: sorted(samples.items()) for tp, samples in points.items()}


def interpolate_produce_time(
    samples: Sequence[tuple[int, int]], offset: int
) -> tuple[float, float, float] | tuple[None, float, None] | None:
    """When the record at ``offset`` was produced, from (time, log end) samples.

    ``(estimate, earliest, latest)`` when two consecutive samples bracket it
    (log end <= offset at the first, > offset at the second): produced in (t1, t2], placed
    linearly by its rank among the records that arrived in between. ``(None, t0, None)``
    when it is older than the first sample (produced before t0: only a bound). ``None``
    when no sample has passed it yet.
    """
    # A log end that went down means the topic was recreated: only the samples since count.
    restart = max((i for i in range(1, len(samples)) if samples[i][1] < samples[i - 1][1]), default=0)
    samples = samples[restart:]
    if not samples:
        return None
    ends = [end for _, end in samples]
    index = bisect.bisect_right(ends, offset)
    if index >= len(samples):
        return None
    if index == 0:
        return None, float(samples[0][0]), None
    (t1, e1), (t2, e2) = samples[index - 1], samples[index]
    rank = (offset - e1 + 1) / (e2 - e1)
    return t1 + rank * (t2 - t1), float(t1), float(t2)


def _seconds(now_ms: int, produced_ms: float) -> float:
    return max(0.0, (now_ms - produced_ms) / 1000.0)


def _from_history(
    base: partial[PartitionLagSeconds],
    samples: Sequence[tuple[int, int]],
    committed: int,
    now_ms: int,
    why: str,
    lower_bound_ms: int | None = None,
) -> PartitionLagSeconds | None:
    found = interpolate_produce_time(samples, committed)
    if found is None:
        return None
    estimate, earliest, latest = found
    if estimate is None or latest is None:  # older than every sample: only a bound
        bound = _seconds(now_ms, earliest)
        if bound <= 0:  # the oldest sample is the snapshot itself: "at least 0 s" says nothing
            return _unknown(
                base,
                f"{why}; offset {committed} is older than every history sample, and the oldest "
                "is the snapshot itself (or newer), which bounds nothing: no estimate",
                tail="",
            )
        return base(
            seconds=bound,
            basis=LagSecondsBasis.HISTORY_BOUND,
            at_least=True,
            reason=f"{why}; offset {committed} is older than the oldest history sample, "
            f"so at least {bound:.0f} s (estimate)",
        )
    seconds = _seconds(now_ms, estimate)
    low, high = _seconds(now_ms, latest), _seconds(now_ms, earliest)
    if lower_bound_ms is not None:  # a surviving later record is younger than the missing one
        seconds = max(seconds, _seconds(now_ms, lower_bound_ms))
        low = max(low, _seconds(now_ms, lower_bound_ms))
    return base(
        seconds=seconds,
        basis=LagSecondsBasis.HISTORY,
        bounds=(low, high),
        reason=f"{why}; interpolated from the log-end history: about {seconds:.0f} s, "
        f"between {low:.0f} and {high:.0f} s (estimate)",
    )


def reading_position(partition: PartitionLag) -> int | None:
    """Where the group reads next: its committed offset; without one, the log start when the
    unknown-lag policy counted the partition from the earliest record (a lag > 0 and no commit)."""
    if partition.committed is not None:
        return partition.committed
    if LagFlag.NO_COMMIT in partition.flags and partition.lag and partition.log_start is not None:
        return partition.log_start
    return None


def resolve_lag_seconds(
    group_id: str,
    partition: PartitionLag,
    fetched: RecordTimestamp | Failure | None,
    samples: Sequence[tuple[int, int]],
    now_ms: int,
) -> PartitionLagSeconds:
    """One partition's lag in seconds from what the Fetch found (None: not fetched) and the
    log-end history, by the rules in the module docstring. Pure."""
    base = partial(
        PartitionLagSeconds,
        group_id,
        partition.topic,
        partition.partition,
        partition.committed,
        partition.lag,
    )
    committed = reading_position(partition)
    if committed is None or not partition.lag:
        return _nothing_to_date(base, partition, committed)
    if LagFlag.LOST in partition.flags:
        why = f"the record at offset {committed} was deleted by retention (log start {partition.log_start})"
        return _from_history(base, samples, committed, now_ms, why) or _unknown(base, why)
    if (
        isinstance(fetched, RecordTimestamp)
        and fetched.position is RecordPosition.AT_OFFSET
        and fetched.timestamp_ms is not None
    ):  # the record itself: the common case, inline
        seconds = _seconds(now_ms, fetched.timestamp_ms)
        future = fetched.timestamp_ms > now_ms
        reason = (
            f"record {fetched.offset} has a timestamp {(fetched.timestamp_ms - now_ms) / 1000:.0f} s in the "
            "future (producer clock or an application-set CreateTime): 0 s"
            if future
            else f"record {fetched.offset} was written {seconds:.1f} s before the snapshot"
        )
        return base(
            seconds=seconds,
            basis=LagSecondsBasis.RECORD,
            reason=reason,
            record_offset=fetched.offset,
            record_timestamp_ms=fetched.timestamp_ms,
        )
    if isinstance(fetched, Failure):
        return _after_failed_fetch(base, fetched, samples, committed, now_ms)
    if fetched is None:
        return _unknown(base, f"the record at offset {committed} was not fetched")
    return _without_the_record(base, fetched, samples, committed, now_ms)


def _nothing_to_date(
    base: partial[PartitionLagSeconds], partition: PartitionLag, committed: int | None
) -> PartitionLagSeconds:
    """No reading position, an unknown lag in offsets, or a lag of 0."""
    if committed is None:
        return base(
            seconds=None,
            basis=LagSecondsBasis.UNKNOWN,
            reason="no committed offset: there is no record to date",
        )
    if partition.lag is None:
        return base(
            seconds=None,
            basis=LagSecondsBasis.UNKNOWN,
            reason=f"its lag in offsets is unknown ({partition.error or 'offsets not read'})",
        )
    return base(seconds=0.0, basis=LagSecondsBasis.CAUGHT_UP, reason="nothing to read")


def _after_failed_fetch(
    base: partial[PartitionLagSeconds],
    fetched: Failure,
    samples: Sequence[tuple[int, int]],
    committed: int,
    now_ms: int,
) -> PartitionLagSeconds:
    why = f"reading the record at offset {committed} failed ({fetched})"
    if fetched.code == CLIENT_UNDECODABLE:  # a record we cannot decode is no reason to guess its age
        return base(seconds=None, basis=LagSecondsBasis.UNKNOWN, reason=why, failure=fetched)
    estimate = _from_history(base, samples, committed, now_ms, why) or _unknown(base, why)
    return replace(estimate, failure=fetched)


def _without_the_record(
    base: partial[PartitionLagSeconds],
    fetched: RecordTimestamp,
    samples: Sequence[tuple[int, int]],
    committed: int,
    now_ms: int,
) -> PartitionLagSeconds:
    """The Fetch found no dated record at the committed offset: the next one after a gap, the
    log end, an offset out of range or a record without a timestamp."""
    if fetched.position is RecordPosition.AFTER_GAP and fetched.timestamp_ms is not None:
        return _after_gap(base, fetched, fetched.timestamp_ms, samples, committed, now_ms)
    if (
        fetched.position is RecordPosition.AT_LOG_END
        and fetched.high_watermark is not None
        and committed >= fetched.high_watermark
    ):
        return base(
            seconds=0.0,
            basis=LagSecondsBasis.CAUGHT_UP,
            reason="caught up between the snapshot and the fetch",
        )
    why = {
        RecordPosition.OUT_OF_RANGE: f"offset {committed} is out of range (deleted by retention since the "
        "snapshot, or the log was truncated)",
        RecordPosition.AT_LOG_END: f"no record at or after offset {committed} (log end "
        f"{fetched.high_watermark})",
    }.get(fetched.position, f"the record at offset {committed} has no timestamp (message format v0)")
    return _from_history(base, samples, committed, now_ms, why) or _unknown(base, why)


def _after_gap(
    base: partial[PartitionLagSeconds],
    fetched: RecordTimestamp,
    next_ms: int,
    samples: Sequence[tuple[int, int]],
    committed: int,
    now_ms: int,
) -> PartitionLagSeconds:
    """The record at the committed offset was compacted away; ``next_ms`` dates the next one."""
    why = f"the record at offset {committed} was compacted away (next record: {fetched.offset})"
    bracketed = _from_history(base, samples, committed, now_ms, why, lower_bound_ms=next_ms)
    if bracketed is not None and bracketed.basis is LagSecondsBasis.HISTORY:
        return bracketed
    seconds = _seconds(now_ms, next_ms)
    if seconds <= 0:
        return _unknown(
            base, f"{why}; the next record is no older than the snapshot, which bounds nothing", tail=""
        )
    return base(
        seconds=seconds,
        basis=LagSecondsBasis.NEXT_RECORD,
        at_least=True,
        reason=f"{why}; the next record is {seconds:.0f} s old, so at least that (estimate)",
        record_offset=fetched.offset,
        record_timestamp_ms=next_ms,
    )


def _unknown(
    base: partial[PartitionLagSeconds], why: str, tail: str = "; no history brackets it, so no estimate"
) -> PartitionLagSeconds:
    return base(seconds=None, basis=LagSecondsBasis.UNKNOWN, reason=f"{why}{tail}")


# -- with the client ----------------------------------------------------------------------------


async def lag_seconds(
    client: AsyncGroupsClient,
    snapshot: LagSnapshot,
    *,
    worst_n: int | None = 1,
    history: Iterable[LagSnapshot] | LogEndHistory = (),
    read_committed: bool = False,
    now_ms: int | None = None,
    timeout_s: float | None = None,
) -> dict[str, GroupLagSeconds]:
    """Lag in seconds of the worst ``worst_n`` partitions (by offset lag) of every group in
    ``snapshot``, as of the snapshot's time (``now_ms`` to choose another).

    ``history``: earlier snapshots (e.g. from the history store) or ready (time, log end)
    samples per partition, used only for the estimates described in the module docstring.
    """
    if worst_n is not None:
        check_int(
            "worst_n", worst_n, at_least=1, must_be="a positive int (or None for every lagging partition)"
        )
    now = snapshot.taken_at_ms if now_ms is None else now_ms
    samples = _log_end_samples(history, snapshot)
    chosen = _chosen_partitions(snapshot, worst_n)
    fetched = await _fetch_positions(client, chosen, read_committed=read_committed, timeout_s=timeout_s)
    out = {}
    for group_id, (measured, unmeasured) in chosen.items():
        group = snapshot.groups[group_id]
        undated = [p for p in group.partitions if p.lag is None and group.counts_in_totals(p)]
        out[group_id] = GroupLagSeconds(
            group_id,
            tuple(
                resolve_lag_seconds(
                    group_id, p, fetched.get((p.tp, reading_position(p))), samples.get(p.tp, ()), now
                )
                for p in [*measured, *undated]
            ),
            unmeasured,
        )
    return out


def _log_end_samples(
    history: Iterable[LagSnapshot] | LogEndHistory, snapshot: LagSnapshot
) -> dict[TopicPartition, list[tuple[int, int]]]:
    """The (time, log end) samples per partition of ``history``, the snapshot itself the newest."""
    if not isinstance(history, Mapping):
        return log_end_history([*history, snapshot])
    samples = {tp: list(points) for tp, points in history.items()}
    for tp, points in log_end_history([snapshot]).items():
        samples[tp] = sorted({**dict(samples.get(tp, ())), **dict(points)}.items())
    return samples


def _chosen_partitions(
    snapshot: LagSnapshot, worst_n: int | None
) -> dict[str, tuple[list[PartitionLag], int]]:
    """Per group: its worst ``worst_n`` lagging partitions, and how many lagging ones are left out."""
    chosen: dict[str, tuple[list[PartitionLag], int]] = {}
    for group_id, group in snapshot.groups.items():
        lagging = worst_partitions(group, len(group.partitions))
        measured = lagging if worst_n is None else lagging[:worst_n]
        chosen[group_id] = (measured, len(lagging) - len(measured))
    return chosen


async def _fetch_positions(
    client: AsyncGroupsClient,
    chosen: Mapping[str, tuple[list[PartitionLag], int]],
    *,
    read_committed: bool,
    timeout_s: float | None,
) -> dict[tuple[TopicPartition, int | None], RecordTimestamp | Failure]:
    """The record at each chosen partition's reading position (not a lost one's: deleted), read
    in one call; keyed (partition, position), a missing key: not read."""
    wanted: dict[TopicPartition, set[int]] = {}
    for measured, _ in chosen.values():
        for p in measured:
            position = reading_position(p)
            if position is not None and LagFlag.LOST not in p.flags:
                wanted.setdefault(p.tp, set()).add(position)
    answer = (
        await client.fetch_record_timestamps(wanted, read_committed=read_committed, timeout_s=timeout_s)
        if wanted
        else KeyedResults()
    )
    fetched: dict[tuple[TopicPartition, int | None], RecordTimestamp | Failure] = {}
    for tp, offsets in wanted.items():
        for offset in offsets:
            fetched[(tp, offset)] = (
                answer.values.get(tp, {}).get(offset)
                or answer.failures.get(tp)
                or Failure(CLIENT_INCOMPLETE_RESPONSE, "no answer for this offset")
            )
    return fetched
