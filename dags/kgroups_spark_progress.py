"""Gate, read the range from Kafka with Spark, then commit the processed range to a progress group.

1. ``progress_start``: where the last run stopped, from the progress group's committed offsets
   (``KafkaGroupsHook.progress_offsets``; none on the first run: the range starts at earliest).
2. ``wait_for_landing`` (ConsumerLagSensor, barrier mode): fixes the log end of the landing
   topics as the barrier and waits until the landing groups reached it; its XCom is Spark's
   ``startingOffsets`` (the progress group's offsets) and ``endingOffsets`` (the barrier).
3. ``count_from_kafka``: Spark reads exactly ``[startingOffsets, endingOffsets)`` straight from
   Kafka with this package's ``kgroups`` data source (no JVM Kafka package) and counts the
   records per partition (the business logic goes here).
4. ``commit_progress`` (ConsumerGroupProgressOperator), only after the Spark task succeeded:
   commits ``endingOffsets`` to the progress group. Burrow, KMinion and this project's own
   sensor see the job's progress and lag as a consumer group's; the group is created Empty and
   never one with members is committed to; a rerun of an older interval, which would move it
   back, is refused (``allow_rewind``); backup and audit as for every offset change.

Deployment settings, read when the file is parsed: ``[kgroups] history_url`` (backups and audit
records) and this example's ``[kgroups_examples]`` (``AIRFLOW__KGROUPS_EXAMPLES__<NAME>``):
``conn_id``, ``landing_groups``, ``landing_topics``, ``progress_group``
(``orders-spark-progress``), ``gate_poke_seconds`` (30), ``spark_conf`` (JSON of extra Spark
settings), ``spark_master`` (unset: ``local[*]``).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_kgroups import settings
from airflow_provider_kgroups.operators.progress import ConsumerGroupProgressOperator
from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor
from airflow_provider_kgroups.settings import example_list, example_setting

log = logging.getLogger(__name__)


CONN_ID = example_setting("conn_id", "kgroups_default")
LANDING_GROUPS = example_list("landing_groups", "orders-landing*")
LANDING_TOPICS = example_list("landing_topics", "orders")
HISTORY_URL = settings.history_url() or "/tmp/kgroups-history"  # [kgroups] history_url
PROGRESS_GROUP = example_setting("progress_group", "orders-spark-progress")
POKE_SECONDS = float(example_setting("gate_poke_seconds", "30"))
SPARK_CONF = {"spark.sql.session.timeZone": "UTC", **json.loads(example_setting("spark_conf", "") or "{}")}
#: The Spark master ("" or unset: spark_master's default, local[*]).
SPARK_MASTER = example_setting("spark_master", "") or None

with DAG(
    dag_id="kgroups_spark_progress",
    schedule="@hourly",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["kafka", "kgroups", "spark"],
    doc_md=__doc__,
):

    @task
    def progress_start() -> dict | None:
        from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook

        hook = KafkaGroupsHook(CONN_ID)
        try:
            start = hook.progress_offsets(PROGRESS_GROUP)
        finally:
            hook.close()
        log.info(
            "Progress group %s: %s", PROGRESS_GROUP, start or "no progress yet: the range starts at earliest"
        )
        return start

    gate = ConsumerLagSensor(
        task_id="wait_for_landing",
        group_patterns=LANDING_GROUPS,
        topics=LANDING_TOPICS,
        previous_barrier="{{ ti.xcom_pull(task_ids='progress_start') }}",
        kafka_groups_conn_id=CONN_ID,
        poke_interval=POKE_SECONDS,
        timeout=timedelta(hours=1),
    )

    @task
    def count_from_kafka(offsets: dict) -> dict:
        """Exactly [startingOffsets, endingOffsets) from Kafka -> records per partition."""
        from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
        from airflow_provider_kgroups.spark.datasource import client_properties_file, read_offset_range
        from airflow_provider_kgroups.spark.offsets import kafka_bootstrap
        from airflow_provider_kgroups.spark.session import spark_session

        config = KafkaGroupsHook(CONN_ID).client_config
        with (
            spark_session("kgroups-spark-progress", master=SPARK_MASTER, conf=SPARK_CONF) as spark,
            client_properties_file(config) as props,
        ):
            rows = read_offset_range(spark, kafka_bootstrap(config), offsets, command_config=props)
            counts = rows.groupBy("topic", "partition").count().collect()
        per_partition: dict[str, dict[str, int]] = {}
        for r in sorted(counts, key=lambda r: (r["topic"], r["partition"])):
            per_partition.setdefault(r["topic"], {})[str(r["partition"])] = r["count"]
        log.info(
            "Read %d record(s) in [%s, %s)",
            sum(n for p in per_partition.values() for n in p.values()),
            offsets["startingOffsets"],
            offsets["endingOffsets"],
        )
        return {
            "records": per_partition,
            "startingOffsets": offsets["startingOffsets"],
            "endingOffsets": offsets["endingOffsets"],
        }

    commit = ConsumerGroupProgressOperator(
        task_id="commit_progress",
        progress_group_id=PROGRESS_GROUP,
        ending_offsets="{{ ti.xcom_pull(task_ids='wait_for_landing') }}",
        backup_url=HISTORY_URL,
        kafka_groups_conn_id=CONN_ID,
    )

    progress_start() >> gate
    count_from_kafka(gate.output) >> commit
