"""The event-driven example under real Airflow services: api-server, dag-processor, scheduler
(LocalExecutor) and triggerer, started for this test on sqlite and stopped after it. The
watcher in the triggerer sees the landing group pass its barrier, the asset event it fires
schedules ``kgroups_orders_process``, and that run reads exactly the range from Kafka."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.airflow_env import EXAMPLE_DAGS
from tests.support.tansu import free_port

pytestmark = pytest.mark.realbroker

SERVICES = ("api-server", "dag-processor", "scheduler", "triggerer")
DEADLINE_S = 240


def wait_for(predicate, what: str, timeout: float, services: dict, logs: Path):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        for name, proc in services.items():
            if proc.poll() is not None:
                raise AssertionError(f"airflow {name} exited ({proc.returncode}) while waiting for {what}:\n"
                                     + (logs / f"{name}.log").read_text()[-3000:])
        time.sleep(0.5)
    tails = "\n".join(f"--- {n}\n{(logs / f'{n}.log').read_text()[-1500:]}" for n in services)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{tails}")


def query(sql: str, db: Path) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute(sql).fetchall()


def test_a_lag_event_starts_the_spark_dag_with_exactly_the_consumed_range(tansu, seed, name_prefix,
                                                                          tmp_path):
    topic, group = f"{name_prefix}orders", f"{name_prefix}landing"
    seed.create_topic(topic, 2)
    seed.produce(topic, 0, 6, key=b"sku-1")
    seed.produce(topic, 1, 4, key=b"sku-2")
    seed.commit(group, {(topic, 0): 2, (topic, 1): 1})  # behind: the range will be [2, 6) and [1, 4)
    home = tmp_path / "airflow"
    bundle = tmp_path / "bundle"
    logs = tmp_path / "logs"
    for folder in (home, bundle, logs):
        folder.mkdir()
    shutil.copy(EXAMPLE_DAGS / "kgroups_lag_events.py", bundle)
    db = home / "airflow.db"
    port = free_port()
    env = {**os.environ,
           "AIRFLOW_HOME": str(home), "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{db}",
           "AIRFLOW__CORE__EXECUTOR": "LocalExecutor", "AIRFLOW__CORE__PARALLELISM": "2",
           "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False", "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps([
               {"name": "events", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
                "kwargs": {"path": str(bundle)}}]),
           "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "2", "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
           "AIRFLOW__API__PORT": str(port), "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
           "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
           "AIRFLOW_CONN_KGROUPS_EVENTS_SVC": json.dumps({"conn_type": "kgroups", "host": tansu.bootstrap}),
           "KGROUPS_CONN_ID": "kgroups_events_svc", "KGROUPS_EVENT_GROUPS": group, "KGROUPS_EVENT_TOPICS": topic,
           "KGROUPS_EVENT_POLL_SECONDS": "0.5", "KGROUPS_EVENT_GATE_SCHEDULE": "none",
           "KGROUPS_EVENT_OUTPUT": str(tmp_path / "out"), "PYSPARK_PYTHON": sys.executable,
           "KGROUPS_SPARK_CONF": json.dumps({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                                             "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"})}
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, check=True, capture_output=True,
                   timeout=180)
    services: dict[str, subprocess.Popen] = {}
    try:
        for name in SERVICES:
            args = [name, "--port", str(port)] if name == "api-server" else [name]
            services[name] = subprocess.Popen([sys.executable, "-m", "airflow", *args], env=env,
                                              stdout=open(logs / f"{name}.log", "w"), stderr=subprocess.STDOUT,
                                              start_new_session=True)
        wait_for(lambda: query("select count(*) from trigger where classpath like '%ConsumerLagEventTrigger'", db)
                 [0][0] if db.exists() else 0, "the watcher's trigger", DEADLINE_S, services, logs)
        wait_for(lambda: "below the barrier" in (logs / "triggerer.log").read_text(), "the barrier to be fixed",
                 DEADLINE_S, services, logs)
        seed.produce(topic, 0, 2, key=b"sku-1")  # after the barrier: not in this range
        seed.commit(group, {(topic, 0): 6, (topic, 1): 4})
        state = wait_for(lambda: [s for (s,) in query("select state from dag_run where dag_id = "
                                                      "'kgroups_orders_process'", db) if s in ("success", "failed")],
                         "the process DAG's run", DEADLINE_S, services, logs)
        assert state == ["success"], (logs / "scheduler.log").read_text()[-3000:]
        (extra,) = query("select e.extra from asset_event e join asset a on a.id = e.asset_id "
                         "where a.name = 'kgroups_orders_range'", db)
        payload = json.loads(extra[0])["payload"]
        assert json.loads(payload["startingOffsets"]) == {topic: {"0": 2, "1": 1}}
        assert json.loads(payload["endingOffsets"]) == {topic: {"0": 6, "1": 4}}
        (value,) = query("select value from xcom where dag_id = 'kgroups_orders_process' and key = 'return_value'", db)
        result = json.loads(value[0])
        assert result["records"] == 7 and result["keys"] == {"sku-1": 4, "sku-2": 3}
    finally:
        for proc in services.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in services.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
