"""The page's view of the history store: one :class:`PageData` per api-server process.

It owns the store's per-file rollups (:class:`..history.rollup.HistoryRollups`) and a small
cache of what is derived from a window of them (the overview's per-group rows, the log-end
samples index), keyed by the window and the files it covers: a new snapshot file, or one that
changed size, is a new key, so a page never shows a stale answer as current.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..history.rollup import FileRollup, HistoryRollups, log_ends_in
from ..history.store import HistoryStore
from .series import lag_seconds_series
from .settings import PageSettings

__all__ = ["PageData", "LogEndIndex"]

_CACHE_ENTRIES = 16


class LogEndIndex:
    """Per partition, its (time, log end) samples in a window, as numpy arrays, for the lag-in-
    seconds estimates (:func:`.series.lag_seconds_series`)."""

    def __init__(self, log_ends: pa.Table) -> None:
        table = log_ends.sort_by([("topic", "ascending"), ("partition", "ascending"), ("snapshot_ms", "ascending")])
        self._t = table["snapshot_ms"].to_numpy()
        self._e = table["log_end"].to_numpy()
        topics = table["topic"].to_pylist()
        partitions = table["partition"].to_numpy()
        self._slices: dict[tuple[str, int], tuple[int, int]] = {}
        start = 0
        for i in range(1, len(topics) + 1):
            if i == len(topics) or topics[i] != topics[start] or partitions[i] != partitions[start]:
                self._slices[(topics[start], int(partitions[start]))] = (start, i)
                start = i

    def samples(self, topic: str, partition: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self._slices.get((topic, partition), (0, 0))
        return self._t[a:b], self._e[a:b]

    def seconds(self, topic: str, partition: int, at_t: np.ndarray, committed: np.ndarray, lag: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        t, e = self.samples(topic, partition)
        return lag_seconds_series(t, e, at_t, committed, lag)


class PageData:
    """The history store the page reads, its rollups, and the derived-data cache."""

    def __init__(self, settings: PageSettings) -> None:
        self.settings = settings
        self.store = HistoryStore(settings.history_url)
        self.rollups = HistoryRollups(self.store)
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    def window(self, window_ms: int) -> tuple[int | None, int | None, list[FileRollup]]:
        """``(since_ms, as_of_ms, rollups)`` of the window ending at the store's newest snapshot."""
        newest = self.rollups.newest_ms()
        if newest is None:
            return None, None, []
        since = max(0, newest - window_ms)
        return since, newest, self.rollups.window(since_ms=since, until_ms=newest + 1)

    def cached(self, kind: str, key: tuple, build: Callable[[], Any]) -> Any:
        """``build()`` once per ``(kind, key)``; the newest entries are kept."""
        full = (kind, *key)
        with self._lock:
            if full in self._cache:
                self._cache.move_to_end(full)
                return self._cache[full]
        value = build()
        with self._lock:
            self._cache[full] = value
            while len(self._cache) > _CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return value

    def log_end_index(self, rollups: list[FileRollup], since_ms: int, until_ms: int) -> LogEndIndex:
        return self.cached("log_ends", (generation(rollups), since_ms, until_ms),
                           lambda: LogEndIndex(log_ends_in(rollups, since_ms, until_ms)))


def generation(rollups: list[FileRollup]) -> tuple:
    """What a derived answer depends on: the files and their sizes."""
    return tuple((r.path, r.size) for r in rollups)


def floats(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A nullable integer column as float64 with NaN for null."""
    return pc.cast(column, pa.float64()).to_numpy()
