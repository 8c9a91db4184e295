"""A deferrable sensor with retries and a long timeout: an error that retrying cannot fix (a
wrong password, an untrusted certificate) must fail it at the first check, without retries."""

from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

with DAG("kg_sensor_not_retriable", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    ConsumerLagSensor(
        task_id="gate",
        group_ids=["billing"],
        topics=["orders"],
        kafka_groups_conn_id="{{ dag_run.conf['conn'] }}",
        deferrable=True,
        poke_interval=0.2,
        timeout=3600,
        retries=3,
        retry_delay=timedelta(seconds=1),
    )
