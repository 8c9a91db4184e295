"""The fake's pending transactional offsets, over raw codec requests (Kafka 3.x and 4.x)."""

from __future__ import annotations

from kafka.protocol.consumer import OffsetFetchRequest

from tests.support.fakekafka import Err, FakeCluster, roundtrip
from tests.support.fakeutil import within
from tests.support.raw_requests import WIRE_TEST_DEADLINE_S, offset_fetch_v8, offsets_of


def stable_fetch(groups: dict[str, dict[str, list[int]] | None], require_stable: bool = True):
    return offset_fetch_v8(groups, require_stable=require_stable)


@within(WIRE_TEST_DEADLINE_S)
async def test_kafka3_require_stable_answers_88_for_pending_partitions_only():
    """GroupMetadataManager.getOffsets: ``requireStable && hasPendingOffsetCommitsForTopicPartition``
    -> INVALID_OFFSET (-1) with UNSTABLE_OFFSET_COMMIT; other partitions and reads without
    requireStable answer the committed offset."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("t", 2)
        c.add_group("g", offsets={("t", 0): 4, ("t", 1): 8})
        c.begin_transactional_commit("g", [("t", 1)])
        every = await roundtrip(*c.address(0), stable_fetch({"g": None}), 8)
        assert offsets_of(every.groups[0]) == {("t", 0): (4, 0), ("t", 1): (-1, Err.UNSTABLE_OFFSET_COMMIT)}
        named = await roundtrip(*c.address(0), stable_fetch({"g": {"t": [1]}}), 8)
        assert offsets_of(named.groups[0]) == {("t", 1): (-1, Err.UNSTABLE_OFFSET_COMMIT)}
        loose = await roundtrip(*c.address(0), stable_fetch({"g": None}, require_stable=False), 8)
        assert offsets_of(loose.groups[0]) == {("t", 0): (4, 0), ("t", 1): (8, 0)}
        single = await roundtrip(
            *c.address(0), OffsetFetchRequest(group_id="g", topics=None, require_stable=True), 7
        )
        assert {(t.name, p.partition_index): p.error_code for t in single.topics for p in t.partitions} == {
            ("t", 0): 0,
            ("t", 1): Err.UNSTABLE_OFFSET_COMMIT,
        }
        c.end_transactional_commit("g")
        done = await roundtrip(*c.address(0), stable_fetch({"g": None}), 8)
        assert offsets_of(done.groups[0]) == {("t", 0): (4, 0), ("t", 1): (8, 0)}


@within(WIRE_TEST_DEADLINE_S)
async def test_kafka4_require_stable_is_held_then_not_coordinator():
    """GroupCoordinatorService.fetchOffsets: requireStable is a write waiting up to
    offset.commit.timeout.ms; its REQUEST_TIMED_OUT becomes NOT_COORDINATOR
    (handleOffsetFetchException). The whole response waits for it (KafkaApis sends once every
    group's future completes), so the other group comes in the same, late answer."""
    async with FakeCluster(brokers=1) as c:
        c.stable_offsets_model = "4.x"
        c.offset_commit_timeout_s = 0.3
        c.add_topic("t", 1)
        c.add_group("g", offsets={("t", 0): 4})
        c.add_group("h", offsets={("t", 0): 2})
        c.begin_transactional_commit("g", [("t", 0)])
        resp = await roundtrip(*c.address(0), stable_fetch({"g": None, "h": None}), 8)
        assert [(g.group_id, g.error_code) for g in resp.groups] == [("g", Err.NOT_COORDINATOR), ("h", 0)]
        assert offsets_of(resp.groups[1]) == {("t", 0): (2, 0)}
        loose = await roundtrip(*c.address(0), stable_fetch({"g": None}, require_stable=False), 8)
        assert offsets_of(loose.groups[0]) == {("t", 0): (4, 0)}
