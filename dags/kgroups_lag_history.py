"""Daily: the lag-history Spark job over the last week of snapshots, with spark-submit.

The job (``airflow_provider_kgroups/spark/lag_history.py``, shipped in the package) reads the
history store that ``kgroups_snapshot`` appends to and writes four Parquet tables under
``[kgroups_examples] lag_output_url``: ``partition_verdicts``, ``lag_windows`` (lag percentiles and the
verdict per hour), ``group_status`` and ``dead_candidates`` (with evidence). Nothing is
deleted: the candidates are for review, or for ``DeadConsumerGroupCleanupOperator``.

Before the job, ``topic_retention`` reads each topic of the week's history's ``retention.ms`` from
Kafka (the ``kgroups_default`` connection, or ``[kgroups_examples] conn_id``), so the job gives every
lagging partition its retention margin over time and judges AT_RISK as the gate does; a topic Kafka
cannot describe keeps an unknown margin, said in the task's log. Only these numbers reach Spark,
never the connection's credentials.

Settings: ``[kgroups] history_url``, ``[kgroups_examples] lag_output_url`` (``/tmp/kgroups-lag``) and
``lag_spark_python`` (the driver's Python, default the worker's), ``spark_master`` (default ``local[*]``;
``spark://...``, ``yarn``, ``k8s://...`` on a cluster). ``spark-submit`` is taken from PATH, else from the
installed pyspark (``pip install 'airflow-provider-kgroups[spark]'``). The task runs
``spark-submit`` itself (``airflow_provider_kgroups.spark.session``) rather than through the
Airflow Spark provider, whose ``pyspark-client`` dependency would overwrite pyspark's files.
On a cluster, use a ``s3a://``/``abfss://`` history URL and your cluster's master.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_kgroups import settings
from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from airflow_provider_kgroups.lag.retention_history import deletion_retention_ms
from airflow_provider_kgroups.settings import example_setting
from airflow_provider_kgroups.spark import (
    LAG_HISTORY_APPLICATION,  # lag_history.__file__, without importing pyspark
)
from airflow_provider_kgroups.spark.session import run_spark_submit, spark_submit_command

HISTORY_URL = settings.history_url() or "/tmp/kgroups-history"
OUTPUT_URL = example_setting("lag_output_url", "/tmp/kgroups-lag")
#: The driver's Python must have this package: by default the worker's own interpreter (right for
#: local mode); on a cluster, the interpreter on the nodes (or "" to leave PYSPARK_PYTHON alone).
SPARK_PYTHON = example_setting("lag_spark_python", sys.executable)
#: The Spark master ("" or unset: spark_master's default, local[*]).
SPARK_MASTER = example_setting("spark_master", "") or None
SPARK_CONF = {"spark.sql.shuffle.partitions": "16", "spark.ui.showConsoleProgress": "false"}
CONN_ID = example_setting("conn_id", "kgroups_default")
WEEK = timedelta(days=7)
log = logging.getLogger(__name__)


def history_topics(data_interval_end: datetime) -> list[str]:
    """The topics of the week's history before ``data_interval_end``."""
    from airflow_provider_kgroups.history.store import HistoryStore  # pyarrow: at run time, not parse time

    until_ms = int(data_interval_end.timestamp() * 1000)
    rows = HistoryStore(HISTORY_URL).read_table(
        since_ms=until_ms - int(WEEK.total_seconds() * 1000), until_ms=until_ms, columns=["topic"]
    )
    return sorted({t for t in rows.column("topic").to_pylist() if t is not None})


def retention_by_topic(conn_id: str, topics: list[str]) -> dict[str, int]:
    """Each topic's ``retention.ms`` as the job takes it (-1: not deleted by time); a topic Kafka
    cannot describe, or one with a ``retention.bytes``, is left out (its margins unknown), one log
    line each."""
    found = KafkaGroupsHook(conn_id).client.describe_topic_retention(topics)
    for topic, failure in found.failures.items():
        log.warning("retention of %s unknown (%s): its margins stay unknown", topic, failure)
    retention = {}
    for topic, topic_settings in found.values.items():
        ms = deletion_retention_ms(topic_settings)
        if ms is None:
            log.info(
                "retention of %s not given: retention.bytes also deletes by size, no time is safe", topic
            )
        else:
            retention[topic] = ms
    log.info("retention.ms of %d topic(s) for the job: %s", len(retention), retention)
    return retention


def lag_history_command(
    data_interval_end: datetime,
    conf: dict[str, str] | None = None,
    retention_ms: dict[str, int] | None = None,
) -> list[str]:
    """The spark-submit command for the week before ``data_interval_end``."""
    return spark_submit_command(
        LAG_HISTORY_APPLICATION,
        master=SPARK_MASTER,
        name="kgroups-lag-history",
        conf={**SPARK_CONF, **(conf or {})},
        application_args=[
            "--history",
            HISTORY_URL,
            "--output",
            OUTPUT_URL,
            "--window-minutes",
            "60",
            "--since",
            (data_interval_end - WEEK).isoformat(),
            "--until",
            data_interval_end.isoformat(),
            "--idle-hours",
            "168",
            *(["--retention-ms", json.dumps(retention_ms, sort_keys=True)] if retention_ms else []),
        ],
    )


with DAG(
    dag_id="kgroups_lag_history",
    schedule="@daily",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["kafka", "kgroups", "spark"],
    doc_md=__doc__,
):

    @task(execution_timeout=timedelta(minutes=10), retries=1)
    def topic_retention(data_interval_end: datetime | None = None) -> dict[str, int]:
        """Each history topic's retention.ms, for the job's retention margins."""
        topics = history_topics(data_interval_end or datetime.now().astimezone())
        return retention_by_topic(CONN_ID, topics) if topics else {}

    @task(execution_timeout=timedelta(hours=2), retries=1)
    def lag_history(retention_ms: dict[str, int], data_interval_end: datetime | None = None) -> None:
        """spark-submit the lag-history job; a non-zero exit fails the task."""
        run_spark_submit(
            lag_history_command(data_interval_end or datetime.now().astimezone(), retention_ms=retention_ms),
            env={"PYSPARK_PYTHON": SPARK_PYTHON} if SPARK_PYTHON else None,
        )

    lag_history(topic_retention())
