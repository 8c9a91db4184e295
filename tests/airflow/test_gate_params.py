"""The gate's arguments are declared once, as the spec's fields (lag.gate_spec), and the table
derived from them; the sensor's signature, template fields, docstring and checks, the event
trigger's keywords and the UI's threshold column follow it."""

from __future__ import annotations

import inspect

import pytest

from airflow_provider_kgroups.lag.gate import MODES, GateSpec
from airflow_provider_kgroups.lag.gate_spec import MODE_TABLES, LagMode, all_params, threshold_names
from airflow_provider_kgroups.lag.verdicts import Verdict
from airflow_provider_kgroups.sensors.lag import ConsumerLagSensor
from airflow_provider_kgroups.ui import gates


def test_every_argument_of_the_table_is_a_keyword_of_the_sensor_a_template_field_and_documented():
    signature = inspect.signature(ConsumerLagSensor.__init__).parameters
    for param in all_params():
        assert param.name in signature, f"add {param.name}= to ConsumerLagSensor.__init__"
        assert param.name in ConsumerLagSensor.template_fields
        assert f":param {param.name}:" in ConsumerLagSensor.__doc__
        assert param.key in GateSpec.parse(group_ids=("g",)).to_dict()  # a field of the spec (or its mode)
    selection = {"group_ids", "group_patterns", "exclude_patterns", "kafka_groups_conn_id"}
    assert set(ConsumerLagSensor.template_fields) == selection | {p.name for p in all_params()}


def test_every_mode_has_a_table_and_a_strategy_and_the_ui_shows_their_thresholds():
    assert set(MODE_TABLES) == set(LagMode) == set(MODES)
    assert (
        gates.THRESHOLDS == threshold_names() == ("max_lag_per_partition", "max_total_lag", "max_lag_seconds")
    )


def test_an_argument_is_parsed_once_into_the_spec_and_the_modes_rules_come_from_the_table():
    spec = GateSpec.parse(
        group_ids=("g",),
        lag_mode="threshold",
        max_total_lag="5",
        stuck_after="30",
        fail_on_verdicts=["stop"],
        read_committed="True",
    )
    assert (
        spec.lag_mode,
        spec.mode.max_total_lag,
        spec.stuck_after_s,
        spec.fail_on_verdicts,
        spec.read_committed,
    ) == (LagMode.THRESHOLD, 5, 30.0, frozenset({Verdict.STOP}), True)
    with pytest.raises(ValueError, match="barrier_timestamp applies to lag_mode='barrier'"):
        GateSpec.parse(group_ids=("g",), lag_mode="threshold", max_total_lag=1, barrier_timestamp=5)
    with pytest.raises(ValueError, match="lag_mode='threshold' needs at least one of max_lag_per_partition"):
        GateSpec.parse(group_ids=("g",), lag_mode="threshold")


def test_the_sensor_checks_a_plain_argument_at_parse_time_even_when_another_is_templated():
    with pytest.raises(ValueError, match="gate: unknown lag policy 'zero'"):
        ConsumerLagSensor(task_id="gate", group_ids=["g"], topics="{{ params.topics }}", unknown_lag="zero")
    sensor = ConsumerLagSensor(
        task_id="gate", group_ids=["g"], topics="{{ params.topics }}", max_total_lag=None
    )
    assert sensor.topics == "{{ params.topics }}"  # checked once rendered, by the spec
