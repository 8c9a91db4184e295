"""The bounded Fetch: record decoding (pure) and the handler against the fake cluster."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.handlers.fetch import _Truncated, resolve_offsets, scan_page
from airflow_provider_kgroups.client.results import RecordPosition, TopicPartition
from tests.support.batches import ABORT, COMMIT, batch
from tests.support.fakekafka import Err
from tests.support.fakeworld import with_fake_cluster


def find(data: bytes, offset: int, aborted=None, readable_end: int = 10**9):
    """The one offset resolved from one page: (record offset, position)."""
    readable, seen_end = scan_page(data, aborted)
    resolved, unresolved = resolve_offsets(readable, seen_end, [offset], readable_end)
    if unresolved:
        return None
    found = resolved[offset]
    return found.offset, found.position


def test_finds_the_record_at_the_offset_inside_a_batch():
    readable, _ = scan_page(batch(10, [10, 11, 12, 13]))
    resolved, _ = resolve_offsets(readable, 14, [12], 100)
    assert resolved[12].offset == 12 and resolved[12].timestamp_ms == 1012
    assert resolved[12].position is RecordPosition.AT_OFFSET


def test_missing_offsets_are_a_gap():
    assert find(batch(10, [10, 14, 15]), 11) == (14, RecordPosition.AFTER_GAP)  # 11-13 compacted away
    assert find(batch(10, [10, 14, 15]), 14) == (14, RecordPosition.AT_OFFSET)


def test_a_page_that_starts_after_the_offset_is_a_gap():
    assert find(batch(14, [14, 15]), 11) == (14, RecordPosition.AFTER_GAP)


def test_transaction_markers_are_skipped_without_a_gap():
    data = batch(5, [5, 6], producer_id=7) + batch(7, [7], producer_id=7, control=COMMIT) + batch(8, [8])
    assert find(data, 7) == (8, RecordPosition.AT_OFFSET)
    assert find(batch(7, [7], producer_id=7, control=COMMIT) + batch(8, [8]), 7) == (
        8,
        RecordPosition.AT_OFFSET,
    )


def test_aborted_transactions_are_skipped_with_read_committed():
    data = (
        batch(0, [0, 1], producer_id=3)
        + batch(2, [2], producer_id=3, control=ABORT)
        + batch(3, [3, 4], producer_id=3)
        + batch(5, [5], producer_id=3, control=COMMIT)
    )
    aborted = [SimpleNamespace(producer_id=3, first_offset=0)]
    assert find(data, 0, aborted) == (3, RecordPosition.AT_OFFSET)  # aborted 0-1 and marker 2: not records
    assert find(data, 0, None) == (0, RecordPosition.AT_OFFSET)  # read_uncommitted sees the aborted record


def test_several_offsets_from_one_page():
    readable, seen_end = scan_page(batch(0, [0, 1, 2]) + batch(5, [5, 6]))
    resolved, unresolved = resolve_offsets(readable, seen_end, [1, 3, 6, 9], readable_end=20)
    assert {o: (r.offset, r.position) for o, r in resolved.items()} == {
        1: (1, RecordPosition.AT_OFFSET),
        3: (5, RecordPosition.AFTER_GAP),
        6: (6, RecordPosition.AT_OFFSET),
    }
    assert unresolved == [9]  # past the page: the next page will tell


def test_nothing_at_or_after_the_offset_before_the_log_end():
    assert find(batch(0, [0, 1]), 5, readable_end=2) is not None
    assert find(batch(0, [0, 1]), 5, readable_end=2)[1] is RecordPosition.AT_LOG_END
    assert find(batch(0, [0, 1]), 5, readable_end=9) is None  # more log after the page
    assert scan_page(b"") == ([], None)


def test_a_partial_batch_is_truncated_not_empty():
    data = batch(0, list(range(50)))
    with pytest.raises(_Truncated):
        scan_page(data[: len(data) // 2])
    readable, seen_end = scan_page(
        batch(0, [0]) + data[: len(data) // 2]
    )  # a whole batch, then a partial one
    assert [r.offset for r in readable] == [0] and seen_end == 1


# -- the handler through the client, on the fake cluster --------------------------------------------


def seed(cluster):
    cluster.add_topic("t", partitions=4)
    for p in range(4):
        cluster.append("t", p, 10, timestamp_ms=lambda offset, p=p: 1_000_000 + 1000 * p + offset)
    cluster.set_offsets("t", 1, start=5)  # offsets 0-4 deleted by retention


async def test_one_fetch_per_leader_with_timestamps_and_positions():
    async def body(cluster, client):
        positions = {
            TopicPartition("t", 0): 3,
            TopicPartition("t", 1): 2,
            TopicPartition("t", 2): 10,
            TopicPartition("t", 3): 9,
        }
        result = await client.fetch_record_timestamps(positions)
        return result, cluster.requests("Fetch"), {cluster.leader_of("t", p) for p in range(4)}

    result, fetches, leaders = await with_fake_cluster(body, setup=seed)
    assert result.ok
    assert result[TopicPartition("t", 0)][3].position is RecordPosition.AT_OFFSET
    assert result[TopicPartition("t", 0)][3].timestamp_ms == 1_000_003
    assert result[TopicPartition("t", 1)][2].position is RecordPosition.OUT_OF_RANGE
    assert result[TopicPartition("t", 2)][10].position is RecordPosition.AT_LOG_END
    assert result[TopicPartition("t", 3)][9].timestamp_ms == 1_003_009
    assert len(fetches) == len(leaders)
    for r in fetches:
        assert r.request.max_wait_ms <= 1 and r.request.session_epoch == -1
        assert all(p.partition_max_bytes <= 64 * 1024 for t in r.request.topics for p in t.partitions)


@pytest.mark.parametrize(
    "error", [Err.NOT_LEADER_OR_FOLLOWER, Err.FENCED_LEADER_EPOCH, Err.UNKNOWN_LEADER_EPOCH]
)
async def test_not_leader_is_retried_on_the_new_leader(error):
    """Leader errors of a Fetch (ReplicaManager.readFromLog) send the partition back to the
    leader lookup, one metadata refresh each (the client's one REFRESH_LEADER set)."""

    def setup(cluster):
        seed(cluster)
        cluster.inject_error("Fetch", error, key=("t", 0), times=1)

    async def body(cluster, client):
        await client.describe_topics(["t"])  # bootstrap metadata out of the way
        cluster.reset_counts()
        result = await client.fetch_record_timestamps({TopicPartition("t", 0): 4})
        return result, cluster.count("Fetch"), cluster.count("Metadata")

    result, fetches, metadata = await with_fake_cluster(body, setup=setup)
    assert result[TopicPartition("t", 0)][4].timestamp_ms == 1_000_004 and fetches == 2
    assert metadata == 1  # leaders were cached: one refresh after the error


async def test_bad_positions_are_configuration_errors():
    async def body(cluster, client):
        with pytest.raises(ConfigurationError, match="not non-negative ints"):
            await client.fetch_record_timestamps({TopicPartition("t", 0): -1})
        with pytest.raises(ConfigurationError, match="partition_bytes"):
            await client.fetch_record_timestamps({TopicPartition("t", 0): 1}, partition_bytes=10)

    await with_fake_cluster(body, setup=seed)
