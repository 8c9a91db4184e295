"""The dead-group cleanup; scope, store, connection and dry_run come from the run's conf."""

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator

with DAG("kg_cleanup", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    DeadConsumerGroupCleanupOperator(
        task_id="cleanup",
        history_url="{{ dag_run.conf['history'] }}",
        group_ids="{{ dag_run.conf['ids'] }}",
        group_patterns="{{ dag_run.conf['patterns'] }}",
        dry_run="{{ dag_run.conf['dry_run'] }}",
        kafka_groups_conn_id="{{ dag_run.conf['conn'] }}",
        max_deletions="{{ dag_run.conf.get('max_deletions', 10) }}",
        max_deletions_percent=100,
        stale_offsets="{{ dag_run.conf.get('stale_offsets', False) }}",
    )
