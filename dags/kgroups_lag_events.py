"""Event-driven: a PySpark DAG runs each time the landing groups have consumed the next range.

Two ways feed the same asset, ``kgroups_orders_range``:

* its watcher, ``ConsumerLagEventTrigger`` (in the triggerer): an asset event each time the
  landing groups have committed past a barrier fixed when the range opened, carrying the range
  (``startingOffsets``/``endingOffsets``); watchers on one connection share one batched poll;
* ``kgroups_orders_gate`` (scheduled): a ConsumerLagSensor with the asset as outlet, which emits
  the same event when its gate opens (for teams that want a clock and a timeout).

``kgroups_orders_process`` is scheduled on the asset: it reads the range from the triggering
events (``range_from_events``: from the first queued range's start to the last one's end, so no
range is skipped) and processes exactly those records straight from Kafka with the ``kgroups``
Spark data source.

Settings (environment variables read when the file is parsed): ``KGROUPS_CONN_ID``
(``kgroups_default``), ``KGROUPS_EVENT_GROUPS`` (comma-separated landing group ids,
``orders-landing``), ``KGROUPS_EVENT_TOPICS`` (``orders``), ``KGROUPS_EVENT_POLL_SECONDS`` (60),
``KGROUPS_EVENT_OUTPUT`` (``/tmp/kgroups-events``), ``KGROUPS_EVENT_GATE_SCHEDULE`` (``@hourly``;
``none`` for manual runs only), ``KGROUPS_SPARK_MASTER`` / ``KGROUPS_SPARK_CONF``.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor
from airflow_provider_kgroups.triggers.events import ConsumerLagEventTrigger


def _csv(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


CONN_ID = os.environ.get("KGROUPS_CONN_ID", "kgroups_default")
GROUPS = _csv("KGROUPS_EVENT_GROUPS", "orders-landing")
TOPICS = _csv("KGROUPS_EVENT_TOPICS", "orders")
POLL_SECONDS = float(os.environ.get("KGROUPS_EVENT_POLL_SECONDS", "60"))
#: the gate DAG's schedule; "none" leaves only the watcher (and manual gate runs)
GATE_SCHEDULE = os.environ.get("KGROUPS_EVENT_GATE_SCHEDULE", "@hourly")
OUTPUT = os.environ.get("KGROUPS_EVENT_OUTPUT", "/tmp/kgroups-events")
SPARK_CONF = {"spark.sql.session.timeZone": "UTC", **json.loads(os.environ.get("KGROUPS_SPARK_CONF") or "{}")}

orders_range = Asset(
    "kgroups_orders_range",
    watchers=[AssetWatcher(name="kgroups_orders_landed", trigger=ConsumerLagEventTrigger(
        kafka_groups_conn_id=CONN_ID, group_ids=GROUPS, topics=TOPICS, poll_interval=POLL_SECONDS))],
)

with DAG(dag_id="kgroups_orders_gate", schedule=None if GATE_SCHEDULE.lower() == "none" else GATE_SCHEDULE, start_date=datetime(2024, 1, 1), catchup=False,
         max_active_runs=1, tags=["kafka", "kgroups"], doc_md=__doc__):
    ConsumerLagSensor(task_id="wait_for_landing", group_ids=GROUPS, topics=TOPICS, kafka_groups_conn_id=CONN_ID,
                      deferrable=True, poke_interval=POLL_SECONDS, timeout=timedelta(minutes=55).total_seconds(),
                      previous_barrier="{{ ti.xcom_pull(task_ids='wait_for_landing', include_prior_dates=True) }}",
                      outlets=[orders_range])

with DAG(dag_id="kgroups_orders_process", schedule=[orders_range], start_date=datetime(2024, 1, 1), catchup=False,
         max_active_runs=1, tags=["kafka", "kgroups", "spark"], doc_md=__doc__):

    @task
    def totals_for_the_range(triggering_asset_events=None, run_id: str | None = None) -> dict:
        """Exactly the triggering range, from Kafka, summed per record key."""
        from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
        from airflow_provider_kgroups.spark.datasource import client_properties_file, read_offset_range
        from airflow_provider_kgroups.spark.offsets import kafka_bootstrap
        from airflow_provider_kgroups.spark.session import spark_session
        from airflow_provider_kgroups.triggers.events import range_from_events

        gate = range_from_events(triggering_asset_events[orders_range])
        config = KafkaGroupsHook(CONN_ID).client_config
        bootstrap = kafka_bootstrap(config)
        output = f"{OUTPUT.rstrip('/')}/run={re.sub(r'[^A-Za-z0-9._-]+', '_', run_id or 'manual')}"
        with spark_session("kgroups-orders-process", conf=SPARK_CONF) as spark, client_properties_file(config) as props:
            rows = read_offset_range(spark, bootstrap, gate, command_config=props)
            totals = rows.selectExpr("cast(key as string) as key").groupBy("key").count().orderBy("key")
            totals.write.mode("overwrite").parquet(output)
            per_key = {r["key"]: r["count"] for r in totals.collect()}
        return {**gate, "records": sum(per_key.values()), "keys": per_key, "output": output}

    totals_for_the_range()
