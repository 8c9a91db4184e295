"""The provider as Airflow sees it: schema-valid info, registered hook and connection form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest

from airflow_provider_kgroups.get_provider_info import get_provider_info
from airflow_provider_kgroups.ui.plugin import PAGE_NEEDS
from airflow_provider_kgroups.version_compat import AIRFLOW_VERSION


def test_provider_info_validates_against_airflows_schema():
    schema = json.loads(resources.files("airflow").joinpath("provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    # every declared module imports and holds what it is declared for
    import importlib

    for section in ("hooks", "sensors", "operators", "triggers"):
        for entry in info[section]:
            for module in entry["python-modules"]:
                importlib.import_module(module)
    conn = info["connection-types"][0]
    assert conn["connection-type"] == "kgroups"
    module, _, cls = conn["hook-class-name"].rpartition(".")
    hook_class = getattr(importlib.import_module(module), cls)
    assert hook_class.conn_type == "kgroups" and hook_class.default_conn_name == "kgroups_default"
    assert conn["conn-fields"]["ssl_key_password"]["schema"]["format"] == "password"


def test_airflow_lists_the_provider_hook_and_connection_form(airflow_db):
    from airflow.providers_manager import ProvidersManager

    try:
        from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime as Hooks
    except ImportError:  # before Airflow 3.2 the providers manager lists the hooks itself
        Hooks = ProvidersManager

    assert "airflow-provider-kgroups" in ProvidersManager().providers
    hook = Hooks().hooks["kgroups"]
    assert hook.hook_class_name == "airflow_provider_kgroups.hooks.groups.KafkaGroupsHook"
    assert hook.connection_id_attribute_name == "kafka_groups_conn_id"
    assert Hooks().hooks["kgroups_connect"].hook_class_name.endswith("KafkaConnectHook")
    pm = ProvidersManager()
    widgets = pm.connection_form_widgets
    if AIRFLOW_VERSION >= (3, 2):  # the form from the provider info's conn-fields (3.2+)
        assert widgets["extra__kgroups__security_protocol"].field["schema"]["enum"][0] == "PLAINTEXT"
        assert widgets["extra__kgroups__ssl_key_password"].is_sensitive
    elif AIRFLOW_VERSION < (3, 0):  # Airflow 2's Flask form, built by the hook from the same declarations
        assert (
            "One of: PLAINTEXT, SSL"
            in widgets["extra__kgroups__security_protocol"].field.kwargs["description"]
        )
        assert widgets["extra__kgroups__ssl_key_password"].field.field_class.__name__ == "PasswordField"
        assert widgets["extra__kgroups__ssl_key_password"].field_name == "ssl_key_password"  # stored bare
        assert widgets["extra__kgroups_connect__verify"].field.field_class.__name__ == "BooleanField"
    if AIRFLOW_VERSION >= (3, 2) or AIRFLOW_VERSION < (3, 0):
        assert pm.field_behaviours["kgroups"]["relabeling"]["host"] == "Bootstrap servers"
        assert pm.field_behaviours["kgroups"]["hidden_fields"] == ["schema"]
    # and the CLI shows it, from a fresh process with the same AIRFLOW_HOME
    airflow = os.path.join(os.path.dirname(sys.executable), "airflow")
    out = subprocess.run(
        [
            "sh",
            "-c",
            f"{airflow} providers get airflow-provider-kgroups -o json && {airflow} providers hooks -o json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"airflow-provider-kgroups"' in out.stdout
    assert "airflow_provider_kgroups.hooks.groups.KafkaGroupsHook" in out.stdout


_PLUGINS_AND_ERRORS = """
import json
from airflow import plugins_manager
if hasattr(plugins_manager, "_get_plugins"):
    plugins, errors = plugins_manager._get_plugins()
else:  # Airflow before 3.2
    plugins_manager.ensure_plugins_loaded()
    plugins, errors = plugins_manager.plugins, plugins_manager.import_errors
apps = [len(getattr(p, "fastapi_apps", None) or ()) for p in plugins if p.name == "kgroups"]
print(json.dumps({"names": [p.name for p in plugins], "errors": errors, "apps": apps}))
"""


def _airflow_env(lazy_discover_providers: bool) -> dict[str, str]:
    env = os.environ.copy()
    env.pop("AIRFLOW__CORE__LAZY_DISCOVER_PROVIDERS", None)
    if not lazy_discover_providers:
        env["AIRFLOW__CORE__LAZY_DISCOVER_PROVIDERS"] = "False"
    return env


def _json_output(stdout: str):
    """The JSON a CLI command printed, after any log lines (Airflow 3.0 logs alembic's set-up to stdout)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(("[{", "{")) or line == "[]")
    return json.loads("\n".join(lines[start:]))


def test_airflow_plugins_lists_the_page_with_default_settings(airflow_db):
    # the symptom: with Airflow's default lazy provider discovery `airflow plugins` listed no kgroups
    airflow = os.path.join(os.path.dirname(sys.executable), "airflow")
    out = subprocess.run(
        [airflow, "plugins", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_airflow_env(lazy_discover_providers=True),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    listed = [p for p in _json_output(out.stdout) if p["name"] == "kgroups"]
    assert len(listed) == 1, out.stdout[-2000:]
    assert "airflow_provider_kgroups.ui.plugin" in json.dumps(listed[0])


@pytest.mark.parametrize("lazy", [True, False], ids=["lazy-discovery", "eager-discovery"])
def test_the_page_is_registered_once_whatever_the_discovery(airflow_db, lazy):
    # Eager discovery also reads a provider info's "plugins": listing the page there as well as in the entry
    # point would register it twice ("Plugin 'kgroups' already registered, skipping", an import error in
    # the UI).
    out = subprocess.run(
        [sys.executable, "-c", _PLUGINS_AND_ERRORS],
        capture_output=True,
        text=True,
        timeout=120,
        env=_airflow_env(lazy_discover_providers=lazy),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["names"].count("kgroups") == 1
    # the page where Airflow can show it (3.1+: external views); below, the plugin registers nothing
    assert found["apps"] == ([1] if AIRFLOW_VERSION >= PAGE_NEEDS else [0])
    assert [
        (where, error) for where, error in found["errors"].items() if "kgroups" in f"{where} {error}"
    ] == []
