"""The history of lag snapshots (append-only Parquet under a URL), the backups of committed
offsets taken before groups are deleted, and the audit records of cleanup runs.

The names are loaded on first use: backups need only fsspec, while the Parquet store needs
pyarrow (the ``history`` extra), which the hook, the sensor and the trigger never import.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "OffsetsBackup": "backup",
    "backup_offsets": "backup",
    "list_backups": "backup",
    "load_backup": "backup",
    "restore_offsets": "backup",
    "AUDIT_DIR": "audit",
    "list_audits": "audit",
    "load_audit": "audit",
    "write_audit": "audit",
    "DEFAULT_URL": "store",
    "HISTORY_SCHEMA": "store",
    "HistoryStore": "store",
    "snapshot_table": "store",
    "table_snapshots": "store",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
