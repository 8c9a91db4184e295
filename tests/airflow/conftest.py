"""Real Airflow for the provider's tests (sqlite, private AIRFLOW_HOME, dag.test()): the
environment and the fixtures live in tests/support/airflow_env.py, shared with tests/e2e.
Importing it here, before any test module imports Airflow, is what sets AIRFLOW_HOME.

Fixtures: ``airflow_db``, ``run_dag(dag_id, conf)`` (DAGs from ``tests/airflow/dags/``),
``kgroups_conn(conn_id, bootstrap, ...)``.
"""

from __future__ import annotations

from tests.support.airflow_env import TEST_DAGS as DAGS_FOLDER
from tests.support.airflow_env import DagRunResult, airflow_db, kgroups_conn, run_dag, task_output
