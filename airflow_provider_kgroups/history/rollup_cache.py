"""The rollups of a history store, kept in memory and beside the history, for a long-running reader.

A reader such as the Airflow UI page asks for the rollups of a window (:meth:`HistoryRollups.window`):

* a **closed date** (a newer date has data) is one rollup, the merge of its files' rollups;
* the **newest date**, still growing, is one rollup per file (a snapshot adds one file; only
  it is new). Files whose snapshots overlap in time are rolled up from their rows together.

Each rollup is computed once and saved in the store's rollup place (:mod:`.rollup_place`:
``<store>/_rollups/v1/`` unless configured or not writable) as Arrow IPC (lz4): the newest
date's per file (``date=D/<file>.arrow``), a closed date's as one file (``date=D.arrow``, after
which its per-file ones are removed). Each saved rollup records the ``(name, size)`` of the
history files it covers and is used only while they are exactly the files there; anything else
is recomputed. Saving is best effort: with no writable place the store is rolled up in memory
(one warning), never failed over.

A closed date of several files also gets its **date rows** (:mod:`.date_rows`, ``date=D.parquet``):
its rows in one file sorted by group, so a group's rows over a window (:meth:`HistoryRollups.group_rows`)
are a few small reads instead of one per snapshot file. They are written by one background
thread (a date closing does not wait for them); until they are there, a group's rows are read
from the date's own files. When a closed date's rollup is saved, the place is swept: other
format versions and dates the store no longer has are removed.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import replace
from datetime import UTC, datetime

import pyarrow as pa

from .background import Background
from .date_rows import FileIndex, Footers, write_date_rows
from .rollup import TAIL_MS, Rollup, empty_rollup, merge_rollups, overlapping, rollup_table
from .rollup_files import load_rollup, save_rollup
from .rollup_place import VERSION, RollupPlace, choose_place, sweep
from .store import HistoryStore, day_of

__all__ = ["HistoryRollups", "CACHE_DIR"]

log = logging.getLogger(__name__)

CACHE_DIR = f"_rollups/{VERSION}"  # beside the history
#: Closed dates kept in memory (the most recently used); older ones are read back from their file.
DAYS_IN_MEMORY = 40
#: The newest date's rollups are merged and saved (in the background) whenever this many files
#: came since the last merge: a restarted process reads one merge and a few files' rollups.
MERGE_EVERY = 8
MERGED = "_merged.arrow"  # in the newest date's folder (no history file is named with a "_")
_STRINGS = ["group_id", "group_state", "protocol_type", "topic", "flags"]


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


class HistoryRollups:
    """The rollups of one store's windows, computed once, kept in memory and saved beside the
    history (module docstring). Thread-safe; one per store per process."""

    def __init__(
        self,
        store: HistoryStore,
        *,
        tail_ms: int = TAIL_MS,
        save: bool = True,
        cache_url: str | None = None,
        local_base: str | None = None,
    ) -> None:
        self.store = store
        self.tail_ms = tail_ms
        self.save = save
        self._where = (cache_url, local_base)
        self._place: RollupPlace | None = None
        self._footers = Footers(store.filesystem)
        self._background = Background("kgroups-rollups")  # date rows and merges: no answer waits for them
        self._merged: dict[str, Rollup | None] = {}  # the newest date's saved merge, as this process began it
        self._merged_sources: dict[str, frozenset] = {}  # what the newest date's saved merge covers
        self._files: dict[str, Rollup] = {}  # the newest date's, by file path
        self._days: OrderedDict[str, Rollup] = OrderedDict()  # closed dates', by date
        self._units: dict[tuple[tuple[str, int], ...], Rollup] = {}  # overlapping files rolled up together
        self._lock = threading.RLock()
        self._warned = False
        self.computed = 0  # rollups computed from Parquet rows (the rest were in memory or read back)
        self._progress: tuple[int, int] | None = None  # (files done, of) while a window is being prepared

    # -- what a reader asks ------------------------------------------------------------------------

    def window(self, since_ms: int | None = None, until_ms: int | None = None) -> list[Rollup]:
        """The rollups holding the rows in ``[since_ms, until_ms)`` (and more of the same dates),
        time-ordered and not overlapping; the store as it is now (a file appended since the last
        call is in)."""
        with self._lock:
            try:
                return self._window(self.store.dates(), since_ms, until_ms)
            finally:
                self._progress = None

    def latest(self, length_ms: int) -> tuple[int | None, int | None, list[Rollup]]:
        """``(since_ms, as_of_ms, rollups)`` of the window of ``length_ms`` ending at the store's
        newest snapshot (``as_of_ms``; all None/empty for an empty store)."""
        with self._lock:
            dates = self.store.dates()
            # the window ends in the newest date: it starts no earlier than this
            listed = (
                self._expect(dates, day_of(max(0, _day_start_ms(dates[-1]) - length_ms)), dates[-1])
                if dates
                else {}
            )
            try:
                for date in reversed(dates):
                    files = listed[date] if date in listed else self.store.date_files(date)
                    newest = [r for r in self._open_date(date, files) if r.rows]
                    if newest:
                        as_of = max(r.max_ms for r in newest)
                        since = max(0, as_of - length_ms)
                        return since, as_of, self._window(dates, since, as_of + 1, listed)
                return None, None, []
            finally:
                self._progress = None

    def held(self) -> set[tuple[str, tuple[tuple[str, int], ...]]]:
        """``(key, sources)`` of the rollups held in memory now."""
        with self._lock:
            return {
                (r.key, r.sources)
                for r in (
                    *self._files.values(),
                    *self._days.values(),
                    *self._units.values(),
                    *(m for m in self._merged.values() if m is not None),
                )
            }

    def newest_ms(self) -> int | None:
        """The time of the store's newest snapshot (None: the store is empty)."""
        return self.latest(0)[1]

    def progress(self) -> tuple[int, int] | None:
        """``(files, of)``: how many of the history files a window being prepared now needs (those
        whose rollups are not in memory) are rolled up or read back; None when none is."""
        return self._progress

    def _expect(
        self, dates: list[str], first: str, last: str, listed: dict | None = None
    ) -> dict[str, list[tuple[str, int]]]:
        """The files of the dates ``first`` to ``last`` (those ``listed`` already are not listed
        again); :meth:`progress` starts counting those whose rollups are not in memory (unless it
        counts already)."""
        listed = listed or {}
        files_of = {
            date: listed[date] if date in listed else self.store.date_files(date)
            for date in dates
            if first <= date <= last
        }
        if self._progress is None:
            needed = sum(
                sum(path not in self._files for path, _ in files)
                for date, files in files_of.items()
                if date == dates[-1] or date not in self._days
            )
            self._progress = (0, needed) if needed else None
        return files_of

    def _window(
        self, dates: list[str], since_ms: int | None, until_ms: int | None, listed: dict | None = None
    ) -> list[Rollup]:
        if not dates:
            self._forget(set())
            return []
        first = day_of(since_ms) if since_ms is not None else dates[0]
        last = day_of(until_ms - 1) if until_ms is not None and until_ms > 0 else dates[-1]
        files_of = self._expect(dates, first, last, listed)
        out: list[Rollup] = []
        for date, files in files_of.items():
            out += self._open_date(date, files) if date == dates[-1] else [self._closed_date(date, files)]
        self._forget(set(dates))
        self._drop_old_tails(max((r.max_ms for r in out if r.rows), default=None))
        return [
            r
            for r in out
            if r.rows
            and (since_ms is None or r.max_ms >= since_ms)
            and (until_ms is None or r.min_ms < until_ms)
        ]

    @property
    def place(self) -> RollupPlace:
        """Where the rollups are saved (chosen on first use: :func:`.rollup_place.choose_place`)."""
        with self._lock:
            if self._place is None:
                self._place = choose_place(
                    self.store, self._where[0], local_base=self._where[1], save=self.save
                )
            return self._place

    def group_rows(self, group_ids: list[str], since_ms: int, until_ms: int) -> pa.Table:
        """The history rows of ``group_ids`` with ``since_ms <= snapshot_ms < until_ms``, as
        :meth:`.store.HistoryStore.read_table` gives them (unsorted): a closed date's from its
        date rows when they stand for exactly its files, else from the date's files."""
        first, last = day_of(since_ms), day_of(max(since_ms, until_ms - 1))
        dates = self.store.dates()
        indexes: list[FileIndex] = []
        for date in (d for d in dates if first <= d <= last):
            files = self.store.date_files(date)
            compact = self._date_rows(date, files) if date != dates[-1] and len(files) > 1 else None
            indexes += (
                [compact] if compact is not None else [self._footers.history_file(p, s) for p, s in files]
            )
        return self._footers.read_rows(indexes, group_ids, since_ms, until_ms)

    def wait_background(self, timeout_s: float | None = None) -> None:
        """Until what the background thread was given so far is written (or failed)."""
        self._background.wait(timeout_s)

    def _date_rows(self, date: str, files: list[tuple[str, int]]) -> FileIndex | None:
        place = self.place
        if not place.writable:
            return None
        index = self._footers.date_rows(self._cache_path(f"date={date}.parquet"), _sources(files))
        if index is None:
            self._background.submit(("date rows", date), self._write_date_rows, date, list(files))
        return index

    def _write_date_rows(self, date: str, files: list[tuple[str, int]]) -> None:
        path = self._cache_path(f"date={date}.parquet")
        try:
            if self._footers.date_rows(path, _sources(files)) is not None:
                return
            tables = [self.store.read_file(p) for p, _ in files]
            write_date_rows(self.place.fs, path, tables, _sources(files))
            self._footers.forget(path)
        except Exception as exc:  # noqa: BLE001 - without them a group's rows come from the date's files
            log.warning(
                "kgroups history: cannot write the date rows %s (%s): a group's rows of that date are "
                "read from its files",
                path,
                exc,
            )

    # -- dates and files ---------------------------------------------------------------------------

    def _open_date(self, date: str, files: list[tuple[str, int]], *, newest: bool = True) -> list[Rollup]:
        """One rollup per file (files whose snapshots overlap: one for them together), time-ordered;
        a process that begins on this date starts from its saved merge of the first files."""
        merged = self._merged_start(date, files)
        covered = set(merged.sources) if merged is not None else set()
        rollups = sorted(
            (self._file(date, path, size) for path, size in files if (_name(path), size) not in covered),
            key=lambda r: (r.min_ms, r.key),
        )
        rollups = [r for r in rollups if r.rows]
        if (
            merged is not None and rollups and rollups[0].min_ms <= merged.max_ms
        ):  # a backfill into its stretch
            self._merged[date] = None
            return self._open_date(date, files, newest=newest)
        rollups = ([merged] if merged is not None and merged.rows else []) + rollups
        if overlapping(rollups):
            units: list[list[Rollup]] = []
            for r in rollups:  # chains of rollups that overlap one another
                if units and r.min_ms <= max(u.max_ms for u in units[-1]):
                    units[-1].append(r)
                else:
                    units.append([r])
            rollups = [
                unit[0] if len(unit) == 1 else self._unit(unit, {_name(p): p for p, _ in files})
                for unit in units
            ]
        if (
            newest
            and len(files) - len(self._merged_sources.get(date, ())) >= MERGE_EVERY
            and self.place.writable
        ):
            self._background.submit(("merge", date), self._write_merged, date, list(rollups))
        return rollups

    def _merged_start(self, date: str, files: list[tuple[str, int]]) -> Rollup | None:
        """The newest date's saved merge of its first files, read when this process first opens
        the date without any of its rollups in hand (a restart); kept until the date closes."""
        if date not in self._merged:
            merged = None
            if not any(path in self._files for path, _ in files):
                merged = self._read(self._cache_path(f"date={date}/{MERGED}"), None)
                if merged is not None and not set(merged.sources) <= set(_sources(files)):
                    merged = None
            self._merged[date] = merged
            if merged is not None:
                self._merged_sources[date] = frozenset(merged.sources)
        return self._merged[date]

    def _write_merged(self, date: str, rollups: list[Rollup]) -> None:
        """The newest date's rollups so far merged into one and saved, for the next process."""
        path = self._cache_path(f"date={date}/{MERGED}")
        try:
            merged = merge_rollups(rollups, key=f"date={date}/{MERGED}", tail_ms=self.tail_ms)
            if self._write(path, merged):
                with self._lock:
                    if date in self._days:  # the date closed meanwhile: its folder is gone or going
                        self._remove(path)
                    else:
                        self._merged_sources[date] = frozenset(merged.sources)
        except Exception as exc:  # noqa: BLE001 - without it a restart reads the date's rollups one by one
            log.warning("kgroups history: cannot merge the rollups of %s (%s)", date, exc)

    def _unit(self, unit: list[Rollup], paths: dict[str, str]) -> Rollup:
        """Files whose snapshots overlap, rolled up from their rows together (rare: a backfill)."""
        sources = tuple(sorted(s for u in unit for s in u.sources))
        known = self._units.get(sources)
        if known is None:
            known = self._units[sources] = self._from_rows(
                "+".join(u.key for u in unit), [paths[name] for name, _ in sources], sources
            )
        return known

    def _closed_date(self, date: str, files: list[tuple[str, int]]) -> Rollup:
        sources = _sources(files)
        known = self._days.get(date)
        if known is not None and tuple(sorted(known.sources)) == sources:
            self._days.move_to_end(date)
            return known
        path = self._cache_path(f"date={date}.arrow")
        rollup = self._read(path, sources)
        if rollup is not None:
            self._advance(len(files))
        else:
            parts = self._open_date(date, files, newest=False)
            rollup = (
                parts[0]
                if len(parts) == 1
                else merge_rollups(parts, key=date, tail_ms=self.tail_ms)
                if parts
                else empty_rollup(date, sources)
            )
            if len(files) > 1 and self._write(path, rollup):
                self._remove(self._cache_path(f"date={date}"))  # its per-file rollups are no longer read
                sweep(self.place, set(self.store.dates()))
        if len(files) > 1 and self.place.writable:
            self._background.submit(("date rows", date), self._write_date_rows, date, list(files))
        for path_of_file, _ in files:
            self._files.pop(path_of_file, None)
        self._merged.pop(date, None)
        self._merged_sources.pop(date, None)
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
        self._advance(1)
        return rollup

    def _advance(self, files: int) -> None:
        if self._progress is not None:
            self._progress = (min(self._progress[1], self._progress[0] + files), self._progress[1])

    def _from_rows(self, key: str, paths: list[str], sources: tuple[tuple[str, int], ...]) -> Rollup:
        self.computed += 1
        tables = [self.store.read_file(p, read_dictionary=_STRINGS) for p in paths]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")
        return rollup_table(table, key=key, sources=sources, tail_ms=self.tail_ms)

    def _forget(self, dates: set[str]) -> None:
        """Drop what belongs to dates no longer in the store."""
        for date in [d for d in self._days if d not in dates]:
            del self._days[date]
        for path in [p for p in self._files if _name(p.rsplit("/", 1)[0])[len("date=") :] not in dates]:
            del self._files[path]
        for date in [d for d in self._merged if d not in dates]:
            del self._merged[date]
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
        return f"{self.place.dir}/{relative}"

    def _read(self, path: str, sources: tuple[tuple[str, int], ...] | None) -> Rollup | None:
        """The rollup saved at ``path`` if it covers exactly ``sources`` (None: whatever it covers)."""
        fs = self.place.fs
        if fs is None:
            return None
        try:
            if not fs.exists(path):
                return None
            rollup = load_rollup(fs, path)
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign cache file is recomputed, never trusted
            log.warning("kgroups history: ignoring the saved rollup %s (%s); computing it again", path, exc)
            return None
        return rollup if sources is None or tuple(sorted(rollup.sources)) == tuple(sorted(sources)) else None

    def _write(self, path: str, rollup: Rollup) -> bool:
        if not self.place.writable:
            return False
        try:
            save_rollup(self.place.fs, path, rollup)
            return True
        except Exception as exc:  # noqa: BLE001 - a read-only store still serves, from memory
            if not self._warned:
                log.warning(
                    "kgroups history: cannot save rollups under %s (%s): they are kept in memory only, "
                    "and computed again by the next process",
                    self.place.url,
                    exc,
                )
                self._warned = True
            return False

    def _remove(self, path: str) -> None:
        fs = self.place.fs
        try:
            if fs is not None and fs.exists(path):
                fs.rm(path, recursive=True)
        except Exception as exc:  # noqa: BLE001 - leftovers are only unused cache files
            log.info("kgroups history: could not remove %s (%s)", path, exc)


def _day_start_ms(date: str) -> int:
    return int(datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() * 1000)


def _sources(files: list[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((_name(p), size) for p, size in files))
