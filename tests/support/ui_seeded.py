"""A history store the page's tests read: known groups with known numbers, written through the
store's own writer (``HistoryStore.append``), plus a real cleanup audit record and backup
written by :mod:`..history.audit` / :mod:`..history.backup`.

* ``orders-landing``: Stable, 2 members, topics ``orders`` (2 partitions) and ``payments``
  (1); 144 snapshots 5 minutes apart (12 h); its lag rises then falls; the latest total lag is
  :data:`LATEST_LAG`. The DAG ``gate_orders`` (tests/ui/dags) gates on it with
  ``max_total_lag=1500`` and ``max_lag_seconds=900``.
* ``legacy-etl``: Empty, the same committed offset on ``legacy-orders`` for 10 days with records
  to read: a
  dead-group candidate; a cleanup run (not a dry run) deleted it and backed its offsets up,
  so its page shows the audit record and the restore command. Its snapshots stop then.
* ``weekly-report``: Empty, progress 2 days ago: paused.
"""

from __future__ import annotations

import math

from airflow_provider_kgroups.history.audit import write_audit
from airflow_provider_kgroups.history.backup import backup_offsets
from airflow_provider_kgroups.history.store import HistoryStore
from tests.support.builders import HOUR, MINUTE, group, partition, snapshot, tp

T_END = 1_730_000_000_000  # the newest snapshot (2024-10-27 03:33:20 UTC)
STEP = 5 * MINUTE
POINTS = 144
DELETED_AT = T_END - 20 * MINUTE
BACKUP_NOTE = "dag_id=kgroups_cleanup, run_id=manual__1, task_id=clean"


def _orders_lag(i: int) -> list[int]:
    """Per partition (orders 0, orders 1, payments 0) at point i: up, down, up again, never by
    more than the 60 records a step brings (so the committed offsets only move forward)."""
    wave = math.sin(3 * math.pi * i / (POINTS - 1))  # 0 at both ends, three half waves
    return [400 + int(300 * wave) + 3 * (i % 2), 300 + int(200 * wave), 34]


LATEST_LAG = sum(_orders_lag(POINTS - 1))


def seed_history(url: str) -> dict[str, str]:
    store = HistoryStore(url)
    for i in range(POINTS):
        at = T_END - (POINTS - 1 - i) * STEP
        produced = 10_000 + 60 * i  # records per partition so far (12 per minute)
        lags = _orders_lag(i)
        orders = group(
            "orders-landing",
            partition("orders", 0, produced - lags[0], produced),
            partition("orders", 1, produced - lags[1], produced),
            partition("payments", 0, produced // 2 - lags[2], produced // 2),
            members=2,
        )
        weekly = group("weekly-report", partition("reports", 0, 500, 520), state="Empty", members=0)
        groups = [orders, weekly]
        if at < DELETED_AT:
            groups.append(
                group("legacy-etl", partition("legacy-orders", 0, 3_000, 5_300), state="Empty", members=0)
            )
        store.append(snapshot(at, *groups))
    # the older past: legacy-etl idle for 10 days, weekly-report progressing until 2 days ago
    for hours_ago, weekly_commit in ((240, 300), (200, 350), (120, 400), (48, 500)):
        at = T_END - hours_ago * HOUR
        store.append(
            snapshot(
                at,
                group(
                    "legacy-etl",
                    partition("legacy-orders", 0, 3_000, 5_300 - hours_ago),
                    state="Empty",
                    members=0,
                ),
                group("weekly-report", partition("reports", 0, weekly_commit, 520), state="Empty", members=0),
            )
        )
    backup = backup_offsets(
        url, {"legacy-etl": {tp("legacy-orders", 0): 3_000}}, note=BACKUP_NOTE, now_ms=DELETED_AT
    )
    record = {
        "version": 1,
        "started_ms": DELETED_AT,
        "finished_ms": DELETED_AT + 2_000,
        "who": {
            "dag_id": "kgroups_cleanup",
            "run_id": "manual__1",
            "task_id": "clean",
            "try_number": 1,
            "connection": "kgroups_prod",
        },
        "dry_run": False,
        "rules": {"idle_hours": 168},
        "connect_clusters": ["https://ops:hunter2@connect.example:8083"],
        "connect_failures": [],
        "summary": {
            "dry_run": False,
            "examined": 2,
            "candidates": 1,
            "cap": 10,
            "deleted": ["legacy-etl"],
            "would_delete": [],
            "skipped": [],
            "failed": [],
            "not_found": [],
            "unjudged": [],
            "kept": {"paused": 1},
            "backup_url": backup,
            "audit_url": None,
            "audit_error": None,
        },
        "decisions": {
            "legacy-etl": {
                "decision": "deleted",
                "reason": "dead: no commit progress for at least 240 h "
                f"while Empty with records to read; offsets backed up to {backup}",
                "health": "dead",
                "selected_by": "pattern",
                "evidence": [],
                "cannot_tell": [],
                "dead_reasons": ["idle"],
                "connect": None,
                "deletion": "deleted",
            },
            "weekly-report": {
                "decision": "keep",
                "reason": "paused: Empty, but no evidence that it is abandoned",
                "health": "paused",
                "selected_by": "pattern",
                "evidence": [],
                "cannot_tell": [],
                "dead_reasons": [],
                "connect": None,
                "deletion": None,
            },
        },
    }
    audit = write_audit(url, record, started_ms=DELETED_AT)
    return {"backup": backup, "audit": audit}
