"""JSON records kept under a folder of the history store (``_backups/``, ``_audit/``,
``_intents/``, ``_leases/``): written under a time-stamped unique name, listed oldest first. The
``_`` prefix keeps them out of the Parquet dataset (pyarrow and Spark skip such paths).

Every record is written whole or not at all and never over another (:func:`put_new`): a reader
never takes half a file for a record, and of two writers of one name exactly one wins."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import fsspec


def record_name(at_ms: int, unique: str | None = None) -> str:
    """``<UTC time>-<12 hex>.json``: the name a record of ``at_ms`` gets (``unique``: its 12 hex)."""
    stamp = datetime.fromtimestamp(at_ms / 1000, tz=UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{(unique or uuid.uuid4().hex)[:12]}.json"


def put_new(fs, path: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` whole, only if nothing is there yet: True if written, False if
    ``path`` already existed (left as it was). On a local disk the bytes go to a temporary file
    first, synced, then linked to ``path`` (``link`` fails if it exists); elsewhere an
    exclusive create (``xb``: an object store's conditional single PUT, atomic by itself)."""
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    if "file" in fs.protocol or "local" in fs.protocol:
        temporary = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with open(temporary, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.link(temporary, path)
        except FileExistsError:
            return False
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        return True
    try:
        with fs.open(path, "xb") as f:
            f.write(data)
    except FileExistsError:
        return False
    return True


def encode(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, indent=1, sort_keys=True).encode()


def write_record(
    base_url: str,
    folder: str,
    document: Mapping[str, Any],
    *,
    at_ms: int,
    storage_options: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> str:
    """Write ``document`` as ``<base_url>/<folder>/<UTC time>-<random>.json`` (or ``name``);
    returns its URL. Raises FileExistsError when ``name`` is taken (never overwrites)."""
    url = f"{base_url.rstrip('/')}/{folder}/{name or record_name(at_ms)}"
    fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    if not put_new(fs, path, encode(document)):
        raise FileExistsError(f"a record already exists at {url}")
    return url


def list_records(
    base_url: str, folder: str, *, storage_options: Mapping[str, Any] | None = None
) -> list[str]:
    """The record URLs under ``<base_url>/<folder>/``, oldest first."""
    fs, root = fsspec.core.url_to_fs(base_url.rstrip("/"), **dict(storage_options or {}))
    directory = f"{root.rstrip('/')}/{folder}"
    if not fs.exists(directory):
        return []
    names = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(directory, detail=False))
    return [f"{base_url.rstrip('/')}/{folder}/{n}" for n in names if n.endswith(".json")]
