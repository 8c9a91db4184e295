"""A few groups' rows of many history files, read through the files' row-group statistics; and a
closed date's rows in one file sorted by group, so a group's 14 days are ~14 small reads.

The store writes each file sorted by group in small row groups (:mod:`.store`), so the row
groups whose ``group_id`` min/max cannot hold a wanted group are never read. With one file per
snapshot (96 a day) that still means opening every file; a closed date's **date rows file**
(:func:`write_date_rows`) holds all its rows in one Parquet file in the store's row order,
recording the ``(name, size)`` of the history files it was written from: it stands for them
only while exactly those files are there (:meth:`Footers.date_rows`).

Footers are parsed once per file and kept (:class:`Footers`): history files never change, and a
date rows file is looked at only under the sources it records.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .rollup import value_ranks
from .rollup_place import write_atomically
from .store import HISTORY_SCHEMA

log = logging.getLogger(__name__)

__all__ = ["Footers", "FileIndex", "write_date_rows", "DATE_ROWS_GROUP_ROWS"]

#: Row groups of a date rows file: a group's day (10 partitions x 96 snapshots = 960 rows) is one
#: or two of them, and the footer of a day of 1,000 groups stays ~120 row groups.
DATE_ROWS_GROUP_ROWS = 8192
_SOURCES_KEY = b"kgroups_sources"
_FOOTERS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class FileIndex:
    """One Parquet file's footer and, per row group, its ``group_id`` and ``snapshot_ms`` ranges
    (a row group without statistics has the widest range: it is always read)."""

    path: str
    metadata: pq.FileMetaData
    group_min: tuple[str | None, ...]
    group_max: tuple[str | None, ...]
    t_min: np.ndarray
    t_max: np.ndarray

    @classmethod
    def of(cls, path: str, metadata: pq.FileMetaData) -> FileIndex:
        names = metadata.schema.to_arrow_schema().names
        g, t = names.index("group_id"), names.index("snapshot_ms")
        group_min, group_max, t_min, t_max = [], [], [], []
        for i in range(metadata.num_row_groups):
            row_group = metadata.row_group(i)
            gs, ts = row_group.column(g).statistics, row_group.column(t).statistics
            known = gs is not None and gs.has_min_max
            group_min.append(gs.min if known else None)
            group_max.append(gs.max if known else None)
            timed = ts is not None and ts.has_min_max
            t_min.append(ts.min if timed else np.iinfo(np.int64).min)
            t_max.append(ts.max if timed else np.iinfo(np.int64).max)
        return cls(
            path,
            metadata,
            tuple(group_min),
            tuple(group_max),
            np.array(t_min, dtype=np.int64),
            np.array(t_max, dtype=np.int64),
        )

    def row_groups(self, group_ids: Sequence[str], since_ms: int | None, until_ms: int | None) -> list[int]:
        """The row groups that may hold rows of ``group_ids`` in ``[since_ms, until_ms)``."""
        out = []
        for i, (low, high) in enumerate(zip(self.group_min, self.group_max)):
            if (since_ms is not None and self.t_max[i] < since_ms) or (
                until_ms is not None and self.t_min[i] >= until_ms
            ):
                continue
            if low is None or high is None or any(low <= g <= high for g in group_ids):
                out.append(i)
        return out


def _sources_of(metadata: pq.FileMetaData) -> tuple[tuple[str, int], ...] | None:
    raw = (metadata.metadata or {}).get(_SOURCES_KEY)
    if raw is None:
        return None
    return tuple(sorted((name, int(size)) for name, size in json.loads(raw)))


class Footers:
    """Parsed footers of the files a reader has read (the most recent :data:`_FOOTERS_KEPT`)."""

    def __init__(self, fs) -> None:
        self.fs = fs
        self._kept: OrderedDict[tuple, FileIndex] = OrderedDict()
        self._lock = threading.Lock()

    def history_file(self, path: str, size: int) -> FileIndex:
        """A history file's index (files are never rewritten: its path and size name it)."""
        return self._get((path, size), lambda: self._read(path))

    def date_rows(self, path: str, sources: tuple[tuple[str, int], ...]) -> FileIndex | None:
        """The date rows file at ``path`` if it was written from exactly ``sources`` (None: it is
        not there, is damaged, or stands for other files)."""
        key = (path, tuple(sorted(sources)))

        def read() -> FileIndex | None:
            try:
                if not self.fs.exists(path):
                    return None
                index = self._read(path)
            except Exception as exc:  # noqa: BLE001 - a damaged cache file is not used (and written again)
                log.info(
                    "date rows %s not used (%s: %s): the date's own files are read",
                    path,
                    type(exc).__name__,
                    exc,
                )
                return None
            return index if _sources_of(index.metadata) == key[1] else None

        return self._get(key, read, keep_none=False)

    def forget(self, path: str) -> None:
        with self._lock:
            for key in [k for k in self._kept if k[0] == path]:
                del self._kept[key]

    def _get(self, key: tuple, read, keep_none: bool = True):
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        index = read()
        if index is not None or keep_none:
            with self._lock:
                self._kept[key] = index
                while len(self._kept) > _FOOTERS_KEPT:
                    self._kept.popitem(last=False)
        return index

    def _read(self, path: str) -> FileIndex:
        with self.fs.open(path, "rb") as f:
            return FileIndex.of(path, pq.ParquetFile(f).metadata)

    def read_rows(
        self, files: Iterable[FileIndex], group_ids: Sequence[str], since_ms: int | None, until_ms: int | None
    ) -> pa.Table:
        """The rows of ``group_ids`` with ``since_ms <= snapshot_ms < until_ms`` in ``files``
        (:data:`HISTORY_SCHEMA`; in file order, which readers must not rely on)."""
        wanted = pa.array(list(group_ids), pa.string())
        tables = []
        for index in files:
            row_groups = index.row_groups(group_ids, since_ms, until_ms)
            if not row_groups:
                continue
            with self.fs.open(index.path, "rb") as f:
                table = pq.ParquetFile(f, metadata=index.metadata).read_row_groups(
                    row_groups, columns=list(HISTORY_SCHEMA.names)
                )
            keep = pc.is_in(table["group_id"], wanted)
            if since_ms is not None:
                keep = pc.and_(keep, pc.greater_equal(table["snapshot_ms"], since_ms))
            if until_ms is not None:
                keep = pc.and_(keep, pc.less(table["snapshot_ms"], until_ms))
            tables.append(table.filter(keep).cast(HISTORY_SCHEMA))
        return pa.concat_tables(tables) if tables else HISTORY_SCHEMA.empty_table()


def write_date_rows(fs, path: str, tables: Sequence[pa.Table], sources: tuple[tuple[str, int], ...]) -> None:
    """The rows of a date's files as one Parquet file in the store's row order (group, topic,
    partition, time), in row groups of :data:`DATE_ROWS_GROUP_ROWS`, recording ``sources``.
    Written to a temporary name and moved: readers never see half a file."""
    table = pa.concat_tables([t.select(list(HISTORY_SCHEMA.names)).cast(HISTORY_SCHEMA) for t in tables])
    order = np.lexsort(
        (
            table["snapshot_ms"].to_numpy(),
            pc.fill_null(table["partition"], -1).to_numpy(),
            value_ranks(table["topic"]),
            value_ranks(table["group_id"]),
        )
    )
    table = table.take(order).replace_schema_metadata(
        {_SOURCES_KEY: json.dumps([list(s) for s in sorted(sources)])}
    )
    with write_atomically(fs, path) as f:
        pq.write_table(table, f, compression="zstd", row_group_size=DATE_ROWS_GROUP_ROWS)
