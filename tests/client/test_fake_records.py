"""Reading exactly one offset range (``RangeReader`` over ``fetch_records``) on the fake cluster:
every offset is a record read, a skipped transaction marker / aborted record, or a gap that
fails the read unless gaps are allowed. Transactions follow Kafka's log layout (one batch per
producer run, control batches for markers, ``UnifiedLog.collectAbortedTransactions`` for
read_committed); compaction follows ``LogCleaner`` (offsets kept, records removed); retention
moves the log start offset (``UnifiedLog.maybeIncrementLogStartOffset``)."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition
from airflow_provider_kgroups.client.records import RangeReader, RecordsUnavailable
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config, counts

TP = TopicPartition("t", 0)


async def read(setup, start: int, end: int, **options) -> tuple[list[tuple[int, bytes]], RangeReader, dict]:
    async with asyncio.timeout(20):
        async with FakeCluster(brokers=2) as c:
            c.add_topic("t", 1)
            setup(c)
            async with AsyncGroupsClient(config(c)) as client:
                await client.describe_topics(["t"])  # metadata first, so counts are Fetch only
                c.reset_counts()
                reader = RangeReader(client, TP, start, end, **options)
                got = [(r.offset, r.value) async for page in reader.pages() for r in page]
            return got, reader, counts(c)


def values(c: FakeCluster, n: int) -> None:
    c.append("t", 0, n, value=lambda o: b"v%d" % o)


async def test_reads_every_record_of_the_range_in_pages():
    def setup(c):
        c.append("t", 0, 100, value=lambda o: b"%-100d" % o)  # ~108 bytes a record: 8 fit a 1 KiB page

    got, reader, sent = await read(setup, 10, 90, page_bytes=1024)
    assert got == [(o, b"%-100d" % o) for o in range(10, 90)]
    assert (reader.records, reader.skipped, reader.gaps) == (80, 0, [])
    assert sent == {"Fetch": reader.requests} and reader.requests == 10  # 80 records, 8 a page


async def test_read_committed_skips_aborted_records_and_markers_without_a_gap():
    def setup(c):
        values(c, 2)  # 0, 1
        c.append_transaction("t", 0, [b"a", b"b"], producer_id=7, commit=True)  # 2, 3 + marker 4
        c.append_transaction("t", 0, [b"x"], producer_id=8, commit=False)  # 5 + marker 6
        c.append_transaction("t", 0, [b"c"], producer_id=7, commit=True)  # 7 + marker 8
        values(c, 1)  # 9

    got, reader, _ = await read(setup, 0, 10, read_committed=True)
    assert [o for o, _ in got] == [0, 1, 2, 3, 7, 9]
    assert (reader.skipped, reader.gaps) == (4, [])  # markers 4, 6, 8 and the aborted record 5
    got, reader, _ = await read(setup, 0, 10, read_committed=False)
    assert [o for o, _ in got] == [0, 1, 2, 3, 5, 7, 9]  # read_uncommitted sees the aborted record
    assert (reader.skipped, reader.gaps) == (3, [])


async def test_a_range_that_starts_inside_a_transaction_reads_only_its_part():
    def setup(c):
        c.append_transaction("t", 0, [b"a", b"b", b"c"], producer_id=7, commit=True)  # 0-2 + marker 3
        values(c, 2)  # 4, 5

    got, reader, _ = await read(setup, 1, 5)
    assert [o for o, _ in got] == [1, 2, 4] and reader.skipped == 1 and reader.gaps == []


def compacted(c):
    values(c, 10)
    c.compact("t", 0, [3, 4, 7])  # the cleaner never touches the active segment: never the log's tail


async def test_compacted_offsets_fail_the_read_naming_them():
    setup = compacted
    with pytest.raises(
        RecordsUnavailable,
        match=r"t\[0\]: offsets 3\.\.4 of the range \[0, 10\) are missing from "
        r"the log \(compacted\)",
    ):
        await read(setup, 0, 10)


async def test_allowed_gaps_are_read_around_and_counted():
    got, reader, _ = await read(compacted, 0, 10, allow_gaps=True)
    assert [o for o, _ in got] == [0, 1, 2, 5, 6, 8, 9]
    assert [(first, last) for first, last, _ in reader.gaps] == [(3, 4), (7, 7)] and reader.gap_offsets == 3


async def test_an_empty_page_below_the_log_end_is_asked_again_then_fails(monkeypatch):
    """A leader answers inside [log start, high watermark) with the batch holding the offset or
    the next one (UnifiedLog.read); an empty answer is a slow broker, never taken for a gap."""
    from tests.support.fakekafka.handlers import logs

    real = logs.build_record_batch
    empties = {"left": 2}

    def sometimes_empty(records, max_bytes, leader_epoch=0):
        if empties["left"]:
            empties["left"] -= 1
            return b""
        return real(records, max_bytes, leader_epoch)

    monkeypatch.setattr(logs, "build_record_batch", sometimes_empty)
    got, reader, sent = await read(lambda c: values(c, 5), 0, 5)
    assert [o for o, _ in got] == [0, 1, 2, 3, 4] and reader.requests == 3 and sent == {"Fetch": 3}
    empties["left"] = 10
    with pytest.raises(
        RecordsUnavailable,
        match=r"returned no records at offset 0 in 4 tries although the log "
        r"reaches 5",
    ):
        await read(lambda c: values(c, 5), 0, 5)


async def test_records_deleted_by_retention_fail_the_read_or_count_as_a_gap():
    def setup(c):
        values(c, 10)
        c.set_offsets("t", 0, start=6)

    with pytest.raises(
        RecordsUnavailable,
        match=r"offsets 2\.\.5 of the range \[2, 8\) are deleted by retention "
        r"\(the log now starts at 6\)",
    ):
        await read(setup, 2, 8)
    got, reader, _ = await read(setup, 2, 8, allow_gaps=True)
    assert [o for o, _ in got] == [6, 7] and reader.gap_offsets == 4


async def test_a_range_past_the_readable_end_fails_before_reading():
    with pytest.raises(
        RecordsUnavailable, match=r"ends at 12 \(exclusive\), beyond the partition's high watermark 10"
    ):
        await read(lambda c: values(c, 10), 0, 12)

    def pending(c):
        values(c, 10)
        c.set_offsets("t", 0, last_stable=7)

    with pytest.raises(RecordsUnavailable, match="beyond the partition's last stable offset 7"):
        await read(pending, 0, 9, read_committed=True)


async def test_an_empty_range_sends_nothing():
    got, reader, sent = await read(lambda c: values(c, 5), 3, 3)
    assert got == [] and sent == {} and reader.requests == 0
