"""The rollups of a history store, kept in memory and beside the history, for a long-running reader.

A reader such as the Airflow UI page asks for the rollups of a window (:meth:`HistoryRollups.window`):

* a **closed date** (a newer date has data) is one rollup, the merge of its files' rollups;
* the **newest date**, still growing, is one rollup per file (a snapshot adds one file; only
  it is new). Files whose snapshots overlap in time are rolled up from their rows together.

Each rollup is computed once and saved under ``<store>/_rollups/v1/`` (Arrow IPC, lz4): the
newest date's per file (``date=D/<file>.arrow``), a closed date's as one file (``date=D.arrow``,
after which its per-file ones are removed). Each saved rollup records the ``(name, size)`` of the
history files it covers and is used only while they are exactly the files there; anything else
is recomputed. The ``_`` keeps the folder out of the Parquet dataset (pyarrow and Spark skip
it). Saving is best effort: a store this process may not write to is read and rolled up in
memory (one warning), never failed over.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections import OrderedDict
from dataclasses import replace

import pyarrow as pa
import pyarrow.ipc as ipc

from .rollup import (
    GROUPS_SCHEMA, LOG_ENDS_SCHEMA, TAIL_MS, Rollup, empty_rollup, merge_rollups, overlapping, rollup_table,
)
from .store import HistoryStore, day_of

__all__ = ["HistoryRollups", "CACHE_DIR", "save_rollup", "load_rollup"]

log = logging.getLogger(__name__)

CACHE_DIR = "_rollups/v1"
#: Closed dates kept in memory (the most recently used); older ones are read back from their file.
DAYS_IN_MEMORY = 40
_STRINGS = ["group_id", "group_state", "protocol_type", "topic", "flags"]
_PARTS = ("groups", "log_ends", "first", "last", "tail")


def save_rollup(fs, path: str, rollup: Rollup) -> None:
    """One Arrow IPC file (lz4: read back several times faster than zstd): each table as a one-row
    list column, a table that is the ``first`` one again (a file of one snapshot) stored once;
    the rest in the schema's metadata."""
    same = [name for name in ("last", "tail") if getattr(rollup, name) is rollup.first]
    meta = {"key": rollup.key, "sources": [list(s) for s in rollup.sources], "min_ms": rollup.min_ms,
            "max_ms": rollup.max_ms, "rows": rollup.rows, "same_as_first": same}
    columns = {}
    for name in _PARTS:
        table = getattr(rollup, name)
        values = (table.slice(0, 0) if name in same else table).combine_chunks().to_struct_array().combine_chunks()
        columns[name] = pa.LargeListArray.from_arrays(pa.array([0, len(values)], pa.int64()), values)
    table = pa.table(columns).replace_schema_metadata({"kgroups_rollup": json.dumps(meta)})
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    temporary = f"{path}.{uuid.uuid4().hex[:8]}.tmp"  # readers never see half a file
    with fs.open(temporary, "wb") as f, ipc.new_file(f, table.schema,
                                                     options=ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_table(table)
    fs.mv(temporary, path)


def load_rollup(fs, path: str) -> Rollup:
    with fs.open(path, "rb") as f:
        table = ipc.open_file(f).read_all()
    meta = json.loads(table.schema.metadata[b"kgroups_rollup"])
    parts = {name: pa.Table.from_struct_array(table.column(name).chunk(0).values) for name in _PARTS}
    if parts["groups"].schema != GROUPS_SCHEMA or parts["log_ends"].schema != LOG_ENDS_SCHEMA:
        raise ValueError("saved by another version of the rollups")
    for name in meta.get("same_as_first", ()):
        parts[name] = parts["first"]
    return Rollup(meta["key"], tuple((name, size) for name, size in meta["sources"]), meta["min_ms"], meta["max_ms"],
                  meta["rows"], **parts)


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


class HistoryRollups:
    """The rollups of one store's windows, computed once, kept in memory and saved beside the
    history (module docstring). Thread-safe; one per store per process."""

    def __init__(self, store: HistoryStore, *, tail_ms: int = TAIL_MS, save: bool = True) -> None:
        self.store = store
        self.tail_ms = tail_ms
        self.save = save
        self._files: dict[str, Rollup] = {}  # the newest date's, by file path
        self._days: OrderedDict[str, Rollup] = OrderedDict()  # closed dates', by date
        self._units: dict[tuple[tuple[str, int], ...], Rollup] = {}  # overlapping files rolled up together
        self._lock = threading.RLock()
        self._warned = False
        self.computed = 0  # rollups computed from Parquet rows (the rest were in memory or read back)

    # -- what a reader asks ------------------------------------------------------------------------

    def window(self, since_ms: int | None = None, until_ms: int | None = None) -> list[Rollup]:
        """The rollups holding the rows in ``[since_ms, until_ms)`` (and more of the same dates),
        time-ordered and not overlapping; the store as it is now (a file appended since the last
        call is in)."""
        with self._lock:
            return self._window(self.store.dates(), since_ms, until_ms)

    def latest(self, length_ms: int) -> tuple[int | None, int | None, list[Rollup]]:
        """``(since_ms, as_of_ms, rollups)`` of the window of ``length_ms`` ending at the store's
        newest snapshot (``as_of_ms``; all None/empty for an empty store)."""
        with self._lock:
            dates = self.store.dates()
            for date in reversed(dates):
                newest = [r for r in self._open_date(date, self.store.date_files(date)) if r.rows]
                if newest:
                    as_of = max(r.max_ms for r in newest)
                    since = max(0, as_of - length_ms)
                    return since, as_of, self._window(dates, since, as_of + 1)
            return None, None, []

    def held(self) -> set[tuple[str, tuple[tuple[str, int], ...]]]:
        """``(key, sources)`` of the rollups held in memory now."""
        with self._lock:
            return {(r.key, r.sources) for r in (*self._files.values(), *self._days.values(), *self._units.values())}

    def newest_ms(self) -> int | None:
        """The time of the store's newest snapshot (None: the store is empty)."""
        return self.latest(0)[1]

    def _window(self, dates: list[str], since_ms: int | None, until_ms: int | None) -> list[Rollup]:
        if not dates:
            self._forget(set())
            return []
        first = day_of(since_ms) if since_ms is not None else dates[0]
        last = day_of(until_ms - 1) if until_ms is not None and until_ms > 0 else dates[-1]
        out: list[Rollup] = []
        for date in dates:
            if first <= date <= last:
                files = self.store.date_files(date)
                out += self._open_date(date, files) if date == dates[-1] else [self._closed_date(date, files)]
        self._forget(set(dates))
        self._drop_old_tails(max((r.max_ms for r in out if r.rows), default=None))
        return [r for r in out if r.rows and (since_ms is None or r.max_ms >= since_ms)
                and (until_ms is None or r.min_ms < until_ms)]

    # -- dates and files ---------------------------------------------------------------------------

    def _open_date(self, date: str, files: list[tuple[str, int]]) -> list[Rollup]:
        """One rollup per file (files whose snapshots overlap: one for them together), time-ordered."""
        rollups = sorted((self._file(date, path, size) for path, size in files), key=lambda r: (r.min_ms, r.key))
        rollups = [r for r in rollups if r.rows]
        if not overlapping(rollups):
            return rollups
        units: list[list[Rollup]] = []
        for r in rollups:  # chains of rollups that overlap one another
            if units and r.min_ms <= max(u.max_ms for u in units[-1]):
                units[-1].append(r)
            else:
                units.append([r])
        return [unit[0] if len(unit) == 1 else self._unit(unit, {_name(p): p for p, _ in files}) for unit in units]

    def _unit(self, unit: list[Rollup], paths: dict[str, str]) -> Rollup:
        """Files whose snapshots overlap, rolled up from their rows together (rare: a backfill)."""
        sources = tuple(sorted(s for u in unit for s in u.sources))
        known = self._units.get(sources)
        if known is None:
            known = self._units[sources] = self._from_rows("+".join(u.key for u in unit),
                                                           [paths[name] for name, _ in sources], sources)
        return known

    def _closed_date(self, date: str, files: list[tuple[str, int]]) -> Rollup:
        sources = tuple(sorted((_name(p), size) for p, size in files))
        known = self._days.get(date)
        if known is not None and tuple(sorted(known.sources)) == sources:
            self._days.move_to_end(date)
            return known
        path = self._cache_path(f"date={date}.arrow")
        rollup = self._read(path, sources)
        if rollup is None:
            parts = self._open_date(date, files)
            rollup = (parts[0] if len(parts) == 1 else merge_rollups(parts, key=date, tail_ms=self.tail_ms) if parts
                      else empty_rollup(date, sources))
            if len(files) > 1 and self._write(path, rollup):
                self._remove(self._cache_path(f"date={date}"))  # its per-file rollups are no longer read
        for path_of_file, _ in files:
            self._files.pop(path_of_file, None)
        self._units = {k: v for k, v in self._units.items() if not set(k) & set(sources)}
        self._days[date] = rollup
        self._days.move_to_end(date)
        while len(self._days) > DAYS_IN_MEMORY:
            self._days.popitem(last=False)
        return rollup

    def _file(self, date: str, path: str, size: int) -> Rollup:
        known = self._files.get(path)
        if known is not None and known.sources == ((_name(path), size),):
            return known
        cache = self._cache_path(f"date={date}/{_name(path)}.arrow")
        rollup = self._read(cache, ((_name(path), size),))
        if rollup is None:
            rollup = self._from_rows(path, [path], ((_name(path), size),))
            self._write(cache, rollup)
        self._files[path] = rollup
        return rollup

    def _from_rows(self, key: str, paths: list[str], sources: tuple[tuple[str, int], ...]) -> Rollup:
        self.computed += 1
        tables = [self.store.read_file(p, read_dictionary=_STRINGS) for p in paths]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")
        return rollup_table(table, key=key, sources=sources, tail_ms=self.tail_ms)

    def _forget(self, dates: set[str]) -> None:
        """Drop what belongs to dates no longer in the store."""
        for date in [d for d in self._days if d not in dates]:
            del self._days[date]
        for path in [p for p in self._files if _name(p.rsplit("/", 1)[0])[len("date="):] not in dates]:
            del self._files[path]
        if not dates:
            self._units.clear()

    def _drop_old_tails(self, newest_ms: int | None) -> None:
        """A closed date's tail matters only while it holds part of the latest ``tail_ms``."""
        if newest_ms is None:
            return
        for date, r in list(self._days.items()):
            if r.tail.num_rows and r.max_ms < newest_ms - self.tail_ms:
                self._days[date] = replace(r, tail=r.tail.slice(0, 0))

    # -- the saved rollups -------------------------------------------------------------------------

    def _cache_path(self, relative: str) -> str:
        return f"{self.store.root}/{CACHE_DIR}/{relative}"

    def _read(self, path: str, sources: tuple[tuple[str, int], ...]) -> Rollup | None:
        fs = self.store.filesystem
        try:
            if not fs.exists(path):
                return None
            rollup = load_rollup(fs, path)
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign cache file is recomputed, never trusted
            log.warning("kgroups history: ignoring the saved rollup %s (%s); computing it again", path, exc)
            return None
        return rollup if tuple(sorted(rollup.sources)) == tuple(sorted(sources)) else None

    def _write(self, path: str, rollup: Rollup) -> bool:
        if not self.save:
            return False
        try:
            save_rollup(self.store.filesystem, path, rollup)
            return True
        except Exception as exc:  # noqa: BLE001 - a read-only store still serves, from memory
            if not self._warned:
                log.warning("kgroups history: cannot save rollups under %s (%s): they are kept in memory only, "
                            "and computed again by the next process", self._cache_path(""), exc)
                self._warned = True
            return False

    def _remove(self, path: str) -> None:
        try:
            if self.store.filesystem.exists(path):
                self.store.filesystem.rm(path, recursive=True)
        except Exception as exc:  # noqa: BLE001 - leftovers are only unused cache files
            log.info("kgroups history: could not remove %s (%s)", path, exc)


