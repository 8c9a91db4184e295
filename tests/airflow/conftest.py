"""Real Airflow for the provider's tests: a private AIRFLOW_HOME, an sqlite metadata database
and a DAGs folder holding one small DAG file per scenario (``tests/airflow/dags/``).

Airflow reads its configuration once, when ``airflow`` is first imported; the environment is
therefore set here, at import time of this conftest, before any test module imports Airflow.

Fixtures:

- ``airflow_db`` (session): ``resetdb()`` once; every ``dag.test()`` needs it.
- ``run_dag(dag_id, conf)``: ``dag.test(run_conf=conf)`` on the DAG of that id from the test
  DAGs folder; returns a :class:`DagRunResult` (state, per-task state and XCom, seconds).
- ``kgroups_conn(conn_id, bootstrap, ...)``: defines a connection through
  ``AIRFLOW_CONN_<ID>`` (JSON form) for the test's duration.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

DAGS_FOLDER = Path(__file__).parent / "dags"

if "airflow.configuration" in sys.modules:  # too late to point Airflow at a private home
    raise RuntimeError("Airflow was imported before tests/airflow/conftest.py set AIRFLOW_HOME; "
                       "do not import Airflow at module level outside tests/airflow.")
_HOME = tempfile.mkdtemp(prefix="kgroups-airflow-")
os.environ.update({
    "AIRFLOW_HOME": _HOME,
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME}/airflow.db",
})


@pytest.fixture(scope="session")
def airflow_db() -> str:
    from airflow.utils import db

    db.resetdb()
    return _HOME


@dataclass
class DagRunResult:
    state: str
    tasks: dict[str, str]  # task id -> state
    xcoms: dict[str, Any]  # task id -> return value
    seconds: float
    extra_xcoms: dict[tuple[str, str], Any] = field(default_factory=dict)  # (task id, key) -> value

    def __repr__(self) -> str:
        return f"DagRunResult(state={self.state!r}, tasks={self.tasks!r}, seconds={self.seconds:.1f})"


def _dagbag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER))
    assert bag.import_errors == {}, bag.import_errors
    return bag


@pytest.fixture
def run_dag(airflow_db):
    def run(dag_id: str, conf: dict[str, Any] | None = None, xcom_keys: tuple[str, ...] = ()) -> DagRunResult:
        dag = _dagbag().get_dag(dag_id)
        assert dag is not None, f"no DAG {dag_id!r} in {DAGS_FOLDER}"
        started = time.monotonic()
        dr = dag.test(run_conf=conf or {})
        seconds = time.monotonic() - started
        tasks, xcoms, extra = {}, {}, {}
        for ti in dr.get_task_instances():
            tasks[ti.task_id] = str(ti.state.value if hasattr(ti.state, "value") else ti.state)
            xcoms[ti.task_id] = ti.xcom_pull(task_ids=ti.task_id)
            for key in xcom_keys:
                extra[(ti.task_id, key)] = ti.xcom_pull(task_ids=ti.task_id, key=key)
        state = str(dr.state.value if hasattr(dr.state, "value") else dr.state)
        return DagRunResult(state, tasks, xcoms, seconds, extra)

    return run


@pytest.fixture
def kgroups_conn(monkeypatch):
    def define(conn_id: str, conn_type: str = "kgroups", **fields: Any) -> str:
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": conn_type, **fields}))
        return conn_id

    return define
