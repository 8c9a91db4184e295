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

Settings, read when the file is parsed, from Airflow's configuration (section
``[kgroups_examples]``, or ``AIRFLOW__KGROUPS_EXAMPLES__<NAME>``): ``conn_id``
(``kgroups_default``), ``bootstrap_servers`` (the cluster's first bootstrap server, for the
asset's URI and its lineage, ``localhost:9092``), ``event_groups`` (comma-separated landing
group ids, ``orders-landing``), ``event_topics`` (``orders``), ``event_poll_seconds`` (60),
``event_output`` (``/tmp/kgroups-events``), ``event_gate_schedule`` (``@hourly``; ``none`` for
manual runs only), ``spark_conf`` (JSON of extra Spark settings), ``spark_master`` (unset:
``local[*]``).

Needs Airflow 3.0 or later (asset watchers); on Airflow 2 the file fails to parse, saying so.

The asset is ``kgroups://{host}:{port}/{topic}/{group}`` (the ranges of the topic the group has
consumed; its OpenLineage dataset is the topic); the Spark task reports the topics, the range
and the record count it read as its OpenLineage inputs.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG, task

try:
    from airflow.sdk import AssetWatcher
except ImportError:  # Airflow 2: ConsumerLagEventTrigger below names the version this DAG needs (3.0)
    AssetWatcher = None

from airflow_provider_kgroups.observability.lineage import create_asset
from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor
from airflow_provider_kgroups.settings import example_list, example_setting
from airflow_provider_kgroups.triggers.events import ConsumerLagEventTrigger

CONN_ID = example_setting("conn_id", "kgroups_default")
BOOTSTRAP = example_setting("bootstrap_servers", "localhost:9092")
GROUPS = example_list("event_groups", "orders-landing")
TOPICS = example_list("event_topics", "orders")
POLL_SECONDS = float(example_setting("event_poll_seconds", "60"))
#: the gate DAG's schedule; "none" leaves only the watcher (and manual gate runs)
GATE_SCHEDULE = example_setting("event_gate_schedule", "@hourly")
OUTPUT = example_setting("event_output", "/tmp/kgroups-events")
SPARK_CONF = {"spark.sql.session.timeZone": "UTC", **json.loads(example_setting("spark_conf", "") or "{}")}
#: The Spark master ("" or unset: spark_master's default, local[*]).
SPARK_MASTER = example_setting("spark_master", "") or None

orders_range = create_asset(
    bootstrap=BOOTSTRAP,
    topic=TOPICS[0],
    group=GROUPS[0],
    name="kgroups_orders_range",
    watchers=[
        AssetWatcher(
            name="kgroups_orders_landed",
            trigger=ConsumerLagEventTrigger(
                kafka_groups_conn_id=CONN_ID, group_ids=GROUPS, topics=TOPICS, poll_interval=POLL_SECONDS
            ),
        )
    ],
)

with DAG(
    dag_id="kgroups_orders_gate",
    schedule=None if GATE_SCHEDULE.lower() == "none" else GATE_SCHEDULE,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["kafka", "kgroups"],
    doc_md=__doc__,
):
    ConsumerLagSensor(
        task_id="wait_for_landing",
        group_ids=GROUPS,
        topics=TOPICS,
        kafka_groups_conn_id=CONN_ID,
        deferrable=True,
        poke_interval=POLL_SECONDS,
        timeout=timedelta(minutes=55).total_seconds(),
        previous_barrier="{{ ti.xcom_pull(task_ids='wait_for_landing', include_prior_dates=True) }}",
        outlets=[orders_range],
    )

with DAG(
    dag_id="kgroups_orders_process",
    schedule=[orders_range],
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["kafka", "kgroups", "spark"],
    doc_md=__doc__,
):

    @task
    def totals_for_the_range(triggering_asset_events=None, run_id: str | None = None) -> dict:
        """Exactly the triggering range, from Kafka, summed per record key."""
        from airflow.providers.common.compat.sdk import get_current_context

        from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
        from airflow_provider_kgroups.observability.lineage import report_kafka_read
        from airflow_provider_kgroups.spark.datasource import client_properties_file, read_offset_range
        from airflow_provider_kgroups.spark.offsets import kafka_bootstrap
        from airflow_provider_kgroups.spark.session import spark_session
        from airflow_provider_kgroups.triggers.events import range_from_events

        gate = range_from_events(triggering_asset_events[orders_range])
        config = KafkaGroupsHook(CONN_ID).client_config
        bootstrap = kafka_bootstrap(config)
        output = f"{OUTPUT.rstrip('/')}/run={re.sub(r'[^A-Za-z0-9._-]+', '_', run_id or 'manual')}"
        with (
            spark_session("kgroups-orders-process", master=SPARK_MASTER, conf=SPARK_CONF) as spark,
            client_properties_file(config) as props,
        ):
            rows = read_offset_range(spark, bootstrap, gate, command_config=props)
            totals = rows.selectExpr("cast(key as string) as key").groupBy("key").count().orderBy("key")
            totals.write.mode("overwrite").parquet(output)
            per_key = {r["key"]: r["count"] for r in totals.collect()}
            per_topic = {r["topic"]: r["count"] for r in rows.groupBy("topic").count().collect()}
        records = {topic: per_topic.get(topic, 0) for topic in json.loads(gate["endingOffsets"])}
        report_kafka_read(get_current_context(), bootstrap, gate, records=records, group_ids=GROUPS)
        return {**gate, "records": sum(per_key.values()), "keys": per_key, "output": output}

    totals_for_the_range()
