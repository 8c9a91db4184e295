"""ListOffsets against the fake cluster: one request per partition leader carrying all its
partitions, leaders from Metadata, NOT_LEADER_OR_FOLLOWER -> metadata refresh and retry,
per-partition failures."""

from __future__ import annotations

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, TopicPartition
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakeutil import HANDSHAKE_APIS, config, counts

ORDERS_END = [100, 200, 300, 400, 500, 600]
ORDERS_START = [0, 10, 20, 30, 40, 50]


def seed(c: FakeCluster) -> list[TopicPartition]:
    """orders: 6 partitions led by 0,1,2,0,1,2; payments: 3 partitions led by 0,1,2."""
    c.add_topic("orders", 6, end_offsets=ORDERS_END, start_offsets=ORDERS_START, leaders=[0, 1, 2, 0, 1, 2])
    c.add_topic("payments", 3, end_offsets=7, last_stable_offsets=[7, 5, 7], leaders=[0, 1, 2])
    return [TopicPartition("orders", p) for p in range(6)] + [TopicPartition("payments", p) for p in range(3)]


def offsets(result) -> dict[TopicPartition, int]:
    return {tp: v.offset for tp, v in result.values.items()}


def asked(entry) -> set[TopicPartition]:
    return {TopicPartition(t.name, p.partition_index) for t in entry.request.topics for p in t.partitions}


async def test_latest_and_earliest_one_request_per_leader():
    async with FakeCluster(brokers=3) as c:
        tps = seed(c)
        async with AsyncGroupsClient(config(c)) as client:
            ends = await client.log_end_offsets(tps)
            assert ends.failures == {}
            assert offsets(ends) == {TopicPartition("orders", p): ORDERS_END[p] for p in range(6)} | {
                TopicPartition("payments", p): 7 for p in range(3)
            }
            assert counts(c) == {"Metadata": 2, "ListOffsets": 3}
            for node in range(3):
                [request] = c.requests("ListOffsets", node)
                assert asked(request) == {tp for tp in tps if c.leader_of(tp.topic, tp.partition) == node}
                assert request.request.isolation_level == 0

            c.reset_counts()
            starts = await client.log_start_offsets(tps)
            assert offsets(starts) == {TopicPartition("orders", p): ORDERS_START[p] for p in range(6)} | {
                TopicPartition("payments", p): 0 for p in range(3)
            }
            assert counts(c) == {"ListOffsets": 3}  # leaders cached

            committed_view = await client.log_end_offsets(
                [TopicPartition("payments", p) for p in range(3)], read_committed=True
            )
            assert offsets(committed_view) == {
                TopicPartition("payments", 0): 7,
                TopicPartition("payments", 1): 5,
                TopicPartition("payments", 2): 7,
            }


async def test_offsets_for_timestamp_and_mixed_specs_in_one_call():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("events", 3, leaders=[0, 1, 2])
        for p in range(3):
            c.append("events", p, 10, timestamp_ms=lambda offset, p=p: 1_000_000 + 1000 * offset + p)
        tps = [TopicPartition("events", p) for p in range(3)]
        async with AsyncGroupsClient(config(c)) as client:
            at = await client.offsets_for_timestamp(tps, 1_000_000 + 4500)
            assert {tp: (v.offset, v.timestamp) for tp, v in at.values.items()} == {
                TopicPartition("events", p): (5, 1_000_000 + 5000 + p) for p in range(3)
            }
            # later than every record: Kafka answers -1 (callers fall back to the log end)
            future = await client.offsets_for_timestamp(tps, 2_000_000)
            assert {tp: v.offset for tp, v in future.values.items()} == {tp: -1 for tp in tps}

            c.reset_counts()
            mixed = await client.list_offsets({tps[0]: -1, tps[1]: -2, tps[2]: -3})
            assert {tp: v.offset for tp, v in mixed.values.items()} == {tps[0]: 10, tps[1]: 0, tps[2]: 9}
            assert mixed.values[tps[2]].timestamp == 1_000_000 + 9000 + 2
            assert counts(c) == {"ListOffsets": 3}
            specs = {
                TopicPartition(t.name, p.partition_index): p.timestamp
                for e in c.requests("ListOffsets")
                for t in e.request.topics
                for p in t.partitions
            }
            assert specs == {tps[0]: -1, tps[1]: -2, tps[2]: -3}


async def test_not_leader_after_the_leader_moves_refreshes_metadata_and_retries():
    async with FakeCluster(brokers=3) as c:
        tps = seed(c)
        async with AsyncGroupsClient(config(c)) as client:
            await client.log_end_offsets(tps)
            c.move_leader("orders", 0, 2)  # was 0
            c.set_offsets("orders", 0, end=150)
            c.reset_counts()
            ends = await client.log_end_offsets(tps)
        assert ends.failures == {}
        assert offsets(ends)[TopicPartition("orders", 0)] == 150
        assert ends.values[TopicPartition("orders", 0)].leader_epoch == 1
        # one per cached leader, one Metadata refresh, one more to the new leader
        assert counts(c) == {"ListOffsets": 4, "Metadata": 1}
        [refresh] = c.requests("Metadata")
        assert [t.name for t in refresh.request.topics] == ["orders"]
        assert asked(c.requests("ListOffsets", 2)[-1]) == {TopicPartition("orders", 0)}


async def test_leader_not_available_is_retried_after_a_refresh():
    async with FakeCluster(brokers=3) as c:
        tps = seed(c)
        injection = c.inject_error("ListOffsets", Err.LEADER_NOT_AVAILABLE, key=("payments", 1), times=2)
        async with AsyncGroupsClient(config(c)) as client:
            ends = await client.log_end_offsets(tps)
        assert ends.failures == {} and len(ends.values) == 9
        assert injection.hits == 2
        assert counts(c) == {"Metadata": 4, "ListOffsets": 5}


async def test_unknown_topic_and_partition_fail_alone_without_a_request():
    async with FakeCluster(brokers=3) as c:
        tps = seed(c)
        missing = [TopicPartition("no-such-topic", 0), TopicPartition("orders", 6)]
        async with AsyncGroupsClient(config(c)) as client:
            ends = await client.log_end_offsets(tps + missing)
        assert {tp: f.code for tp, f in ends.failures.items()} == {tp: 3 for tp in missing}
        assert set(ends.values) == set(tps)
        assert counts(c) == {"Metadata": 2, "ListOffsets": 3}
        assert not any(asked(e) & set(missing) for e in c.requests("ListOffsets"))


async def test_other_partition_errors_fail_that_partition_only():
    async with FakeCluster(brokers=3) as c:
        tps = seed(c)
        c.inject_error("ListOffsets", Err.TOPIC_AUTHORIZATION_FAILED, key=("orders", 4))
        async with AsyncGroupsClient(config(c)) as client:
            ends = await client.log_end_offsets(tps)
        assert {tp: f.code for tp, f in ends.failures.items()} == {TopicPartition("orders", 4): 29}
        assert set(ends.values) == set(tps) - {TopicPartition("orders", 4)}
        assert counts(c) == {"Metadata": 2, "ListOffsets": 3}


async def test_leader_down_then_a_new_leader():
    async with FakeCluster(brokers=3) as c:
        tps = seed(c)
        async with AsyncGroupsClient(config(c)) as client:
            await client.log_end_offsets(tps)
            await c.stop_broker(1)
            for topic, p in c.partitions_led_by(1):
                c.move_leader(topic, p, 0)
            c.reset_counts()
            ends = await client.log_end_offsets(tps)
        assert ends.failures == {} and len(ends.values) == 9
        assert c.count("ListOffsets", 1) == 0
        assert c.count("ListOffsets", 0) == 2 and c.count("ListOffsets", 2) == 1


async def test_topic_without_leaders_yet_is_looked_up_again():
    """Metadata answers LEADER_NOT_AVAILABLE for a topic being created: not an answer yet."""
    async with FakeCluster(brokers=3) as c:
        tps = seed(c)
        injection = c.inject_error("Metadata", Err.LEADER_NOT_AVAILABLE, key="orders", times=2)
        async with AsyncGroupsClient(config(c)) as client:
            ends = await client.log_end_offsets(tps)
        assert ends.failures == {} and len(ends.values) == 9
        assert injection.hits == 2
        assert counts(c) == {"Metadata": 4, "ListOffsets": 3 + 3}


async def test_topic_that_never_gets_leaders_times_out_naming_it():
    async with FakeCluster(brokers=3) as c:
        tps = seed(c)
        c.inject_error("Metadata", Err.LEADER_NOT_AVAILABLE, key="payments")
        async with AsyncGroupsClient(config(c, retry_backoff_max_s=0.05)) as client:
            ends = await client.log_end_offsets(tps, timeout_s=0.5)
        payments = {tp for tp in tps if tp.topic == "payments"}
        assert set(ends.failures) == payments
        assert all(f.code == -100 and "LEADER_NOT_AVAILABLE" in f.message for f in ends.failures.values())
        assert set(ends.values) == set(tps) - payments


async def test_max_timestamp_is_never_sent_below_v7():
    async with FakeCluster(brokers=2, broker_api_versions={1: {"ListOffsets": 6}}) as c:
        c.add_topic("events", 4, leaders=[0, 1, 0, 1])
        for p in range(4):
            c.append("events", p, 5, timestamp_ms=lambda offset: 1000 + offset)
        tps = [TopicPartition("events", p) for p in range(4)]
        only_max = [TopicPartition("events", 3)]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.list_offsets({tps[0]: -3, tps[1]: -3, tps[2]: -1, tps[3]: -1})
            sent_v6 = {
                TopicPartition(t.name, p.partition_index): p.timestamp
                for e in c.requests("ListOffsets", 1)
                for t in e.request.topics
                for p in t.partitions
            }
            assert sent_v6 == {tps[3]: -1}
            c.reset_counts()
            alone = await client.list_offsets({tp: -3 for tp in only_max})
        # broker 0 (new) answers max timestamp; broker 1 (v6) cannot: those partitions fail alone
        assert {tp: v.offset for tp, v in result.values.items()} == {tps[0]: 4, tps[2]: 5, tps[3]: 5}
        assert {tp: f.code for tp, f in result.failures.items()} == {tps[1]: -102}
        assert "v7" in result.failures[tps[1]].message
        assert {tp: f.code for tp, f in alone.failures.items()} == {only_max[0]: -102}
        assert c.count("ListOffsets") == 0  # nothing left to ask broker 1: nothing sent
