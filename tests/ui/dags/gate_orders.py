"""A DAG that gates on orders-landing: the page marks its thresholds (never run by the tests)."""

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

with DAG("gate_orders", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    ConsumerLagSensor(
        task_id="wait_for_orders",
        group_ids=["orders-landing"],
        lag_mode="threshold",
        max_total_lag=1500,
        max_lag_seconds=900,
    )
