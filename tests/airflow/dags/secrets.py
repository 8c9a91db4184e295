"""Snapshot then a deferrable barrier through a SASL_SSL connection: the password must stay
out of every log line, XCom and trigger kwargs."""

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.operators.snapshot import ConsumerGroupSnapshotOperator
from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

with DAG("kg_secrets", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    snapshot = ConsumerGroupSnapshotOperator(
        task_id="snapshot",
        history_url="{{ dag_run.conf['history'] }}",
        group_patterns=["bill*"],
        kafka_groups_conn_id="{{ dag_run.conf['conn'] }}",
    )
    gate = ConsumerLagSensor(
        task_id="gate",
        group_ids=["billing"],
        topics=["orders"],
        deferrable=True,
        kafka_groups_conn_id="{{ dag_run.conf['conn'] }}",
        poke_interval=0.2,
        timeout=60,
    )
    snapshot >> gate
