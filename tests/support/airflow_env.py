"""Real Airflow for the provider's tests: a private AIRFLOW_HOME, an sqlite metadata database
and two DAG bundles: ``dags-folder`` (``tests/airflow/dags/``, one small DAG file per
scenario) and ``example-dags`` (the repository's ``dags/``, the examples users copy).

Airflow reads its configuration once, when ``airflow`` is first imported; importing this
module sets the environment, so a conftest imports it before any test module imports Airflow
(tests/airflow/conftest.py and tests/e2e/conftest.py both do; the first import wins, the
second is a no-op). ``dag.test()`` needs the DAG's file inside a configured bundle (else
"Cannot create DagRun ... because the dag is not serialized"): it walks the bundles until it
finds the DAG.

Fixtures (import them into a conftest):

- ``airflow_db`` (session): ``resetdb()`` once; every ``dag.test()`` needs it.
- ``run_dag(dag_id, conf, xcom_keys=(), folder=TEST_DAGS)``: ``dag.test(run_conf=conf)`` on
  the DAG of that id parsed from ``folder``; returns a :class:`DagRunResult` (state, per-task
  state and XCom, seconds).
- ``kgroups_conn(conn_id, conn_type="kgroups", **fields)``: a connection through
  ``AIRFLOW_CONN_<ID>`` (JSON form) for the test's duration.

``events_of(dag_id, run_id, task_id, event_type)``: a task's OpenLineage event of one run, waited for.
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

REPO = Path(__file__).resolve().parents[2]
TEST_DAGS = REPO / "tests" / "airflow" / "dags"
EXAMPLE_DAGS = REPO / "dags"
_BUNDLE = "airflow.dag_processing.bundles.local.LocalDagBundle"

if "airflow.configuration" in sys.modules:  # too late to point Airflow at a private home
    raise RuntimeError(
        "Airflow was imported before tests/support/airflow_env.py set AIRFLOW_HOME; "
        "import it from the conftest, and do not import Airflow at module level elsewhere."
    )
HOME = tempfile.mkdtemp(prefix="kgroups-airflow-")
os.environ.update(
    {
        "AIRFLOW_HOME": HOME,
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(TEST_DAGS),
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(
            [
                {"name": "dags-folder", "classpath": _BUNDLE, "kwargs": {}},
                {"name": "example-dags", "classpath": _BUNDLE, "kwargs": {"path": str(EXAMPLE_DAGS)}},
            ]
        ),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{HOME}/airflow.db",
        # OpenLineage on, as a deployment with the provider would have it: every task's events go to
        # one file (tests/airflow/test_lineage.py reads them); emitted in a thread, not a fork of pytest
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": f"{HOME}/openlineage.jsonl", "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "kgroups-tests",
        "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": "True",
    }
)
OPENLINEAGE_EVENTS = Path(HOME) / "openlineage.jsonl"


def events_of(
    dag_id: str, run_id: str, task_id: str, event_type: str = "COMPLETE", timeout: float = 30.0
) -> dict:
    """The task's event of that type in this run (emitted in a thread: waited for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if OPENLINEAGE_EVENTS.exists():
            for line in OPENLINEAGE_EVENTS.read_text().splitlines():
                event = json.loads(line)
                airflow = event.get("run", {}).get("facets", {}).get("airflow", {})
                if (
                    event.get("eventType") == event_type
                    and event["job"]["name"] == f"{dag_id}.{task_id}"
                    and airflow.get("dagRun", {}).get("run_id") == run_id
                ):
                    return event
        time.sleep(0.1)
    raise AssertionError(f"no {event_type} event of {dag_id}.{task_id} in run {run_id} within {timeout} s")


@pytest.fixture(scope="session")
def airflow_db() -> str:
    from airflow.utils import db

    db.resetdb()
    return HOME


@dataclass
class DagRunResult:
    state: str
    tasks: dict[str, str]  # task id -> state
    xcoms: dict[str, Any]  # task id -> return value
    seconds: float
    extra_xcoms: dict[tuple[str, str], Any] = field(default_factory=dict)  # (task id, key) -> value
    run_id: str = ""
    durations: dict[str, float] = field(default_factory=dict)  # task id -> seconds (last try)

    def __repr__(self) -> str:
        return f"DagRunResult(state={self.state!r}, tasks={self.tasks!r}, seconds={self.seconds:.1f})"


def dagbag(folder: Path = TEST_DAGS):
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 2 (and 3.0-3.1: airflow.models.dagbag)
        from airflow.models.dagbag import DagBag

    bag = DagBag(dag_folder=str(folder))
    assert unexpected_import_errors(bag.import_errors) == {}, bag.import_errors
    return bag


#: Example DAGs that need a newer Airflow: file name -> the (major, minor) they need. Below it the
#: file must fail to parse with the provider's error naming the feature and that version.
NEEDS_NEWER_AIRFLOW = {"kgroups_lag_events.py": (3, 0)}


def unexpected_import_errors(errors: dict[str, str]) -> dict[str, str]:
    """The import errors that are not a DAG refusing, as it should, an Airflow too old for it."""
    from airflow_provider_kgroups.version_compat import AIRFLOW_VERSION

    def expected(path: str, error: str) -> bool:
        needed = NEEDS_NEWER_AIRFLOW.get(Path(path).name)
        return (
            needed is not None
            and AIRFLOW_VERSION[:2] < needed
            and "AirflowVersionError" in error
            and f"needs Apache Airflow {needed[0]}.{needed[1]} or later" in error
        )

    return {path: error for path, error in errors.items() if not expected(path, error)}


def _state(value: Any) -> str:
    return str(value.value if hasattr(value, "value") else value)


@pytest.fixture
def run_dag(airflow_db):
    def run(
        dag_id: str,
        conf: dict[str, Any] | None = None,
        xcom_keys: tuple[str, ...] = (),
        folder: Path = TEST_DAGS,
        logical_date=None,
    ) -> DagRunResult:
        dag = dagbag(folder).get_dag(dag_id)
        assert dag is not None, f"no DAG {dag_id!r} in {folder}"
        started = time.monotonic()
        from airflow_provider_kgroups.version_compat import AIRFLOW_V_3_0_PLUS

        kwargs = {}
        if logical_date is not None:
            kwargs["logical_date" if AIRFLOW_V_3_0_PLUS else "execution_date"] = logical_date
        dr = dag.test(run_conf=conf or {}, **kwargs)
        seconds = time.monotonic() - started
        tasks, xcoms, extra, durations = {}, {}, {}, {}
        for ti in dr.get_task_instances():
            tasks[ti.task_id] = _state(ti.state)
            if ti.start_date and ti.end_date:
                durations[ti.task_id] = (ti.end_date - ti.start_date).total_seconds()
            xcoms[ti.task_id] = ti.xcom_pull(task_ids=ti.task_id)
            for key in xcom_keys:
                extra[(ti.task_id, key)] = ti.xcom_pull(task_ids=ti.task_id, key=key)
        return DagRunResult(_state(dr.state), tasks, xcoms, seconds, extra, dr.run_id, durations)

    return run


def scanned_for_secrets(text: str) -> str:
    """``text`` as a secret scan reads it. Airflow 3.0's task supervisor logs every message from the
    task at debug level, the request to mask a secret with the secret in it (``Sending request
    msg=MaskSecret(value=...)``; 3.1 and later omit the body): that line is Airflow's own, written
    because the provider asked it to mask the value, so on 3.0 the scan leaves it out and reads
    every other line."""
    from airflow_provider_kgroups.version_compat import AIRFLOW_VERSION

    if AIRFLOW_VERSION[:2] != (3, 0):
        return text
    return "\n".join(line for line in text.splitlines() if "msg=MaskSecret(value=" not in line)


@pytest.fixture
def task_output(capfd, caplog):
    """What the tasks run so far printed and logged: Airflow 3 runs a task under a supervisor that
    prints its log; Airflow 2's dag.test() logs through this process's logging (caplog)."""

    def read() -> str:
        out = capfd.readouterr()
        return out.out + out.err + caplog.text

    return read


@pytest.fixture
def kgroups_conn(monkeypatch):
    def define(conn_id: str, conn_type: str = "kgroups", **fields: Any) -> str:
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": conn_type, **fields}))
        return conn_id

    return define
