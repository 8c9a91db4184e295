"""JSON records kept under a folder of the history store (``_backups/``, ``_audit/``): written
under a time-stamped unique name, listed oldest first. The ``_`` prefix keeps them out of the
Parquet dataset (pyarrow and Spark skip such paths)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import fsspec


def write_record(base_url: str, folder: str, document: Mapping[str, Any], *, at_ms: int,
                 storage_options: Mapping[str, Any] | None = None) -> str:
    """Write ``document`` as ``<base_url>/<folder>/<UTC time>-<random>.json``; returns its URL."""
    stamp = datetime.fromtimestamp(at_ms / 1000, tz=UTC).strftime("%Y%m%dT%H%M%SZ")
    url = f"{base_url.rstrip('/')}/{folder}/{stamp}-{uuid.uuid4().hex[:12]}.json"
    fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    with fs.open(path, "w") as f:
        json.dump(document, f, indent=1, sort_keys=True)
    return url


def list_records(base_url: str, folder: str, *, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """The record URLs under ``<base_url>/<folder>/``, oldest first."""
    fs, root = fsspec.core.url_to_fs(base_url.rstrip("/"), **dict(storage_options or {}))
    directory = f"{root.rstrip('/')}/{folder}"
    if not fs.exists(directory):
        return []
    names = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(directory, detail=False))
    return [f"{base_url.rstrip('/')}/{folder}/{n}" for n in names if n.endswith(".json")]
