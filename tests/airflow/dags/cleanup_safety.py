"""The dead-group cleanup with every option from the run's conf (tests/airflow/test_cleanup_safety.py)."""

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator

with DAG("kg_cleanup_safety", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    DeadConsumerGroupCleanupOperator(
        task_id="cleanup",
        history_url="{{ dag_run.conf['history'] }}",
        group_ids="{{ dag_run.conf.get('ids', []) }}",
        group_patterns="{{ dag_run.conf.get('patterns', []) }}",
        delete_group_ids="{{ dag_run.conf.get('named', []) }}",
        override_deny="{{ dag_run.conf.get('override_deny', []) }}",
        connect_conn_ids="{{ dag_run.conf.get('connect', []) }}",
        delete_despite_unreadable_connect="{{ dag_run.conf.get('despite_unreadable_connect', False) }}",
        dry_run="{{ dag_run.conf['dry_run'] }}",
        kafka_groups_conn_id="{{ dag_run.conf['conn'] }}",
        max_deletions="{{ dag_run.conf.get('max_deletions', 10) }}",
        max_deletions_percent="{{ dag_run.conf.get('max_deletions_percent', 50) }}",
        backup_url="{{ dag_run.conf.get('backup_url', '') }}",
    )
