"""Record batches (message format v2) as a Kafka producer writes them and a broker stores them:
the fake's encoder, following Kafka's ``MemoryRecordsBuilder`` and ``DefaultRecordBatch``.

* ``MemoryRecordsBuilder.appendWithOffset``: the first record's timestamp becomes the batch's
  ``baseTimestamp``, every record stores ``timestamp - baseTimestamp`` and ``offset - baseOffset``
  (``DefaultRecord.writeTo``: length, attributes 0, the two deltas, key, value, headers, all
  varint-sized, -1 for null).
* ``MemoryRecordsBuilder.close`` -> ``writeDefaultBatchHeader``: the records are compressed as one
  block (``Compression.wrapForOutput``) after the 61-byte header; ``lastOffsetDelta`` is the last
  record's offset minus the base offset (so a batch the log cleaner thinned keeps its base offset
  and ends at its last surviving record: ``MemoryRecords.filterTo``); ``maxTimestamp`` is the
  largest record timestamp, or the append time for ``LOG_APPEND_TIME`` (``LogValidator``).
* ``DefaultRecordBatch.writeHeader``: attributes = codec (bits 0-2) | timestamp type (bit 3) |
  transactional (bit 4) | control (bit 5); the CRC-32C covers attributes to the end.
* Codecs as Kafka 4.x writes them (``org.apache.kafka.common.compress``): gzip a gzip member,
  snappy xerial's framed stream (``SnappyOutputStream``: the 16-byte header, then 32 KiB blocks,
  each an int32 length and a raw snappy block), lz4 an LZ4 frame, zstd a zstd frame.
* A control batch holds one record per marker: key ``version 0 | ControlRecordType`` (0 abort,
  1 commit), value ``EndTransactionMarker`` (version 0, coordinator epoch).
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Sequence

from kafka.record.util import calc_crc32c

__all__ = ["CODECS", "encode_batch", "xerial_snappy", "control_key", "control_value"]

#: codec name -> Kafka's CompressionType id
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_HEADER = struct.Struct(">qiibIhiqqqhii")
_ATTRIBUTES_AT = 21
_CRC_AT = 17
XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream.DEFAULT_BLOCK_SIZE
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


def control_key(commit: bool) -> bytes:
    return _CONTROL_KEY.pack(0, 1 if commit else 0)


def control_value(coordinator_epoch: int = 0) -> bytes:
    return _CONTROL_VALUE.pack(0, coordinator_epoch)


def _varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)  # zig-zag (ByteUtils.writeVarlong)
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _sized(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def _record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
) -> bytes:
    body = b"".join(
        [
            b"\x00",
            _varint(timestamp_delta),
            _varint(offset_delta),
            _sized(key),
            _sized(value),
            _varint(len(headers)),
            *(_sized(k.encode()) + _sized(v) for k, v in headers),
        ]
    )
    return _varint(len(body)) + body


def xerial_snappy(data: bytes, raw_compress, block: int = XERIAL_BLOCK) -> bytes:
    """xerial's ``SnappyOutputStream`` framing of ``data``."""
    out = [_XERIAL_HEADER]
    for i in range(0, len(data), block):
        chunk = bytes(raw_compress(data[i : i + block]))
        out.append(struct.pack(">i", len(chunk)) + chunk)
    return b"".join(out)


def compress(codec: str, data: bytes) -> bytes:
    if codec == "none":
        return data
    if codec == "gzip":
        return gzip.compress(data)
    import cramjam

    if codec == "snappy":
        return xerial_snappy(data, cramjam.snappy.compress_raw)
    if codec == "lz4":
        return bytes(cramjam.lz4.compress(data))
    if codec == "zstd":
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown codec {codec!r}: one of {sorted(CODECS)}")


def encode_batch(
    base_offset: int,
    records: Sequence[tuple[int, int, bytes | None, bytes | None, Sequence]],
    *,
    codec: str = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    log_append_time_ms: int | None = None,
    leader_epoch: int = 0,
    payload: bytes | None = None,
) -> bytes:
    """One v2 batch; ``records`` are ``(offset, timestamp_ms, key, value, headers)`` in offset
    order. ``payload``, when given, replaces the compressed records (for undecodable-batch tests)."""
    base_timestamp = records[0][1]
    body = b"".join(
        _record(offset - base_offset, ts - base_timestamp, key, value, headers)
        for offset, ts, key, value, headers in records
    )
    payload = compress(codec, body) if payload is None else payload
    attributes = (
        CODECS[codec]
        | (0x08 if log_append_time_ms is not None else 0)
        | (0x10 if transactional else 0)
        | (0x20 if control else 0)
    )
    max_timestamp = log_append_time_ms if log_append_time_ms is not None else max(r[1] for r in records)
    header = bytearray(
        _HEADER.pack(
            base_offset,
            _HEADER.size - 12 + len(payload),
            leader_epoch,
            2,
            0,
            attributes,
            records[-1][0] - base_offset,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    crc = calc_crc32c(bytes(header[_ATTRIBUTES_AT:]) + payload)
    struct.pack_into(">I", header, _CRC_AT, crc)
    return bytes(header) + payload
