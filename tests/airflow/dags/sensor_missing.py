"""A sensor on a group that does not exist: must fail at the first check, not at the timeout."""

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

with DAG("kg_sensor_missing", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    ConsumerLagSensor(
        task_id="gate",
        group_ids=["{{ dag_run.conf['group'] }}"],
        kafka_groups_conn_id="kgroups_test",
        poke_interval=1,
        timeout=300,
    )
