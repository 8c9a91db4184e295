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

import numpy as np

__all__ = ["produce_times", "lag_seconds_series", "downsample_indices", "budget_per_series"]


def produce_times(sample_t: np.ndarray, sample_e: np.ndarray, at_t: np.ndarray, offsets: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """For each query (``at_t``, ``offsets``): when the record at that offset was produced,
    from the (time, log end) samples of its partition taken at or before ``at_t``.

    Returns ``(estimate_ms, bound_ms)``: the interpolated time (NaN when there is none), and for
    an offset older than the first sample the first sample's time (a bound: produced before
    it; NaN otherwise). Both NaN: no sample has passed the offset yet. The same answers as
    :func:`..lag.seconds.interpolate_produce_time` given the samples up to ``at_t``.
    """
    order = np.argsort(sample_t, kind="stable")
    st, se = sample_t[order].astype(np.float64), sample_e[order].astype(np.int64)
    n = np.searchsorted(st, at_t, side="right")  # samples taken at or before each query
    estimate = np.full(len(at_t), np.nan)
    bound = np.full(len(at_t), np.nan)
    drops = np.flatnonzero(se[1:] < se[:-1]) + 1  # a log end that went down: the topic was recreated
    starts = np.concatenate(([0], drops))
    seg = np.searchsorted(starts, n - 1, side="right") - 1  # the segment holding each query's last sample
    for s, start in enumerate(starts):
        mine = np.flatnonzero((seg == s) & (n > 0))
        if not len(mine):
            continue
        end = starts[s + 1] if s + 1 < len(starts) else len(se)
        ends = se[start:end]
        idx = start + np.searchsorted(ends, offsets[mine], side="right")  # first sample with log end > offset
        passed = idx < n[mine]
        first = passed & (idx == start)
        inner = passed & (idx > start)
        bound[mine[first]] = st[start]
        q = mine[inner]
        i2 = idx[inner]
        t1, e1, t2, e2 = st[i2 - 1], se[i2 - 1], st[i2], se[i2]
        rank = (offsets[q] - e1 + 1) / (e2 - e1)
        estimate[q] = t1 + rank * (t2 - t1)
    return estimate, bound


def lag_seconds_series(sample_t: np.ndarray, sample_e: np.ndarray, at_t: np.ndarray, committed: np.ndarray,
                       lag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One partition's lag in seconds at each of its points: ``(seconds, at_least)``.

    ``committed`` and ``lag`` are float arrays with NaN for unknown. Caught up (lag 0): 0 s;
    no commit or unknown lag: NaN; otherwise the history estimate, or a lower bound flagged in
    ``at_least``."""
    seconds = np.full(len(at_t), np.nan)
    at_least = np.zeros(len(at_t), dtype=bool)
    known = ~np.isnan(committed) & ~np.isnan(lag)
    seconds[known & (lag == 0)] = 0.0
    lagging = np.flatnonzero(known & (lag > 0))
    if len(lagging) and len(sample_t):
        estimate, bound = produce_times(sample_t, sample_e, at_t[lagging], committed[lagging].astype(np.int64))
        has_estimate = ~np.isnan(estimate)
        seconds[lagging[has_estimate]] = np.maximum(0.0, (at_t[lagging][has_estimate] - estimate[has_estimate]) / 1000)
        has_bound = ~has_estimate & ~np.isnan(bound)
        seconds[lagging[has_bound]] = np.maximum(0.0, (at_t[lagging][has_bound] - bound[has_bound]) / 1000)
        at_least[lagging[has_bound]] = True
    return seconds, at_least


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
    runs = [(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    known_total = int(known.sum())
    gaps = sum(1 for a, b in runs if not known[a])
    room = max(2, n_out - gaps)
    keep: list[np.ndarray] = []
    for a, b in runs:
        if not known[a]:
            keep.append(np.array([a]))
            continue
        length = b - a
        share = max(2, int(room * length / max(1, known_total)))
        if length <= share or length < 4:
            keep.append(np.arange(a, b))
            continue
        from tsdownsample import MinMaxLTTBDownsampler

        share = min(share, length)
        picked = MinMaxLTTBDownsampler().downsample(np.ascontiguousarray(x[a:b], dtype=np.float64),
                                                    np.ascontiguousarray(y[a:b], dtype=np.float64), n_out=share)
        keep.append(a + np.asarray(picked, dtype=np.int64))
    return np.unique(np.concatenate(keep))
