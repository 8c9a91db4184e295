"""klag issue 92, end to end through the one gate engine: a group Stable with members, none of
them assigned the gated topic, whose commit there stays behind, fails the gate fast as ABANDONED,
in the hook's check (the sensor's poke) and in the deferrable trigger, with no code of theirs."""

from __future__ import annotations

import asyncio
import time

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from airflow_provider_kgroups.lag.gate import FailureKind, GateSpec, GateStatus, LagGate, check_gate
from airflow_provider_kgroups.lag.model import LagFlag
from airflow_provider_kgroups.lag.verdicts import Verdict, VerdictReason
from airflow_provider_kgroups.triggers.lag import ConsumerLagTrigger
from tests.support.fakekafka import FakeCluster, Member

#: a short stuck time so the rule can match within a test (the verdict needs the commit to stay put that long)
SPEC = {"group_ids": ("billing",), "topics": ("orders",), "stuck_after": 0.3, "verdict_checks": 2}


def left_the_topic(cluster) -> None:
    """billing committed on orders long ago; its members now read payments only."""
    cluster.add_topic("orders", 1, end_offsets=50)
    cluster.add_topic("payments", 1, end_offsets=5)
    cluster.add_group(
        "billing",
        offsets={("orders", 0): 10, ("payments", 0): 5},
        members=[Member("m-1", assignment={"payments": [0]}), Member("m-2", assignment={})],
    )


async def test_the_hooks_check_fails_fast_as_abandoned_and_the_snapshot_flags_the_topic():
    async with asyncio.timeout(60), FakeCluster(brokers=1) as cluster:
        left_the_topic(cluster)
        config = ClientConfig.create(cluster.bootstrap, call_timeout_s=10.0, retry_backoff_s=0.01)
        gate = LagGate.start(GateSpec.parse(**SPEC), 3600)
        async with AsyncGroupsClient(config) as client:
            deadline = time.monotonic() + 30
            decision = await check_gate(client, gate)
            while decision.status is GateStatus.WAIT and time.monotonic() < deadline:
                cluster.append("orders", 0, 1)  # producers go on: without the rule this is STOP
                await asyncio.sleep(0.1)
                decision = await check_gate(client, gate)
    assert all(LagFlag.TOPIC_UNASSIGNED in p.flags for p in gate.window[-1].groups["billing"].partitions)
    assert (decision.status, decision.kind) == (GateStatus.FAIL, FailureKind.VERDICT)
    assert decision.held.partition.verdict is Verdict.ABANDONED
    assert decision.held.partition.finding.reason is VerdictReason.TOPIC_LEFT


async def test_the_deferrable_trigger_fails_fast_as_abandoned(kgroups_conn):
    async with asyncio.timeout(60), FakeCluster(brokers=1) as cluster:
        left_the_topic(cluster)
        conn_id = kgroups_conn("kg_abandoned", host=cluster.bootstrap)
        gate = LagGate.start(GateSpec.parse(**SPEC), 3600)
        trigger = ConsumerLagTrigger.for_gate(gate, conn_id, poll_interval=0.1)
        async for event in trigger.run():
            payload = event.payload
            break
    assert (payload["status"], payload["kind"]) == ("fail", "verdict")
    assert (payload["verdict"]["verdict"], payload["verdict"]["reason"]) == ("ABANDONED", "topic_left")
