"""A rollup as one file: Arrow IPC (lz4: read back several times faster than zstd), each of its
tables a one-row list column, its key, sources and bounds in the schema's metadata."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.ipc as ipc

from .rollup import GROUPS_SCHEMA, LOG_ENDS_SCHEMA, Rollup
from .rollup_place import write_atomically

__all__ = ["save_rollup", "load_rollup"]

_PARTS = ("groups", "log_ends", "first", "last", "tail")


def save_rollup(fs, path: str, rollup: Rollup) -> None:
    """One Arrow IPC file (lz4: read back several times faster than zstd): each table as a one-row
    list column, a table that is the ``first`` one again (a file of one snapshot) stored once;
    the rest in the schema's metadata."""
    same = [name for name in ("last", "tail") if getattr(rollup, name) is rollup.first]
    meta = {
        "key": rollup.key,
        "sources": [list(s) for s in rollup.sources],
        "min_ms": rollup.min_ms,
        "max_ms": rollup.max_ms,
        "rows": rollup.rows,
        "same_as_first": same,
    }
    columns = {}
    for name in _PARTS:
        table = getattr(rollup, name)
        values = (
            (table.slice(0, 0) if name in same else table).combine_chunks().to_struct_array().combine_chunks()
        )
        columns[name] = pa.LargeListArray.from_arrays(pa.array([0, len(values)], pa.int64()), values)
    table = pa.table(columns).replace_schema_metadata({"kgroups_rollup": json.dumps(meta)})
    with (
        write_atomically(fs, path) as f,
        ipc.new_file(f, table.schema, options=ipc.IpcWriteOptions(compression="lz4")) as writer,
    ):
        writer.write_table(table)


def load_rollup(fs, path: str) -> Rollup:
    with fs.open(path, "rb") as f:
        table = ipc.open_file(f).read_all()
    meta = json.loads(table.schema.metadata[b"kgroups_rollup"])
    parts = {name: pa.Table.from_struct_array(table.column(name).chunk(0).values) for name in _PARTS}
    if parts["groups"].schema != GROUPS_SCHEMA or parts["log_ends"].schema != LOG_ENDS_SCHEMA:
        raise ValueError("saved by another version of the rollups")
    for name in meta.get("same_as_first", ()):
        parts[name] = parts["first"]
    return Rollup(
        meta["key"],
        tuple((name, size) for name, size in meta["sources"]),
        meta["min_ms"],
        meta["max_ms"],
        meta["rows"],
        **parts,
    )
