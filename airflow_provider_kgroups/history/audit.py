"""Audit records of cleanup runs: one JSON document per run, next to the backups::

    <base url>/_audit/<YYYYMMDDTHHMMSSZ>-<uuid>.json

The record itself (every decision, the rules, the backup URL, who ran it) is built by the
cleanup path (:mod:`..cleanup`); this module only writes and reads it. The ``_`` keeps the
directory out of the Parquet history (pyarrow and Spark skip ``_`` paths).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import Any, Mapping

import fsspec

from ..client.errors import ConfigurationError, KafkaGroupsError

__all__ = ["AUDIT_DIR", "AUDIT_FORMAT", "write_audit", "load_audit", "list_audits"]

AUDIT_DIR = "_audit"
AUDIT_FORMAT = "kgroups-cleanup-audit"


def write_audit(base_url: str, record: Mapping[str, Any], *, started_ms: int,
                storage_options: Mapping[str, Any] | None = None) -> str:
    """Write ``record`` under ``<base_url>/_audit/`` and return its URL (after reading it back)."""
    stamp = datetime.fromtimestamp(started_ms / 1000, tz=timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = f"{stamp}-{uuid.uuid4().hex[:12]}.json"
    url = f"{base_url.rstrip('/')}/{AUDIT_DIR}/{name}"
    document = {"format": AUDIT_FORMAT, **record}
    fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    with fs.open(path, "w") as f:
        json.dump(document, f, indent=1, sort_keys=True)
    if load_audit(url, storage_options=storage_options) != json.loads(json.dumps(document)):
        raise KafkaGroupsError(f"the audit record written to {url} does not read back the same.")
    return url


def load_audit(url: str, *, storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    try:
        with fsspec.open(url, "r", **dict(storage_options or {})) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ConfigurationError(f"no audit record at {url}.") from None
    if not isinstance(data, dict) or data.get("format") != AUDIT_FORMAT:
        raise ConfigurationError(f"{url} is not a kgroups cleanup audit record.")
    return data


def list_audits(base_url: str, *, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Audit record URLs under ``base_url``, oldest first."""
    fs, root = fsspec.core.url_to_fs(base_url.rstrip("/"), **dict(storage_options or {}))
    directory = f"{root.rstrip('/')}/{AUDIT_DIR}"
    if not fs.exists(directory):
        return []
    names = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(directory, detail=False))
    return [f"{base_url.rstrip('/')}/{AUDIT_DIR}/{n}" for n in names if n.endswith(".json")]
