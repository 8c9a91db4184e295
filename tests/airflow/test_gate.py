"""The lag gate's decisions (pure: snapshots in, decisions out) and the trigger's round trip."""

from __future__ import annotations

import importlib
import json

import pytest

from airflow_provider_kgroups.client.results import GroupState, TopicPartition
from airflow_provider_kgroups.lag.barrier import BarrierTarget, TargetKind
from airflow_provider_kgroups.lag.gate import GateSpec, GateState, LagGate, spark_offsets
from airflow_provider_kgroups.lag.model import GroupLag, LagFlag, LagSnapshot, PartitionLag, UnknownLagPolicy
from airflow_provider_kgroups.triggers.lag import ConsumerLagTrigger

T0 = 1_700_000_000_000
TP0 = TopicPartition("orders", 0)


def snap(
    at_s: float,
    committed: int | None,
    log_end: int,
    *,
    state=GroupState.STABLE,
    members=1,
    group="g",
    policy=UnknownLagPolicy.FAIL,
) -> LagSnapshot:
    lag = None if committed is None else max(0, log_end - committed)
    flags = frozenset({LagFlag.NO_COMMIT}) if committed is None else frozenset()
    part = PartitionLag("orders", 0, committed, 0, log_end, lag, flags)
    at = T0 + int(at_s * 1000)
    return LagSnapshot(
        at, {group: GroupLag(group, state, "consumer", members, (part,), policy=policy)}, policy
    )


def barrier_gate(target: int, *, deadline_s: float = 3600, **spec) -> LagGate:
    gate = LagGate(
        GateSpec.parse(group_ids=("g",), **spec), GateState(started_ms=T0), T0 + int(deadline_s * 1000)
    )
    gate.set_target(BarrierTarget({"g": {TP0: target}}, TargetKind.LOG_END, T0))
    return gate


def test_barrier_waits_then_succeeds_with_spark_offsets():
    gate = barrier_gate(100, previous_barrier={"orders": {"0": 40}})
    assert gate.evaluate(snap(0, 50, 120)).status == "wait"
    done = gate.evaluate(snap(10, 100, 130))  # producers went on: the target did not move
    assert done.status == "done"
    assert done.result["offsets"] == {"orders": {"0": 100}} and done.result["reached"] == {
        "g": {"orders": {"0": 100}}
    }
    assert (done.result["startingOffsets"], done.result["endingOffsets"]) == (
        '{"orders": {"0": 40}}',
        '{"orders": {"0": 100}}',
    )


def test_projection_beyond_the_time_left_fails_fast_after_two_checks():
    gate = barrier_gate(10_000, deadline_s=60)
    assert gate.evaluate(snap(0, 0, 10_000)).status == "wait"
    assert gate.evaluate(snap(10, 100, 10_000)).status == "wait"  # 10/s: 990 s needed, 50 s left
    decision = gate.evaluate(snap(20, 200, 10_000))
    assert (decision.status, decision.kind) == ("fail", "projection")
    assert "exceeds" in decision.message


def test_a_stopped_group_fails_fast_on_a_persistent_stop_verdict():
    gate = barrier_gate(1_000, stuck_after=60)
    statuses = [gate.evaluate(snap(t, 500, 1_000 + t)).status for t in (0, 30, 60)]
    assert statuses == ["wait", "wait", "wait"]  # STOP seen once (at 60 s): not yet persistent
    decision = gate.evaluate(snap(90, 500, 1_100))
    assert (decision.status, decision.kind) == ("fail", "verdict") and "STOP" in decision.message
    assert decision.held.partition.verdict == "STOP" and decision.held.partition.finding.for_ms == 90_000


def test_a_group_that_stopped_consuming_the_topic_fails_fast_as_abandoned_not_stop():
    """klag issue 92: Stable with members, none assigned the topic, the commit there not moving.
    The default fail_on_verdicts (STOP, STALL, LOST) fail on it: ABANDONED refines STOP/STALL."""
    from airflow_provider_kgroups.lag.verdicts import Verdict, VerdictReason

    def left(at_s: float, committed: int, log_end: int) -> LagSnapshot:
        part = PartitionLag(
            "orders", 0, committed, 0, log_end, log_end - committed, frozenset({LagFlag.TOPIC_UNASSIGNED})
        )
        return LagSnapshot(
            T0 + int(at_s * 1000), {"g": GroupLag("g", GroupState.STABLE, "consumer", 3, (part,))}
        )

    gate = barrier_gate(1_000, stuck_after=60)
    assert [gate.evaluate(left(t, 500, 1_000 + t)).status for t in (0, 30, 60)] == ["wait"] * 3
    decision = gate.evaluate(left(90, 500, 1_100))
    assert (decision.status, decision.kind) == ("fail", "verdict")
    held = decision.held
    assert (held.group_id, held.partition.verdict, held.partition.finding.reason, held.checks) == (
        "g",
        Verdict.ABANDONED,
        VerdictReason.TOPIC_LEFT,
        2,
    )
    assert decision.to_event()["verdict"]["reason"] == "topic_left"  # the event carries the value too
    only_lost = barrier_gate(1_000, stuck_after=60, fail_on_verdicts=["LOST"])
    assert all(only_lost.evaluate(left(t, 500, 1_000 + t)).status == "wait" for t in (0, 30, 60, 90))
    explicit = barrier_gate(1_000, stuck_after=60, fail_on_verdicts=["ABANDONED"])
    assert [explicit.evaluate(left(t, 500, 1_000 + t)).status for t in (0, 30, 60, 90)][-1] == "fail"


def test_a_partition_whose_log_start_is_unread_is_unknown_to_the_gates_verdicts_never_ok():
    """LOST cannot be ruled out without the log start: a gate told to fail on UNKNOWN fails (it
    used to be judged OK); one with the default verdicts keeps waiting, never opens on it."""

    def unread_start(at_s: float, committed: int) -> LagSnapshot:
        part = PartitionLag("orders", 0, committed, None, 1_000, 1_000 - committed)
        return LagSnapshot(
            T0 + int(at_s * 1000), {"g": GroupLag("g", GroupState.STABLE, "consumer", 1, (part,))}
        )

    strict, default = barrier_gate(1_000, fail_on_verdicts=["UNKNOWN"]), barrier_gate(1_000)
    for t, committed in ((0, 500), (30, 600), (60, 700)):
        assert default.evaluate(unread_start(t, committed)).status == "wait"
        decision = strict.evaluate(unread_start(t, committed))
    assert (decision.status, decision.kind) == ("fail", "verdict")
    assert "is UNKNOWN on orders[0]" in decision.message and "LOST" in decision.message


@pytest.mark.parametrize(
    "state, members, committed, expected",
    [
        (GroupState.DEAD, 0, None, "is Dead"),
        (GroupState.EMPTY, 0, None, "does not exist"),
    ],
)
def test_missing_groups_fail_at_the_first_check(state, members, committed, expected):
    decision = barrier_gate(10).evaluate(snap(0, committed, 10, state=state, members=members))
    assert (decision.status, decision.kind) == ("fail", "missing") and expected in decision.message


def test_threshold_mode_and_unknown_lag_policy():
    spec = GateSpec.parse(group_ids=("g",), lag_mode="threshold", max_lag_per_partition=5)
    gate = LagGate(spec, GateState(started_ms=T0), T0 + 3_600_000)
    assert gate.evaluate(snap(0, 10, 20)).status == "wait"
    unknown = gate.evaluate(snap(1, None, 20))
    assert unknown.status == "wait"  # fail policy: unknown lag cannot pass
    assert "1 partition(s) with unknown lag (orders[0]; unknown_lag=fail" in unknown.message  # names both
    done = gate.evaluate(snap(2, 17, 20))
    assert done.status == "done" and done.result["endingOffsets"] == '{"orders": {"0": 17}}'
    ignoring = LagGate(
        GateSpec.parse(group_ids=("g",), lag_mode="threshold", max_total_lag=0, unknown_lag="ignore"),
        GateState(started_ms=T0),
        T0 + 3_600_000,
    )
    assert ignoring.evaluate(snap(0, None, 20, policy=UnknownLagPolicy.IGNORE)).status == "done"


@pytest.mark.parametrize(
    "kwargs, named",
    [
        ({"lag_mode": "threshold"}, "needs at least one of max_lag_per_partition"),
        ({"max_total_lag": 3}, "apply to lag_mode='threshold'"),
        ({"lag_mode": "barrier", "unknown_lag": "zero"}, "unknown lag policy 'zero'"),
        ({"fail_on_verdicts": ("STOPPED",)}, "fail_on_verdicts has 'STOPPED'"),
    ],
)
def test_spec_refuses_bad_combinations(kwargs, named):
    with pytest.raises(ValueError, match=named):
        GateSpec.parse(group_ids=("g",), **kwargs)


def test_spark_offsets_start_at_earliest_and_never_after_the_end():
    starting, ending = spark_offsets({TP0: 5, TopicPartition("orders", 1): 7}, {"orders": {"0": 9}})
    assert json.loads(starting) == {"orders": {"0": 5, "1": -2}} and json.loads(ending) == {
        "orders": {"0": 5, "1": 7}
    }


def test_trigger_serialize_round_trips_as_plain_json():
    gate = barrier_gate(100, previous_barrier='{"orders": {"0": 1}}')
    gate.evaluate(snap(0, 50, 120))
    trigger = ConsumerLagTrigger(
        kafka_groups_conn_id="kg",
        spec=gate.spec.to_dict(),
        state=gate.state.to_dict(),
        deadline_ms=T0 + 60_000,
        poll_interval=5,
    )
    path, kwargs = trigger.serialize()
    module, _, name = path.rpartition(".")
    again = getattr(importlib.import_module(module), name)(**json.loads(json.dumps(kwargs)))
    assert again.serialize() == (path, kwargs)
    restored = LagGate(
        GateSpec.from_dict(kwargs["spec"]), GateState.from_dict(kwargs["state"]), kwargs["deadline_ms"]
    )
    assert restored.target == gate.target and restored.state.checks == 1


def test_barrier_timestamp_takes_what_data_interval_end_renders_to():
    import pendulum

    end = pendulum.datetime(2024, 5, 1, tz="UTC")
    for value in (str(end), end, end.isoformat(), 1714521600000):
        assert (
            GateSpec.parse(group_ids=("g",), barrier_timestamp=value).mode.barrier_timestamp_ms
            == 1714521600000
        )


def test_a_trigger_serialized_by_the_code_before_typed_state_still_loads_and_decides():
    """Trigger kwargs written before the gate's state was typed (a deferred task across an upgrade,
    a triggerer restart): the same JSON loads into values and is written back unchanged."""
    old_state = {
        "started_ms": T0,
        "checks": 1,
        "streaks": {"projection": 0, "verdict:g": 0},
        "told": [],
        "target": {
            "format": "kgroups-barrier-target",
            "version": 1,
            "kind": "log_end",
            "fixed_at_ms": T0,
            "timestamp_ms": None,
            "read_committed": False,
            "groups": {"g": {"orders": {"0": 100}}},
        },
        "checkpoints": [{"checked_at_ms": T0, "committed": {"g": {"orders": {"0": 50}}}}],
    }
    old_spec = GateSpec.parse(group_ids=("g",)).to_dict()
    kwargs = {
        "kafka_groups_conn_id": "kg",
        "spec": old_spec,
        "state": old_state,
        "deadline_ms": T0 + 60_000,
        "poll_interval": 5.0,
        "deferred_at_ms": T0,
    }
    trigger = ConsumerLagTrigger(**json.loads(json.dumps(kwargs)))
    gate = LagGate(trigger.spec, GateState.from_dict(trigger.state), trigger.deadline_ms)
    assert gate.target == BarrierTarget({"g": {TP0: 100}}, TargetKind.LOG_END, T0)
    assert gate.state.checkpoints[0].committed == {"g": {TP0: 50}}
    assert gate.state.to_dict() == old_state
    assert gate.evaluate(snap(10, 100, 130)).opened.range.ending == {TP0: 100}


def test_the_xcom_keeps_its_keys_and_an_event_trigger_serialized_before_still_loads():
    """The XCom (now GateOpened.to_xcom) has the keys it had; ConsumerLagEventTrigger's kwargs as
    the code before the one gate engine wrote them re-create the same trigger."""
    from airflow_provider_kgroups.triggers.events import ConsumerLagEventTrigger

    done = barrier_gate(100).evaluate(snap(0, 100, 130))
    assert set(done.result) == {
        "lag_mode",
        "group_ids",
        "checks",
        "waited_s",
        "reached",
        "offsets",
        "startingOffsets",
        "endingOffsets",
        "target",
        "ignored",
    }
    assert done.result["target"] == done.opened.extra["target"] and done.result["checks"] == 1
    old = {
        "kafka_groups_conn_id": "kg",
        "group_ids": ["orders-landing"],
        "topics": ["orders"],
        "poll_interval": 60.0,
        "max_total_lag": None,
        "read_committed": False,
    }
    trigger = ConsumerLagEventTrigger(**old)
    assert trigger.serialize() == ("airflow_provider_kgroups.triggers.events.ConsumerLagEventTrigger", old)


def test_a_typed_spec_travels_through_the_triggers_kwargs_and_back_unchanged():
    """Enums, the verdict set and the offset map are values in the process and plain JSON only in
    the trigger's kwargs; what comes back is the same spec."""
    from airflow_provider_kgroups.lag.gate_spec import LagMode, ThresholdParams
    from airflow_provider_kgroups.lag.verdicts import Verdict

    spec = GateSpec.parse(
        group_ids=("g",),
        topics=("orders",),
        lag_mode=LagMode.THRESHOLD,
        max_total_lag=7,
        unknown_lag=UnknownLagPolicy.FROM_EARLIEST,
        fail_on_verdicts=frozenset({Verdict.STOP, Verdict.AT_RISK}),
        previous_barrier={"orders": {"0": -2, "1": 5}},
    )
    assert isinstance(spec.mode, ThresholdParams) and spec.previous_barrier[TopicPartition("orders", 1)] == 5
    gate = LagGate(spec, GateState(started_ms=T0), T0 + 60_000)
    path, kwargs = ConsumerLagTrigger.for_gate(gate, "kg", 5).serialize()
    plain = json.loads(json.dumps(kwargs))
    assert plain["spec"]["lag_mode"] == "threshold" and plain["spec"]["unknown_lag"] == "from_earliest"
    assert plain["spec"]["fail_on_verdicts"] == ["AT_RISK", "STOP"]
    restored = getattr(importlib.import_module(path.rpartition(".")[0]), path.rpartition(".")[2])(**plain)
    assert restored.spec == spec and restored.spec.unknown_lag is UnknownLagPolicy.FROM_EARLIEST
    assert restored.serialize() == (path, kwargs)


def test_an_argument_is_validated_once_when_the_spec_is_read_never_again_by_the_gate():
    """A bad value is refused when the spec is read, naming the argument and the fix; a spec read
    once keeps its values: binding its groups re-reads nothing (the same objects)."""
    with pytest.raises(ValueError, match="barrier_timestamp='2024-05-01T00:00:00' has no time zone: add one"):
        GateSpec.parse(group_ids=("g",), barrier_timestamp="2024-05-01T00:00")
    spec = GateSpec.parse(group_patterns=("orders-*",), previous_barrier='{"orders": {"0": 1}}')
    bound = spec.bind(["orders-a"])
    assert bound.previous_barrier is spec.previous_barrier and bound.fail_on_verdicts is spec.fail_on_verdicts
    assert bound.mode is spec.mode


def test_a_spec_serialized_before_the_spec_was_typed_still_loads_into_the_same_values():
    """The trigger kwargs' spec as the code before the typed spec wrote it (strings, a list of
    verdicts in the user's order, the nesting of previous_barrier, every mode's keys)."""
    from airflow_provider_kgroups.lag.gate_spec import LagMode, ThresholdParams
    from airflow_provider_kgroups.lag.verdicts import Verdict

    written_before = {
        "group_ids": ["g"],
        "lag_mode": "threshold",
        "topics": ["orders"],
        "barrier_timestamp_ms": None,
        "unknown_lag": "from_latest",
        "read_committed": False,
        "max_lag_per_partition": None,
        "max_total_lag": 10,
        "max_lag_seconds": None,
        "fail_on_verdicts": ["STOP", "STALL", "LOST"],
        "verdict_checks": 2,
        "stuck_after_s": 600.0,
        "margin_floor_s": 3600.0,
        "previous_barrier": {"orders": {"0": 40}},
        "group_patterns": [],
        "exclude_patterns": [],
    }
    spec = GateSpec.from_dict(written_before)
    assert spec.lag_mode is LagMode.THRESHOLD and spec.mode == ThresholdParams(max_total_lag=10)
    assert spec.unknown_lag is UnknownLagPolicy.FROM_LATEST
    assert spec.fail_on_verdicts == {Verdict.STOP, Verdict.STALL, Verdict.LOST}
    assert spec.previous_barrier == {TP0: 40}
    assert GateSpec.from_dict(spec.to_dict()) == spec and set(spec.to_dict()) == set(written_before)
