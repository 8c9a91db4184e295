"""Every codec on Apache Kafka, with records written by librdkafka as production producers
write them (tests/support/production.py: compressed batches of up to 500 records, headers with
duplicate keys and null values, null and empty keys and values, a 1 MiB record, an idempotent
and a transactional producer): what is on the wire, every record read back, lag in seconds for
offsets committed inside batches, and barriers. The data source and the landing zone read the
same topics in tests/spark/test_datasource_codecs.py."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, TopicPartition
from airflow_provider_kgroups.client.batches import read_batches
from airflow_provider_kgroups.client.records import RangeReader
from airflow_provider_kgroups.lag.barrier import check_barrier, fix_target
from airflow_provider_kgroups.lag.seconds import LagSecondsBasis, lag_seconds
from airflow_provider_kgroups.lag.snapshot import take_snapshot
from tests.support.production import CODECS
from tests.support.wire import WireConnection, fetch

pytestmark = pytest.mark.realbroker

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


async def run(bootstrap: str, body):
    async with asyncio.timeout(60):
        async with AsyncGroupsClient(ClientConfig.create(bootstrap, call_timeout_s=20.0)) as client:
            return await body(client)


@pytest.mark.parametrize("codec", CODECS)
def test_the_producer_wrote_multi_record_batches_in_the_topics_codec(broker, production, codec):
    """What the other tests read is what production writes: the 500-record batch arrives as one
    batch compressed with the topic's codec (librdkafka would fall back to none only for a batch
    that does not shrink)."""
    seeded = production[codec]
    with WireConnection.to(broker.bootstrap, client_id="codecs") as conn:
        response = fetch(conn, seeded.topic, 0, seeded.batch_middle().offset, version=11)
    batches, _ = read_batches(response.responses[0].partitions[0].records)
    first = batches[0]
    assert (first.codec, first.base_offset, first.count) == (CODEC_IDS[codec], 1, 500)
    assert (
        first.base_offset < seeded.batch_middle().offset < first.last_offset
    )  # a fetch inside a batch gets it whole


@pytest.mark.parametrize("codec", CODECS)
async def test_every_record_of_every_codec_reads_back_exactly(broker, production, codec):
    seeded = production[codec]
    tp = TopicPartition(seeded.topic, 0)

    async def body(client):
        reader = RangeReader(client, tp, 0, seeded.end)
        got = [r async for page in reader.pages() for r in page]
        return got, reader

    got, reader = await run(broker.bootstrap, body)
    assert [(r.offset, r.timestamp_ms, r.key, r.value, r.headers) for r in got] == [
        (r.offset, r.timestamp_ms, r.key, r.value, r.headers) for r in seeded.records
    ]
    assert reader.skipped == 3 and reader.gaps == []  # the three transaction markers


@pytest.mark.parametrize("codec", CODECS)
async def test_lag_in_seconds_dates_offsets_committed_inside_batches(
    broker, seed, production, name_prefix, codec
):
    """A group committed in the middle of a 500-record batch, on the 1 MiB record, inside a
    committed transaction and on an aborted record: each lag is the exact age of the record at
    the committed offset (what a consumer reads next), never a bound."""
    seeded = production[codec]
    targets = {
        "batch": seeded.batch_middle(),
        "big": next(r for r in seeded.records if r.key == b"big"),
        "txn": next(r for r in seeded.records if r.value == b"c7"),
        "aborted": seeded.first_aborted(),
    }
    for name, record in targets.items():
        seed.commit(f"{name_prefix}{name}", {(seeded.topic, 0): record.offset})
    now = seeded.records[-1].timestamp_ms + 60_000
    groups = [f"{name_prefix}{name}" for name in targets]

    async def body(client):
        snap = await take_snapshot(client, groups)
        return await lag_seconds(client, snap, worst_n=None, now_ms=now)

    result = await run(broker.bootstrap, body)
    for name, record in targets.items():
        (measured,) = result[f"{name_prefix}{name}"].partitions
        assert (measured.basis, measured.record_offset, measured.record_timestamp_ms, measured.at_least) == (
            LagSecondsBasis.RECORD,
            record.offset,
            record.timestamp_ms,
            False,
        ), name
        assert measured.seconds == (now - record.timestamp_ms) / 1000


@pytest.mark.parametrize("codec", CODECS)
async def test_a_barrier_on_the_log_end_is_reached_only_at_the_last_record(
    broker, seed, production, name_prefix, codec
):
    seeded = production[codec]
    group = f"{name_prefix}loader"
    seed.commit(group, {(seeded.topic, 0): seeded.batch_middle().offset})
    target = await run(broker.bootstrap, lambda client: fix_target(client, [group]))
    assert target.offsets[group] == {
        TopicPartition(seeded.topic, 0): seeded.end
    }  # exact: a single-record batch last
    status = await run(broker.bootstrap, lambda client: check_barrier(client, target))
    assert not status.reached and status.remaining() == seeded.end - seeded.batch_middle().offset
    seed.commit(group, {(seeded.topic, 0): seeded.end})
    assert (await run(broker.bootstrap, lambda client: check_barrier(client, target))).reached


@pytest.mark.parametrize("codec", CODECS)
async def test_read_committed_reads_around_the_aborted_transactions_the_broker_lists(
    broker, production, codec
):
    """Apache Kafka lists a Fetch's aborted transactions (UnifiedLog.collectAbortedTransactions): a
    read_committed reader returns every record but those of the aborted transaction, and no marker.
    (Tansu 0.6.0 lists none, so there a read_committed consumer is handed the aborted records:
    tests/realbroker/test_tansu_facts.py.)"""
    seeded = production[codec]
    tp = TopicPartition(seeded.topic, 0)

    async def body(client):
        reader = RangeReader(client, tp, 0, seeded.end, read_committed=True)
        return [r.offset async for page in reader.pages() for r in page]

    offsets = await run(broker.bootstrap, body)
    assert offsets == [r.offset for r in seeded.committed()]
    assert seeded.first_aborted().offset not in offsets
