"""Barrier sensor in poke mode; group and topic come from the run's conf (templated)."""

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

with DAG("kg_sensor_poke", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    ConsumerLagSensor(
        task_id="gate",
        group_ids=["{{ dag_run.conf['group'] }}"],
        topics=["{{ dag_run.conf['topic'] }}"],
        previous_barrier="{{ dag_run.conf.get('previous') }}",
        kafka_groups_conn_id="kgroups_test",
        poke_interval=0.2,
        timeout=60,
    )
