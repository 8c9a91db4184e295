"""The gate's shape (issue 23, item 3): one strategy per lag mode behind one interface; statuses,
failure kinds and modes are enums that travel as their values (trigger kwargs and events stay
plain JSON, and what an older version wrote still reads); a spec validates without group ids
and binds its patterns at the first check."""

from __future__ import annotations

import asyncio
import json

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from airflow_provider_kgroups.lag.gate import (
    MODES,
    Decision,
    FailureKind,
    GateSpec,
    GateState,
    GateStatus,
    LagGate,
    LagMode,
    check_gate,
)
from airflow_provider_kgroups.lag.gate_modes import GateMode
from tests.support.builders import HOUR, T0, group, partition, snapshot
from tests.support.fakekafka import FakeCluster


def test_every_lag_mode_has_one_strategy_behind_the_interface():
    assert set(MODES) == set(LagMode)
    assert all(isinstance(mode, GateMode) and mode.lag_mode is lag_mode for lag_mode, mode in MODES.items())
    assert (
        LagGate(GateSpec.parse(group_ids=("g",), lag_mode="threshold", max_total_lag=0), GateState(0), 0).mode
        is MODES[LagMode.THRESHOLD]
    )


def test_a_decision_travels_as_plain_json_and_reads_back_as_enums():
    decision = Decision(GateStatus.FAIL, "group 'g' is Dead", kind=FailureKind.MISSING)
    event = json.loads(json.dumps(decision.to_event()))
    assert event == {"status": "fail", "message": "group 'g' is Dead", "result": None, "kind": "missing"}
    assert all(type(v) is str for v in (event["status"], event["kind"]))  # values, not enum objects
    again = Decision.from_event(event)
    assert again.status is GateStatus.FAIL and again.kind is FailureKind.MISSING and again == decision


def test_an_event_written_before_the_enums_still_reads():
    done = Decision.from_event({"status": "done", "message": "m", "result": {"checks": 2}, "kind": None})
    assert done.status is GateStatus.DONE and done.finished and done.result == {"checks": 2}
    assert (
        Decision.from_event({"status": "fail", "kind": "not_retriable", "message": "x"}).kind
        is FailureKind.NOT_RETRIABLE
    )
    assert Decision.from_event({"status": "timeout", "message": "check 9: ..."}).status is GateStatus.TIMEOUT
    with pytest.raises(ValueError, match="not a lag gate event .status 'exploded'"):
        Decision.from_event({"status": "exploded", "message": "?"})


def test_a_spec_travels_as_plain_json_and_one_written_before_patterns_still_loads():
    spec = GateSpec.parse(
        group_patterns=("orders-*",),
        exclude_patterns=("orders-tmp*",),
        lag_mode=LagMode.THRESHOLD,
        max_lag_seconds=60,
    )
    data = json.loads(json.dumps(spec.to_dict()))
    assert (
        data["lag_mode"] == "threshold" and data["group_ids"] == [] and data["group_patterns"] == ["orders-*"]
    )
    assert GateSpec.from_dict(data) == spec
    older = {
        k: v
        for k, v in GateSpec.parse(group_ids=("g",)).to_dict().items()
        if k not in ("group_patterns", "exclude_patterns")
    }
    assert GateSpec.from_dict(older).group_ids == ("g",) and GateSpec.from_dict(older).bound


def test_a_spec_validates_without_group_ids_and_binds_them_later():
    spec = GateSpec.parse(group_patterns=("orders-*",))
    assert not spec.bound and spec.group_ids == ()
    bound = spec.bind(["orders-a", "orders-b"])
    assert bound.bound and bound.group_ids == ("orders-a", "orders-b") and bound.lag_mode is LagMode.BARRIER
    with pytest.raises(ValueError, match="give group_ids and/or group_patterns"):
        GateSpec.parse()
    with pytest.raises(ValueError, match="not a valid regular expression"):
        GateSpec.parse(group_patterns=("re:(orders",))
    unbound = LagGate(spec, GateState(started_ms=T0), T0 + HOUR)
    with pytest.raises(ValueError, match="not bound yet"):
        unbound.evaluate(snapshot(T0, group("orders-a", partition("t", 0, 1, 1))))


async def fake_check(spec: GateSpec, setup, checks: int = 1) -> tuple[LagGate, list[Decision]]:
    async with asyncio.timeout(30):
        async with FakeCluster(brokers=1) as cluster:
            setup(cluster)
            config = ClientConfig.create(cluster.bootstrap, call_timeout_s=10.0, retry_backoff_s=0.01)
            gate = LagGate.start(spec, 3600)
            async with AsyncGroupsClient(config) as client:
                decisions = [await check_gate(client, gate) for _ in range(checks)]
            return gate, decisions


async def test_the_first_check_binds_the_patterns_and_fixes_the_barrier_once():
    def setup(cluster):
        cluster.add_topic("orders", 1, end_offsets=10)
        for name, committed in (("orders-a", 10), ("orders-b", 4), ("orders-tmp", 0), ("billing", 0)):
            cluster.add_group(name, offsets={("orders", 0): committed})

    spec = GateSpec.parse(group_patterns=("orders-*",), exclude_patterns=("orders-tmp",), topics=("orders",))
    gate, (first, second) = await fake_check(spec, setup, checks=2)
    assert gate.spec.group_ids == ("orders-a", "orders-b") and gate.spec.bound
    assert (
        first.status is GateStatus.WAIT
        and first.notes[0] == "Groups selected by ['orders-*']: orders-a, orders-b"
    )
    assert first.fixed is not None and first.fixed["groups"]["orders-b"] == {"orders": {"0": 10}}
    assert "Barrier fixed (log_end) for 2 group(s)" in first.notes[1]
    assert second.notes == () and second.fixed is None  # bound and fixed once


async def test_patterns_that_match_no_group_fail_at_the_first_check():
    def setup(cluster):
        cluster.add_topic("orders", 1, end_offsets=10)
        cluster.add_group("billing", offsets={("orders", 0): 0})

    _, (decision,) = await fake_check(GateSpec.parse(group_patterns=("orders-*",)), setup)
    assert decision.status is GateStatus.FAIL and decision.kind is FailureKind.MISSING
    assert "no consumer group matches ['orders-*']" in decision.message


async def test_a_note_survives_a_check_that_failed_after_deciding_it():
    """The patterns were bound, then the snapshot raised (the hook makes that a decision): the
    selection is still logged, with the next decision."""
    from airflow_provider_kgroups.client.errors import KafkaGroupsError
    from tests.support.fakekafka import Err

    def setup(cluster):
        cluster.add_topic("orders", 1, end_offsets=10)
        cluster.add_group("orders-a", offsets={("orders", 0): 10})
        cluster.inject_error("Metadata", Err.UNKNOWN_TOPIC_OR_PARTITION, key="orders")

    async with asyncio.timeout(30), FakeCluster(brokers=1) as cluster:
        setup(cluster)
        config = ClientConfig.create(cluster.bootstrap, call_timeout_s=2.0, retry_backoff_s=0.01)
        gate = LagGate.start(GateSpec.parse(group_patterns=("orders-*",), topics=("orders",)), 3600)
        async with AsyncGroupsClient(config) as client:
            with pytest.raises(KafkaGroupsError):
                await check_gate(client, gate)
            assert gate.spec.bound and gate.notes == ["Groups selected by ['orders-*']: orders-a"]
            cluster.clear_faults()
            decision = await check_gate(client, gate)
    assert decision.notes[0] == "Groups selected by ['orders-*']: orders-a"
    assert decision.notes[1].startswith("Barrier fixed") and decision.status is GateStatus.DONE
