"""Record batches straight to Arrow columns, vectorised with numpy: the data source's decoder.

:mod:`..client.batches` reads records one by one into Python lists, which is right for the few
records a lag check dates but costs ~2 us a record: several times what librdkafka spends. Here a
page's batches are decompressed and joined into one buffer, a short Python loop finds where each
record starts (its length varint; ``DefaultRecord.readFrom``), and every other field is decoded
for all records at once with numpy at positions computed from those starts. Keys and values are
never copied into Python objects: they become Arrow ``binary_view`` arrays pointing into the
buffer (length, prefix, offset; values of up to 12 bytes inline, as the Arrow format says),
then one Arrow cast lays them out as the ``binary`` Spark reads. Headers are rare and read by
:func:`..client.batches.read_headers`, for the records that have any.

The result is exactly what :mod:`..client.batches` gives (tests/spark/test_arrow_records.py
compares the two on every codec and on odd records); a record that does not end where its
length says raises :class:`~..client.batches.UndecodableBatch` as there.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from ..client.batches import RecordBatch, UndecodableBatch, read_headers, read_varint

__all__ = ["arrow_schema", "batches_to_arrow"]

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
_INLINE = 12  # Arrow binary_view: values up to 12 bytes live in the view itself


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
              ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())]
    if include_headers:
        fields.append(("headers", HEADERS_TYPE))
    return pa.schema(fields)


def _record_starts(buf: bytes, counts: Sequence[int], firsts: Sequence[int]) -> tuple[list[int], list[int]]:
    """Where each record's body starts (after its length varint) and ends, batch by batch. The one
    Python loop of the decoder: a length of 1 or 2 varint bytes (records up to 8 KiB) is read
    without the general loop."""
    starts: list[int] = []
    ends: list[int] = []
    start, end = starts.append, ends.append
    for first, count in zip(firsts, counts):
        pos = first
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                pos += 1
                v = b
            elif buf[pos + 1] < 0x80:
                v = (b & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                length, pos = read_varint(buf, pos)
                start(pos)
                pos += length
                end(pos)
                continue
            start(pos)
            pos += (v >> 1) ^ -(v & 1)
            end(pos)
    return starts, ends


def _varints(data: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The zig-zag varints starting at positions ``at``: (values, sizes in bytes)."""
    last = len(data) - 1
    b = data[at].astype(np.int64)
    value = b & 0x7F
    size = np.ones(len(at), np.int64)
    more = b >= 0x80
    shift = 7
    while more.any():
        b = data[np.minimum(at + size, last)].astype(np.int64)
        value |= np.where(more, (b & 0x7F) << shift, 0)
        size += more
        more &= b >= 0x80
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")
    return (value >> 1) ^ -(value & 1), size


def _binary(data: np.ndarray, buffer: pa.Buffer, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """``binary`` values at ``starts`` of ``lengths`` bytes (-1: null), through a binary_view."""
    n = len(starts)
    valid = lengths >= 0
    size = np.where(valid, lengths, 0)
    views = np.zeros((n, 16), np.uint8)
    views[:, 0:4] = size.astype("<i4").view(np.uint8).reshape(n, 4)
    last = max(len(data) - 1, 0)
    head = data[np.minimum(starts[:, None] + np.arange(_INLINE), last)]  # the first 12 bytes (or fewer)
    short = size <= _INLINE
    head[short] *= (np.arange(_INLINE) < size[short, None]).astype(np.uint8)  # inline values are zero-padded
    views[short, 4:16] = head[short]
    views[~short, 4:8] = head[~short, :4]
    views[~short, 12:16] = starts[~short].astype("<i4").view(np.uint8).reshape(-1, 4)
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    view_array = pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), buffer],
                                       null_count=int(n - valid.sum()))
    return view_array.cast(pa.binary())


def _constant_string(text: str, n: int) -> pa.Array:
    encoded = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * n)])


def _records_bytes(batch: RecordBatch) -> bytes:
    try:
        return bytes(batch.records_bytes())
    except UndecodableBatch as exc:
        raise UndecodableBatch(exc.codec, f"the batch at offset {batch.base_offset}: {exc.detail}") from exc


def batches_to_arrow(topic: str, partition: int, batches: Sequence[RecordBatch], start: int, end: int,
                     include_headers: bool) -> pa.RecordBatch:
    """The records of ``batches`` with ``start <= offset < end``, in the data source's schema."""
    payloads = [_records_bytes(b) for b in batches]
    firsts = np.cumsum([0] + [len(p) for p in payloads[:-1]]).tolist()
    buf = b"".join(payloads)
    counts = [b.count for b in batches]
    try:
        starts_list, ends_list = _record_starts(buf, counts, firsts)
        data = np.frombuffer(buf, np.uint8)
        starts, ends = np.array(starts_list, np.int64), np.array(ends_list, np.int64)
        if len(starts) and ends[-1] > len(buf):
            raise ValueError("the last record runs past its batch")
        which = np.repeat(np.arange(len(batches)), counts)
        ts_delta, n1 = _varints(data, starts + 1)  # + 1: the record's attributes byte
        offset_delta, n2 = _varints(data, starts + 1 + n1)
        key_at = starts + 1 + n1 + n2
        key_len, n3 = _varints(data, key_at)
        key_at += n3
        value_len, n4 = _varints(data, key_at + np.maximum(key_len, 0))
        value_at = key_at + np.maximum(key_len, 0) + n4
        headers_at = value_at + np.maximum(value_len, 0)
        no_headers = data[np.minimum(headers_at, max(len(data) - 1, 0))] == 0
        if len(starts) and not np.array_equal(headers_at[no_headers] + 1, ends[no_headers]):
            raise ValueError("a record does not end where its length says")
    except (IndexError, ValueError) as exc:
        codec = batches[0].codec if batches else None
        raise UndecodableBatch(codec, f"corrupt record in the batches from offset {batches[0].base_offset}: "
                                      f"{type(exc).__name__}: {exc}") from exc
    base = np.array([b.base_offset for b in batches], np.int64)
    offsets = base[which] + offset_delta
    log_append = np.array([b.timestamp_type == 1 for b in batches], bool)[which]
    timestamps = np.where(log_append, np.array([b.max_timestamp for b in batches], np.int64)[which],
                          np.array([b.first_timestamp for b in batches], np.int64)[which] + ts_delta)
    keep = (offsets >= start) & (offsets < end)
    if not keep.all():
        offsets, timestamps, which, key_at, key_len, value_at, value_len, headers_at, no_headers, ends = (
            column[keep] for column in (offsets, timestamps, which, key_at, key_len, value_at, value_len,
                                        headers_at, no_headers, ends))
    buffer = pa.py_buffer(buf)
    n = len(offsets)
    columns = [_binary(data, buffer, key_at, key_len), _binary(data, buffer, value_at, value_len),
               _constant_string(topic, n), pa.array(np.full(n, partition, np.int32)), pa.array(offsets),
               pa.array(timestamps * 1000, pa.timestamp("us", tz="UTC")),
               pa.array(np.array([b.timestamp_type for b in batches], np.int32)[which] if n else
                        np.zeros(0, np.int32))]
    if include_headers:
        columns.append(_headers_column(buf, headers_at, no_headers, ends, batches, which))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


def _headers_column(buf: bytes, headers_at: np.ndarray, no_headers: np.ndarray, ends: np.ndarray,
                    batches: Sequence[RecordBatch], which: np.ndarray) -> pa.Array:
    """NULL for a record without headers (KafkaRecordToRowConverter), else its (key, value) pairs."""
    out: list = [None] * len(headers_at)
    for i in np.flatnonzero(~no_headers).tolist():
        try:
            pos, pairs = read_headers(buf, int(headers_at[i]))
            if pos != ends[i]:
                raise ValueError("a record does not end where its length says")
        except (IndexError, ValueError, UnicodeDecodeError) as exc:
            batch = batches[int(which[i])]
            raise UndecodableBatch(batch.codec, f"corrupt headers in the batch at offset {batch.base_offset}: "
                                                f"{type(exc).__name__}: {exc}") from exc
        out[i] = [{"key": k, "value": v} for k, v in pairs]
    return pa.array(out, HEADERS_TYPE)
