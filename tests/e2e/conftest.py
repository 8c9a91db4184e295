"""End to end: the flagship DAG (``dags/kgroups_gate_clean_spark.py``) under real Airflow
(``dag.test()`` on sqlite), against the real broker (Tansu), with PySpark in ``local[2]``.

Airflow's environment and fixtures come from tests/support/airflow_env.py (imported here
before any test imports Airflow). ``flagship`` points the DAG's deployment settings
(``[kgroups]`` / ``[kgroups_examples]`` through ``AIRFLOW__...`` variables, read when the DAG file is parsed, i.e. at every ``run_dag``) at this test's
topic, groups and directories, and Spark at a ``local[2]`` Spark connection.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.airflow_env import EXAMPLE_DAGS, airflow_db, kgroups_conn, run_dag

#: Spark settings for tests: small and quiet (the DAG merges [kgroups_examples] spark_conf into its config).
TEST_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    # a short-lived local driver: C1 JIT and the serial GC start faster (~10 s saved)
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}
logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines at interpreter exit hit closed streams


@dataclass
class Flagship:
    """Where this test's DAG run reads and writes."""

    topic: str
    landing_group: str
    landing_root: Path
    output_root: Path
    history: Path
    prefix: str
    folder: Path = EXAMPLE_DAGS
    dag_id: str = "kgroups_gate_clean_spark"


@pytest.fixture
def flagship(monkeypatch, tmp_path, broker, kgroups_conn, name_prefix) -> Flagship:
    p = name_prefix
    world = Flagship(
        topic=f"{p}orders",
        landing_group=f"{p}landing",
        landing_root=tmp_path / "landing",
        output_root=tmp_path / "output",
        history=tmp_path / "history",
        prefix=p,
    )
    kgroups_conn("kgroups_e2e", host=broker.bootstrap)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    for name, value in {
        "AIRFLOW__KGROUPS_EXAMPLES__CONN_ID": "kgroups_e2e",
        "AIRFLOW__KGROUPS_EXAMPLES__LANDING_GROUPS": f"{p}landing*",
        "AIRFLOW__KGROUPS_EXAMPLES__LANDING_TOPICS": world.topic,
        "AIRFLOW__KGROUPS_EXAMPLES__LANDING_ROOT": str(world.landing_root),
        "AIRFLOW__KGROUPS_EXAMPLES__OUTPUT_ROOT": str(world.output_root),
        "AIRFLOW__KGROUPS__HISTORY_URL": str(world.history),
        "AIRFLOW__KGROUPS_EXAMPLES__CLEANUP_PATTERNS": f"{p}*,connect-{p}*",  # this test's groups only: the broker is shared
        "AIRFLOW__KGROUPS_EXAMPLES__BARRIER": "log_end",  # Tansu 0.6.0 answers ListOffsets by timestamp with offset 0
        "AIRFLOW__KGROUPS_EXAMPLES__GATE_POKE_SECONDS": "0.3",
        "AIRFLOW__KGROUPS_EXAMPLES__GATE_TIMEOUT_MINUTES": "2",
        "AIRFLOW__KGROUPS_EXAMPLES__SPARK_MASTER": "local[2]",
        "AIRFLOW__KGROUPS_EXAMPLES__SPARK_CONF": json.dumps(TEST_SPARK_CONF),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AIRFLOW__KGROUPS_EXAMPLES__SPARK_KAFKA_PACKAGE", raising=False)
    return world
