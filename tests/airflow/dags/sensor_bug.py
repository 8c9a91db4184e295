"""Sensors with retries, deferrable and poking, over a client with a fault injected into a handler
(tests/airflow/test_not_retriable.py): a bug must fail them at the first check, without retries.
The timeout is short so that a regression (the bug taken for a transient failure) fails the test
in two minutes instead of waiting an hour."""

from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

for dag_id, deferrable in (("kg_sensor_bug", True), ("kg_sensor_bug_poke", False)):
    with DAG(dag_id, schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
        ConsumerLagSensor(
            task_id="gate",
            group_ids=["billing"],
            topics=["orders"],
            kafka_groups_conn_id="{{ dag_run.conf['conn'] }}",
            deferrable=deferrable,
            poke_interval=0.2,
            timeout=120,
            retries=3,
            retry_delay=timedelta(seconds=1),
        )
