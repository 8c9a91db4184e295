"""The snapshot operator appending to the history store (groups and store from the run's conf)."""

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.operators.snapshot import ConsumerGroupSnapshotOperator

with DAG("kg_snapshot", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    ConsumerGroupSnapshotOperator(
        task_id="snapshot",
        history_url="{{ dag_run.conf['history'] }}",
        group_patterns=["{{ dag_run.conf['pattern'] }}"],
        kafka_groups_conn_id="kgroups_test",
    )
