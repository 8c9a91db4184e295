"""The retention margin from the lag history alone, for what reads no record (the lag-history
Spark job): when the history's log-end samples saw a partition's first unread record appended,
and the topic's ``retention.ms``.

The record at the committed offset was appended after the last sample whose log end had not
passed it (:func:`.seconds.interpolate_produce_time`'s earliest time), so the segment holding it
has a largest timestamp at least that time and retention cannot delete it before that time plus
``retention.ms``: the margin is at least that minus the evaluation time. The bound is on append
time: a producer's ``CreateTime`` may stamp a record earlier than its append, by the producer's
own delay, which the basis (:attr:`.retention.MarginBasis.HISTORY`) and the reason say. Where the
history cannot place the record (appended before its first sample) the margin is unknown, never
made up, as :func:`.retention.retention_margin` does for a record it cannot date."""

from __future__ import annotations

from collections.abc import Sequence

from .retention import MarginBasis, RetentionMargin, RetentionSettings
from .seconds import interpolate_produce_time

__all__ = ["NOT_BY_TIME", "deletion_retention_ms", "history_margin"]

#: What :func:`deletion_retention_ms` answers for a topic whose records are not deleted by time.
NOT_BY_TIME = -1


def deletion_retention_ms(settings: RetentionSettings) -> int | None:
    """A topic's time limit as the lag-history job takes it: ``retention.ms``, or
    :data:`NOT_BY_TIME` when its records are not deleted at all (``retention.ms=-1``, or a
    compacted-only ``cleanup.policy``); None when a ``retention.bytes`` also deletes by size, which
    no time bounds (:func:`.retention.retention_margin`): leave the topic out, its margins unknown."""
    if "delete" not in settings.cleanup_policy:
        return NOT_BY_TIME
    if settings.retention_bytes is not None:
        return None
    return NOT_BY_TIME if settings.retention_ms is None else settings.retention_ms


def history_margin(
    samples: Sequence[tuple[int, int]],
    committed: int | None,
    retention_ms: int | None,
    now_ms: int,
    *,
    lagging: bool,
) -> RetentionMargin:
    """The margin at ``now_ms`` of a partition read up to ``committed``, from its ``(time, log
    end)`` samples up to ``now_ms`` (oldest first) and its topic's ``retention_ms``
    (:func:`deletion_retention_ms`; None: not known)."""
    if not lagging:
        return RetentionMargin(
            None, MarginBasis.NOTHING_UNREAD, "nothing unread: nothing retention could take"
        )
    if retention_ms is None:
        return RetentionMargin(None, MarginBasis.UNKNOWN, "the topic's retention.ms was not given")
    if retention_ms < 0:
        return RetentionMargin(
            None, MarginBasis.NO_TIME_LIMIT, "records are not deleted by time (retention.ms=-1 or compacted)"
        )
    found = interpolate_produce_time(samples, committed) if committed is not None else None
    if found is None or found[2] is None:
        return RetentionMargin(
            None,
            MarginBasis.UNKNOWN,
            "the history does not place the first unread record (appended before its first sample, "
            "or no commit)",
            retention_ms=retention_ms,
        )
    appended_after_ms = int(found[1])
    return RetentionMargin(
        (appended_after_ms + retention_ms - now_ms) / 1000.0,
        MarginBasis.HISTORY,
        f"the first unread record was appended after {appended_after_ms} (the log-end history), so "
        f"retention.ms={retention_ms} cannot delete it before that time plus retention.ms (a "
        "producer's CreateTime may stamp it earlier by the producer's own delay)",
        retention_ms=retention_ms,
    )
