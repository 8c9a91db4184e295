"""Example DAGs parse cleanly; operators validate their arguments at parse time, name the
argument and the fix, and touch neither the hook nor the network before running."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator
from airflow_provider_kgroups.operators.snapshot import ConsumerGroupSnapshotOperator
from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor

EXAMPLES = Path(__file__).resolve().parents[2] / "dags"


def test_example_dags_import_without_errors():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(EXAMPLES))
    assert bag.import_errors == {}
    assert {"kgroups_snapshot", "kgroups_gate_clean_spark"} <= set(bag.dag_ids)
    for dag in bag.dags.values():
        for op in dag.tasks:
            assert "hook" not in op.__dict__, f"{op.task_id} built its hook at parse time"


@pytest.mark.parametrize("make, named", [
    (lambda: ConsumerLagSensor(task_id="s"), "give group_ids and/or group_patterns"),
    (lambda: ConsumerLagSensor(task_id="s", group_ids="orders"), "write group_ids=['orders']"),
    (lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], lag_mode="catchup"), "lag_mode='catchup'"),
    (lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], max_total_lag=5), "lag_mode='threshold'"),
    (lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], barrier_timestamp="2024-05-01T00:00"), "time zone"),
    (lambda: ConsumerLagSensor(task_id="s", group_patterns=["re:(orders"]), "not a valid regular expression"),
    (lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], mode="reschedule"), "deferrable=True"),
    (lambda: ConsumerLagSensor(task_id="s", group_ids=["g"], previous_barrier="{'t': {'0': 'x'}}"), "previous_barrier"),
    (lambda: ConsumerGroupSnapshotOperator(task_id="o", history_url=""), "history_url"),
    (lambda: DeadConsumerGroupCleanupOperator(task_id="c", history_url="h", dry_run="yes"), "dry_run must be True"),
    (lambda: DeadConsumerGroupCleanupOperator(task_id="c", history_url="h", max_deletions_percent=150),
     "max_deletions_percent"),
    (lambda: DeadConsumerGroupCleanupOperator(task_id="c", history_url="h", deny="connect-*"), "deny must be a list"),
])
def test_bad_arguments_fail_at_parse_time_naming_the_argument(make, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        make()


def test_templated_values_are_checked_after_rendering_not_before():
    sensor = ConsumerLagSensor(task_id="s", group_ids=["{{ params.group }}"], max_total_lag="{{ params.max }}",
                               lag_mode="{{ params.mode }}")
    assert set(ConsumerLagSensor.template_fields) >= {"group_ids", "group_patterns", "topics", "barrier_timestamp",
                                                      "previous_barrier", "max_lag_seconds", "kafka_groups_conn_id"}
    sensor.lag_mode, sensor.max_total_lag = "barrier", "5"  # as rendered
    with pytest.raises(ValueError, match="lag_mode='threshold'"):
        sensor._validate(rendered=True)
