"""A real ``airflow api-server`` (and a dag-processor, which serializes the gating DAG) for the
page's tests, started once for the module's tests and stopped after them.

The api-server runs with Airflow's default provider discovery (lazy: the plugin comes from the
``airflow.plugins`` entry point, as a user's would), reads the seeded history (``[kgroups]
history_url``) and authenticates with a SimpleAuthManager variant (:mod:`.auth_manager`) whose
users are ``admin``, ``viewer`` and ``nodata`` (may not read assets), with passwords from a file
the test writes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from demo.airflow_services import AirflowServices
from tests.support.ui_seeded import seed_history

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PASSWORDS = {"admin": "admin-pass", "viewer": "viewer-pass", "nodata": "nodata-pass"}
START_TIMEOUT_S = 240
PREPARING_TIMEOUT_S = 180


@dataclass
class PageServer:
    airflow: AirflowServices
    base: str
    seeded: dict[str, str]
    history: str

    def token(self, user: str = "viewer") -> str:
        response = requests.post(
            f"{self.base}/auth/token", json={"username": user, "password": PASSWORDS[user]}, timeout=30
        )
        response.raise_for_status()
        return response.json()["access_token"]

    def get(self, path: str, user: str | None = "viewer", **kwargs) -> requests.Response:
        """The answer to ``path``; a 202 "preparing" (the page still building its rollups, which a loaded
        machine can stretch past the page's own wait) is asked again until an answer or a deadline."""
        headers = {"Authorization": f"Bearer {self.token(user)}"} if user else {}
        deadline = time.monotonic() + PREPARING_TIMEOUT_S
        while True:
            response = requests.get(f"{self.base}{path}", headers=headers, timeout=60, **kwargs)
            if response.status_code != 202 or time.monotonic() > deadline:
                return response
            time.sleep(float(response.headers.get("Retry-After", "1")))


def page_env(history: str, passwords_file: Path) -> dict[str, str]:
    return {
        "AIRFLOW__KGROUPS__HISTORY_URL": history,
        "AIRFLOW__CORE__AUTH_MANAGER": "tests.ui.auth_manager.NoAssetsForNodata",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer,nodata:viewer",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file),
        "AIRFLOW__API_AUTH__JWT_SECRET": "kgroups-ui-tests-" + "x" * 32,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }


@pytest.fixture(scope="module")
def page_server(tmp_path_factory) -> PageServer:
    root = tmp_path_factory.mktemp("page")
    history = str(root / "history")
    seeded = seed_history(history)
    passwords = root / "passwords.json"
    passwords.write_text(json.dumps(PASSWORDS))
    env = page_env(history, passwords)
    with AirflowServices(
        root, dag_files=[HERE / "dags" / "gate_orders.py"], env=env, services=("api-server", "dag-processor")
    ) as airflow:
        base = f"http://127.0.0.1:{airflow.port}"

        def healthy():
            try:
                return requests.get(f"{base}/api/v2/monitor/health", timeout=5).status_code == 200
            except requests.ConnectionError:
                return False

        airflow.wait_for(healthy, "the api-server", START_TIMEOUT_S)
        airflow.wait_for(
            lambda: airflow.query("select count(*) from serialized_dag where dag_id = 'gate_orders'")[0][0],
            "the gating DAG to be serialized",
            START_TIMEOUT_S,
        )
        yield PageServer(airflow, base, seeded, history)
