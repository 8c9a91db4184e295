"""ConsumerLagSensor under real Airflow (dag.test on sqlite) against the real broker (Tansu).

The live consumer is paused while records are produced, so the group lags; it is resumed
only once the sensor has fixed its barrier (a spy on ``LagGate.set_target`` sets an event;
dag.test runs tasks and triggers in this process), so the sensor must wait and watch the
group catch up. The barrier must be the end offsets at the first check, not later ones.
"""

from __future__ import annotations

import json
import threading

import pytest

from airflow_provider_kgroups.lag.gate import LagGate
from tests.support.live import start_live_group

pytestmark = pytest.mark.realbroker


@pytest.fixture(scope="module")
def lagging_group(seed):
    """One live group on a 2-partition topic, paused after consuming the first records."""
    group = start_live_group(
        seed, "kg-sensor-live", "kg-sensor-topic", records_per_partition=(3, 2), watch_states=False
    )
    yield group
    group.stop()


@pytest.fixture
def barrier_fixed(monkeypatch):
    """An event set when a sensor (or its trigger) fixes its barrier."""
    fixed = threading.Event()
    original = LagGate.set_target

    def spy(self, target):
        original(self, target)
        fixed.set()

    monkeypatch.setattr(LagGate, "set_target", spy)
    return fixed


def _catch_up_after(fixed: threading.Event, group, failures: list) -> threading.Thread:
    def run():
        try:
            if not fixed.wait(60):
                raise TimeoutError("the sensor never fixed a barrier")
            group.consumer.resume()
        except BaseException as exc:  # reported by the test
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("dag_id", ["kg_sensor_poke", "kg_sensor_deferrable"])
def test_sensor_waits_for_the_barrier_while_the_consumer_catches_up(
    dag_id, run_dag, seed, broker, kgroups_conn, lagging_group, barrier_fixed
):
    kgroups_conn("kgroups_test", host=broker.bootstrap)
    topic = lagging_group.topic
    seed.produce(topic, 0, 4)
    seed.produce(topic, 1, 1)
    ends = seed.end_offsets(topic, [0, 1])
    committed = seed.committed(lagging_group.group_id)
    assert all(committed.get(tp) < ends[tp.partition] for tp in committed), (
        "the group must lag before the run"
    )
    failures: list = []
    helper = _catch_up_after(barrier_fixed, lagging_group, failures)
    previous = {topic: {"0": 3}}
    try:
        result = run_dag(
            dag_id,
            {"group": lagging_group.group_id, "topic": topic, "previous": json.dumps(previous)},
            xcom_keys=("barrier_target",),
        )
    finally:
        helper.join(60)
        lagging_group.consumer.pause()
    assert not failures, failures
    assert result.state == "success", result
    out = result.xcoms["gate"]
    expected_end = {topic: {"0": ends[0], "1": ends[1]}}
    assert out["offsets"] == expected_end  # the barrier: end offsets at the first check
    assert json.loads(out["endingOffsets"]) == expected_end
    assert out["checks"] >= 2, "the sensor should have waited for the consumer"
    for partition, end in ((0, ends[0]), (1, ends[1])):
        assert out["reached"][lagging_group.group_id][topic][str(partition)] >= end
    if dag_id == "kg_sensor_poke":
        # starting offsets: where the previous barrier ended, earliest (-2) where it says nothing
        assert json.loads(out["startingOffsets"]) == {topic: {"0": 3, "1": -2}}
    else:
        assert json.loads(out["startingOffsets"]) == {topic: {"0": -2, "1": -2}}
    target = result.extra_xcoms[("gate", "barrier_target")]
    assert target["kind"] == "log_end"
    assert target["groups"][lagging_group.group_id][topic] == {"0": ends[0], "1": ends[1]}


def test_sensor_fails_fast_on_a_missing_group(run_dag, broker, kgroups_conn, name_prefix, capfd, caplog):
    kgroups_conn("kgroups_test", host=broker.bootstrap)
    result = run_dag("kg_sensor_missing", {"group": f"{name_prefix}no-such-group"})
    assert result.state == "failed", result
    assert result.tasks["gate"] == "failed"
    assert result.seconds < 60, "must fail at the first check, not at the 300 s timeout"
    out = capfd.readouterr()  # Airflow 3 runs the task in a supervised process; Airflow 2 logs in this one
    assert "does not exist" in out.out + out.err + caplog.text
