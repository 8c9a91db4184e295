"""The event-driven example under real Airflow services: api-server, dag-processor, scheduler
(LocalExecutor) and triggerer, started for this test on sqlite and stopped after it. The
watcher in the triggerer sees the landing group pass its barrier, the asset event it fires
schedules ``kgroups_orders_process``, and that run reads exactly the range from Kafka."""

from __future__ import annotations

import json
import sys

import pytest

from demo.airflow_services import AirflowServices
from tests.support.airflow_env import EXAMPLE_DAGS, events_of

pytestmark = pytest.mark.realbroker

DEADLINE_S = 240


def test_a_lag_event_starts_the_spark_dag_with_exactly_the_consumed_range(
    broker, seed, name_prefix, tmp_path
):
    topic, group = f"{name_prefix}orders", f"{name_prefix}landing"
    seed.create_topic(topic, 2)
    seed.produce(topic, 0, 6, key=b"sku-1")
    seed.produce(topic, 1, 4, key=b"sku-2")
    seed.commit(group, {(topic, 0): 2, (topic, 1): 1})  # behind: the range will be [2, 6) and [1, 4)
    env = {
        "AIRFLOW_CONN_KGROUPS_EVENTS_SVC": json.dumps({"conn_type": "kgroups", "host": broker.bootstrap}),
        "AIRFLOW__KGROUPS_EXAMPLES__CONN_ID": "kgroups_events_svc",
        "AIRFLOW__KGROUPS_EXAMPLES__BOOTSTRAP_SERVERS": broker.bootstrap,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_GROUPS": group,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_TOPICS": topic,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_POLL_SECONDS": "0.5",
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_GATE_SCHEDULE": "none",
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_OUTPUT": str(tmp_path / "out"),
        "PYSPARK_PYTHON": sys.executable,
        "AIRFLOW__KGROUPS_EXAMPLES__SPARK_CONF": json.dumps(
            {
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "2",
                "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
            }
        ),
    }
    with AirflowServices(tmp_path, dag_files=[EXAMPLE_DAGS / "kgroups_lag_events.py"], env=env) as airflow:
        airflow.wait_for(
            lambda: airflow.query(
                "select count(*) from trigger where classpath like '%ConsumerLagEventTrigger'"
            )[0][0],
            "the watcher's trigger",
            DEADLINE_S,
        )
        airflow.wait_for(
            # the range's gate logs its closed barrier check (BarrierStatus.summary) once the barrier is fixed
            lambda: "not there yet" in airflow.log("triggerer"),
            "the barrier to be fixed",
            DEADLINE_S,
        )
        seed.produce(topic, 0, 2, key=b"sku-1")  # after the barrier: not in this range
        seed.commit(group, {(topic, 0): 6, (topic, 1): 4})
        states = airflow.wait_for(
            lambda: airflow.finished_runs("kgroups_orders_process"), "the process DAG's run", DEADLINE_S
        )
        assert states == ["success"], airflow.log("scheduler")[-3000:]
        (extra,) = airflow.query(
            "select e.extra from asset_event e join asset a on a.id = e.asset_id "
            "where a.name = 'kgroups_orders_range'"
        )
        payload = json.loads(extra[0])["payload"]
        assert json.loads(payload["startingOffsets"]) == {topic: {"0": 2, "1": 1}}
        assert json.loads(payload["endingOffsets"]) == {topic: {"0": 6, "1": 4}}
        (value,) = airflow.query(
            "select value from xcom where dag_id = 'kgroups_orders_process' and key = 'return_value'"
        )
        result = json.loads(value[0])
        assert result["records"] == 7 and result["keys"] == {"sku-1": 4, "sku-2": 3}
        (run_id,) = airflow.query("select run_id from dag_run where dag_id = 'kgroups_orders_process'")
    # OpenLineage from the task the asset event started: the topic, the range, the records read
    (dataset,) = events_of("kgroups_orders_process", run_id[0], "totals_for_the_range", timeout=60)["inputs"]
    assert (dataset["namespace"], dataset["name"]) == (f"kafka://{broker.bootstrap}", topic)
    assert dataset["inputFacets"]["kgroups_offsetRange"]["partitions"] == {
        "0": {"startingOffset": 2, "endingOffset": 6},
        "1": {"startingOffset": 1, "endingOffset": 4},
    }
    assert dataset["inputFacets"]["inputStatistics"]["rowCount"] == 7
