"""Transactions on the real broker, written by librdkafka's transactional producer: committed,
aborted and still-open transactions and their control records (commit/abort markers), and what
the client makes of them: the last stable offset as the log end with ``read_committed``, lag
without the phantom of an open transaction, and the record reader skipping aborted records and
markers (the data source's Spark-free reader, :class:`~airflow_provider_kgroups.client.records.RangeReader`).

The partition, offset by offset::

    0 1 2  c0 c1 c2 committed     3 commit marker
    4 5    a0 a1    aborted       6 abort marker
    7 8    c3 c4    committed     9 commit marker
    10     open     still open (then aborted by the last test: 11 abort marker)
"""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, GroupsClient, TopicPartition
from airflow_provider_kgroups.client.records import RangeReader, RecordsUnavailable
from airflow_provider_kgroups.lag.snapshot import take_snapshot

COMMITTED = [(0, b"c0"), (1, b"c1"), (2, b"c2"), (7, b"c3"), (8, b"c4")]
ABORTED = [(4, b"a0"), (5, b"a1")]


@pytest.fixture(scope="module")
def transactions(kafka, kafka_seed):
    topic = "txn-t"
    kafka_seed.create_topic(topic, partitions=1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": "txn-producer"})
    producer.init_transactions(60)

    def transaction(values: list[bytes], *, commit: bool | None) -> None:
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value, partition=0)
        producer.flush(30)  # written before the abort: an abort purges what is still queued
        if commit is True:
            producer.commit_transaction(30)
        elif commit is False:
            producer.abort_transaction(30)

    transaction([b"c0", b"c1", b"c2"], commit=True)
    transaction([b"a0", b"a1"], commit=False)
    transaction([b"c3", b"c4"], commit=True)
    transaction([b"open"], commit=None)
    state = {"tp": TopicPartition(topic, 0), "producer": producer, "bootstrap": kafka.bootstrap, "open": True}
    yield state
    if state["open"]:  # the last test did not run: leave no transaction holding the partition back
        producer.abort_transaction(30)
    producer.close()


def test_an_open_transaction_holds_the_last_stable_offset_back(transactions):
    tp = transactions["tp"]
    with GroupsClient(ClientConfig.create(transactions["bootstrap"])) as client:
        high = client.log_end_offsets([tp]).values[tp].offset
        stable = client.log_end_offsets([tp], read_committed=True).values[tp].offset
    assert (high, stable) == (11, 10)


def test_fetches_skip_markers_and_read_committed_skips_aborted_records(transactions):
    tp = transactions["tp"]
    with GroupsClient(ClientConfig.create(transactions["bootstrap"])) as client:
        uncommitted = client.fetch_records({tp: 0}).values[tp]
        committed = client.fetch_records({tp: 0}, read_committed=True).values[tp]
    assert [(r.offset, r.value) for r in uncommitted.records] == sorted(COMMITTED + ABORTED + [(10, b"open")])
    assert (uncommitted.skipped, uncommitted.next_offset) == (((3, 3), (6, 6), (9, 9)), 11)
    assert [(r.offset, r.value) for r in committed.records] == COMMITTED
    assert (committed.skipped, committed.next_offset) == (((3, 3), (4, 5), (6, 6), (9, 9)), 10)
    assert (committed.high_watermark, committed.last_stable_offset) == (11, 10)


def test_the_record_reader_reads_committed_records_up_to_the_stable_offset(transactions):
    tp = transactions["tp"]

    async def read(end: int, read_committed: bool):
        async with AsyncGroupsClient(ClientConfig.create(transactions["bootstrap"])) as client:
            reader = RangeReader(client, tp, 0, end, read_committed=read_committed)
            records = [r for page in [p async for p in reader.pages()] for r in page]
            return reader, [(r.offset, r.value) for r in records]

    reader, records = asyncio.run(read(10, True))
    assert records == COMMITTED
    assert (reader.records, reader.skipped, reader.gaps) == (5, 5, [])  # 3 markers and 2 aborted records
    with pytest.raises(RecordsUnavailable, match="beyond the partition's last stable offset 10"):
        asyncio.run(read(11, True))


def test_lag_with_read_committed_counts_no_open_transaction(transactions, kafka_seed):
    """A read_committed consumer that has everything stable commits 10 (the last stable offset):
    lag 0 with read_committed, 1 (the open record) without."""
    tp = transactions["tp"]
    group = "txn-reader"
    kafka_seed.commit(group, {(tp.topic, 0): 10})

    async def lag(read_committed: bool) -> int:
        async with AsyncGroupsClient(ClientConfig.create(transactions["bootstrap"])) as client:
            snap = await take_snapshot(client, [group], read_committed=read_committed)
        [partition] = snap.groups[group].partitions
        return partition.lag

    assert (asyncio.run(lag(True)), asyncio.run(lag(False))) == (0, 1)

    # the open transaction aborted: its marker at 11, both ends at 12; the group now lags 2 either way
    transactions["producer"].abort_transaction(30)
    transactions["open"] = False
    with GroupsClient(ClientConfig.create(transactions["bootstrap"])) as client:
        ends = (
            client.log_end_offsets([tp]).values[tp].offset,
            client.log_end_offsets([tp], read_committed=True).values[tp].offset,
        )
    assert ends == (12, 12)
    assert (asyncio.run(lag(True)), asyncio.run(lag(False))) == (2, 2)
