"""The ``[kgroups]`` configuration section: declared in the provider info, listed by
``airflow config list``, and read by the operators for the arguments they are not given."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from airflow_provider_kgroups import settings
from airflow_provider_kgroups.get_provider_info import get_provider_info
from airflow_provider_kgroups.lag.deadgroups import DEFAULT_DENY_PATTERNS

AIRFLOW = os.path.join(os.path.dirname(sys.executable), "airflow")
NAMES = (
    "history_url",
    "default_deny_patterns",
    "max_deletions",
    "max_deletions_percent",
    "connect_conn_ids",
    "allowed_token_callbacks",
)


def test_the_section_is_declared_with_a_type_default_and_description_per_option():
    section = get_provider_info()["config"]["kgroups"]
    assert set(NAMES) <= set(section["options"])
    for name, option in section["options"].items():
        assert option["type"] in ("string", "integer", "float", "boolean"), name
        assert option["description"] and option["default"] is not None, name
    # one default for the system groups: the lag engine's
    assert section["options"]["default_deny_patterns"]["default"].split(",") == list(DEFAULT_DENY_PATTERNS)


def test_airflow_config_list_shows_the_section_and_an_environment_override():
    env = {**os.environ, "AIRFLOW__KGROUPS__MAX_DELETIONS": "3", "AIRFLOW__KGROUPS__HISTORY_URL": "s3://b/h"}
    from airflow_provider_kgroups.version_compat import AIRFLOW_VERSION

    show_values = (
        ["--show-values"] if AIRFLOW_VERSION >= (3, 2) else []
    )  # values are shown by default before 3.2
    out = subprocess.run(
        [AIRFLOW, "config", "list", "--section", "kgroups", *show_values],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert "[kgroups]" in lines
    assert "max_deletions = 3" in lines  # from the environment
    assert "history_url = s3://b/h" in lines
    assert "max_deletions_percent = 50.0" in lines  # the declared default
    assert f"default_deny_patterns = {','.join(DEFAULT_DENY_PATTERNS)}" in lines
    assert "allowed_token_callbacks = " in lines


def test_the_cleanup_operator_takes_its_unset_arguments_from_the_section(monkeypatch):
    from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator

    for name, value in {
        "HISTORY_URL": "/srv/kgroups-history",
        "MAX_DELETIONS": "4",
        "MAX_DELETIONS_PERCENT": "12.5",
        "CONNECT_CONN_IDS": "connect_a, connect_b",
        "DEFAULT_DENY_PATTERNS": "connect-*,__*,mirror-*",
    }.items():
        monkeypatch.setenv(f"AIRFLOW__KGROUPS__{name}", value)
    op = DeadConsumerGroupCleanupOperator(task_id="clean")
    assert (op.history_url, op.max_deletions, op.max_deletions_percent) == ("/srv/kgroups-history", 4, 12.5)
    assert op.connect_conn_ids == ["connect_a", "connect_b"]
    assert op.default_deny == ["connect-*", "__*", "mirror-*"]
    policy = op._validate(rendered=True)
    assert policy.max_deletions == 4 and policy.rules.default_deny == ("connect-*", "__*", "mirror-*")
    # an argument wins over the section
    op = DeadConsumerGroupCleanupOperator(
        task_id="clean2", history_url="/other", max_deletions=1, connect_conn_ids=[], default_deny=["x-*"]
    )
    assert (op.history_url, op.max_deletions, op.connect_conn_ids, op.default_deny) == (
        "/other",
        1,
        [],
        ["x-*"],
    )


def test_without_the_section_the_built_in_defaults_hold_and_history_url_is_asked_for(monkeypatch):
    from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator
    from airflow_provider_kgroups.operators.snapshot import ConsumerGroupSnapshotOperator

    for name in NAMES:
        monkeypatch.delenv(f"AIRFLOW__KGROUPS__{name.upper()}", raising=False)
    op = DeadConsumerGroupCleanupOperator(task_id="clean", history_url="/h")
    assert (op.max_deletions, op.max_deletions_percent, op.connect_conn_ids) == (10, 50.0, None)
    assert tuple(op.default_deny) == DEFAULT_DENY_PATTERNS
    for make in (
        lambda: DeadConsumerGroupCleanupOperator(task_id="c"),
        lambda: ConsumerGroupSnapshotOperator(task_id="s"),
    ):
        with pytest.raises(ValueError, match=r"history_url is required.*\[kgroups\] history_url"):
            make()


def test_a_malformed_option_is_named_with_the_fix(monkeypatch):
    monkeypatch.setenv("AIRFLOW__KGROUPS__MAX_DELETIONS", "ten")
    with pytest.raises(
        ValueError,
        match=r"\[kgroups\] max_deletions must be an integer, got 'ten'.*"
        r"AIRFLOW__KGROUPS__MAX_DELETIONS",
    ):
        settings.get_int("max_deletions")


def test_the_snapshot_operator_and_the_token_allow_list_read_the_section(monkeypatch):
    from airflow_provider_kgroups.operators.snapshot import ConsumerGroupSnapshotOperator

    monkeypatch.setenv("AIRFLOW__KGROUPS__HISTORY_URL", "memory://kgroups")
    monkeypatch.setenv("AIRFLOW__KGROUPS__ALLOWED_TOKEN_CALLBACKS", "corp.auth.token, corp.sso.*")
    assert ConsumerGroupSnapshotOperator(task_id="snap").history_url == "memory://kgroups"
    assert settings.get_list("allowed_token_callbacks") == ["corp.auth.token", "corp.sso.*"]
