"""The page's view of the history store: one :class:`PageData` per api-server process.

It owns the store's rollups (:class:`..history.rollup_cache.HistoryRollups`: a rollup per closed
date, per file of the newest date, saved beside the history), turns each rollup once into
numpy columns over integer codes (:class:`RollupColumns`; group ids and partitions coded once per
process), and joins them into a window's columns (:class:`Window`) with each group's first
snapshot in a rollup settled against the rollups before it. A new snapshot is one more small
rollup: nothing already derived is derived again. What is derived from a window (the overview's
rows, the log-end index) is cached under the window's rollups, so a new or changed file is a
new key and a page never shows a stale answer as current.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..client.errors import ConfigurationError
from ..history.audit import list_audits
from ..history.rollup import Rollup, compare_points, first_changes
from ..history.rollup_cache import HistoryRollups
from ..history.store import HistoryStore
from .series import LogEndIndex
from .settings import PageSettings

__all__ = ["PageData", "Codes", "RollupColumns", "Window", "generation", "floats"]

_CACHE_ENTRIES = 16


class Codes:
    """Dense integer codes for strings, assigned on first sight and kept for the process."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.names)

    def encode(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """The code of each value (int64; -1 for null)."""
        encoded = pc.dictionary_encode(column)
        if isinstance(encoded, pa.ChunkedArray):
            encoded = (
                encoded.combine_chunks()
                if encoded.num_chunks
                else pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string()))
            )
        with self._lock:
            mapping = np.array([self._code(v) for v in encoded.dictionary.to_pylist()] + [-1], dtype=np.int64)
        return mapping[pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)]

    def lookup(self, name: str) -> int:
        return self._index.get(name, -1)

    def _code(self, name: str) -> int:
        code = self._index.get(name)
        if code is None:
            code = self._index[name] = len(self.names)
            self.names.append(name)
        return code


def partition_names(topic: pa.ChunkedArray | pa.Array, partition: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One string per (topic, partition), for :class:`Codes` (null where the topic is)."""
    return pc.binary_join_element_wise(topic, pc.cast(partition, pa.string()), "\x00")


def floats(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A nullable integer column as float64 with NaN for null."""
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)


@dataclass(frozen=True, slots=True)
class RollupColumns:
    """A rollup's ``groups`` and ``log_ends`` as numpy columns (codes of :class:`PageData`)."""

    group: np.ndarray  # group code per (group, snapshot)
    t: np.ndarray
    total: np.ndarray  # float, NaN: unknown
    changed: np.ndarray  # int8: 1 changed, 0 not, -1 not known (the group's first snapshot in the rollup)
    unreadable: np.ndarray
    state: np.ndarray  # state code
    protocol: np.ndarray
    members: np.ndarray
    committed: np.ndarray
    to_read: np.ndarray
    ends_known: np.ndarray
    end_partition: np.ndarray  # partition code per log-end sample
    end_t: np.ndarray
    end: np.ndarray


@dataclass(frozen=True, slots=True)
class Window:
    """The columns of a window's ``(group, snapshot)`` rows, in rollup order (each rollup's rows
    by group then time), ``changed`` settled across rollups; and the rollups themselves."""

    since_ms: int
    as_of_ms: int
    rollups: tuple[Rollup, ...]
    group: np.ndarray
    t: np.ndarray
    total: np.ndarray
    changed: np.ndarray
    unreadable: np.ndarray
    state: np.ndarray
    protocol: np.ndarray
    members: np.ndarray
    committed: np.ndarray
    to_read: np.ndarray
    ends_known: np.ndarray

    @property
    def key(self) -> tuple:
        return (generation(self.rollups), self.since_ms, self.as_of_ms)


_WINDOW_COLUMNS = (
    "group",
    "t",
    "total",
    "changed",
    "unreadable",
    "state",
    "protocol",
    "members",
    "committed",
    "to_read",
    "ends_known",
)


def generation(rollups) -> tuple:
    """What a derived answer depends on: the rollups and the files they cover."""
    return tuple((r.key, r.sources) for r in rollups)


class PageData:
    """The history store the page reads, its rollups, their columns, and the derived-data cache."""

    def __init__(self, settings: PageSettings, *, save_rollups: bool = True) -> None:
        self.settings = settings
        if settings.history_url is None:  # as HistoryStore says it
            raise ConfigurationError("history store url must be a non-empty path or URL, got None.")
        self.store = HistoryStore(settings.history_url)
        self.rollups = HistoryRollups(self.store, save=save_rollups, cache_url=settings.rollup_cache)
        self.groups, self.partitions, self.states, self.protocols = Codes(), Codes(), Codes(), Codes()
        self._columns: dict[tuple, RollupColumns] = {}
        self._settled: dict[tuple, np.ndarray] = {}
        self._pairs: dict[tuple, pa.Table] = {}
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._index: tuple[dict[tuple, int], LogEndIndex] = ({}, LogEndIndex(*(np.array([], np.int64),) * 3))
        self._lock = threading.RLock()

    def window(self, window_ms: int) -> Window | None:
        """The window of ``window_ms`` ending at the store's newest snapshot (None: no history)."""
        since, as_of, rollups = self.rollups.latest(window_ms)
        if as_of is None or since is None:  # both or neither: an empty store
            return None
        pieces: dict[str, list[np.ndarray]] = {name: [] for name in _WINDOW_COLUMNS}
        with self._lock:
            self._forget()
            for i, rollup in enumerate(rollups):
                columns = self._rollup_columns(rollup)
                settled = self._settle(rollup, rollups[:i], columns)
                keep = (columns.t >= since) & (columns.t <= as_of)
                for name in _WINDOW_COLUMNS:
                    pieces[name].append((settled if name == "changed" else getattr(columns, name))[keep])
        return Window(since, as_of, tuple(rollups), **{name: np.concatenate(v) for name, v in pieces.items()})

    def _forget(self) -> None:
        """Drop the columns of rollups the store's rollups no longer hold."""
        live = self.rollups.held()
        self._columns = {k: v for k, v in self._columns.items() if k in live}
        self._settled = {k: v for k, v in self._settled.items() if k[0][0] in live and set(k[1]) <= live}
        self._pairs = {k: v for k, v in self._pairs.items() if k[0] in live and k[1] in live}

    def _rollup_columns(self, rollup: Rollup) -> RollupColumns:
        key = (rollup.key, rollup.sources)
        known = self._columns.get(key)
        if known is None:
            g, e = rollup.groups, rollup.log_ends
            known = self._columns[key] = RollupColumns(
                self.groups.encode(g["group_id"]),
                g["snapshot_ms"].to_numpy(),
                floats(g["total_lag"]),
                pc.if_else(pc.is_null(g["changed"]), -1, pc.cast(g["changed"], pa.int8()))
                .to_numpy(zero_copy_only=False)
                .astype(np.int8),
                g["unreadable"].to_numpy(zero_copy_only=False),
                self.states.encode(g["group_state"]),
                self.protocols.encode(g["protocol_type"]),
                pc.fill_null(g["members"], 0).to_numpy(),
                g["committed"].to_numpy(),
                g["to_read"].to_numpy(zero_copy_only=False),
                g["ends_known"].to_numpy(zero_copy_only=False),
                self.partitions.encode(partition_names(e["topic"], e["partition"])),
                e["snapshot_ms"].to_numpy(),
                e["log_end"].to_numpy(),
            )
        return known

    def _settle(self, rollup: Rollup, earlier: list[Rollup], columns: RollupColumns) -> np.ndarray:
        """``changed`` of the rollup's rows with each group's first row settled against ``earlier``."""
        key = (generation([rollup]), generation(earlier))
        known = self._settled.get(key)
        if known is None:
            settled = first_changes(rollup, earlier, self._pair)
            lookup = np.full(len(self.groups), -1, dtype=np.int8)
            lookup[self.groups.encode(settled["group_id"])] = (
                settled["changed"].to_numpy(zero_copy_only=False).astype(np.int8)
            )
            known = columns.changed.copy()
            firsts = known == -1
            known[firsts] = lookup[columns.group[firsts]]
            self._settled = {k: v for k, v in self._settled.items() if k[0] != key[0]}
            self._settled[key] = known
        return known

    def _pair(self, later: Rollup, before: Rollup) -> pa.Table:
        key = ((later.key, later.sources), (before.key, before.sources))
        known = self._pairs.get(key)
        if known is None:
            known = self._pairs[key] = compare_points(later.first, before.last)
        return known

    def audit_names(self) -> tuple[str, ...]:
        """The cleanup audit records there are now (records are never rewritten)."""
        return tuple(list_audits(self.store.url))

    def log_end_index(self, rollups: Sequence[Rollup], since_ms: int) -> LogEndIndex:
        """The log-end samples of a window's rollups; queries bound them by the window's start, so
        an index also holding older rollups serves as well. The index in hand is extended by the
        rollups it lacks (a new snapshot: one small merge), or built afresh when it holds a
        rollup the window has not and that is not older than the window."""
        wanted = {(r.key, r.sources): r.max_ms for r in rollups}
        with self._lock:
            held, index = self._index
            stale = [k for k, max_ms in held.items() if k not in wanted and max_ms >= since_ms]
            missing = [r for r in rollups if (r.key, r.sources) not in held]
            if not missing and not stale:
                return index
            fresh = bool(stale) or not held
            columns = [self._rollup_columns(r) for r in (rollups if fresh else missing)]
            samples = [
                np.concatenate([getattr(c, n) for c in columns]) for n in ("end_partition", "end_t", "end")
            ]
            index = LogEndIndex(*samples) if fresh else index.extended(*samples)
            self._index = (wanted if fresh else {**held, **wanted}, index)
            return index

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
