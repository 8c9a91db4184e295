"""Barrier sensor, deferrable: the trigger polls with the asyncio client."""

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

with DAG("kg_sensor_deferrable", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    ConsumerLagSensor(
        task_id="gate",
        group_ids=["{{ dag_run.conf['group'] }}"],
        kafka_groups_conn_id="kgroups_test",
        deferrable=True,
        poke_interval=0.2,
        timeout=60,
    )
