"""Example DAGs parse cleanly; operators validate their arguments at parse time, name the
argument and the fix, and touch neither the hook nor the network before running."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator
from airflow_provider_kgroups.operators.snapshot import ConsumerGroupSnapshotOperator
from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor
from airflow_provider_kgroups.version_compat import AIRFLOW_V_3_0_PLUS
from tests.support.airflow_env import dagbag

EXAMPLES = Path(__file__).resolve().parents[2] / "dags"


def test_example_dags_import_without_errors():
    bag = dagbag(
        EXAMPLES
    )  # and a DAG that needs a newer Airflow says which (airflow_env.NEEDS_NEWER_AIRFLOW)
    assert {"kgroups_snapshot", "kgroups_gate_clean_spark", "kgroups_backfill_reset"} <= set(bag.dag_ids)
    assert ("kgroups_orders_gate" in bag.dag_ids) == AIRFLOW_V_3_0_PLUS
    for dag in bag.dags.values():
        for op in dag.tasks:
            assert "hook" not in op.__dict__, f"{op.task_id} built its hook at parse time"


@pytest.mark.parametrize(
    "make, named",
    [
        (lambda: ConsumerLagSensor(task_id="s"), "give group_ids and/or group_patterns"),
        (lambda: ConsumerLagSensor(task_id="s", group_ids="orders"), "write group_ids=['orders']"),
        (lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], lag_mode="catchup"), "lag_mode='catchup'"),
        (lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], max_total_lag=5), "lag_mode='threshold'"),
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], barrier_timestamp="2024-05-01T00:00"),
            "time zone",
        ),
        (
            lambda: ConsumerLagSensor(task_id="s", group_patterns=["re:(orders"]),
            "not a valid regular expression",
        ),
        (lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], mode="reschedule"), "deferrable=True"),
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], previous_barrier="{'t': {'0': 'x'}}"),
            "previous_barrier",
        ),
        (lambda: ConsumerGroupSnapshotOperator(task_id="o", history_url=""), "history_url"),
        (
            lambda: DeadConsumerGroupCleanupOperator(task_id="c", history_url="h", dry_run="yes"),
            "dry_run must be True",
        ),
        (
            lambda: DeadConsumerGroupCleanupOperator(task_id="c", history_url="h", max_deletions_percent=150),
            "max_deletions_percent",
        ),
        (
            lambda: DeadConsumerGroupCleanupOperator(task_id="c", history_url="h", deny="connect-*"),
            "deny must be a list",
        ),
    ],
)
def test_bad_arguments_fail_at_parse_time_naming_the_argument(make, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        make()


@pytest.mark.parametrize(
    "make, named",
    [
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], kafka_groups_conn_id=""),
            "kafka_groups_conn_id must be",
        ),
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], kafka_groups_conn_id=None),
            "kafka_groups_conn_id must be",
        ),
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], deferrable="yes"),
            "deferrable must be True or False",
        ),
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], topics=[]),
            "topics=[] selects no partition",
        ),
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], timeout=float("nan")),
            "timeout must be finite",
        ),
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], timeout=float("inf")),
            "timeout must be finite",
        ),
        (
            lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], poke_interval=float("nan")),
            "poke_interval must be finite",
        ),
        (
            lambda: ConsumerGroupSnapshotOperator(task_id="o", history_url="h", kafka_groups_conn_id=" "),
            "kafka_groups_conn_id must be",
        ),
        (
            lambda: ConsumerGroupSnapshotOperator(task_id="o", history_url="h", topics=[]),
            "topics=[] selects no partition",
        ),
        (
            lambda: ConsumerGroupSnapshotOperator(task_id="o", history_url="h", storage_options="anon=true"),
            "storage_options must be a dict",
        ),
        (
            lambda: ConsumerGroupSnapshotOperator(task_id="o", history_url="s4://bucket/history"),
            "URL scheme 's4', which fsspec does not know",
        ),
        (
            lambda: ConsumerGroupSnapshotOperator(task_id="o", history_url="simplecache::nope://x"),
            "scheme 'nope'",
        ),
        (
            lambda: DeadConsumerGroupCleanupOperator(task_id="c", history_url="h", kafka_groups_conn_id=None),
            "kafka_groups_conn_id must be",
        ),
        (
            lambda: DeadConsumerGroupCleanupOperator(task_id="c", history_url="h", storage_options=["anon"]),
            "storage_options must be a dict",
        ),
        (
            lambda: DeadConsumerGroupCleanupOperator(
                task_id="c", history_url="h", backup_url="sftpx://host/backups"
            ),
            "scheme 'sftpx'",
        ),
    ],
)
def test_more_bad_arguments_fail_at_parse_time(make, named):
    """Issue 8, "Bad input": each is refused when the DAG is parsed, not when the task runs."""
    with pytest.raises(ValueError, match=re.escape(named)):
        make()


def test_good_urls_and_storage_options_pass_at_parse_time(tmp_path):
    for url in (
        str(tmp_path),
        "s3://bucket/history",
        "gs://b/h",
        "file:///tmp/h",
        "memory://h",
        "simplecache::s3://bucket/h",
        "relative/dir",
    ):
        op = ConsumerGroupSnapshotOperator(task_id="o", history_url=url, storage_options={"anon": False})
        assert op.storage_options == {"anon": False}


@pytest.mark.parametrize(
    "options, named",
    [
        ("call_timeout_s=5", "client_options must be a dict"),
        ({"call_timeout": 5}, "unknown option(s) call_timeout"),
        ({"call_timeout_s": float("nan")}, "client_options['call_timeout_s'] must be a finite number"),
        ({"request_timeout_s": -1}, "client_options['request_timeout_s'] must be a finite number"),
        ({"call_timeout_s": 0}, "client_options['call_timeout_s'] must be > 0"),
        ({"security_protocol": "TLS"}, "client_options['security_protocol']='TLS' is not one of"),
        ({"ssl_check_hostname": "maybe"}, "ssl_check_hostname"),
    ],
)
def test_bad_hook_client_options_fail_when_the_hook_is_built(options, named):
    from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook

    with pytest.raises(ValueError, match=re.escape(named)):
        KafkaGroupsHook("kgroups_default", client_options=options)
    assert KafkaGroupsHook("kgroups_default", client_options={"call_timeout_s": "20"}).client_options == {
        "call_timeout_s": 20.0
    }


def test_templated_values_are_checked_after_rendering_not_before():
    sensor = ConsumerLagSensor(
        task_id="s",
        group_ids=["{{ params.group }}"],
        max_total_lag="{{ params.max }}",
        lag_mode="{{ params.mode }}",
    )
    assert set(ConsumerLagSensor.template_fields) >= {
        "group_ids",
        "group_patterns",
        "topics",
        "barrier_timestamp",
        "previous_barrier",
        "max_lag_seconds",
        "kafka_groups_conn_id",
    }
    sensor.lag_mode, sensor.max_total_lag = "barrier", "5"  # as rendered
    with pytest.raises(ValueError, match="lag_mode='threshold'"):
        sensor._validate(rendered=True)
