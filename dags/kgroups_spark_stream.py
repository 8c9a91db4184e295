"""Gate, then an AvailableNow Spark stream over exactly the gated range, then a gate on the job itself.

1. ``wait_for_landing`` (ConsumerLagSensor, barrier mode): the landing groups have committed up
   to the first offset at or after the data interval's end (``barrier="timestamp"``; the log
   end at the first check with ``barrier="log_end"``). Its XCom's ``endingOffsets`` is where
   the Spark job must stop.
2. ``stream_range``: ``spark.readStream.format("kgroups")`` under ``Trigger.AvailableNow`` with
   ``endingOffsets`` = the gate's, a checkpoint and a Parquet sink (exactly-once across reruns
   and crashes), micro-batches of ``max_offsets_per_trigger``, and ``commitToGroup``: the job's
   progress is the consumer group ``stream_group``, committed only after Spark's sink has
   committed each batch. The first run starts where that group says (earliest where it has no
   commit); later runs start where the checkpoint ended, so each run reads only the new range.
3. ``stream_caught_up`` (ConsumerLagSensor on ``stream_group``, the same barrier): passes once
   the Spark job's group has reached the range's end. A downstream DAG can gate on the job the
   same way, and ``kgroups lag``, Kafka's ``kafka-consumer-groups.sh --describe`` and the
   Consumer groups page show its lag.

Deployment settings (``AIRFLOW__KGROUPS_EXAMPLES__<NAME>``): ``conn_id``, ``landing_groups``,
``landing_topics``, ``stream_group`` (``orders-spark-stream``), ``stream_root`` (checkpoint and
sink, ``/tmp/kgroups-stream``), ``max_offsets_per_trigger`` (500), ``barrier`` (``timestamp``),
``gate_poke_seconds`` (30), ``spark_conf`` (JSON), ``spark_master`` (unset: ``local[*]``).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG, Param, task

from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor
from airflow_provider_kgroups.settings import example_list, example_setting

CONN_ID = example_setting("conn_id", "kgroups_default")
LANDING_GROUPS = example_list("landing_groups", "orders-landing*")
LANDING_TOPICS = example_list("landing_topics", "orders")
STREAM_GROUP = example_setting("stream_group", "orders-spark-stream")
STREAM_ROOT = example_setting("stream_root", "/tmp/kgroups-stream")
MAX_OFFSETS_PER_TRIGGER = int(example_setting("max_offsets_per_trigger", "500"))
POKE_SECONDS = float(example_setting("gate_poke_seconds", "30"))
SPARK_CONF = {"spark.sql.session.timeZone": "UTC", **json.loads(example_setting("spark_conf", "") or "{}")}
SPARK_MASTER = example_setting("spark_master", "") or None
BARRIER = "{{ data_interval_end if params.barrier == 'timestamp' and data_interval_end else '' }}"

with DAG(
    dag_id="kgroups_spark_stream",
    schedule="@hourly",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,  # one query per checkpoint at a time
    tags=["kafka", "kgroups", "spark", "streaming"],
    params={"barrier": Param(example_setting("barrier", "timestamp"), enum=["timestamp", "log_end"])},
    doc_md=__doc__,
):
    gate = ConsumerLagSensor(
        task_id="wait_for_landing",
        group_patterns=LANDING_GROUPS,
        topics=LANDING_TOPICS,
        barrier_timestamp=BARRIER,
        kafka_groups_conn_id=CONN_ID,
        poke_interval=POKE_SECONDS,
        timeout=timedelta(hours=1),
    )

    @task
    def stream_range(gated: dict) -> dict:
        """[where the last run ended, the gate's endingOffsets) from Kafka -> Parquet, exactly once."""
        from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
        from airflow_provider_kgroups.spark.available_now import available_now_options, run_available_now
        from airflow_provider_kgroups.spark.datasource import client_properties_file
        from airflow_provider_kgroups.spark.offsets import kafka_bootstrap
        from airflow_provider_kgroups.spark.session import spark_session

        config = KafkaGroupsHook(CONN_ID).client_config
        with (
            spark_session("kgroups-spark-stream", master=SPARK_MASTER, conf=SPARK_CONF) as spark,
            client_properties_file(config) as props,
        ):
            options = available_now_options(
                kafka_bootstrap(config),
                gated,
                subscribe=",".join(LANDING_TOPICS),
                commit_group=STREAM_GROUP,
                command_config=props,
                max_offsets_per_trigger=MAX_OFFSETS_PER_TRIGGER,
            )
            return run_available_now(
                spark,
                options,
                checkpoint=os.path.join(STREAM_ROOT, "checkpoint"),
                sink_path=os.path.join(STREAM_ROOT, "orders"),
            )

    caught_up = ConsumerLagSensor(
        task_id="stream_caught_up",
        group_patterns=[STREAM_GROUP],
        topics=LANDING_TOPICS,
        barrier_timestamp=BARRIER,
        kafka_groups_conn_id=CONN_ID,
        poke_interval=5,
        timeout=timedelta(minutes=10),
    )

    stream_range(gate.output) >> caught_up
