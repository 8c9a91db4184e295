"""The example DAG ``dags/kgroups_lag_history.py``: its first task reads the history topics'
retention.ms from Apache Kafka, the second builds the spark-submit command for a data interval
(master from ``[kgroups_examples] spark_master``, the retention as JSON) and runs the job to the end
in a child process. No metadata database: the tasks' callables are called directly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pendulum
import pyarrow.parquet as pq

import airflow_provider_kgroups.spark.lag_history as lag_history
from airflow_provider_kgroups.history.store import HistoryStore
from tests.support.production import create_topics
from tests.support.spark_histories import HOUR, MINUTE, T0, hand_made_history, table

WEEK_MS = 7 * 24 * HOUR

DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "kgroups_lag_history.py"


def test_the_example_dag_submits_the_job_and_it_runs(tmp_path, monkeypatch, broker, name_prefix):
    history, output = tmp_path / "history", tmp_path / "lag"
    orders = f"{name_prefix}orders"  # on the shared broker: a name of this test's own
    create_topics(broker.bootstrap, {orders: 1}, {"retention.ms": str(WEEK_MS)})
    rows = [{**r, "topic": orders} if r["topic"] == "orders" else r for r in hand_made_history()]
    HistoryStore(str(history)).append_table(table(rows))
    monkeypatch.setenv(
        "AIRFLOW_CONN_KGROUPS_DEFAULT", json.dumps({"conn_type": "kgroups", "host": broker.bootstrap})
    )
    monkeypatch.setenv("AIRFLOW__KGROUPS__HISTORY_URL", str(history))
    monkeypatch.setenv("AIRFLOW__KGROUPS_EXAMPLES__LAG_OUTPUT_URL", str(output))
    monkeypatch.setenv("AIRFLOW__KGROUPS_EXAMPLES__SPARK_MASTER", "local[1]")
    monkeypatch.setenv("KGROUPS_SPARK_MASTER", "local[3]")  # outside Airflow only: the DAG passes its setting
    monkeypatch.setenv("AIRFLOW__KGROUPS_EXAMPLES__LAG_SPARK_PYTHON", sys.executable)

    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAG_FILE))
    assert bag.import_errors == {}
    dag = bag.dags["kgroups_lag_history"]
    task = dag.get_task("lag_history")
    module = sys.modules[task.python_callable.__module__]
    end = pendulum.from_timestamp((T0 + HOUR) / 1000, tz="UTC")
    # old-topic is not on the broker: left out, its margins unknown
    retention = dag.get_task("topic_retention").python_callable(data_interval_end=end)
    assert retention == {orders: WEEK_MS}
    command = module.lag_history_command(end, retention_ms=retention)
    assert json.loads(command[command.index("--retention-ms") + 1]) == {orders: WEEK_MS}
    assert command[:3] == ["spark-submit", "--master", "local[1]"]  # [kgroups_examples] spark_master
    assert command[command.index("--since") + 1] == "2024-04-24T01:00:00+00:00"
    assert command[command.index("--until") + 1] == end.isoformat()
    assert lag_history.__file__ in command

    quick = {
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    monkeypatch.setattr(module, "SPARK_CONF", {**module.SPARK_CONF, **quick})
    task.python_callable(retention, data_interval_end=end)  # raises if spark-submit exits non-zero
    for name in lag_history.OUTPUTS:
        assert list((output / name).glob("part-*.parquet")), name
    status = pq.read_table(output / "group_status").to_pylist()
    assert {r["group_id"] for r in status} >= {"caught", "stopper", "ghost"}
    stopper = {r["group_id"]: r for r in status}["stopper"]
    # stopped while its topic deletes after a week: never catching up, it is AT_RISK (STOP underneath),
    # its first unread record (offset 40) appended after the 00:20 snapshot, judged at 00:55
    assert (stopper["verdict"], stopper["reason"].endswith("the other rules said STOP")) == ("AT_RISK", True)
    assert stopper["retention_margin_s"] == (20 * MINUTE + WEEK_MS - 55 * MINUTE) / 1000
