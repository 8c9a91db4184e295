"""A lag gate on a share group (KIP-932), on the fake cluster's model of Kafka's share coordinator.

Kafka answers OffsetFetch for a share group empty: read as commits, a share group had no
partition, and with ``topics`` and ``unknown_lag`` ``ignore`` or ``from_latest`` a threshold gate
opened on a lag of 0 while records were still to deliver. The gate now reads the share-partition
start offsets and the broker's exact lag (DescribeShareGroupOffsets v1): a threshold opens on the
real lag, a barrier when the start offsets reach it; a bound (v0, Kafka 4.1) never opens a
threshold; a broker without the API fails the gate at once. The sensor, poking and deferred (its
trigger), opens on a share group that reached its barrier, with the start offsets as reached."""

from __future__ import annotations

import time

import pytest

from airflow_provider_kgroups.client import ClientConfig, GroupsClient, TopicPartition
from airflow_provider_kgroups.lag.gate import GateSpec, GateState, LagGate, check_gate
from tests.support.fakekafka import FakeCluster, Member

JOBS0, JOBS1 = TopicPartition("jobs", 0), TopicPartition("jobs", 1)


@pytest.fixture
def cluster():
    with FakeCluster.running_in_thread(brokers=1) as c:
        c.add_topic("jobs", 2, end_offsets=100)
        # 55 records still to deliver: 100 - 40 - 15 already acknowledged above 40, and 100 - 90
        c.add_group("workers", group_type="share", members=[Member("s-1", {"jobs": [0, 1]})], state="Stable")
        c.set_share_offsets(
            "workers", {("jobs", 0): 40, ("jobs", 1): 90}, delivery_complete={("jobs", 0): 15}
        )
        c.add_group("drained", group_type="share")
        c.set_share_offsets("drained", {("jobs", 0): 100, ("jobs", 1): 100})
        yield c


def gate_of(**spec) -> LagGate:
    started = int(time.time() * 1000)
    return LagGate(GateSpec.parse(**spec), GateState(started_ms=started), started + 3_600_000)


def checks(cluster, gate: LagGate, n: int = 1):
    with GroupsClient(ClientConfig.create(cluster.bootstrap)) as client:
        return [client.run(check_gate(client.aclient, gate)) for _ in range(n)]


@pytest.mark.parametrize("unknown_lag", ["fail", "ignore", "from_latest"])
def test_a_threshold_gate_on_a_lagging_share_group_stays_closed_on_its_real_lag(cluster, unknown_lag):
    gate = gate_of(
        group_ids=("workers",),
        topics=("jobs",),
        lag_mode="threshold",
        max_total_lag=10,
        unknown_lag=unknown_lag,
        fail_on_verdicts=(),
    )
    [decision] = checks(cluster, gate)
    assert decision.status == "wait", decision
    assert "total lag 55 over 10" in decision.message
    opened = gate_of(group_ids=("workers",), topics=("jobs",), lag_mode="threshold", max_total_lag=55)
    [decision] = checks(cluster, opened)
    assert decision.status == "done", decision
    assert decision.opened.reached == {"workers": {JOBS0: 40, JOBS1: 90}}
    assert decision.result["lag"]["workers"]["total_lag"] == 55


def test_a_bound_never_opens_a_threshold_gate_on_kafka_41(cluster):
    """v0 gives only log end - start offset (60 and 10): below the threshold, still not a value."""
    cluster.set_api_versions({"DescribeShareGroupOffsets": 0})
    gate = gate_of(group_ids=("workers",), lag_mode="threshold", max_total_lag=1000, fail_on_verdicts=())
    decisions = checks(cluster, gate, 2)
    assert [d.status for d in decisions] == ["wait", "wait"], decisions
    assert "2 share-partition(s) whose lag is only an upper bound (jobs[0], jobs[1])" in decisions[-1].message
    assert "a bound is not a value" in decisions[-1].message
    # at the log end nothing is above the start offset: exactly 0, on any broker
    [decision] = checks(cluster, gate_of(group_ids=("drained",), lag_mode="threshold", max_total_lag=0))
    assert decision.status == "done", decision


def test_a_barrier_is_passed_when_the_start_offsets_reach_it(cluster):
    gate = gate_of(group_ids=("workers",), fail_on_verdicts=())  # barrier: its share-partitions
    [decision] = checks(cluster, gate)
    assert decision.status == "wait", decision
    assert decision.fixed["groups"] == {"workers": {"jobs": {"0": 100, "1": 100}}}
    assert "70 offsets remaining" in decision.message  # (100 - 40) + (100 - 90): from the start offsets
    cluster.set_share_offsets("workers", {("jobs", 0): 99, ("jobs", 1): 100})
    [decision] = checks(cluster, gate)
    assert decision.status == "wait", decision  # offset 99 not done yet
    cluster.set_share_offsets("workers", {("jobs", 0): 100})
    [decision] = checks(cluster, gate)
    assert decision.status == "done", decision
    assert decision.opened.reached == {"workers": {JOBS0: 100, JOBS1: 100}}


def test_a_broker_without_the_share_offset_api_fails_the_gate_at_once(cluster):
    cluster.set_api_versions({"DescribeShareGroupOffsets": None})
    [decision] = checks(
        cluster, gate_of(group_ids=("workers",), topics=("jobs",), lag_mode="threshold", max_total_lag=0)
    )
    assert (decision.status, decision.kind) == ("fail", "missing"), decision
    assert "does not support DescribeShareGroupOffsets" in decision.message


def test_an_empty_share_group_with_no_start_offset_is_said_so(cluster):
    cluster.add_group("fresh", group_type="share")
    [decision] = checks(cluster, gate_of(group_ids=("fresh",), topics=("jobs",)))
    assert (decision.status, decision.kind) == ("fail", "missing"), decision
    assert "share group 'fresh' has no member and no share-partition start offset" in decision.message


@pytest.mark.parametrize("dag_id", ["kg_sensor_poke", "kg_sensor_deferrable"])
def test_the_sensor_opens_on_a_share_group_past_its_barrier(dag_id, cluster, run_dag, kgroups_conn):
    kgroups_conn("kgroups_test", host=cluster.bootstrap)
    result = run_dag(dag_id, {"group": "drained", "topic": "jobs"})
    assert result.state == "success", result
    gate = result.xcoms["gate"]
    assert gate["group_ids"] == ["drained"], gate
    assert gate["reached"] == {"drained": {"jobs": {"0": 100, "1": 100}}}, gate
    assert gate["endingOffsets"] == '{"jobs": {"0": 100, "1": 100}}', gate
