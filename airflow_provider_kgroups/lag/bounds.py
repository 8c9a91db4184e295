"""What is known of a lag, and what it proves against a maximum.

A lag (in offsets or seconds) is never negative. What we know of one is an interval
``[low, high]``: a value is ``low == high``; an estimate interpolated from history lies between
its bounds; a lower bound (``at_least``) has no ``high``; an unknown is ``[0, None)``, which is
also what "at least 0" is: it carries no information. Against a maximum, only two answers are
proofs: ``OVER`` when even the lowest possible value is above it, ``WITHIN`` when even the
highest possible value is at or below it. Anything else is ``UNKNOWN``: a lower bound can prove
a group is over a threshold, never that it is under.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

__all__ = ["Against", "Interval"]


class Against(str, Enum):
    """What an :class:`Interval` proves against a maximum."""

    WITHIN = "within"
    OVER = "over"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Interval:
    """The truth lies in ``[low, high]``; ``high=None``: no upper bound is known."""

    low: float = 0.0
    high: float | None = None

    @classmethod
    def exact(cls, value: float) -> Interval:
        return cls(value, value)

    @classmethod
    def at_least(cls, value: float) -> Interval:
        return cls(value, None)

    @property
    def known(self) -> bool:
        """A value (or a bounded estimate), not only a lower bound or nothing."""
        return self.high is not None

    def against(self, maximum: float) -> Against:
        if self.low > maximum:
            return Against.OVER
        if self.high is not None and self.high <= maximum:
            return Against.WITHIN
        return Against.UNKNOWN

    @classmethod
    def largest(cls, intervals: Iterable[Interval]) -> Interval:
        """What is known of the largest of several lags (nothing given: exactly 0)."""
        items = list(intervals)
        highs = [i.high for i in items if i.high is not None]
        high = max(highs, default=0.0) if len(highs) == len(items) else None
        return cls(max((i.low for i in items), default=0.0), high)

    @classmethod
    def total(cls, intervals: Iterable[Interval]) -> Interval:
        """What is known of the sum of several lags (each >= 0, so the known part is a lower bound)."""
        items = list(intervals)
        highs = [i.high for i in items if i.high is not None]
        return cls(sum(i.low for i in items), sum(highs) if len(highs) == len(items) else None)
