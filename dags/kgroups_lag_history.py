"""Daily: the lag-history Spark job over the last week of snapshots, with spark-submit.

The job (``airflow_provider_kgroups/spark/lag_history.py``, shipped in the package) reads the
history store that ``kgroups_snapshot`` appends to and writes four Parquet tables under
``KGROUPS_LAG_OUTPUT_URL``: ``partition_verdicts``, ``lag_windows`` (lag percentiles and the
verdict per hour), ``group_status`` and ``dead_candidates`` (with evidence). Nothing is
deleted: the candidates are for review, or for ``DeadConsumerGroupCleanupOperator``.

Settings: ``KGROUPS_HISTORY_URL``, ``KGROUPS_LAG_OUTPUT_URL``, ``KGROUPS_LAG_SPARK_CONN_ID``
(default ``spark_local``), ``KGROUPS_LAG_SPARK_PYTHON`` (the driver's Python, default the
worker's). ``spark-submit`` must be on the worker's PATH (pip's pyspark puts it in the
virtualenv's ``bin``). Define the Spark connection as JSON, e.g.
``AIRFLOW_CONN_SPARK_LOCAL='{"conn_type": "spark", "host": "local[*]"}'``: the URI form
``spark://local[*]`` is misread, and a missing connection silently means ``yarn``.
On a cluster, use a ``s3a://``/``abfss://`` history URL and a connection to your master.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timedelta

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG

from airflow_provider_kgroups.spark import LAG_HISTORY_APPLICATION  # lag_history.__file__, without importing pyspark

HISTORY_URL = os.environ.get("KGROUPS_HISTORY_URL", "/tmp/kgroups-history")
OUTPUT_URL = os.environ.get("KGROUPS_LAG_OUTPUT_URL", "/tmp/kgroups-lag")
SPARK_CONN_ID = os.environ.get("KGROUPS_LAG_SPARK_CONN_ID", "spark_local")
#: The driver's Python must have this package: by default the worker's own interpreter (right for
#: local mode); on a cluster, the interpreter on the nodes (or "" to leave PYSPARK_PYTHON alone).
SPARK_PYTHON = os.environ.get("KGROUPS_LAG_SPARK_PYTHON", sys.executable)

with DAG(
    dag_id="kgroups_lag_history",
    schedule="@daily",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["kafka", "kgroups", "spark"],
    doc_md=__doc__,
):
    SparkSubmitOperator(
        task_id="lag_history",
        application=LAG_HISTORY_APPLICATION,
        conn_id=SPARK_CONN_ID,
        name="kgroups-lag-history",
        application_args=[
            "--history", HISTORY_URL,
            "--output", OUTPUT_URL,
            "--window-minutes", "60",
            "--since", "{{ (data_interval_end - macros.timedelta(days=7)).isoformat() }}",
            "--until", "{{ data_interval_end.isoformat() }}",
            "--idle-hours", "168",
        ],
        conf={"spark.sql.shuffle.partitions": "16", "spark.ui.showConsoleProgress": "false"},
        env_vars={"PYSPARK_PYTHON": SPARK_PYTHON} if SPARK_PYTHON else None,
        execution_timeout=timedelta(hours=2),
        retries=1,
    )
