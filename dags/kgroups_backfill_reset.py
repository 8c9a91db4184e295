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

Deployment settings, read when the file is parsed: ``[kgroups] history_url`` (backups and audit
records, default ``/tmp/kgroups-history``) and this example's ``[kgroups_examples]``
(``AIRFLOW__KGROUPS_EXAMPLES__<NAME>``): ``conn_id`` (``kgroups_default``), ``landing_groups``
(comma-separated globs, ``orders-landing*``), ``landing_topics`` (``orders``),
``reset_max_groups`` (the cap per run, 10).
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG, Param

from airflow_provider_kgroups import settings
from airflow_provider_kgroups.operators.reset import ConsumerGroupOffsetResetOperator
from airflow_provider_kgroups.settings import example_list, example_setting

CONN_ID = example_setting("conn_id", "kgroups_default")
LANDING_GROUPS = example_list("landing_groups", "orders-landing*")
LANDING_TOPICS = example_list("landing_topics", "orders")
HISTORY_URL = settings.history_url() or "/tmp/kgroups-history"  # [kgroups] history_url
MAX_GROUPS = int(example_setting("reset_max_groups", "10"))

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
