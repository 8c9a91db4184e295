"""Rewind the landing groups to the start of the interval a backfill reprocesses.

``rewind_landing_groups`` (ConsumerGroupOffsetResetOperator) resets every partition of the
landing topics, for every stopped landing group, to the first offset at or after
``{{ data_interval_start }}``: run the DAG (or ``airflow dags backfill``) for the intervals to
reprocess, with the landing consumers stopped, and they start again from there. It is
``kgroups reset-offsets --to-datetime`` through the same safety path: a group with members is
refused (Kafka's "Assignments can only be reset if the group is inactive"), the current offsets
are backed up to ``<history>/_backups/`` and read back first, the commit is read back and audited
(``<history>/_audit/``), and the task's XCom carries the undo call. Param ``dry_run`` (default
True) plans and reports only, exactly what a real run commits.

Deployment settings (environment variables, read when the file is parsed): ``KGROUPS_CONN_ID``,
``KGROUPS_LANDING_GROUPS`` (comma-separated globs), ``KGROUPS_LANDING_TOPICS``,
``KGROUPS_HISTORY_URL`` (backups and audit records), ``KGROUPS_RESET_MAX_GROUPS`` (cap per run, 10).
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, Param

from airflow_provider_kgroups.operators.reset import ConsumerGroupOffsetResetOperator


def _csv(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


CONN_ID = os.environ.get("KGROUPS_CONN_ID", "kgroups_default")
LANDING_GROUPS = _csv("KGROUPS_LANDING_GROUPS", "orders-landing*")
LANDING_TOPICS = _csv("KGROUPS_LANDING_TOPICS", "orders")
HISTORY_URL = os.environ.get("KGROUPS_HISTORY_URL", "/tmp/kgroups-history")
MAX_GROUPS = int(os.environ.get("KGROUPS_RESET_MAX_GROUPS", "10"))

with DAG(
    dag_id="kgroups_backfill_reset",
    schedule="@daily",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={"dry_run": Param(True, type="boolean", description="plan and report only, commit nothing")},
    tags=["kafka", "kgroups", "backfill"],
    doc_md=__doc__,
):
    ConsumerGroupOffsetResetOperator(
        task_id="rewind_landing_groups",
        group_patterns=LANDING_GROUPS,
        topics=LANDING_TOPICS,
        strategy="to_datetime",
        value="{{ data_interval_start }}",
        dry_run="{{ params.dry_run }}",
        max_groups=MAX_GROUPS,
        backup_url=HISTORY_URL,
        kafka_groups_conn_id=CONN_ID,
    )
