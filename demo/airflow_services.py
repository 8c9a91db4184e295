"""Real Airflow services for the demo (and the tests): api-server, dag-processor, scheduler
(LocalExecutor) and triggerer on a private AIRFLOW_HOME with sqlite and one DAG bundle,
started together and stopped together (or only some of them: ``services=``), each logging to
its own file.

    with AirflowServices(tmp_path, dag_files=[EXAMPLE_DAGS / "kgroups_lag_events.py"], env={...}) as airflow:
        airflow.wait_for(lambda: airflow.query("select count(*) from trigger")[0][0], "a trigger")
        ...

``wait_for`` polls a condition with a deadline and fails early, with the service logs, when
a service exits.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .tansu import free_port

SERVICES = ("api-server", "dag-processor", "scheduler", "triggerer")
_BUNDLE = "airflow.dag_processing.bundles.local.LocalDagBundle"


class AirflowServices:
    def __init__(
        self,
        root: Path,
        *,
        dag_files: Iterable[Path],
        env: Mapping[str, str] | None = None,
        services: Iterable[str] = SERVICES,
    ) -> None:
        self.root = Path(root)
        self.home, self.bundle, self.logs = self.root / "airflow", self.root / "bundle", self.root / "logs"
        for folder in (self.home, self.bundle, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        for dag_file in dag_files:
            shutil.copy(dag_file, self.bundle)
        self.db = self.home / "airflow.db"
        port = free_port()
        self.env = {
            **os.environ,
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.db}",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "2",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(
                [{"name": "services", "classpath": _BUNDLE, "kwargs": {"path": str(self.bundle)}}]
            ),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "2",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "PYSPARK_PYTHON": sys.executable,
            **(env or {}),
        }
        self.port = port
        self.processes: dict[str, subprocess.Popen] = {}
        self.services = tuple(services)

    def __enter__(self) -> AirflowServices:
        subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        try:
            for name in self.services:
                args = [name, "--port", str(self.port)] if name == "api-server" else [name]
                with open(self.logs / f"{name}.log", "w") as log:
                    self.processes[name] = subprocess.Popen(
                        [sys.executable, "-m", "airflow", *args],
                        env=self.env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, grace_s: float = 30.0) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def query(self, sql: str, *params: Any) -> list[tuple]:
        if not self.db.exists():
            return []
        with sqlite3.connect(self.db, timeout=30) as conn:
            return conn.execute(sql, params).fetchall()

    def wait_for(self, predicate: Callable[[], Any], what: str, timeout: float) -> Any:
        """The predicate's first truthy value; fails with the logs on timeout or a dead service."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                value = predicate()
            except sqlite3.OperationalError:  # a table not created yet, or the database busy
                value = None
            if value:
                return value
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise AssertionError(
                        f"airflow {name} exited ({proc.returncode}) while waiting for {what}:\n"
                        + self.log(name)[-3000:]
                    )
            time.sleep(0.5)
        tails = "\n".join(f"--- {name}\n{self.log(name)[-1500:]}" for name in self.processes)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{tails}")

    def finished_runs(self, dag_id: str) -> list[str]:
        return [
            state
            for (state,) in self.query("select state from dag_run where dag_id = ?", dag_id)
            if state in ("success", "failed")
        ]
