"""Gate, clean, then Spark, once per data interval.

1. ``wait_for_landing`` (deferrable): the barrier is the offsets at the end of the data
   interval; it succeeds when every landing group has committed past it, and fails fast if a
   group is missing, stopped, or cannot catch up before the timeout. Its XCom carries Spark's
   ``startingOffsets`` (where the previous run's barrier ended) and ``endingOffsets``.
2. ``clean_dead_groups``: the dead-group cleanup, a dry run unless the run is triggered with
   ``{"cleanup_dry_run": false}``; backups and an audit record go next to the history.
3. ``spark_job``: PLACEHOLDER until the PySpark job lands (next issue); it only shows the
   offset range the job will read.

Settings: ``KGROUPS_HISTORY_URL``, ``KGROUPS_LANDING_GROUPS`` (comma-separated globs),
``KGROUPS_LANDING_TOPICS`` (comma-separated); the connection is ``kgroups_default``.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG, task

from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator
from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

HISTORY_URL = os.environ.get("KGROUPS_HISTORY_URL", "/tmp/kgroups-history")
LANDING_GROUPS = os.environ.get("KGROUPS_LANDING_GROUPS", "orders-landing*").split(",")
LANDING_TOPICS = os.environ.get("KGROUPS_LANDING_TOPICS", "orders").split(",")

with DAG(
    dag_id="kgroups_gate_clean_spark",
    schedule="@hourly",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={"cleanup_dry_run": True},
    tags=["kafka", "kgroups", "spark"],
    doc_md=__doc__,
):
    gate = ConsumerLagSensor(
        task_id="wait_for_landing",
        group_patterns=LANDING_GROUPS,
        topics=LANDING_TOPICS,
        barrier_timestamp="{{ data_interval_end }}",
        previous_barrier="{{ ti.xcom_pull(task_ids='wait_for_landing', include_prior_dates=True) }}",
        deferrable=True,
        poke_interval=60,
        timeout=timedelta(hours=1),
    )
    clean = DeadConsumerGroupCleanupOperator(
        task_id="clean_dead_groups",
        history_url=HISTORY_URL,
        dry_run="{{ params.cleanup_dry_run }}",
        max_deletions=20,
    )

    @task
    def spark_job(offsets: dict) -> dict:
        """PLACEHOLDER (next issue: the PySpark job). Reads [startingOffsets, endingOffsets)."""
        return {"startingOffsets": offsets["startingOffsets"], "endingOffsets": offsets["endingOffsets"]}

    gate >> clean >> spark_job(gate.output)
