"""Numbers for the charts: lag in seconds estimated from the history, and server-side downsampling.

**Lag in seconds over time.** The history keeps no record timestamps, so a point's lag in
seconds is the history estimate of :mod:`..lag.seconds` (basis ``history``): when the record
at the committed offset was produced is interpolated between the two log-end samples that
bracket it (:func:`..lag.seconds.interpolate_produce_time`, the reference this vectorised
version is tested against point by point), and the lag is the snapshot time minus that. A
committed offset older than the oldest sample gives only a lower bound (``at least``); a
caught-up partition is 0 s; a partition without a commit, or one no sample has passed yet,
is unknown (NaN), never 0.

**Downsampling.** A series longer than its share of the chart's point budget is cut with
MinMaxLTTB (tsdownsample, the downsampler of plotly-resampler): min-max preselection keeps
every spike, LTTB keeps the shape. Unknown stretches stay gaps.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["LogEndIndex", "produce_times", "lag_seconds_series", "downsample_indices", "budget_per_series"]


class LogEndIndex:
    """The (time, log end) samples of many partitions (integer codes), sorted by partition then
    time, answering many queries at once. A log end that went down starts a new segment (the
    topic was recreated: only the samples since count, as the engine reads it). Immutable;
    :meth:`extended` merges more samples into a new index."""

    _SPAN = 1 << 40  # ms of time a key holds (34 years); partition codes below 2**22

    def __init__(self, partition: np.ndarray, t: np.ndarray, end: np.ndarray) -> None:
        partition, t = np.asarray(partition, dtype=np.int64), np.asarray(t, dtype=np.int64)
        self._low = int(t.min()) - 1 if len(t) else 0
        if len(t) and (int(t.max()) - self._low >= self._SPAN or int(partition.max()) >= 1 << 22):
            raise ValueError("log-end samples span more than 34 years, or more than 4 million partitions")
        keys = self._key(partition, t)
        order = np.argsort(keys)
        self._set(keys[order], t[order], np.asarray(end, dtype=np.int64)[order], partition[order])

    def _set(self, keys: np.ndarray, t: np.ndarray, e: np.ndarray, p: np.ndarray) -> None:
        self._keys, self._t, self._e, self._p = keys, t, e, p
        fresh = np.r_[True, (p[1:] != p[:-1]) | (e[1:] < e[:-1])]
        self._segment_start = np.maximum.accumulate(np.where(fresh, np.arange(len(p)), 0))

    def extended(self, partition: np.ndarray, t: np.ndarray, end: np.ndarray) -> LogEndIndex:
        """This index with more samples (none at a (partition, time) it has), in one merge."""
        partition, t = np.asarray(partition, dtype=np.int64), np.asarray(t, dtype=np.int64)
        if len(t) and (int(t.min()) <= self._low or int(t.max()) - self._low >= self._SPAN):
            return LogEndIndex(np.r_[self._p, partition], np.r_[self._t, t], np.r_[self._e, end])
        keys = self._key(partition, t)
        order = np.argsort(keys)
        at = np.searchsorted(self._keys, keys[order])
        out = LogEndIndex.__new__(LogEndIndex)
        out._low = self._low
        out._set(
            *(
                np.insert(old, at, new[order])
                for old, new in (
                    (self._keys, keys),
                    (self._t, t),
                    (self._e, np.asarray(end, dtype=np.int64)),
                    (self._p, partition),
                )
            )
        )
        return out

    def __len__(self) -> int:
        return len(self._keys)

    def _key(self, partition: np.ndarray, t: np.ndarray) -> np.ndarray:
        clipped = np.clip(np.asarray(t, dtype=np.int64), self._low, self._low + self._SPAN - 1) - self._low
        return partition.astype(np.int64) * self._SPAN + clipped

    def produce_times(
        self, partition: np.ndarray, at_t: np.ndarray, offsets: np.ndarray, since_ms: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """For each query (``partition``, ``at_t``, ``offsets``): when the record at that offset
        was produced, from the partition's samples taken at or before ``at_t`` (and at or after
        ``since_ms``). ``(estimate_ms, bound_ms)``: the interpolated time (NaN when there is none),
        and for an offset older than the first sample that sample's time (a bound: produced
        before it; NaN otherwise). Both NaN: no sample has passed the offset yet. The answers of
        :func:`..lag.seconds.interpolate_produce_time` given those samples."""
        q = len(at_t)
        estimate, bound = np.full(q, np.nan), np.full(q, np.nan)
        if not len(self._keys) or not q:
            return estimate, bound
        partition = np.asarray(partition, dtype=np.int64)
        valid = partition >= 0
        n = np.searchsorted(
            self._keys, self._key(partition, at_t), side="right"
        )  # past the last sample <= at_t
        floor = np.searchsorted(
            self._keys,
            self._key(partition, np.full(q, self._low if since_ms is None else since_ms)),
            side="left",
        )
        has = valid & (n > floor)
        start = np.where(has, np.maximum(self._segment_start[np.maximum(n - 1, 0)], floor), 0)
        lo, hi = start.copy(), np.where(has, n, start)
        offsets = np.asarray(offsets, dtype=np.int64)
        while True:  # first sample in [start, n) whose log end is beyond the offset
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            beyond = self._e[np.minimum(mid, len(self._e) - 1)] > offsets
            lo = np.where(active & ~beyond, mid + 1, lo)
            hi = np.where(active & beyond, mid, hi)
        passed = has & (lo < n)
        first, inner = passed & (lo == start), passed & (lo > start)
        bound[first] = self._t[lo[first]]
        i2 = lo[inner]
        t1, e1, t2, e2 = self._t[i2 - 1], self._e[i2 - 1], self._t[i2], self._e[i2]
        estimate[inner] = t1 + (offsets[inner] - e1 + 1) / (e2 - e1) * (t2 - t1)
        return estimate, bound

    def seconds(
        self,
        partition: np.ndarray,
        at_t: np.ndarray,
        committed: np.ndarray,
        lag: np.ndarray,
        since_ms: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lag in seconds at each point: ``(seconds, at_least)``. ``committed`` and ``lag`` are
        floats with NaN for unknown. Caught up (lag 0): 0 s; no commit or unknown lag: NaN;
        otherwise the history estimate, or a lower bound flagged in ``at_least``."""
        seconds = np.full(len(at_t), np.nan)
        at_least = np.zeros(len(at_t), dtype=bool)
        known = ~np.isnan(committed) & ~np.isnan(lag)
        seconds[known & (lag == 0)] = 0.0
        lagging = np.flatnonzero(known & (lag > 0))
        if len(lagging):
            at = np.asarray(at_t)[lagging]
            estimate, bound = self.produce_times(
                np.asarray(partition)[lagging], at, committed[lagging].astype(np.int64), since_ms
            )
            has_estimate = ~np.isnan(estimate)
            seconds[lagging[has_estimate]] = np.maximum(
                0.0, (at[has_estimate] - estimate[has_estimate]) / 1000
            )
            has_bound = ~has_estimate & ~np.isnan(bound)
            seconds[lagging[has_bound]] = np.maximum(0.0, (at[has_bound] - bound[has_bound]) / 1000)
            at_least[lagging[has_bound]] = True
        return seconds, at_least


def produce_times(
    sample_t: np.ndarray, sample_e: np.ndarray, at_t: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`LogEndIndex.produce_times` for one partition's samples."""
    index = LogEndIndex(
        np.zeros(len(sample_t), dtype=np.int64), np.asarray(sample_t, dtype=np.int64), np.asarray(sample_e)
    )
    return index.produce_times(np.zeros(len(at_t), dtype=np.int64), np.asarray(at_t, dtype=np.int64), offsets)


def lag_seconds_series(
    sample_t: np.ndarray, sample_e: np.ndarray, at_t: np.ndarray, committed: np.ndarray, lag: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`LogEndIndex.seconds` for one partition's samples."""
    index = LogEndIndex(
        np.zeros(len(sample_t), dtype=np.int64), np.asarray(sample_t, dtype=np.int64), np.asarray(sample_e)
    )
    return index.seconds(
        np.zeros(len(at_t), dtype=np.int64), np.asarray(at_t, dtype=np.int64), committed, lag
    )


def budget_per_series(points: int, series: int) -> int:
    """Each series' share of a chart's point budget (at least 2 points a series)."""
    return max(2, points // max(1, series))


def downsample_indices(x: np.ndarray, y: np.ndarray, n_out: int) -> np.ndarray:
    """Indices of the points to draw: all of them when they fit in ``n_out``; otherwise MinMaxLTTB
    over the known stretches (their shares in proportion to their lengths), and the first point
    of every unknown stretch (NaN) kept so that the chart shows the gap."""
    total = len(x)
    if total <= n_out:
        return np.arange(total)
    known = ~np.isnan(y)
    edges = np.flatnonzero(np.diff(known.astype(np.int8))) + 1
    bounds = np.concatenate(([0], edges, [total]))
    runs = [(a, b) for a, b in itertools.pairwise(bounds)]
    known_total = int(known.sum())
    gaps = sum(1 for a, b in runs if not known[a])
    room = max(2, n_out - gaps)
    keep: list[np.ndarray] = []
    for a, b in runs:
        if not known[a]:
            keep.append(np.array([a]))
            continue
        length = b - a
        share = max(3, int(room * length / max(1, known_total)))  # LTTB keeps both ends: fewer than 3 panics
        if length <= share or length < 4:
            keep.append(np.arange(a, b))
            continue
        from tsdownsample import MinMaxLTTBDownsampler

        share = min(share, length)
        picked = MinMaxLTTBDownsampler().downsample(
            np.ascontiguousarray(x[a:b], dtype=np.float64),
            np.ascontiguousarray(y[a:b], dtype=np.float64),
            n_out=share,
        )
        keep.append(a + np.asarray(picked, dtype=np.int64))
    return np.unique(np.concatenate(keep))
