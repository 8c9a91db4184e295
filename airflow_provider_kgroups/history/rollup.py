"""Rollups of the history store, one per Parquet file, kept while the files do not change.

The store is append-only: a file, once written, is never rewritten (:mod:`.store`). So what a
reader derives from one file stays true while that file is there, and a window over many days
is the concatenation of its files' rollups. :class:`HistoryRollups` keeps them in memory (for
a long-running reader such as the Airflow UI page), computes the rollup of a file the first
time a window needs it, and forgets the files that are gone.

Per file (:class:`FileRollup`):

``groups``
    one row per (group, snapshot): ``group_state``, ``protocol_type``, ``members``,
    ``partitions`` (rows with a topic), ``unknown`` (of those, rows whose lag is unknown),
    ``lag`` (the sum of the known lags), ``committed`` (rows with a committed offset) and
    ``committed_sum`` (their sum: when it changes, the group made commit progress). The
    group's total lag at that snapshot is ``lag`` when ``unknown`` is 0, otherwise unknown,
    as :attr:`..lag.model.GroupLag.total_lag` reads a snapshot of the history (which keeps no
    unknown-lag policy: FAIL), and unknown for a group that does not exist (state Dead, no
    member, nothing committed).
``log_ends``
    one row per (topic, partition, snapshot): the log-end offset read then. The samples a
    lag-in-seconds estimate interpolates in (:mod:`..lag.seconds`), shared by every group
    reading the partition.
``last``
    each group's full rows at its last snapshot in the file: a group's latest partitions (also
    of a group that is no longer snapshotted, e.g. deleted) without reading the file again.
``tail``
    the file's full rows of its last :data:`TAIL_MS` (the verdict window of the latest
    snapshot); dropped once newer files cover that time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..lag.model import HISTORY_COLUMNS
from .store import HISTORY_SCHEMA, HistoryStore

__all__ = ["FileRollup", "HistoryRollups", "TAIL_MS", "GROUP_KEYS", "rollup_table", "total_lag", "groups_in",
           "log_ends_in", "tails_in", "lasts_in"]

#: How much of a file's end its rollup keeps as full rows: the longest verdict window a page
#: judges the latest snapshot over (verdicts default to 30 minutes).
TAIL_MS = 3_600_000
GROUP_KEYS = ["group_id", "snapshot_ms", "group_state", "protocol_type", "members"]
_STRINGS = ["group_id", "group_state", "protocol_type", "topic", "flags"]


@dataclass(frozen=True, slots=True)
class FileRollup:
    path: str
    size: int
    min_ms: int
    max_ms: int
    rows: int
    groups: pa.Table
    log_ends: pa.Table
    last: pa.Table
    tail: pa.Table


def rollup_table(table: pa.Table, *, path: str = "", size: int = 0, tail_ms: int = TAIL_MS) -> FileRollup:
    """The rollup of history rows (columns of :data:`HISTORY_COLUMNS`, string columns plain or
    dictionary-encoded)."""
    table = table.select(list(HISTORY_COLUMNS))
    if table.num_rows == 0:
        empty = HISTORY_SCHEMA.empty_table()
        return FileRollup(path, size, 0, -1, 0, _empty_groups(), _empty_log_ends(), empty, empty)
    has_topic = pc.is_valid(table["topic"])
    flags = pa.table({
        **{name: _plain(table[name]) for name in GROUP_KEYS},
        "partitions": pc.cast(has_topic, pa.int64()),
        "unknown": pc.cast(pc.and_(has_topic, pc.is_null(table["lag"])), pa.int64()),
        "lag": table["lag"],
        "committed": pc.cast(pc.is_valid(table["committed"]), pa.int64()),
        "committed_sum": table["committed"],
    })
    groups = flags.group_by(GROUP_KEYS, use_threads=False).aggregate(
        [("partitions", "sum"), ("unknown", "sum"), ("lag", "sum"), ("committed", "sum"), ("committed_sum", "sum")])
    groups = groups.rename_columns([{"partitions_sum": "partitions", "unknown_sum": "unknown", "lag_sum": "lag",
                                     "committed_sum": "committed", "committed_sum_sum": "committed_sum"}.get(n, n) for n in groups.schema.names])
    groups = groups.select(_GROUP_COLUMNS).cast(_GROUPS_SCHEMA)
    samples = pa.table({"topic": _plain(table["topic"]), "partition": table["partition"],
                        "snapshot_ms": table["snapshot_ms"], "log_end": table["log_end"]})
    samples = samples.filter(pc.and_(pc.is_valid(samples["topic"]), pc.is_valid(samples["log_end"])))
    log_ends = samples.group_by(["topic", "partition", "snapshot_ms"], use_threads=False).aggregate(
        [("log_end", "max")]).rename_columns(["topic", "partition", "snapshot_ms", "log_end"])
    plain = pa.table({name: _plain(table[name]) if name in _STRINGS else table[name] for name in HISTORY_COLUMNS})
    times = plain["snapshot_ms"]
    min_ms, max_ms = pc.min(times).as_py(), pc.max(times).as_py()
    tail = plain.filter(pc.greater_equal(times, max_ms - tail_ms))
    newest = groups.group_by(["group_id"], use_threads=False).aggregate([("snapshot_ms", "max")]).rename_columns(
        ["group_id", "snapshot_ms"])
    last = plain.join(newest, keys=["group_id", "snapshot_ms"], join_type="inner", use_threads=False)
    return FileRollup(path, size, min_ms, max_ms, table.num_rows, groups, log_ends.cast(_LOG_ENDS_SCHEMA),
                      last.select(list(HISTORY_COLUMNS)).cast(HISTORY_SCHEMA), tail.cast(HISTORY_SCHEMA))


def total_lag(groups: pa.Table) -> pa.ChunkedArray:
    """Per row of a ``groups`` rollup: the group's total lag, null when unknown."""
    known = pc.equal(groups["unknown"], 0)
    exists = pc.invert(pc.and_(pc.and_(pc.equal(groups["group_state"], "Dead"), pc.equal(groups["members"], 0)),
                               pc.equal(groups["committed"], 0)))
    return pc.if_else(pc.and_(known, exists), groups["lag"], pa.scalar(None, pa.int64()))


_GROUP_COLUMNS = [*GROUP_KEYS, "partitions", "unknown", "lag", "committed", "committed_sum"]
_GROUPS_SCHEMA = pa.schema([("group_id", pa.string()), ("snapshot_ms", pa.int64()), ("group_state", pa.string()),
                            ("protocol_type", pa.string()), ("members", pa.int32()), ("partitions", pa.int64()),
                            ("unknown", pa.int64()), ("lag", pa.int64()), ("committed", pa.int64()),
                            ("committed_sum", pa.int64())])
_LOG_ENDS_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("snapshot_ms", pa.int64()),
                              ("log_end", pa.int64())])


def _empty_groups() -> pa.Table:
    return _GROUPS_SCHEMA.empty_table()


def _empty_log_ends() -> pa.Table:
    return _LOG_ENDS_SCHEMA.empty_table()


def _plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary-encoded string column decoded (group_by cannot mix the dictionaries of
    several row groups); plain columns as they are."""
    if pa.types.is_dictionary(column.type):
        return column.cast(column.type.value_type)
    return column


class HistoryRollups:
    """The rollups of a store's files, computed on first use and kept while the file is there
    with the same size. Thread-safe; one per store per process."""

    def __init__(self, store: HistoryStore, *, tail_ms: int = TAIL_MS) -> None:
        self.store = store
        self.tail_ms = tail_ms
        self._rollups: dict[str, FileRollup] = {}
        self._lock = threading.Lock()

    def window(self, since_ms: int | None = None, until_ms: int | None = None) -> list[FileRollup]:
        """The rollups of the files that may hold rows in ``[since_ms, until_ms)``, oldest
        first; files listed by the store now (so a file appended since the last call is in)."""
        files = self.store.files(since_ms=since_ms, until_ms=until_ms)
        wanted = []
        for path, size in files:
            with self._lock:
                known = self._rollups.get(path)
            if known is None or known.size != size:
                known = self._compute(path, size)
                with self._lock:
                    self._rollups[path] = known
            if known.rows and (since_ms is None or known.max_ms >= since_ms) \
                    and (until_ms is None or known.min_ms < until_ms):
                wanted.append(known)
        self._forget_missing()
        self._drop_old_tails()
        with self._lock:  # the tails may have been dropped meanwhile
            wanted = [self._rollups.get(r.path, r) for r in wanted]
        return sorted(wanted, key=lambda r: (r.min_ms, r.path))

    def _drop_old_tails(self) -> None:
        """A file's tail matters only while it holds the store's latest snapshots."""
        with self._lock:
            newest = max((r.max_ms for r in self._rollups.values()), default=None)
            if newest is None:
                return
            for path, r in list(self._rollups.items()):
                if r.tail.num_rows and r.max_ms < newest - self.tail_ms:
                    self._rollups[path] = replace(r, tail=r.tail.slice(0, 0))

    def _forget_missing(self) -> None:
        present = {path for path, _ in self.store.files()}
        with self._lock:
            for path in [p for p in self._rollups if p not in present]:
                del self._rollups[path]

    def _compute(self, path: str, size: int) -> FileRollup:
        table = self.store.read_file(path, read_dictionary=_STRINGS)
        return rollup_table(table, path=path, size=size, tail_ms=self.tail_ms)

    def newest_ms(self) -> int | None:
        """The time of the store's newest snapshot (None: the store is empty)."""
        for day in reversed(self.store.dates()):
            rollups = self.window(since_ms=_day_start(day), until_ms=_day_start(day) + _DAY_MS)
            if rollups:
                return max(r.max_ms for r in rollups)
        return None

    @property
    def cached_files(self) -> int:
        with self._lock:
            return len(self._rollups)


_DAY_MS = 24 * 3_600_000


def _day_start(day: str) -> int:
    from datetime import datetime, timezone

    return int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp() * 1000)


def groups_in(rollups: Iterable[FileRollup], since_ms: int | None = None, until_ms: int | None = None) -> pa.Table:
    """The ``groups`` rows of ``rollups`` in ``[since_ms, until_ms)``, one table."""
    tables = [r.groups for r in rollups]
    table = pa.concat_tables(tables) if tables else _empty_groups()
    return _between(table, since_ms, until_ms)


def log_ends_in(rollups: Iterable[FileRollup], since_ms: int | None = None, until_ms: int | None = None) -> pa.Table:
    tables = [r.log_ends for r in rollups]
    table = pa.concat_tables(tables) if tables else _empty_log_ends()
    return _between(table, since_ms, until_ms)


def tails_in(rollups: Iterable[FileRollup], since_ms: int | None = None) -> pa.Table:
    """The full rows of the store's latest :data:`TAIL_MS` (from ``since_ms``)."""
    tables = [r.tail for r in rollups]
    table = pa.concat_tables(tables) if tables else HISTORY_SCHEMA.empty_table()
    return _between(table, since_ms, None)


def lasts_in(rollups: Iterable[FileRollup]) -> pa.Table:
    """Each group's full rows at its last snapshot in ``rollups``."""
    tables = [r.last for r in rollups]
    table = pa.concat_tables(tables) if tables else HISTORY_SCHEMA.empty_table()
    if table.num_rows == 0:
        return table
    newest = table.group_by(["group_id"], use_threads=False).aggregate([("snapshot_ms", "max")]).rename_columns(
        ["group_id", "snapshot_ms"])
    return table.join(newest, keys=["group_id", "snapshot_ms"], join_type="inner",
                      use_threads=False).select(list(HISTORY_COLUMNS))


def _between(table: pa.Table, since_ms: int | None, until_ms: int | None) -> pa.Table:
    times = table["snapshot_ms"]
    if since_ms is not None:
        table = table.filter(pc.greater_equal(times, since_ms))
        times = table["snapshot_ms"]
    if until_ms is not None:
        table = table.filter(pc.less(times, until_ms))
    return table
