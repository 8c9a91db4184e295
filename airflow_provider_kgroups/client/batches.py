"""Record batches (message format v2) as a Fetch response carries them, read column by column.

The layout is Kafka's ``DefaultRecordBatch`` (``org.apache.kafka.common.record``)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 (2) | crc uint32
    | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64
    | producerId int64 | producerEpoch int16 | baseSequence int32 | recordCount int32 | records...

attributes: bits 0-2 the codec (:mod:`.compression`), bit 3 the timestamp type (1: log-append
time, every record then carries ``maxTimestamp``: ``DefaultRecordBatch.DefaultRecordBatchIterator``),
bit 4 transactional, bit 5 control. The records (``DefaultRecord.readFrom``) follow, compressed as
one block when the codec is not none::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    | keyLength varint | key | valueLength varint | value | headerCount varint
    | [headerKeyLength varint | headerKey utf-8 | headerValueLength varint | headerValue]

(varints zig-zag encoded, ``ByteUtils.readVarint``; a length of -1 is null). A control batch
holds one record whose key is ``version int16 | type int16`` (``ControlRecordType``: 0 abort,
1 commit).

A response may end in a partial batch (KIP-74 and the byte budget): :func:`read_batches`
stops before it and says so. Batches of message format v0/v1 (magic 0 or 1: Kafka 4 no longer
writes or serves them, KIP-724) are not read: they raise :class:`UndecodableBatch`.

Every record is read in one pass into plain lists (no object per record), from which the
lag-in-seconds scan reads offsets and timestamps; the data source decodes large ranges column by
column instead (:mod:`..spark.arrow_records`). The CRC is not checked, as kafka-python's reader does not: the broker validated it on
append and TCP on the way.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from .compression import Codec, UndecodableBatch, decompress

__all__ = [
    "BATCH_HEADER_BYTES",
    "Columns",
    "RecordBatch",
    "ControlMarker",
    "UndecodableBatch",
    "read_batches",
    "read_headers",
    "read_varint",
]

_HEADER = struct.Struct(">qiibIhiqqqhii")
BATCH_HEADER_BYTES = _HEADER.size  # 61
_LOG_OVERHEAD = 12  # baseOffset + batchLength: the part batchLength does not count
_MAGIC_AT = 16
_CODEC_MASK, _TIMESTAMP_TYPE_MASK, _TRANSACTIONAL_MASK, _CONTROL_MASK = 0x07, 0x08, 0x10, 0x20
_CONTROL_KEY = struct.Struct(">hh")


class Columns(NamedTuple):
    """One batch's records, column by column (the same index is the same record). ``headers``
    holds a tuple of ``(key, value)`` per record, ``()`` for a record without headers."""

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[tuple[str, bytes | None], ...]]


class ControlMarker(NamedTuple):
    """The record of a control batch: a transaction marker."""

    offset: int
    abort: bool


@dataclass(frozen=True, slots=True)
class RecordBatch:
    base_offset: int
    last_offset: int
    attributes: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    count: int
    payload: memoryview  # the records, compressed when codec is not NONE

    @property
    def codec(self) -> int:
        return self.attributes & _CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 create time, 1 log-append time (Spark's ``timestampType`` column)."""
        return 1 if self.attributes & _TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_MASK)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & _CONTROL_MASK)

    def records_bytes(self) -> bytes | memoryview:
        """The records, decompressed. Raises :class:`UndecodableBatch`."""
        return self.payload if self.codec == Codec.NONE else decompress(self.codec, self.payload)

    def columns(self) -> Columns:
        """Every record of the batch. Raises :class:`UndecodableBatch` (a codec or a record that
        cannot be read)."""
        data = self.records_bytes()
        try:
            return _parse(
                bytes(data),
                self.count,
                self.base_offset,
                self.first_timestamp,
                self.max_timestamp if self.timestamp_type else None,
            )
        except (IndexError, ValueError, UnicodeDecodeError) as exc:
            raise UndecodableBatch(
                self.codec,
                f"corrupt record in the batch at offset {self.base_offset}: {type(exc).__name__}: {exc}",
            ) from exc

    def markers(self) -> list[ControlMarker]:
        """A control batch's transaction markers (``ControlRecordType`` in each record's key)."""
        cols = self.columns()
        out = []
        for offset, key in zip(cols.offsets, cols.keys):
            kind = _CONTROL_KEY.unpack_from(key)[1] if key is not None and len(key) >= 4 else -1
            out.append(ControlMarker(offset, kind == 0))
        return out


def read_batches(data: bytes | memoryview | None) -> tuple[list[RecordBatch], bool]:
    """The complete batches in a Fetch response's records field, and whether bytes of a partial
    batch were left at its end."""
    if not data:
        return [], False
    view = memoryview(data)
    end = len(view)
    pos = 0
    batches = []
    while end - pos > _MAGIC_AT:
        magic = view[pos + _MAGIC_AT]
        if magic != 2:
            raise UndecodableBatch(
                None,
                f"the batch at offset {struct.unpack_from('>q', view, pos)[0]} has message "
                f"format v{magic}; only v2 is read (Kafka 4 dropped v0 and v1, KIP-724)",
            )
        if end - pos < BATCH_HEADER_BYTES:
            break
        (
            base_offset,
            length,
            _epoch,
            _magic,
            _crc,
            attributes,
            last_delta,
            first_ts,
            max_ts,
            producer_id,
            _producer_epoch,
            _base_sequence,
            count,
        ) = _HEADER.unpack_from(view, pos)
        size = _LOG_OVERHEAD + length
        if pos + size > end:
            break
        batches.append(
            RecordBatch(
                base_offset,
                base_offset + last_delta,
                attributes,
                first_ts,
                max_ts,
                producer_id,
                count,
                view[pos + BATCH_HEADER_BYTES : pos + size],
            )
        )
        pos += size
    return batches, pos < end


def _parse(buf: bytes, count: int, base_offset: int, first_ts: int, log_append_ts: int | None) -> Columns:
    """``DefaultRecord.readFrom`` for ``count`` records, into plain lists. (The data source reads
    large ranges with :mod:`..spark.arrow_records` instead; this serves the few records a lag
    check dates and small reads.)"""
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[tuple[tuple[str, bytes | None], ...]] = []
    pos = 0
    for _ in range(count):
        length, pos = read_varint(buf, pos)
        end = pos + length
        pos += 1  # attributes (int8, unused)
        timestamp_delta, pos = read_varint(buf, pos)
        timestamps.append(first_ts + timestamp_delta if log_append_ts is None else log_append_ts)
        offset_delta, pos = read_varint(buf, pos)
        offsets.append(base_offset + offset_delta)
        for column in (keys, values):
            n, pos = read_varint(buf, pos)
            column.append(None if n < 0 else buf[pos : pos + n])
            pos += max(n, 0)
        pos, record_headers = read_headers(buf, pos)
        headers.append(record_headers)
        if pos != end:
            raise ValueError(f"record at offset {offsets[-1]} ends at byte {pos}, its length says {end}")
    if pos != len(buf):
        raise ValueError(f"{len(buf) - pos} bytes left after the batch's {count} records")
    return Columns(offsets, timestamps, keys, values, headers)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The zig-zag varint at ``pos`` (``ByteUtils.readVarint``/``readVarlong``) and the position after it."""
    b = buf[pos]
    pos += 1
    v = b & 0x7F
    shift = 7
    while b & 0x80:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
    return (v >> 1) ^ -(v & 1), pos


def read_headers(buf: bytes, pos: int) -> tuple[int, tuple[tuple[str, bytes | None], ...]]:
    """A record's headers at ``pos`` (their count first): (the position after them, the pairs)."""
    count, pos = read_varint(buf, pos)
    if count < 0:
        raise ValueError(f"negative header count {count}")
    out = []
    for _ in range(count):
        n, pos = read_varint(buf, pos)
        if n < 0:
            raise ValueError("a header key is null (header keys are non-null strings)")
        key = buf[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = read_varint(buf, pos)
        if n < 0:
            value = None
        else:
            value = buf[pos : pos + n]
            pos += n
        out.append((key, value))
    return pos, tuple(out)
