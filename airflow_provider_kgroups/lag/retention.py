"""Before the data is gone: how long until retention may delete a group's first unread record
(the *retention margin*), how long until the group catches up (the *catch-up time*), and the
rule that says a partition is AT_RISK. Pure: the inputs are a partition's lag in seconds
(:mod:`.seconds`: the timestamp of its first unread record), its topic's retention settings
(DescribeConfigs) and its points over the verdicts' window (:class:`.verdicts.LagPoint`).

**Retention margin** (a lower bound, said as one). Kafka deletes a segment by time only once its
largest timestamp is older than ``retention.ms`` (``UnifiedLog.deleteRetentionMsBreachedSegments``);
the segment holding the first unread record has a largest timestamp at least that record's, so the
record cannot go before ``timestamp + retention.ms``: the margin is at least that minus now. It is
a bound only on that side: the segment may live longer (it must first be rolled, and the cleaner
runs every ``log.retention.check.interval.ms``). Where the only number would be on the unsafe
side, the margin is unknown, never made up:

* a topic whose ``cleanup.policy`` has no ``delete`` (compacted only): no time-based deletion,
  no margin (compaction removes only superseded keys);
* ``retention.ms=-1``: never deleted by time;
* ``retention.bytes`` set (a deleting topic with a size limit, whatever its ``retention.ms``):
  unknown. Kafka deletes the oldest segments while the partition is over the limit, and the byte
  position of the first unread record is not known, so no time is on the safe side: the time
  margin alone could come after a deletion by size;
* no unread record (caught up), or a first unread record whose age is an estimate or only a
  lower bound (deleted, compacted, old message format without timestamps): unknown, reason said.

**Catch-up time** from the first and last readable points of the window: the group consumes at
``(committed_last - committed_first) / dt`` and the producers write at ``(log_end_last -
log_end_first) / dt``; the lag closes at the difference. Not faster than the producers: *never at
current rates*. One point (a single check): unknown.

**AT_RISK**: a lagging partition whose margin is known and either below ``margin_floor`` or
shorter than its catch-up time (never catching up counts as longer than any margin). Since the
margin is a lower bound, AT_RISK may come early, never late."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol


class RetentionSettings(Protocol):
    """What the margin needs of a topic's configuration (the client's ``TopicRetention``)."""

    @property
    def retention_ms(self) -> int | None: ...
    @property
    def retention_bytes(self) -> int | None: ...
    @property
    def cleanup_policy(self) -> tuple[str, ...]: ...


class MarginBasis(str, Enum):
    RETENTION_MS = "retention_ms"  # a lower bound from the first unread record's timestamp
    HISTORY = "history"  # a lower bound from when the log-end history saw that record appended
    COMPACTED = "compacted"  # no time-based deletion
    NO_TIME_LIMIT = "no_time_limit"  # retention.ms=-1
    NOTHING_UNREAD = "nothing_unread"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class RetentionMargin:
    seconds: float | None  # at least this long (None: no margin, see basis and reason)
    basis: MarginBasis
    reason: str
    retention_ms: int | None = None
    first_unread_timestamp_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "at_least": self.seconds is not None,
            "basis": self.basis.value,
            "reason": self.reason,
            "retention_ms": self.retention_ms,
            "first_unread_timestamp_ms": self.first_unread_timestamp_ms,
        }


def retention_margin(
    age_seconds: float | None,
    age_exact: bool,
    record_timestamp_ms: int | None,
    settings: RetentionSettings | None,
    now_ms: int,
    *,
    lagging: bool = True,
) -> RetentionMargin:
    """The margin of one partition: its first unread record's age (exact, from the record) and
    timestamp, its topic's settings (None: not read)."""
    if not lagging:
        return RetentionMargin(
            None, MarginBasis.NOTHING_UNREAD, "nothing unread: nothing retention could take"
        )
    if settings is None:
        return RetentionMargin(None, MarginBasis.UNKNOWN, "the topic's retention settings could not be read")
    if "delete" not in settings.cleanup_policy:
        return RetentionMargin(
            None,
            MarginBasis.COMPACTED,
            f"cleanup.policy={','.join(settings.cleanup_policy) or 'none'}: records are not deleted by time",
        )
    if settings.retention_bytes is not None:
        return RetentionMargin(
            None,
            MarginBasis.UNKNOWN,
            f"retention.bytes={settings.retention_bytes} also deletes by size, and the first unread "
            "record's byte position is not known: no time is safe",
            retention_ms=settings.retention_ms,
        )
    if settings.retention_ms is None:
        return RetentionMargin(
            None, MarginBasis.NO_TIME_LIMIT, "retention.ms=-1: records are not deleted by time"
        )
    if age_seconds is None or not age_exact or record_timestamp_ms is None or record_timestamp_ms < 0:
        return RetentionMargin(
            None,
            MarginBasis.UNKNOWN,
            "the first unread record's timestamp is not known exactly (deleted, compacted or without a timestamp)",
            retention_ms=settings.retention_ms,
        )
    deletable_at_ms = record_timestamp_ms + settings.retention_ms
    return RetentionMargin(
        (deletable_at_ms - now_ms) / 1000.0,
        MarginBasis.RETENTION_MS,
        f"the first unread record (stamped {record_timestamp_ms}) cannot be deleted before retention.ms="
        f"{settings.retention_ms} has passed since",
        retention_ms=settings.retention_ms,
        first_unread_timestamp_ms=record_timestamp_ms,
    )


class PointLike(Protocol):
    @property
    def at_ms(self) -> int: ...
    @property
    def committed(self) -> int | None: ...
    @property
    def log_end(self) -> int | None: ...
    @property
    def lag(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class CatchUp:
    seconds: float | None  # None: never at current rates, or unknown (see ``never``)
    never: bool
    consume_per_s: float | None
    produce_per_s: float | None
    over_s: float | None  # the span the rates were measured over

    @property
    def known(self) -> bool:
        return self.never or self.seconds is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "never": self.never,
            "consume_per_s": self.consume_per_s,
            "produce_per_s": self.produce_per_s,
            "over_s": self.over_s,
        }


UNKNOWN_CATCH_UP = CatchUp(None, False, None, None, None)


def catch_up(points: Sequence[PointLike]) -> CatchUp:
    """The catch-up time of one partition over ``points`` (any order)."""
    usable = sorted(
        (p for p in points if p.committed is not None and p.log_end is not None and p.lag is not None),
        key=lambda p: p.at_ms,
    )
    if len(usable) < 2 or usable[-1].at_ms <= usable[0].at_ms:
        return UNKNOWN_CATCH_UP
    first, last = usable[0], usable[-1]
    span = (last.at_ms - first.at_ms) / 1000.0
    consume = (last.committed - first.committed) / span  # type: ignore[operator]
    produce = (last.log_end - first.log_end) / span  # type: ignore[operator]
    lag = last.lag or 0
    if lag <= 0:
        return CatchUp(0.0, False, consume, produce, span)
    if consume <= produce:
        return CatchUp(None, True, consume, produce, span)
    return CatchUp(lag / (consume - produce), False, consume, produce, span)


def at_risk(margin: RetentionMargin | None, eta: CatchUp, floor_s: float) -> bool:
    """A lagging partition may lose records: its margin (known) is below ``floor_s`` or shorter
    than its catch-up time."""
    if margin is None or margin.seconds is None:
        return False
    if margin.seconds < floor_s:
        return True
    return eta.never or (eta.seconds is not None and eta.seconds > margin.seconds)


@dataclass(frozen=True, slots=True)
class PartitionRisk:
    """One lagging partition: its margin (None: not asked), its catch-up time and the rule's answer."""

    margin: RetentionMargin | None
    catch_up: CatchUp
    at_risk: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "margin": self.margin.to_dict() if self.margin is not None else None,
            "catch_up": self.catch_up.to_dict(),
            "at_risk": self.at_risk,
        }


def margin_text(margin: RetentionMargin | None) -> str:
    """``>=2.0 h``; ``-`` (nothing unread, or not asked); else what stands in for a number."""
    if margin is None or margin.basis is MarginBasis.NOTHING_UNREAD:
        return "-"
    if margin.seconds is not None:
        return f">={duration(max(margin.seconds, 0.0))}"
    return {
        MarginBasis.COMPACTED: "none (compacted)",
        MarginBasis.NO_TIME_LIMIT: "none (retention.ms=-1)",
    }.get(margin.basis, "unknown")


def catch_up_text(eta: CatchUp) -> str:
    if eta.never:
        return "never"
    return duration(eta.seconds) if eta.seconds is not None else "-"


def duration(seconds: float) -> str:
    """``42 s``, ``12.5 min``, ``3.1 h``, ``2.0 d``: the one wording of a margin or a catch-up time."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172_800 else f"{seconds / 86_400:.1f} d"
