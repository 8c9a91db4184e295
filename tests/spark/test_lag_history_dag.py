"""The example DAG ``dags/kgroups_lag_history.py``: its SparkSubmitOperator, rendered for a data
interval and executed (spark-submit in a child process, master from a JSON Spark connection),
runs the job to the end. No metadata database: the operator is executed directly."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import airflow_provider_kgroups.spark.lag_history as lag_history
from airflow_provider_kgroups.history.store import HistoryStore
from tests.spark.histories import HOUR, T0, hand_made_history, table

DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "kgroups_lag_history.py"


def test_the_example_dag_submits_the_job_and_it_runs(tmp_path, monkeypatch):
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "spark-submit").exists():
        pytest.skip("spark-submit is not in the virtualenv's bin")
    history, output = tmp_path / "history", tmp_path / "lag"
    HistoryStore(str(history)).append_table(table(hand_made_history()))
    monkeypatch.setenv("KGROUPS_HISTORY_URL", str(history))
    monkeypatch.setenv("KGROUPS_LAG_OUTPUT_URL", str(output))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")  # spark-submit, as on a worker

    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
    from airflow.sdk.execution_time import macros
    import pendulum

    bag = DagBag(dag_folder=str(DAG_FILE))
    assert bag.import_errors == {}
    op = bag.dags["kgroups_lag_history"].get_task("lag_history")
    assert op.application == lag_history.__file__
    context = {"data_interval_end": pendulum.from_timestamp((T0 + HOUR) / 1000, tz="UTC"), "macros": macros}
    op.render_template_fields(context)
    assert op.application_args[op.application_args.index("--since") + 1] == "2024-04-24T01:00:00+00:00"
    command = SparkSubmitHook(conn_id=op._conn_id, conf=op.conf, name=op.name,
                              application_args=op.application_args)._build_spark_submit_command(op.application)
    assert command[:3] == ["spark-submit", "--master", "local[1]"]  # from the connection, not the yarn fallback

    op.conf = {**op.conf, "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
               "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    op.execute(context)  # raises if spark-submit exits non-zero
    for name in lag_history.OUTPUTS:
        assert list((output / name).glob("part-*.parquet")), name
    import pyarrow.parquet as pq

    status = pq.read_table(output / "group_status").to_pylist()
    assert {r["group_id"] for r in status} >= {"caught", "stopper", "ghost"}
    assert {r["group_id"]: r["verdict"] for r in status}["stopper"] == "STOP"
