"""Audit records of cleanup runs: one JSON document per run, next to the backups::

    <base url>/_audit/<YYYYMMDDTHHMMSSZ>-<uuid>.json

A run that changes groups writes its intent first (:mod:`.journal`, ``_intents/`` under the same
name); this record is its outcome, or, for a run that died, the outcome another run reconciled.

The record itself (every decision, the rules, the backup URL, who ran it) is built by the
cleanup path (:mod:`..cleanup`); this module only writes and reads it. The ``_`` keeps the
directory out of the Parquet history (pyarrow and Spark skip ``_`` paths).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import fsspec

from ..client.errors import ConfigurationError, KafkaGroupsError
from .records import list_records, write_record

__all__ = ["AUDIT_DIR", "AUDIT_FORMAT", "write_audit", "load_audit", "list_audits"]

AUDIT_DIR = "_audit"
AUDIT_FORMAT = "kgroups-cleanup-audit"


def write_audit(
    base_url: str,
    record: Mapping[str, Any],
    *,
    started_ms: int,
    storage_options: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> str:
    """Write ``record`` under ``<base_url>/_audit/`` and return its URL (after reading it back).
    ``name``: the file name, the one of the run's intent record (:mod:`.journal`): the outcome
    closes the intent of the same name. FileExistsError when that outcome is already written."""
    document = {"format": AUDIT_FORMAT, **record}
    url = write_record(
        base_url, AUDIT_DIR, document, at_ms=started_ms, storage_options=storage_options, name=name
    )
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
    return list_records(base_url, AUDIT_DIR, storage_options=storage_options)
