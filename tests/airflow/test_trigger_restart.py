"""The deferrable sensor's check counter survives a triggerer restart: checks run on a fixed
schedule from the hand-over, so a trigger re-created from its (fixed) kwargs counts the slots
that went by under the previous triggerer, then checks at the next slot."""

from __future__ import annotations

import asyncio
import time

from airflow_provider_kgroups.lag.gate import GateSpec
from airflow_provider_kgroups.triggers.lag import ConsumerLagTrigger
from tests.support.fakekafka import FakeCluster


async def first_event(trigger: ConsumerLagTrigger) -> dict:
    async with asyncio.timeout(30):
        async for event in trigger.run():
            return event.payload


async def test_a_restarted_trigger_goes_on_counting_from_the_hand_over(kgroups_conn):
    with FakeCluster.running_in_thread(brokers=1) as cluster:
        cluster.add_topic("orders", 1, end_offsets=10)
        cluster.add_group("billing", offsets={("orders", 0): 10})  # caught up: done at the first check
        conn_id = kgroups_conn("kg_restart", host=cluster.bootstrap)
        spec = GateSpec.parse(
            group_ids=("billing",), topics=("orders",), lag_mode="threshold", max_total_lag=0
        ).to_dict()
        now_ms = int(time.time() * 1000)
        handed_over = {"started_ms": now_ms - 10_000, "checks": 3}  # the worker's 3 checks before deferring

        fresh = ConsumerLagTrigger(
            kafka_groups_conn_id=conn_id,
            spec=spec,
            state=handed_over,
            deadline_ms=now_ms + 3_600_000,
            poll_interval=0.2,
            deferred_at_ms=now_ms,
        )
        assert (await first_event(fresh))["result"][
            "checks"
        ] == 4  # the first trigger check: one slot after deferral

        # Re-created from the same kwargs 2.2 s (2 slots of 1 s) after the hand-over, as after a restart
        # (the slot count holds while the run starts within the 0.8 s left of the third slot):
        deferred_at = int(time.time() * 1000) - 2_200
        restarted = ConsumerLagTrigger(
            kafka_groups_conn_id=conn_id,
            spec=spec,
            state=handed_over,
            deadline_ms=now_ms + 3_600_000,
            poll_interval=1.0,
            deferred_at_ms=deferred_at,
        )
        assert restarted.serialize()[1]["deferred_at_ms"] == deferred_at  # survives in the kwargs
        assert (await first_event(restarted))["result"]["checks"] == 3 + 2 + 1
