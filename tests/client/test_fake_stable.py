"""require_stable against pending transactional offsets: Kafka 3.x answers
UNSTABLE_OFFSET_COMMIT (88) per partition (GroupMetadataManager.getOffsets), Kafka 4.x holds
the fetch and answers NOT_COORDINATOR when its write times out
(GroupCoordinatorService.fetchOffsets / handleOffsetFetchException). The client asks again,
as the Java consumer does (ConsumerCoordinator.OffsetFetchResponseHandler), bounded by the
call's deadline, and names the reason when it runs out."""

from __future__ import annotations

import asyncio

from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition
from airflow_provider_kgroups.client.errors import CLIENT_TIMEOUT
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakeutil import committed, config, counts

GUARD_S = 20.0  # a hang fails the test instead of blocking the suite


def groups_in(request) -> list[str]:
    return [g.group_id for g in request.request.groups]


async def test_unstable_offsets_are_asked_again_until_stable():
    """Two answers of 88 for one partition of group "a" (injected, as a 3.x broker answers while
    the transaction is open), then stable: "a" gets its offsets after two retries on the same
    coordinator, "b" is answered at once, nothing is looked up again."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 2)
        c.add_group("a", offsets={("orders", 0): 5, ("orders", 1): 6})
        c.add_group("b", offsets={("orders", 0): 7})
        pending = c.inject_error("OffsetFetch", Err.UNSTABLE_OFFSET_COMMIT, key=("a", "orders", 0), times=2)
        async with AsyncGroupsClient(config(c)) as client:
            result = await asyncio.wait_for(
                client.fetch_committed_offsets(["a", "b"], require_stable=True), GUARD_S
            )
        assert committed(result) == {
            "a": {TopicPartition("orders", 0): 5, TopicPartition("orders", 1): 6},
            "b": {TopicPartition("orders", 0): 7},
        }
        assert result.failures == {} and pending.hits == 2
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 3}
        assert [sorted(groups_in(r)) for r in c.requests("OffsetFetch")] == [["a", "b"], ["a"], ["a"]]
        assert all(r.request.require_stable for r in c.requests("OffsetFetch"))


async def test_unstable_offsets_that_never_clear_end_in_a_timeout_naming_them():
    """Kafka 3.x model (GroupMetadataManager.getOffsets): the transaction stays open; the group
    fails at the deadline with the reason and the partition, the other group is answered."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 2)
        c.add_group("a", offsets={("orders", 0): 5, ("orders", 1): 6})
        c.add_group("b", offsets={("orders", 0): 7})
        c.begin_transactional_commit("a", [("orders", 1)])
        async with AsyncGroupsClient(config(c, retry_backoff_max_s=0.05)) as client:
            result = await asyncio.wait_for(
                client.fetch_committed_offsets(["a", "b"], require_stable=True, timeout_s=0.5), GUARD_S
            )
        assert committed(result) == {"b": {TopicPartition("orders", 0): 7}}
        assert {g: f.code for g, f in result.failures.items()} == {"a": CLIENT_TIMEOUT}
        assert (
            "UNSTABLE_OFFSET_COMMIT: pending transactional offsets on orders[1]"
            in result.failures["a"].message
        )
        fetches = c.requests("OffsetFetch")
        assert len(fetches) >= 3 and all(groups_in(r) == ["a"] for r in fetches[1:])
        assert counts(c)["FindCoordinator"] == 1  # same coordinator, never looked up again


async def test_without_require_stable_a_pending_commit_does_not_hold_the_read():
    """GroupMetadataManager.getOffsets checks pending commits only with requireStable: the last
    committed offset is answered, in one request."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 1)
        c.add_group("a", offsets={("orders", 0): 5})
        c.begin_transactional_commit("a", [("orders", 0)])
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(["a"])
        assert committed(result) == {"a": {TopicPartition("orders", 0): 5}} and result.failures == {}
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 1}


async def test_kafka4_stable_fetch_timing_out_as_not_coordinator_is_bounded_by_the_deadline():
    """Kafka 4.x model (GroupCoordinatorService.fetchOffsets with requireStable: a write held for
    offset.commit.timeout.ms, then NOT_COORDINATOR): each answer sends the group back to
    lookup; the call ends at its deadline with a timeout naming NOT_COORDINATOR, and the group
    without pending offsets is answered."""
    async with FakeCluster(brokers=1) as c:
        c.stable_offsets_model = "4.x"
        c.offset_commit_timeout_s = 0.2
        c.add_topic("orders", 1)
        c.add_group("a", offsets={("orders", 0): 5})
        c.add_group("b", offsets={("orders", 0): 7})
        c.begin_transactional_commit("a", [("orders", 0)])
        async with AsyncGroupsClient(config(c, retry_backoff_max_s=0.05)) as client:
            result = await asyncio.wait_for(
                client.fetch_committed_offsets(["a"], require_stable=True, timeout_s=1.0), GUARD_S
            )
            other = await client.fetch_committed_offsets(["b"], require_stable=True)
        assert {g: f.code for g, f in result.failures.items()} == {"a": CLIENT_TIMEOUT}
        assert "NOT_COORDINATOR" in result.failures["a"].message and result.values == {}
        assert committed(other) == {"b": {TopicPartition("orders", 0): 7}} and other.failures == {}
        fetches_for_a = len(c.requests("OffsetFetch")) - 1
        assert fetches_for_a >= 2  # held 0.2 s each within a 1 s deadline
        assert c.count("FindCoordinator") >= fetches_for_a  # every NOT_COORDINATOR looked up again


async def test_commit_into_a_dead_classic_group_is_retried_until_the_deadline_naming_why():
    """ClassicGroup.validateOffsetCommit: a Dead classic group answers COORDINATOR_NOT_AVAILABLE,
    which sends the group back to coordinator lookup (the group is on its way out); a group
    that stays Dead ends in a timeout naming the error, and nothing is committed."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 1)
        c.add_group("dead", state="Dead")
        async with AsyncGroupsClient(config(c, retry_backoff_max_s=0.05)) as client:
            result = await asyncio.wait_for(
                client.commit_offsets("dead", {TopicPartition("orders", 0): 3}, timeout_s=0.4), GUARD_S
            )
        assert result.values == {}
        assert {tp: f.code for tp, f in result.failures.items()} == {
            TopicPartition("orders", 0): CLIENT_TIMEOUT
        }
        assert "COORDINATOR_NOT_AVAILABLE" in result.failures[TopicPartition("orders", 0)].message
        assert c.committed("dead") == {} and c.count("OffsetCommit") >= 2
        assert c.count("FindCoordinator") >= c.count("OffsetCommit")  # each answer looked the group up again
