"""The record-batch reader (client/batches.py) and its codecs (client/compression.py), checked
against batches written by other encoders: the fake cluster's (Kafka's ``MemoryRecordsBuilder``
/ ``DefaultRecordBatch`` layout, tests/support/fakekafka/recordbatch.py) for every codec, and
kafka-python's ``DefaultRecordBatchBuilder`` (an independent writer) where it needs no codec
library. librdkafka's batches are read on the embedded broker (tests/realbroker/test_codecs.py)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import cramjam
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from airflow_provider_kgroups.client.batches import read_batches
from airflow_provider_kgroups.client.compression import Codec, UndecodableBatch, decompress, xerial_unframe
from tests.support.batches import RECORDS
from tests.support.fakekafka.recordbatch import (
    CODECS,
    control_key,
    control_value,
    encode_batch,
    xerial_snappy,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_every_codec_reads_back_every_column(codec):
    data = encode_batch(100, RECORDS, codec=codec, producer_id=7, producer_epoch=0, base_sequence=0)
    (batch,), truncated = read_batches(data)
    assert not truncated
    assert (batch.codec, batch.base_offset, batch.last_offset, batch.count) == (CODECS[codec], 100, 103, 4)
    assert list(zip(*batch.columns())) == [(o, ts, k, v, h) for o, ts, k, v, h in RECORDS]


def test_log_append_time_gives_every_record_the_batch_max_timestamp():
    """DefaultRecordBatch: with LOG_APPEND_TIME a record's timestamp is the batch's maxTimestamp."""
    (batch,), _ = read_batches(
        encode_batch(0, RECORDS[:2], codec="lz4", log_append_time_ms=1_800_000_000_000)
    )
    assert batch.timestamp_type == 1
    assert batch.columns().timestamps == [1_800_000_000_000] * 2


def test_control_batch_markers_say_commit_or_abort():
    commit = encode_batch(
        5,
        [(5, 1, control_key(True), control_value(), ())],
        producer_id=3,
        producer_epoch=0,
        transactional=True,
        control=True,
    )
    abort = encode_batch(
        6,
        [(6, 1, control_key(False), control_value(), ())],
        producer_id=3,
        producer_epoch=0,
        transactional=True,
        control=True,
    )
    batches, _ = read_batches(commit + abort)
    assert [(b.is_control_batch, b.is_transactional, b.producer_id) for b in batches] == [(True, True, 3)] * 2
    assert [m.abort for b in batches for m in b.markers()] == [False, True]


def test_a_partial_batch_at_the_end_is_left_and_reported():
    whole = encode_batch(0, RECORDS[:2])
    for cut in (1, 20, 61, len(whole) - 1):
        batches, truncated = read_batches(whole + whole[:cut])
        assert len(batches) == 1 and truncated


def test_kafka_pythons_writer_reads_the_same():
    """An independent encoder (kafka-python's builder, uncompressed and gzip: the codecs it has
    without optional libraries) gives the same columns."""
    for codec in (0, 1):
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=codec,
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 22,
        )
        for i, (_, ts, key, value, headers) in enumerate(RECORDS):
            builder.append(i, timestamp=ts, key=key, value=value, headers=list(headers))
        (batch,), _ = read_batches(bytes(builder.build()))
        assert batch.codec == codec
        assert list(zip(*batch.columns())) == [(i, ts, k, v, h) for i, (_, ts, k, v, h) in enumerate(RECORDS)]


def test_snappy_reads_xerial_framing_concatenated_streams_and_raw_blocks():
    """xerial's SnappyInputStream: the framed stream Kafka's Java producer writes, a stream
    concatenated to another, and (no header) one raw block, as some clients write."""
    data = os.urandom(70_000) + b"a" * 70_000  # several 32 KiB blocks, compressible and not
    framed = xerial_snappy(data, cramjam.snappy.compress_raw)
    assert decompress(Codec.SNAPPY, framed) == data
    assert (
        decompress(Codec.SNAPPY, framed + xerial_snappy(b"tail", cramjam.snappy.compress_raw))
        == data + b"tail"
    )
    assert decompress(Codec.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data
    with pytest.raises(ValueError, match="runs past the payload"):
        xerial_unframe(framed[:-10], cramjam.snappy.decompress_raw)


def test_lz4_frames_with_incompressible_blocks_and_zstd_without_content_size_or_in_two_frames():
    """Lz4BlockInputStream: a block flagged incompressible is stored as is; zstd-jni's stream
    reads frames without a content size (streamed) and every frame of the payload."""
    noise = os.urandom(300_000)
    assert decompress(Codec.LZ4, bytes(cramjam.lz4.compress(noise))) == noise
    streamed = cramjam.zstd.Compressor()
    streamed.compress(b"z" * 100_000)
    frame = bytes(streamed.finish())
    assert decompress(Codec.ZSTD, frame) == b"z" * 100_000
    assert (
        decompress(Codec.ZSTD, frame + bytes(cramjam.zstd.compress(b"second"))) == b"z" * 100_000 + b"second"
    )
    assert decompress(Codec.GZIP, gzip.compress(b"one") + gzip.compress(b"two")) == b"onetwo"


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_corrupt_payload_names_the_codec_and_the_library(codec):
    data = encode_batch(0, RECORDS[:1], codec=codec, payload=b"\x00not a compressed block at all")
    (batch,), _ = read_batches(data)
    with pytest.raises(UndecodableBatch) as caught:
        batch.columns()
    library = "gzip (Python standard library)" if codec == "gzip" else "cramjam"
    assert str(caught.value).startswith(f"{codec} record batch could not be decoded with {library}: ")
    assert (caught.value.codec_name, caught.value.library) == (codec, library)


def test_unknown_codec_ids_and_old_message_formats_are_refused_by_name():
    data = bytearray(encode_batch(0, RECORDS[:1]))
    data[22] |= 0x07  # attributes' low byte: codec id 7
    (batch,), _ = read_batches(bytes(data))
    with pytest.raises(UndecodableBatch, match="compression codec id 7"):
        batch.columns()
    old = bytearray(encode_batch(0, RECORDS[:1]))
    old[16] = 1
    with pytest.raises(UndecodableBatch, match="message format v1.*KIP-724"):
        read_batches(bytes(old))


def test_a_record_that_overruns_its_length_is_corrupt_not_a_crash():
    data = bytearray(encode_batch(0, RECORDS[:2]))
    data[61] += 2  # the first record's length varint claims one byte more (zig-zag: +2)
    (batch,), _ = read_batches(bytes(data))
    with pytest.raises(UndecodableBatch, match="record batch could not be read: corrupt record"):
        batch.columns()


def test_no_codec_library_is_imported_until_a_compressed_batch_needs_one():
    """cramjam is loaded on the first snappy/lz4/zstd batch, not when the client, the CLI or an
    uncompressed batch is read (the CLI's start-up does not pay for it)."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); import airflow_provider_kgroups.cli; "
        "from airflow_provider_kgroups.client.batches import read_batches; "
        "from tests.support.fakekafka.recordbatch import encode_batch; "
        "print('cramjam' in sys.modules, end=' '); "
        "read_batches(encode_batch(0, [(0, 1, b'k', b'v', ())]))[0][0].columns(); "
        "print('cramjam' in sys.modules, end=' '); "
        "import cramjam; lz4 = encode_batch(0, [(0, 1, b'k', b'v', ())], codec='lz4'); del sys.modules['cramjam']; "
        "read_batches(lz4)[0][0].columns(); print('cramjam' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    ).stdout
    assert out.strip() == "False False True"
