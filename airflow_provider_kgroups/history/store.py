"""The lag history store: append-only Parquet, partitioned by date, under a URL.

Layout (what the PySpark jobs read)::

    <url>/date=YYYY-MM-DD/part-<first snapshot_ms>-<uuid>.parquet

``<url>`` is a local directory (the default, ``kgroups-history``) or any fsspec URL
(``s3://bucket/prefix``, ``gs://...``, ``abfs://...``, ``memory://...``); credentials come
from ``storage_options`` or the environment, as fsspec does it. Every :meth:`HistoryStore.append`
writes new files (one per date it covers) and never rewrites one, so concurrent writers and
readers need no lock; a reader sees whole files only. Inside a file, rows are sorted by
group, topic, partition and time, in row groups of :data:`ROW_GROUP_ROWS` rows.

Row schema (one row per snapshot, group and partition; :data:`HISTORY_COLUMNS`)::

    snapshot_ms    int64    when the committed offsets were read (epoch ms, UTC)
    group_id       string
    group_state    string   Stable, Empty, Dead, PreparingRebalance, ... or Unknown
    protocol_type  string   "consumer", "" or e.g. "connect"
    members        int32
    topic          string   null on the one row of a group without partitions
    partition      int32    null likewise
    committed      int64    null: no committed offset
    log_start      int64    null: not read
    log_end        int64    null: not read
    lag            int64    null: unknown (no commit under fail/ignore, or an error)
    flags          string   comma-joined LagFlag values (no_commit, clamped, lost, error), "" if none

plus the partition column ``date`` (string ``YYYY-MM-DD``, the UTC date of ``snapshot_ms``),
present in the directory names only. Spark: ``spark.read.parquet(url)`` (``date`` comes
back as a date column by partition inference; filter on it to prune).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import fsspec

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
except ImportError as exc:  # the snapshot and cleanup operators need it: say so at DAG parse time
    raise ImportError(
        "the Parquet history store needs pyarrow: pip install 'airflow-provider-kgroups[history]'"
    ) from exc

from ..client.errors import CLIENT_RECORDED_ERROR, ConfigurationError, Failure
from ..client.numbers import check_int
from ..client.results import GroupState
from ..lag.model import HISTORY_COLUMNS, GroupLag, LagFlag, LagSnapshot, PartitionLag

__all__ = [
    "HistoryStore",
    "HISTORY_SCHEMA",
    "DEFAULT_URL",
    "RECORDED_ERROR",
    "snapshot_table",
    "table_snapshots",
    "day_of",
]

DEFAULT_URL = "kgroups-history"
#: Rows are sorted by group inside each file and cut into small row groups, so a reader that
#: wants a few groups skips the rest by the row groups' min/max statistics.
ROW_GROUP_ROWS = 2048
_FILE_ORDER = [
    ("group_id", "ascending"),
    ("topic", "ascending"),
    ("partition", "ascending"),
    ("snapshot_ms", "ascending"),
]

HISTORY_SCHEMA = pa.schema(
    [
        ("snapshot_ms", pa.int64()),
        ("group_id", pa.string()),
        ("group_state", pa.string()),
        ("protocol_type", pa.string()),
        ("members", pa.int32()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed", pa.int64()),
        ("log_start", pa.int64()),
        ("log_end", pa.int64()),
        ("lag", pa.int64()),
        ("flags", pa.string()),
    ]
)
assert tuple(HISTORY_SCHEMA.names) == HISTORY_COLUMNS
_PARTITIONING = ds.partitioning(pa.schema([("date", pa.string())]), flavor="hive")


#: What a partition's ``error`` flag reads back as: the history keeps no error code.
RECORDED_ERROR = Failure(CLIENT_RECORDED_ERROR, "error recorded in the history")


def day_of(ms: int) -> str:
    """The UTC date of an epoch-ms time, ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def snapshot_table(snapshot: LagSnapshot) -> pa.Table:
    """A snapshot's rows (``LagSnapshot.rows()``) as an Arrow table of :data:`HISTORY_SCHEMA`."""
    return pa.Table.from_pylist(snapshot.rows(), schema=HISTORY_SCHEMA)


def table_snapshots(table: pa.Table) -> list[LagSnapshot]:
    """Rows back into snapshots, oldest first. What the history does not keep comes back
    empty: member ids, errors' details (an ``error`` flag becomes a Failure without code),
    and the policy (FAIL)."""
    table = table.select(list(HISTORY_COLUMNS)).sort_by(
        [
            ("snapshot_ms", "ascending"),
            ("group_id", "ascending"),
            ("topic", "ascending"),
            ("partition", "ascending"),
        ]
    )
    return [
        LagSnapshot(
            taken_at_ms=ms,
            groups={
                g: GroupLag(
                    g, GroupState.parse(v["state"]), v["protocol_type"], v["members"], tuple(v["partitions"])
                )
                for g, v in groups.items()
            },
        )
        for ms, groups in sorted(_groups_by_time(table.to_pydict()).items())
    ]


def _groups_by_time(columns: Mapping[str, list[Any]]) -> dict[int, dict[str, dict[str, Any]]]:
    """Snapshot time -> group id -> its state, protocol type, members and partitions, from the
    columns of rows sorted by time and group."""
    by_time: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    flag_sets: dict[str | None, tuple[frozenset[LagFlag], Failure | None]] = {}  # a few distinct strings
    current_key, partitions = None, []  # rows come sorted: a group's rows of one snapshot are adjacent
    for (
        at_ms,
        group_id,
        state,
        protocol_type,
        members,
        topic,
        partition,
        committed,
        log_start,
        log_end,
        lag,
        flag_text,
    ) in zip(*(columns[name] for name in HISTORY_COLUMNS)):
        if (at_ms, group_id) != current_key:
            current_key = (at_ms, group_id)
            groups = by_time[at_ms]
            group = groups.get(group_id)
            if group is None:
                group = groups[group_id] = {
                    "state": state,
                    "protocol_type": protocol_type or "",
                    "members": members or 0,
                    "partitions": [],
                }
            partitions = group["partitions"]
        if topic is None:
            continue
        parsed = flag_sets.get(flag_text)
        if parsed is None:  # parsed once per distinct string
            parsed = flag_sets[flag_text] = _parse_flags(flag_text)
        partitions.append(
            PartitionLag(topic, partition, committed, log_start, log_end, lag, parsed[0], None, parsed[1])
        )
    return by_time


def _parse_flags(flag_text: str | None) -> tuple[frozenset[LagFlag], Failure | None]:
    """A row's comma-joined flags, and the failure an ``error`` flag stands for."""
    flags = frozenset(LagFlag(f) for f in (flag_text or "").split(",") if f)
    return flags, RECORDED_ERROR if LagFlag.ERROR in flags else None


class HistoryStore:
    """Append snapshots, read windows back. ``url``: a directory or an fsspec URL."""

    def __init__(self, url: str = DEFAULT_URL, *, storage_options: Mapping[str, Any] | None = None) -> None:
        if not isinstance(url, str) or not url.strip():
            raise ConfigurationError(f"history store url must be a non-empty path or URL, got {url!r}.")
        self.url = url.rstrip("/")
        try:
            self._fs, self._root = fsspec.core.url_to_fs(self.url, **dict(storage_options or {}))
        except (ImportError, ValueError) as exc:
            raise ConfigurationError(
                f"history store url {url!r} cannot be opened: {exc} (is the fsspec "
                "implementation for that scheme installed, e.g. s3fs for s3://?)"
            ) from None
        self._root = self._root.rstrip("/")

    def __repr__(self) -> str:
        return f"HistoryStore({self.url!r})"

    # -- writing ---------------------------------------------------------------------------------

    def append(self, snapshot: LagSnapshot) -> list[str]:
        """Write one snapshot; returns the files written (none for a snapshot without rows)."""
        return self.append_table(snapshot_table(snapshot))

    def append_table(self, table: pa.Table) -> list[str]:
        """Write rows already in :data:`HISTORY_SCHEMA` (columns in any order, extra columns
        refused). One new file per UTC date the rows cover."""
        if set(table.schema.names) != set(HISTORY_COLUMNS):
            raise ConfigurationError(
                f"history rows must have exactly the columns {list(HISTORY_COLUMNS)}, "
                f"got {table.schema.names}."
            )
        table = table.select(list(HISTORY_COLUMNS)).cast(HISTORY_SCHEMA)
        if table.num_rows == 0:
            return []
        if table["snapshot_ms"].null_count:
            raise ConfigurationError("history rows need a snapshot_ms on every row.")
        days = pc.strftime(pc.cast(table["snapshot_ms"], pa.timestamp("ms", tz="UTC")), format="%Y-%m-%d")
        written = []
        unique_days = pc.unique(days).to_pylist()
        for day in unique_days:
            rows = table.filter(pc.equal(days, day)) if len(unique_days) > 1 else table
            first_ms = pc.min(rows["snapshot_ms"]).as_py()
            directory = f"{self._root}/date={day}"
            self._fs.makedirs(directory, exist_ok=True)
            path = f"{directory}/part-{first_ms:013d}-{uuid.uuid4().hex[:12]}.parquet"
            pq.write_table(
                rows.sort_by(_FILE_ORDER),
                path,
                filesystem=self._fs,
                compression="zstd",
                row_group_size=ROW_GROUP_ROWS,
            )
            written.append(path)
        return written

    # -- reading ---------------------------------------------------------------------------------

    def _dataset(self) -> ds.Dataset | None:
        if not self._fs.exists(self._root):
            return None
        try:
            return ds.dataset(
                self._root,
                format="parquet",
                filesystem=self._fs,
                partitioning=_PARTITIONING,
                schema=HISTORY_SCHEMA.append(pa.field("date", pa.string())),
                exclude_invalid_files=False,
                ignore_prefixes=[".", "_"],
            )
        except FileNotFoundError:
            return None

    def read_table(
        self,
        group_ids: Iterable[str] | None = None,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
        columns: Iterable[str] | None = None,
    ) -> pa.Table:
        """Rows with ``since_ms <= snapshot_ms < until_ms`` (either bound optional) for
        ``group_ids`` (None: all), unsorted. Only the date directories in range are opened."""
        since, until = _window(since_ms, until_ms)
        wanted = list(columns) if columns is not None else list(HISTORY_COLUMNS)
        unknown = set(wanted) - set(HISTORY_COLUMNS) - {"date"}
        if unknown:
            raise ConfigurationError(
                f"unknown history column(s) {sorted(unknown)}; known: {list(HISTORY_COLUMNS)}."
            )
        dataset = self._dataset()
        if dataset is None:
            return HISTORY_SCHEMA.empty_table().select([c for c in wanted if c != "date"])
        condition = None

        def add(expr):
            nonlocal condition
            condition = expr if condition is None else condition & expr

        if since is not None:
            add(ds.field("date") >= day_of(since))
            add(ds.field("snapshot_ms") >= since)
        if until is not None:
            add(ds.field("date") <= day_of(until - 1))
            add(ds.field("snapshot_ms") < until)
        if group_ids is not None:
            if isinstance(group_ids, str):
                raise ConfigurationError(f"group_ids must be a list, not the single string {group_ids!r}.")
            add(ds.field("group_id").isin(list(group_ids)))
        return dataset.to_table(columns=wanted, filter=condition)

    def read_rows(
        self,
        group_ids: Iterable[str] | None = None,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
    ) -> list[dict[str, Any]]:
        """:meth:`read_table` as dicts, sorted by time, group, topic, partition."""
        table = self.read_table(group_ids, since_ms=since_ms, until_ms=until_ms)
        return table.sort_by(
            [
                ("snapshot_ms", "ascending"),
                ("group_id", "ascending"),
                ("topic", "ascending"),
                ("partition", "ascending"),
            ]
        ).to_pylist()

    def read_window(
        self,
        group_ids: Iterable[str] | None = None,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
    ) -> list[LagSnapshot]:
        """The window as snapshots, oldest first: what ``group_verdicts``, ``cleanup.classify_groups``
        and ``lag_seconds(history=...)`` take."""
        return table_snapshots(self.read_table(group_ids, since_ms=since_ms, until_ms=until_ms))

    def files(self, *, since_ms: int | None = None, until_ms: int | None = None) -> list[tuple[str, int]]:
        """``(path, size)`` of the Parquet files under the date directories that may hold rows
        in ``[since_ms, until_ms)``, in path order (a file is never rewritten: a reader may
        keep what it derived from one while its path and size stay)."""
        since, until = _window(since_ms, until_ms)
        first = day_of(since) if since is not None else None
        last = day_of(until - 1) if until is not None and until > 0 else None
        days = [d for d in self.dates() if (first is None or d >= first) and (last is None or d <= last)]
        return [f for day in days for f in self.date_files(day)]

    def date_files(self, day: str) -> list[tuple[str, int]]:
        """``(path, size)`` of the Parquet files of one date (``YYYY-MM-DD``), in path order."""
        out = []
        for info in self._fs.ls(f"{self._root}/date={day}", detail=True):
            name = info["name"].rstrip("/").rsplit("/", 1)[-1]
            if info.get("type") == "file" and name.endswith(".parquet") and not name.startswith(("_", ".")):
                out.append((info["name"], int(info.get("size") or 0)))
        return sorted(out)

    @property
    def filesystem(self) -> fsspec.AbstractFileSystem:
        """The store's fsspec filesystem (readers that keep files of their own under ``_`` folders)."""
        return self._fs

    @property
    def root(self) -> str:
        """The store's path on :attr:`filesystem`."""
        return self._root

    def read_file(
        self, path: str, *, columns: Iterable[str] | None = None, read_dictionary: Iterable[str] | None = None
    ) -> pa.Table:
        """One file of :meth:`files` (its rows, in the file's order)."""
        return pq.read_table(
            path,
            filesystem=self._fs,
            columns=list(columns) if columns is not None else None,
            read_dictionary=list(read_dictionary) if read_dictionary is not None else None,
        )

    def dates(self) -> list[str]:
        """The dates that have data, oldest first."""
        if not self._fs.exists(self._root):
            return []
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in self._fs.ls(self._root, detail=False)]
        return sorted(n[len("date=") :] for n in names if n.startswith("date="))


def _window(since_ms: int | None, until_ms: int | None) -> tuple[int | None, int | None]:
    for name, value in (("since_ms", since_ms), ("until_ms", until_ms)):
        if value is not None:
            check_int(name, value, at_least=0, must_be="a non-negative int of epoch milliseconds")
    if since_ms is not None and until_ms is not None and until_ms < since_ms:
        raise ConfigurationError(
            f"until_ms ({until_ms}) is before since_ms ({since_ms}): the window is negative."
        )
    return since_ms, until_ms
