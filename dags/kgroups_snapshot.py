"""Every few minutes: a lag snapshot of the consumer groups, appended to the history store.

The history is what the lag verdicts (STOP / STALL / WARN over a window), the dead-group
evidence ("no commit progress for N days") and the Spark jobs read. Set ``[kgroups] history_url``
(a directory or an fsspec URL such as ``s3://bucket/kgroups-history``; here ``/tmp/kgroups-history``
when unset) and ``[kgroups_examples] snapshot_every_minutes`` (5); the connection is ``kgroups_default``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups import settings
from airflow_provider_kgroups.operators.snapshot import ConsumerGroupSnapshotOperator
from airflow_provider_kgroups.settings import example_setting

HISTORY_URL = settings.history_url() or "/tmp/kgroups-history"
EVERY_MINUTES = int(example_setting("snapshot_every_minutes", "5"))

with DAG(
    dag_id="kgroups_snapshot",
    schedule=timedelta(minutes=EVERY_MINUTES),
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["kafka", "kgroups"],
    doc_md=__doc__,
):
    ConsumerGroupSnapshotOperator(
        task_id="snapshot",
        history_url=HISTORY_URL,
        exclude_patterns=["__*"],  # every group but internal ones
        execution_timeout=timedelta(minutes=EVERY_MINUTES),
        retries=1,
        retry_delay=timedelta(seconds=30),
    )
