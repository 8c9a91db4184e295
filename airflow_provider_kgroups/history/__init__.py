"""The history of lag snapshots (append-only Parquet under a URL) and the backups of committed
offsets taken before groups are deleted."""

from .backup import OffsetsBackup, backup_offsets, list_backups, load_backup, restore_offsets
from .store import DEFAULT_URL, HISTORY_SCHEMA, HistoryStore, snapshot_table, table_snapshots

__all__ = ["HistoryStore", "HISTORY_SCHEMA", "DEFAULT_URL", "snapshot_table", "table_snapshots", "OffsetsBackup",
           "backup_offsets", "load_backup", "list_backups", "restore_offsets"]
