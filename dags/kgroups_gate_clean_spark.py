"""Gate, clean, then Spark, once per data interval: the provider's flagship example.

1. ``wait_for_landing`` (ConsumerLagSensor, barrier mode, deferrable): fixes a barrier per
   partition of the landing topics and waits until every landing group has committed up to it.
   The barrier is the first offset at or after the end of the data interval (param
   ``barrier="timestamp"``), or the log end at the first check (``barrier="log_end"``) for
   brokers that cannot answer ListOffsets by timestamp (Tansu 0.6.0 answers 0, so the demo
   uses ``log_end``; so does a manual run without a data interval). It fails fast when a group
   is missing, stopped, or projected to miss the timeout. Its XCom carries Spark's
   ``startingOffsets`` (where the previous run's barrier ended; earliest on the first run) and
   ``endingOffsets`` (the barrier, exclusive): **the only hand-off to Spark**.
2. ``clean_dead_groups`` (DeadConsumerGroupCleanupOperator): dead groups are deleted when the
   run says ``{"cleanup_dry_run": false}`` (a dry run otherwise), with every safety on: the caps
   of ``[kgroups]`` (10 deletions and 50 % of the candidates per run unless configured), the deny
   patterns for system groups (``connect-*``, ``__*``, ...), Kafka Connect evidence when
   ``[kgroups] connect_conn_ids`` names
   Connect REST connections (a sink connector that exists keeps its group; a gone connector's
   group may go), a second describe right before deleting, and a backup of each group's
   offsets (``<history>/_backups/``, restorable in one call) plus an audit record.
3. ``totals_from_landing`` (``@task``, Spark started by ``spark_session``): reads from the landing zone exactly the records
   in ``[startingOffsets, endingOffsets)`` (files chosen by their offset names, rows filtered by
   offset: a file that straddles the barrier contributes only its rows below it; a hole in the
   landing zone fails the task instead of reading less) and writes per-key totals (records, sum
   of ``qty``) as Parquet under ``<output>/run=<run id>/`` with a ``_manifest.json`` naming the
   offset range and files it covers. Local mode (``local[*]``) unless ``[kgroups_examples] spark_master``
   names another master (``local[2]``, ``spark://...``, ``yarn``, ``sc://`` for Spark Connect).
4. ``kafka_source_available`` -> ``totals_from_kafka``: the same range straight from Kafka
   (``startingOffsets``/``endingOffsets`` from the same XCom), with Spark's JVM Kafka source when
   the ``spark-sql-kafka-0-10`` package is there, else with this package's ``kgroups`` Python
   data source (no JVM package needed). Param ``kafka_source``: ``auto`` (that choice), ``jvm``,
   ``kgroups``, or ``off`` (the branch is *skipped*; the DAG run still succeeds). Its totals
   equal the landing-zone totals key by key when the landing zone is complete.

To reprocess an interval, clear ``totals_from_landing`` only: its range stays the one in the
gate's XCom. Clearing the gate fixes the barrier again: the same offsets in timestamp mode, a
newer log end in log-end mode.

Deployment settings, read when the file is parsed from Airflow's configuration: the provider's
``[kgroups]`` section (``history_url``: evidence, backups and audit records, default here
``/tmp/kgroups-history``; ``connect_conn_ids``: Kafka Connect REST connections whose connectors
are evidence; the cleanup caps and deny patterns) and this example's ``[kgroups_examples]``
(``AIRFLOW__KGROUPS_EXAMPLES__<NAME>``):

- ``conn_id``: the kgroups (or official kafka) connection, default ``kgroups_default``
- ``landing_groups``: comma-separated globs of the landing groups (``orders-landing*``)
- ``landing_topics``: comma-separated landing topics (``orders``)
- ``landing_root``: the landing zone (``/tmp/kgroups-landing``); ``landing_format``: ``jsonl``
  (default) or ``parquet``
- ``output_root``: where the Spark results go (``/tmp/kgroups-output``)
- ``cleanup_patterns``: comma-separated globs the cleanup may judge (default: every group)
- ``barrier``: the default of the ``barrier`` param (``timestamp``)
- ``gate_poke_seconds`` (60) and ``gate_timeout_minutes`` (60): the gate's pace and patience
- ``spark_conf``: JSON of extra Spark settings, e.g. ``{"spark.ui.enabled": "false"}``;
  ``spark_kafka_package``: e.g. ``org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0``.
- ``spark_master``: the Spark master (unset: ``local[*]``), passed to ``spark_session``.

Lineage: with the OpenLineage provider installed, the gate reports the landing topics with the
range it handed on, the cleanup what it deleted, and both Spark tasks the topics, range and
record count they read.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re
from datetime import datetime, timedelta
from typing import Any

from airflow.providers.common.compat.sdk import DAG, Param, get_current_context, task

from airflow_provider_kgroups import settings
from airflow_provider_kgroups.observability.lineage import report_kafka_read
from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator
from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor
from airflow_provider_kgroups.settings import example_list, example_setting
from airflow_provider_kgroups.spark.offsets import kafka_bootstrap, spark_kafka_options
from airflow_provider_kgroups.spark.session import spark_session

log = logging.getLogger(__name__)


CONN_ID = example_setting("conn_id", "kgroups_default")
LANDING_GROUPS = example_list("landing_groups", "orders-landing*")
LANDING_TOPICS = example_list("landing_topics", "orders")
LANDING_ROOT = example_setting("landing_root", "/tmp/kgroups-landing")
LANDING_FORMAT = example_setting("landing_format", "jsonl")
OUTPUT_ROOT = example_setting("output_root", "/tmp/kgroups-output")
HISTORY_URL = settings.history_url() or "/tmp/kgroups-history"  # [kgroups] history_url
CLEANUP_PATTERNS = example_list("cleanup_patterns", "")
BARRIER = example_setting("barrier", "timestamp")
POKE_SECONDS = float(example_setting("gate_poke_seconds", "60"))
TIMEOUT = timedelta(minutes=float(example_setting("gate_timeout_minutes", "60")))
SPARK_CONF = {"spark.sql.session.timeZone": "UTC", **json.loads(example_setting("spark_conf", "") or "{}")}
#: The Spark master ("" or unset: spark_master's default, local[*]).
SPARK_MASTER = example_setting("spark_master", "") or None
SPARK_KAFKA_PACKAGE = example_setting("spark_kafka_package", "")
#: how many per-key totals go into the XCom (all of them are in the Parquet output)
XCOM_TOTALS = 50


def output_dir(run_id: str, source: str) -> str:
    """``<output>/run=<run id, path-safe>/source=<landing|kafka>``."""
    return f"{OUTPUT_ROOT.rstrip('/')}/run={re.sub(r'[^A-Za-z0-9._-]+', '_', run_id)}/source={source}"


def totals_per_key(rows):
    """The example's business logic: per record key, how many records and the sum of the JSON
    value's ``qty``. ``rows`` has string columns ``key`` and ``value``."""
    from pyspark.sql import functions as F

    qty = F.get_json_object(F.col("value"), "$.qty").cast("long")
    return rows.groupBy("key").agg(F.count(F.lit(1)).alias("records"), F.sum(qty).alias("qty"))


def write_result(spark, rows, gate: dict[str, Any], directory: str, extra: dict[str, Any]) -> dict[str, Any]:
    """Totals as Parquet in ``directory``, then ``_manifest.json`` (range, partitions, totals)
    next to them; returns the manifest without the file lists (the XCom)."""
    import fsspec
    from pyspark.sql import functions as F

    rows = rows.persist()
    totals = totals_per_key(rows).persist()
    try:
        per_partition = (
            rows.groupBy("topic", "partition")
            .agg(
                F.count(F.lit(1)).alias("records"),
                F.countDistinct("offset").alias("distinct_offsets"),
                F.min("offset").alias("first_offset"),
                F.max("offset").alias("last_offset"),
            )
            .collect()
        )
        totals.coalesce(1).write.mode("overwrite").parquet(directory)
        keys = totals.count()
        first_totals = {
            r["key"]: {"records": r["records"], "qty": r["qty"]}
            for r in totals.orderBy("key").limit(XCOM_TOTALS).collect()
        }
    finally:
        totals.unpersist()
        rows.unpersist()
    partitions: dict[str, dict[str, Any]] = {}
    for r in sorted(per_partition, key=lambda r: (r["topic"], r["partition"])):
        partitions.setdefault(r["topic"], {})[str(r["partition"])] = {
            "records": r["records"],
            "distinct_offsets": r["distinct_offsets"],
            "first_offset": r["first_offset"],
            "last_offset": r["last_offset"],
        }
    manifest = {
        "output": directory,
        "startingOffsets": gate["startingOffsets"],
        "endingOffsets": gate["endingOffsets"],
        "rows": sum(p["records"] for parts in partitions.values() for p in parts.values()),
        "keys": keys,
        "totals": first_totals,
        "totals_truncated": keys > len(first_totals),
        "partitions": partitions,
        "gate": {k: gate.get(k) for k in ("group_ids", "checks", "waited_s", "reached", "target")},
        **extra,
    }
    with fsspec.open(f"{directory}/_manifest.json", "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    log.info(
        "Wrote %d key(s) from %d record(s) in [%s, %s) to %s",
        keys,
        manifest["rows"],
        gate["startingOffsets"],
        gate["endingOffsets"],
        directory,
    )
    return {k: v for k, v in manifest.items() if k not in ("landing", "gate")}


def report_read(offsets: dict[str, Any], out: dict[str, Any], bootstrap: str | None = None) -> None:
    """OpenLineage inputs of a Spark task: the topics of the range, with the range and the
    records read per topic (a no-op without the OpenLineage provider)."""
    if bootstrap is None:
        from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
        from airflow_provider_kgroups.spark.offsets import kafka_bootstrap

        bootstrap = kafka_bootstrap(KafkaGroupsHook(CONN_ID).client_config)
    records = {
        topic: sum(p["records"] for p in out["partitions"].get(topic, {}).values())
        for topic in json.loads(offsets["endingOffsets"])
    }
    report_kafka_read(
        get_current_context(), bootstrap, offsets, records=records, group_ids=offsets.get("group_ids") or ()
    )


def spark_kafka_jar() -> str | None:
    """Where Spark's Kafka source comes from here, or None: the package named by
    ``[kgroups_examples] spark_kafka_package`` (resolved by Spark at session start), or a
    ``spark-sql-kafka-0-10`` jar in pyspark's or ``$SPARK_HOME``'s jars."""
    if SPARK_KAFKA_PACKAGE:
        return SPARK_KAFKA_PACKAGE
    folders = [os.path.join(os.environ[v], "jars") for v in ("SPARK_HOME",) if os.environ.get(v)]
    try:
        import pyspark

        folders.append(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    except ImportError:
        pass
    for folder in folders:
        found = sorted(glob.glob(os.path.join(folder, "spark-sql-kafka-0-10_*.jar")))
        if found:
            return found[-1]
    return None


with DAG(
    dag_id="kgroups_gate_clean_spark",
    schedule="@hourly",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={
        "cleanup_dry_run": Param(True, type="boolean", description="report dead groups only, delete nothing"),
        "barrier": Param(
            BARRIER,
            enum=["timestamp", "log_end"],
            description="timestamp: offsets at the data interval's end; log_end: log end at the "
            "first check (for brokers without ListOffsets by timestamp, e.g. Tansu)",
        ),
        "kafka_source": Param(
            "auto",
            enum=["auto", "jvm", "kgroups", "off"],
            description="read the range from Kafka too: auto = Spark's JVM Kafka source when "
            "spark-sql-kafka is present, else the kgroups Python data source",
        ),
    },
    tags=["kafka", "kgroups", "spark"],
    doc_md=__doc__,
):
    gate = ConsumerLagSensor(
        task_id="wait_for_landing",
        group_patterns=LANDING_GROUPS,
        topics=LANDING_TOPICS,
        barrier_timestamp="{{ data_interval_end if params.barrier == 'timestamp' and data_interval_end else '' }}",
        previous_barrier="{{ ti.xcom_pull(task_ids='wait_for_landing', include_prior_dates=True) }}",
        kafka_groups_conn_id=CONN_ID,
        deferrable=True,
        poke_interval=POKE_SECONDS,
        timeout=TIMEOUT,
    )
    clean = DeadConsumerGroupCleanupOperator(
        task_id="clean_dead_groups",
        history_url=HISTORY_URL,
        group_patterns=CLEANUP_PATTERNS or None,
        dry_run="{{ params.cleanup_dry_run }}",
        kafka_groups_conn_id=CONN_ID,  # caps, deny patterns, Connect evidence: the [kgroups] section
    )

    @task
    def totals_from_landing(offsets: dict, run_id: str | None = None) -> dict:
        """Exactly [startingOffsets, endingOffsets) of the landing zone -> totals per key."""
        from airflow_provider_kgroups.landing import read_selection, select_range

        selection = select_range(LANDING_ROOT, offsets, fmt=LANDING_FORMAT)
        log.info(
            "Landing files for the range: %d (%s)",
            len(selection.files),
            "overlapping: duplicates dropped" if selection.overlapping else "no overlap",
        )
        with spark_session("kgroups-totals-from-landing", master=SPARK_MASTER, conf=SPARK_CONF) as spark:
            out = write_result(
                spark,
                read_selection(spark, selection),
                offsets,
                output_dir(run_id, "landing"),
                {"source": "landing", "landing": selection.to_dict()},
            )
        report_read(offsets, out)
        return out

    @task.short_circuit
    def kafka_source_available(params: dict | None = None) -> bool:
        mode = (params or {}).get("kafka_source", "auto")
        if mode == "off":
            log.info("Skipping the read from Kafka: kafka_source is 'off'")
            return False
        return True

    @task
    def totals_from_kafka(offsets: dict, run_id: str | None = None, params: dict | None = None) -> dict:
        """The same range read from Kafka itself: Spark's JVM Kafka source, or the kgroups source."""
        from pyspark.sql import functions as F

        from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
        from airflow_provider_kgroups.spark.datasource import client_properties_file, read_offset_range
        from airflow_provider_kgroups.spark.offsets import read_kafka_range

        mode = (params or {}).get("kafka_source", "auto")
        jar = spark_kafka_jar()
        source = "jvm" if mode == "jvm" or (mode == "auto" and jar) else "kgroups"
        log.info(
            "Reading the range from Kafka with %s",
            f"Spark's Kafka source ({jar or 'forced'})"
            if source == "jvm"
            else "the kgroups Python data source (spark-sql-kafka not needed)",
        )
        config = KafkaGroupsHook(CONN_ID).client_config
        bootstrap = kafka_bootstrap(config)
        conf = {
            **SPARK_CONF,
            **(
                {"spark.jars.packages": SPARK_KAFKA_PACKAGE}
                if source == "jvm" and SPARK_KAFKA_PACKAGE
                else {}
            ),
        }
        with (
            spark_session("kgroups-totals-from-kafka", master=SPARK_MASTER, conf=conf) as spark,
            client_properties_file(config) as props,
        ):
            if source == "jvm":
                records = read_kafka_range(
                    spark, bootstrap, offsets, kafka_options=spark_kafka_options(config)
                )
            else:
                records = read_offset_range(spark, bootstrap, offsets, command_config=props)
            rows = records.select(
                "topic",
                "partition",
                "offset",
                F.col("key").cast("string").alias("key"),
                F.col("value").cast("string").alias("value"),
            )
            out = write_result(spark, rows, offsets, output_dir(run_id, "kafka"), {"source": source})
        report_read(offsets, out, bootstrap)
        return out

    landed = totals_from_landing(gate.output)
    gate >> clean >> landed
    clean >> kafka_source_available() >> totals_from_kafka(gate.output)
