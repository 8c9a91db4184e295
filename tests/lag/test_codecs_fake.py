"""Lag in seconds over compressed, multi-record batches on the fake cluster (stored batches, served
whole from their base offset as ``LogSegment.read`` does), and what a batch no codec can read
does: its partition fails with CLIENT_UNDECODABLE naming the codec, the library and the
partition, and its lag in seconds is unknown, even with a history that could have bracketed it."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client.errors import CLIENT_UNDECODABLE
from airflow_provider_kgroups.client.results import RecordPosition, TopicPartition
from airflow_provider_kgroups.lag.seconds import LagSecondsBasis, lag_seconds
from airflow_provider_kgroups.lag.snapshot import take_snapshot
from tests.support.fakekafka.recordbatch import CODECS
from tests.support.fakeworld import with_fake_cluster

T0 = 1_700_000_000_000
TP = TopicPartition("t", 0)


def batches(c, codec: str, payload: bytes | None = None) -> None:
    """Offsets 0-199 in one batch, 200-299 in a second (or a batch whose payload is ``payload``),
    a committed and an aborted transaction, one last record; record o written at T0 + o s."""
    c.add_topic("t", 1)
    c.append_batch("t", 0, [(b"k", b"v%d" % o, (), T0 + o * 1000) for o in range(200)], codec=codec)
    c.append_batch(
        "t",
        0,
        [(None, b"w%d" % o, (("h", None),), T0 + o * 1000) for o in range(200, 300)],
        codec=codec,
        producer_id=9,
        payload=payload,
    )
    c.append_batch("t", 0, [(None, b"t", (), T0 + 300_000)], codec=codec, producer_id=4, transactional=True)
    c.end_transaction("t", 0, producer_id=4, commit=False)
    c.append_batch("t", 0, [(None, b"last", (), T0 + 302_000)], codec=codec)


@pytest.mark.parametrize("codec", sorted(CODECS))
async def test_offsets_committed_inside_compressed_batches_are_dated_by_their_record(codec):
    def setup(c):
        batches(c, codec)
        for group, offset in (("inside", 123), ("second", 250), ("aborted", 300), ("marker", 301)):
            c.add_group(group, offsets={("t", 0): offset})

    async def body(c, client):
        snap = await take_snapshot(client, ["inside", "second", "aborted", "marker"])
        return (
            await lag_seconds(client, snap, worst_n=None, now_ms=T0 + 600_000),
            await lag_seconds(client, snap, worst_n=None, now_ms=T0 + 600_000, read_committed=True),
        )

    uncommitted, committed = await with_fake_cluster(body, setup=setup, brokers=1)
    expected = {"inside": 123, "second": 250, "aborted": 300, "marker": 302}  # the marker: the next record
    for group, record in expected.items():
        (measured,) = uncommitted[group].partitions
        assert (measured.basis, measured.record_offset, measured.seconds) == (
            LagSecondsBasis.RECORD,
            record,
            (600_000 - record * 1000 if record < 301 else 298_000) / 1000,
        ), group
    (skips_aborted,) = committed["aborted"].partitions  # read_committed: the aborted record is not read next
    assert (skips_aborted.basis, skips_aborted.record_offset) == (LagSecondsBasis.RECORD, 302)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
async def test_an_undecodable_batch_fails_its_partition_by_name_and_leaves_its_lag_unknown(codec):
    def setup(c):
        batches(c, codec, payload=b"\x00\x01 not %s" % codec.encode())
        c.add_group("g", offsets={("t", 0): 250})

    async def body(c, client):
        fetched = await client.fetch_record_timestamps({TP: [250]})
        records = await client.fetch_records({TP: 200})
        snap = await take_snapshot(client, ["g"])
        history = {TP: [(T0 + 100_000, 100), (T0 + 400_000, 400)]}  # would bracket offset 250
        return fetched, records, await lag_seconds(client, snap, history=history, now_ms=T0 + 600_000)

    fetched, records, seconds = await with_fake_cluster(body, setup=setup, brokers=1)
    library = "gzip (Python standard library)" if codec == "gzip" else "cramjam"
    for failures in (fetched.failures, records.failures):
        failure = failures[TP]
        assert failure.code == CLIENT_UNDECODABLE and failure.name == "CLIENT_UNDECODABLE"
        assert f"{codec} record batch could not be decoded with {library}" in failure.message
        assert "t[0]" in str(TP) and str(TP) in failure.message
        assert (failure.codec, failure.library) == (codec, library)  # values too, for the gate's warning
    (measured,) = seconds["g"].partitions
    assert measured.basis is LagSecondsBasis.UNKNOWN and measured.seconds is None and not measured.at_least
    assert codec in measured.reason and library in measured.reason and str(TP) in measured.reason
    error = measured.to_dict()["error"]  # the JSON the CLI and XCom show
    assert error == fetched.failures[TP].to_dict() and (error["codec"], error["offset"]) == (codec, 250)


async def test_the_first_batch_of_a_page_is_read_whole_even_from_its_middle():
    """A Fetch at offset 150 gets the batch of 0-199 whole (Kafka serves batches, not records);
    the answer for 150 is record 150, not the batch's first."""

    async def body(c, client):
        return await client.fetch_record_timestamps({TP: [150]})

    answer = await with_fake_cluster(body, setup=lambda c: batches(c, "lz4"), brokers=1)
    found = answer.values[TP][150]
    assert (found.position, found.offset, found.timestamp_ms) == (RecordPosition.AT_OFFSET, 150, T0 + 150_000)
