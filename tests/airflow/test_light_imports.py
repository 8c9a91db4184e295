"""What importing a module costs the triggerer and the workers: no client stack, no lag engine,
no pyarrow/pandas at import (the triggerer imports trigger modules on its event loop, which
every trigger shares). Checked in a fresh interpreter through ``sys.modules``, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "kafka.protocol.admin",
    "airflow_provider_kgroups.client.client",
    "airflow_provider_kgroups.client.driver",
    "airflow_provider_kgroups.lag.snapshot",
    "airflow_provider_kgroups.hooks.groups",
    "pyarrow",
    "pandas",
)


def loaded_after_import(module: str, code: str = "") -> list[str]:
    probe = (
        f"import json, sys\nimport {module}\n{code}\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "module", ["airflow_provider_kgroups.triggers.lag", "airflow_provider_kgroups.triggers.events"]
)
def test_trigger_modules_import_no_engine(module):
    assert loaded_after_import(module) == []


def test_hook_module_imports_no_client_and_no_history_store():
    loaded = loaded_after_import("airflow_provider_kgroups.hooks.groups")
    assert loaded == ["airflow_provider_kgroups.hooks.groups"]  # itself, and nothing heavy


def test_client_package_loads_its_verbs_on_first_use():
    assert (
        loaded_after_import(
            "airflow_provider_kgroups.client",
            "from airflow_provider_kgroups.client import ConfigurationError, TopicPartition",
        )
        == []
    )
    assert "airflow_provider_kgroups.client.client" in loaded_after_import(
        "airflow_provider_kgroups.client", "from airflow_provider_kgroups.client import AsyncGroupsClient"
    )


def test_trigger_run_loads_the_engine_off_the_event_loop():
    """load_engine imports in a worker thread: the loop's thread never runs the import."""
    code = """
import asyncio, threading, importlib, builtins
from airflow_provider_kgroups.triggers.loading import load_engine
threads = set()
real = importlib.import_module
def spy(name, *a, **k):
    threads.add(threading.current_thread() is threading.main_thread())
    return real(name, *a, **k)
import airflow_provider_kgroups.triggers.loading as loading
loading.import_module = spy
asyncio.run(load_engine())
assert threads == {False}, threads
"""
    assert "airflow_provider_kgroups.client.client" in loaded_after_import(
        "airflow_provider_kgroups.triggers.lag", code
    )


@pytest.mark.parametrize("client_first", [False, True])
def test_trigger_run_loads_the_handlers_the_clients_verbs_import_on_first_use(client_first):
    """client.VERB_HANDLERS come with the client, off the loop, also when something else in the
    process imported the client first: no verb a trigger calls imports on the event loop."""
    code = f"""
import asyncio, sys
if {client_first}:
    import airflow_provider_kgroups.client.client
from airflow_provider_kgroups.triggers.loading import load_engine
asyncio.run(load_engine())
from airflow_provider_kgroups.client.client import VERB_HANDLERS
missing = [m for m in VERB_HANDLERS if m not in sys.modules]
assert VERB_HANDLERS and not missing, missing
"""
    assert "airflow_provider_kgroups.client.client" in loaded_after_import(
        "airflow_provider_kgroups.triggers.lag", code
    )
