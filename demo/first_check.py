"""The flagship DAG's gate seen from outside its run: whether it has made the check that fixes
its barrier (its first, once the landing group exists), from the ``barrier_target`` XCom the
sensor pushes at that check, read from the Airflow metadata database (sqlite in WAL mode: a
read-only reader never blocks the run)."""

from __future__ import annotations

import contextlib
import json
import sqlite3

from demo.scenario import DAG_ID, LANDING_GROUP, TOPIC, WORK

GATE_TASK = "wait_for_landing"


def barrier_fixed() -> dict[int, int] | None:
    """The landing group's barrier on ``TOPIC`` ({partition: offset}) once the gate has fixed it,
    else None (not yet, or the database was busy: ask again)."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{WORK / 'airflow' / 'airflow.db'}?mode=ro", uri=True, timeout=1.0)
        ) as db:
            row = db.execute(
                "SELECT value FROM xcom WHERE dag_id = ? AND task_id = ? AND key = 'barrier_target'",
                (DAG_ID, GATE_TASK),
            ).fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    groups = json.loads(row[0]).get("groups", {})
    return {int(p): o for p, o in groups.get(LANDING_GROUP, {}).get(TOPIC, {}).items()}
