"""A threshold gate on the age of the oldest unread record (max_lag_seconds), poke and
deferrable; the group and topic come from the run's conf. A short timeout: a gate that cannot
prove the group is under the threshold must time out, never open."""

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

for dag_id, deferrable in (("kg_sensor_seconds_poke", False), ("kg_sensor_seconds_deferrable", True)):
    with DAG(dag_id, schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
        ConsumerLagSensor(
            task_id="gate",
            group_ids=["{{ dag_run.conf['group'] }}"],
            topics=["{{ dag_run.conf['topic'] }}"],
            lag_mode="threshold",
            max_lag_seconds=60,
            kafka_groups_conn_id="kgroups_test",
            deferrable=deferrable,
            poke_interval=0.5,
            timeout=4,
        )
