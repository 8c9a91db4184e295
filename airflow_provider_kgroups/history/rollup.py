"""Rollups of the history store: what a reader needs of many snapshots, a small fraction of their rows.

The store is append-only (:mod:`.store`): a file, once written, never changes, so what is derived
from it stays true while it is there. A rollup is computed from rows (:func:`rollup_table`), and
rollups of consecutive stretches of time merge into the rollup of the whole stretch
(:func:`merge_rollups`): a window over many days is the sequence of its days' rollups.

A :class:`Rollup` holds:

``groups``
    one row per (group, snapshot), sorted by group then time (:data:`GROUPS_SCHEMA`):
    ``group_state``, ``protocol_type``, ``members``; ``total_lag`` as
    :attr:`..lag.model.GroupLag.total_lag` reads a stored snapshot (null when a partition's lag
    is unknown or the group does not exist); ``committed``, how many partitions have a committed
    offset; ``changed``, whether the committed offsets differ from the group's previous snapshot
    (exactly: the same partitions with the same offsets or not; null for the group's first
    snapshot in the rollup, which :func:`first_changes` settles against earlier rollups);
    ``unreadable``, whether a partition's committed offset was read with an error (its row
    flagged ``error``, without an offset); ``to_read``, whether a partition's log end was beyond
    its committed offset; ``ends_known``,
    whether every committed partition's log end was read. These are the facts the dead-group
    rules take from a stored snapshot (:class:`..lag.deadgroups.GroupHistoryPoint`).
``log_ends``
    one row per (topic, partition, snapshot): the log end read then, shared by every group
    reading the partition: the samples a lag-in-seconds estimate interpolates in.
``first`` / ``last``
    each group's full rows at its first / last snapshot in the rollup: its latest partitions
    (also of a group no longer snapshotted), and what :func:`first_changes` compares.
``tail``
    the full rows of the rollup's last :data:`TAIL_MS` (what verdicts over the latest
    snapshots judge).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..lag.model import HISTORY_COLUMNS
from .store import HISTORY_SCHEMA

__all__ = [
    "Rollup",
    "TAIL_MS",
    "GROUPS_SCHEMA",
    "LOG_ENDS_SCHEMA",
    "rollup_table",
    "empty_rollup",
    "merge_rollups",
    "compare_points",
    "first_changes",
    "with_first_changes",
    "overlapping",
    "value_ranks",
]

#: How much of its end a rollup keeps as full rows: the longest verdict window judged over the
#: latest snapshots (verdicts default to 30 minutes).
TAIL_MS = 3_600_000

GROUPS_SCHEMA = pa.schema(
    [
        ("group_id", pa.string()),
        ("snapshot_ms", pa.int64()),
        ("group_state", pa.string()),
        ("protocol_type", pa.string()),
        ("members", pa.int32()),
        ("total_lag", pa.int64()),
        ("committed", pa.int32()),
        ("changed", pa.bool_()),
        ("unreadable", pa.bool_()),
        ("to_read", pa.bool_()),
        ("ends_known", pa.bool_()),
    ]
)
LOG_ENDS_SCHEMA = pa.schema(
    [("topic", pa.string()), ("partition", pa.int32()), ("snapshot_ms", pa.int64()), ("log_end", pa.int64())]
)
_STRINGS = ("group_id", "group_state", "protocol_type", "topic", "flags")


@dataclass(frozen=True, slots=True)
class Rollup:
    """The rollup of the rows of ``sources`` (``(file name, size)`` of each history file it
    covers), ``min_ms`` to ``max_ms``. ``key`` names it (a file's or a date's path)."""

    key: str
    sources: tuple[tuple[str, int], ...]
    min_ms: int
    max_ms: int
    rows: int
    groups: pa.Table
    log_ends: pa.Table
    first: pa.Table
    last: pa.Table
    tail: pa.Table


def _plain(table: pa.Table) -> pa.Table:
    """History rows with dictionary-encoded strings decoded, in :data:`HISTORY_SCHEMA`."""
    columns = []
    for name in HISTORY_COLUMNS:
        column = table[name]
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        columns.append(column)
    return pa.Table.from_arrays(columns, names=list(HISTORY_COLUMNS)).cast(HISTORY_SCHEMA)


def value_ranks(column: pa.ChunkedArray) -> np.ndarray:
    """Each value's rank among the column's distinct values (sorted), -1 for null."""
    if pa.types.is_dictionary(column.type):
        encoded = column.unify_dictionaries().combine_chunks()
    else:
        encoded = pc.dictionary_encode(column).combine_chunks()
    if isinstance(encoded, pa.ChunkedArray):  # no chunk at all
        return np.zeros(0, dtype=np.int64)
    rank_of = np.empty(len(encoded.dictionary), dtype=np.int64)
    rank_of[pc.array_sort_indices(encoded.dictionary).to_numpy()] = np.arange(len(encoded.dictionary))
    indices = pc.fill_null(encoded.indices, -1).to_numpy()
    if not len(rank_of):
        return indices.astype(np.int64)  # every value null
    return np.where(indices >= 0, rank_of[np.maximum(indices, 0)], -1)


def _sorted_values(column: pa.ChunkedArray) -> pa.Array:
    """The column's distinct non-null values, sorted: what :func:`value_ranks` ranks index."""
    values = (
        column.unify_dictionaries().chunk(0).dictionary
        if pa.types.is_dictionary(column.type) and column.num_chunks
        else pc.unique(column.drop_null())
    )
    values = values.cast(pa.string())
    return values.take(pc.array_sort_indices(values))


def _has_flag(column: pa.ChunkedArray, flag: str) -> np.ndarray:
    """Per row, whether the comma-joined ``flags`` hold ``flag`` (a few distinct strings: each
    is split once)."""
    encoded = (
        column.unify_dictionaries().combine_chunks()
        if pa.types.is_dictionary(column.type)
        else pc.dictionary_encode(column).combine_chunks()
    )
    if isinstance(encoded, pa.ChunkedArray):  # no chunk at all
        return np.zeros(0, dtype=bool)
    holds = np.array([flag in (v or "").split(",") for v in encoded.dictionary.to_pylist()] + [False])
    return holds[pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)]


def _int(column: pa.ChunkedArray, fill: int = -1) -> np.ndarray:
    return pc.fill_null(column, fill).to_numpy()


def _is_sorted(*keys: np.ndarray) -> bool:
    """Whether rows are in lexicographic order of ``keys`` (most significant first)."""
    if len(keys[0]) < 2:
        return True
    ordered = np.diff(keys[-1]) >= 0
    for key in reversed(keys[:-1]):
        d = np.diff(key)
        ordered = (d > 0) | ((d == 0) & ordered)
    return bool(ordered.all())


def empty_rollup(key: str = "", sources: tuple[tuple[str, int], ...] = ()) -> Rollup:
    rows = HISTORY_SCHEMA.empty_table()
    return Rollup(
        key, sources, 0, -1, 0, GROUPS_SCHEMA.empty_table(), LOG_ENDS_SCHEMA.empty_table(), rows, rows, rows
    )


def rollup_table(
    table: pa.Table, *, key: str = "", sources: tuple[tuple[str, int], ...] = (), tail_ms: int = TAIL_MS
) -> Rollup:
    """The rollup of history rows (columns of :data:`HISTORY_COLUMNS` in any order, strings
    plain or dictionary-encoded), one row per (snapshot, group, partition)."""
    if table.num_rows == 0:
        return empty_rollup(key, sources)
    rows = _sorted_rows(table.select(list(HISTORY_COLUMNS)))
    points = _Points.of(rows)
    first, last, tail = _full_rows(rows, points, tail_ms)
    return Rollup(
        key,
        tuple(sources),
        int(rows.at_ms.min()),
        int(rows.at_ms.max()),
        rows.table.num_rows,
        _group_points(rows, points),
        _log_ends(rows),
        first,
        last,
        tail,
    )


@dataclass(frozen=True, slots=True)
class _Rows:
    """History rows sorted by group, topic, partition and time (strings still dictionary-encoded
    until the small outputs), with the arrays the rollup reads them by."""

    table: pa.Table
    group: np.ndarray  # the rank of group_id
    topic: np.ndarray  # the rank of topic, -1: none (a group without partitions)
    partition: np.ndarray
    at_ms: np.ndarray
    ends: np.ndarray  # log_end, 0 where not read
    end_valid: np.ndarray


def _sorted_rows(table: pa.Table) -> _Rows:
    g, topic = value_ranks(table["group_id"]), value_ranks(table["topic"])
    part, t = _int(table["partition"]), table["snapshot_ms"].to_numpy()
    if not _is_sorted(g, topic, part, t):  # files are written in this order: usually nothing to do
        order = np.lexsort((t, part, topic, g))
        table, g, topic, part, t = table.take(order), g[order], topic[order], part[order], t[order]
    end_valid = table["log_end"].is_valid().to_numpy(zero_copy_only=False)
    return _Rows(table, g, topic, part, t, _int(table["log_end"], 0), end_valid)


@dataclass(frozen=True, slots=True)
class _Points:
    """One point per (group, snapshot), sorted by group then time."""

    inverse: np.ndarray  # each row's point
    head: np.ndarray  # a row of each point
    same_group: np.ndarray  # the point before is the same group's

    @classmethod
    def of(cls, rows: _Rows) -> _Points:
        g, t = rows.group, rows.at_ms
        by_point = np.lexsort((t, g))
        gs, ts = g[by_point], t[by_point]
        starts = np.r_[True, (gs[1:] != gs[:-1]) | (ts[1:] != ts[:-1])]
        inverse = np.empty(len(t), dtype=np.int64)
        inverse[by_point] = np.cumsum(starts) - 1
        head = by_point[starts]
        return cls(inverse, head, np.r_[False, g[head][1:] == g[head][:-1]])

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per point, how many of its rows ``mask`` holds."""
        return np.bincount(self.inverse[mask], minlength=len(self.head))


def _group_points(rows: _Rows, points: _Points) -> pa.Table:
    """The ``groups`` table: one row per point (:data:`GROUPS_SCHEMA`)."""
    table, count = rows.table, points.count
    committed_valid = table["committed"].is_valid().to_numpy(zero_copy_only=False)
    committed = _int(table["committed"], 0)
    has_topic = rows.topic >= 0
    lag_valid = table["lag"].is_valid().to_numpy(zero_copy_only=False)
    lag_sum = np.zeros(len(points.head), dtype=np.int64)
    np.add.at(lag_sum, points.inverse[has_topic & lag_valid], _int(table["lag"], 0)[has_topic & lag_valid])
    k = count(committed_valid)
    unchanged = _unchanged(rows, points, committed_valid, committed, k)
    head_rows = _plain(table.take(points.head))
    state = head_rows["group_state"]
    members = head_rows["members"]
    not_found = (
        pc.fill_null(pc.equal(state, "Dead"), False).to_numpy(zero_copy_only=False)
        & (_int(members, 0) == 0)
        & (k == 0)
    )
    known = (count(has_topic & ~lag_valid) == 0) & ~not_found
    flagged_error = _has_flag(table["flags"], "error")
    return pa.table(
        {
            "group_id": head_rows["group_id"],
            "snapshot_ms": rows.at_ms[points.head],
            "group_state": state,
            "protocol_type": head_rows["protocol_type"],
            "members": members,
            "total_lag": pa.array(lag_sum, mask=~known),
            "committed": k.astype(np.int32),
            "changed": pa.array(~unchanged, mask=~points.same_group),
            "unreadable": count(has_topic & ~committed_valid & flagged_error) > 0,
            "to_read": count(committed_valid & rows.end_valid & (rows.ends > committed)) > 0,
            "ends_known": count(committed_valid & ~rows.end_valid) == 0,
        },
        schema=GROUPS_SCHEMA,
    )


def _unchanged(
    rows: _Rows, points: _Points, committed_valid: np.ndarray, committed: np.ndarray, k: np.ndarray
) -> np.ndarray:
    """Per point, whether its ``k`` committed offsets are exactly its group's previous point's: a
    committed row continues that point unchanged when the row before it is the same partition, at
    that previous point's time, with the same committed offset."""
    g, topic, part, t = rows.group, rows.topic, rows.partition, rows.at_ms
    inverse = points.inverse
    point_t = t[points.head]
    previous_t = np.r_[-1, point_t[:-1]]
    same_series = np.r_[False, (g[1:] == g[:-1]) & (topic[1:] == topic[:-1]) & (part[1:] == part[:-1])]
    previous_row_t = np.r_[-1, t[:-1]]
    continues = (
        same_series
        & committed_valid
        & np.r_[False, committed_valid[:-1]]
        & (committed == np.r_[-1, committed[:-1]])
        & points.same_group[inverse]
        & (previous_row_t == previous_t[inverse])
    )
    return (points.count(continues) == k) & (k == np.r_[0, k[:-1]])


def _log_ends(rows: _Rows) -> pa.Table:
    """The ``log_ends`` table: one row per (topic, partition, snapshot) whose log end was read."""
    sampled = (rows.topic >= 0) & rows.end_valid
    samples = pa.table(
        {
            "topic": rows.topic[sampled],
            "partition": rows.partition[sampled],
            "snapshot_ms": rows.at_ms[sampled],
            "log_end": rows.ends[sampled],
        }
    )
    log_ends = samples.group_by(["topic", "partition", "snapshot_ms"], use_threads=False).aggregate(
        [("log_end", "max")]
    )
    names = _sorted_values(rows.table["topic"])  # topic rank -> topic
    return pa.table(
        {
            "topic": names.take(log_ends["topic"]),
            "partition": log_ends["partition"],
            "snapshot_ms": log_ends["snapshot_ms"],
            "log_end": log_ends["log_end_max"],
        },
        schema=LOG_ENDS_SCHEMA,
    )


def _full_rows(rows: _Rows, points: _Points, tail_ms: int) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The full rows of each group's first and last point, and of the last ``tail_ms``."""
    table, t, inverse = rows.table, rows.at_ms, points.inverse
    first_point = ~points.same_group
    last_point = np.r_[~points.same_group[1:], True]
    max_ms = int(t.max())
    every = _plain(table) if (first_point.all() or t.min() >= max_ms - tail_ms) else None

    def rows_where(mask: np.ndarray) -> pa.Table:  # one table for all three when they are all the rows
        return every if every is not None and mask.all() else _plain(table.filter(pa.array(mask)))

    return (
        rows_where(first_point[inverse]),
        rows_where(last_point[inverse]),
        rows_where(t >= max_ms - tail_ms),
    )


def _codes(*columns: pa.ChunkedArray) -> tuple[list[np.ndarray], pa.Array]:
    """Shared integer codes for the values of several string columns (-1: null), and the values."""
    encoded = pc.dictionary_encode(pa.concat_arrays([c.combine_chunks() for c in columns]))
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    cuts = np.cumsum([len(c) for c in columns])[:-1]
    return np.split(codes, cuts), encoded.dictionary


def compare_points(later_first: pa.Table, earlier_last: pa.Table) -> pa.Table:
    """``(group_id, changed)`` for each group with rows in both: whether its committed offsets at
    its point in ``later_first`` differ from those at its point in ``earlier_last`` (the same
    partitions with the same offsets, or not)."""
    (ga, gb), names = _codes(later_first["group_id"], earlier_last["group_id"])
    (ta, tb), _ = _codes(later_first["topic"], earlier_last["topic"])
    sides = []
    for table, g, t in ((later_first, ga, ta), (earlier_last, gb, tb)):
        valid = table["committed"].is_valid().to_numpy(zero_copy_only=False)
        p, c = _int(table["partition"])[valid], _int(table["committed"], 0)[valid]
        g, t = g[valid], t[valid]
        order = np.lexsort((p, t, g))  # each group's committed partitions in one order on both sides
        count = np.bincount(g, minlength=len(names))
        sides.append((g[order], t[order], p[order], c[order], count, np.r_[0, np.cumsum(count)][:-1]))
    (g1, t1, p1, c1, k1, s1), (_, t2, p2, c2, k2, s2) = sides
    common = np.zeros(len(names), dtype=bool)
    common[np.intersect1d(ga, gb)] = True
    same_count = k1 == k2
    rows = np.flatnonzero(
        same_count[g1] & common[g1]
    )  # row j of a group on one side faces row j on the other
    other = s2[g1[rows]] + (rows - s1[g1[rows]])
    differs = np.zeros(len(names), dtype=bool)
    differs[g1[rows[(t1[rows] != t2[other]) | (p1[rows] != p2[other]) | (c1[rows] != c2[other])]]] = True
    both = np.flatnonzero(common)
    return pa.table({"group_id": names.take(pa.array(both)), "changed": ~same_count[both] | differs[both]})


def _rollup_pair(later: Rollup, before: Rollup) -> pa.Table:
    return compare_points(later.first, before.last)


def first_changes(later: Rollup, earlier: Sequence[Rollup], compare=_rollup_pair) -> pa.Table:
    """``(group_id, changed)`` for the groups of ``later`` whose previous snapshot is in one of
    ``earlier`` (time-ordered rollups before it, none overlapping it): the ``changed`` of their
    first point in ``later``. A group found in none of them keeps ``changed`` null."""
    settled, remaining = [], later.first
    for before in reversed(earlier):
        if remaining.num_rows == 0:
            break
        found = compare(later, before)  # (group_id, changed) of every group in both
        found = found.filter(pc.is_in(found["group_id"], remaining["group_id"]))
        if found.num_rows:
            settled.append(found)
            remaining = remaining.filter(pc.invert(pc.is_in(remaining["group_id"], found["group_id"])))
    return (
        pa.concat_tables(settled)
        if settled
        else pa.table({"group_id": pa.array([], pa.string()), "changed": pa.array([], pa.bool_())})
    )


def overlapping(rollups: Sequence[Rollup]) -> bool:
    """Whether any two of the (time-ordered) rollups share a moment: then they cannot be merged
    by their ends, and their rows must be rolled up together."""
    return any(b.min_ms <= a.max_ms for a, b in itertools.pairwise(rollups))


def _first_seen(tables: Sequence[pa.Table]) -> pa.Table:
    """Of time-ordered, non-overlapping rollups' ``first`` (or, reversed, ``last``) rows: each
    group's rows from the first table that has the group."""
    out, seen = [], pa.array([], pa.string())
    for table in tables:
        fresh = table.filter(pc.invert(pc.is_in(table["group_id"], seen))) if len(seen) else table
        if fresh.num_rows:
            out.append(fresh)
            seen = pa.concat_arrays([seen, pc.unique(fresh["group_id"])])
    return (
        pa.concat_tables(out).sort_by(
            [("group_id", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
        )
        if out
        else tables[0].slice(0, 0)
    )


def with_first_changes(groups: pa.Table, settled: pa.Table) -> pa.Table:
    """``groups`` with the null ``changed`` of first points filled from ``settled``."""
    if settled.num_rows == 0:
        return groups
    found = pc.take(settled["changed"], pc.index_in(groups["group_id"], settled["group_id"]))
    changed = pc.if_else(pc.is_null(groups["changed"]), found, groups["changed"])
    return groups.set_column(groups.schema.get_field_index("changed"), "changed", changed)


def merge_rollups(rollups: Sequence[Rollup], *, key: str = "", tail_ms: int = TAIL_MS) -> Rollup:
    """The rollup of consecutive stretches (time-ordered, not :func:`overlapping`) as one."""
    rollups = [r for r in rollups if r.rows]
    sources = tuple(s for r in rollups for s in r.sources)
    if not rollups:
        return empty_rollup(key, sources)
    if overlapping(rollups):
        raise ValueError("overlapping rollups cannot be merged by their ends: roll their rows up together")
    groups = [rollups[0].groups] + [
        with_first_changes(r.groups, first_changes(r, rollups[:i])) for i, r in enumerate(rollups) if i
    ]
    max_ms = rollups[-1].max_ms
    tail = pa.concat_tables([r.tail for r in rollups])
    return Rollup(
        key,
        sources,
        rollups[0].min_ms,
        max_ms,
        sum(r.rows for r in rollups),
        pa.concat_tables(groups).sort_by([("group_id", "ascending"), ("snapshot_ms", "ascending")]),
        pa.concat_tables([r.log_ends for r in rollups]),
        _first_seen([r.first for r in rollups]),
        _first_seen([r.last for r in reversed(rollups)]),
        tail.filter(pc.greater_equal(tail["snapshot_ms"], max_ms - tail_ms)),
    )
