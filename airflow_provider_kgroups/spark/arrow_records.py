"""Record batches straight to Arrow columns, vectorised with numpy: the data source's decoder.

:mod:`..client.batches` reads records one by one into Python lists, which is right for the few
records a lag check dates but, per record, several times what librdkafka spends (measured in
docs/performance.rst, "Benchmarks"). Here a page's batches are decompressed and joined into one
buffer, a short Python loop finds where each record starts (its length varint,
``DefaultRecord.readFrom``: one table look-up a record), and every other field is decoded for all
records at once with numpy at positions computed from those starts. Keys and values are never
copied into Python objects: the buffer is read as an Arrow ``binary`` array of every value and the
bytes after it, without a copy, and one Arrow ``take`` gathers the values into the ``binary``
column Spark reads. Headers are rare and read by :func:`..client.batches.read_headers`, for the
records that have any.

The result is exactly what :mod:`..client.batches` gives (tests/spark/test_arrow_records.py
compares the two on every codec and on odd records); a record that does not end where its
length says, or a batch its records do not fill exactly (Kafka's ``ensureNoneRemaining``),
raises :class:`~..client.batches.UndecodableBatch` as there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from ..client.batches import RecordBatch, UndecodableBatch, read_headers, read_varint

__all__ = ["arrow_schema", "batches_to_arrow", "page_to_arrow"]

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
#: Bounds of one Arrow batch (:func:`page_to_arrow`): a page is decoded in groups of whole record
#: batches of about this many records or decompressed bytes. Working sets this size stay in the
#: CPU's caches (a compressed page of small records decoded at once costs more CPU), and Spark's
#: side costs no more per record for batches up to this size but more for much larger ones
#: (measured in docs/performance.rst, "Benchmarks"; benchmarks/spark_floor.py).
BATCH_ROWS = 32_768
BATCH_BYTES = 4 << 20


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(("headers", HEADERS_TYPE))
    return pa.schema(fields)


def _skip_table() -> list[int]:
    """For the two bytes at a record's start (little-endian), how far the next record starts: its
    length varint (1 or 2 bytes, bodies up to 8 KiB) plus the length. Anything else (a longer
    varint, a negative length) is :data:`_ELSEWHERE`, which sends :func:`_length_positions` to
    the general walk."""
    b0, b1 = np.arange(256).reshape(1, 256), np.arange(256).reshape(256, 1)  # [b1, b0]: index b0 | b1 << 8
    one, two = b0 < 0x80, (b0 >= 0x80) & (b1 < 0x80)
    v = np.where(one, b0, (b0 & 0x7F) | (b1 << 7))
    skip = np.where(one, 1, 2) + (v >> 1)
    return np.where((one | two) & (v & 1 == 0), skip, _ELSEWHERE).ravel().tolist()


_ELSEWHERE = 1 << 62  # past any buffer: the next read raises IndexError
_SKIP = _skip_table()


def _length_positions(
    buf: bytes, counts: Sequence[int], firsts: Sequence[int], stops: Sequence[int]
) -> list[int]:
    """Where each record's length varint is, batch by batch; every batch's records must fill it
    exactly (Kafka's ``ensureNoneRemaining``). The one Python loop of the decoder: one table
    look-up a record; a record of 8 KiB or more, or one that does not fit, takes the general walk."""
    table = _SKIP
    positions: list[int] = []
    add = positions.append
    try:
        for first, count, stop in zip(firsts, counts, stops):
            pos = first
            for _ in range(count):
                add(pos)
                pos += table[buf[pos] | (buf[pos + 1] << 8)]
            if pos != stop:
                raise IndexError
    except IndexError:
        return _length_positions_general(buf, counts, firsts, stops)
    return positions


def _length_positions_general(
    buf: bytes, counts: Sequence[int], firsts: Sequence[int], stops: Sequence[int]
) -> list[int]:
    """:func:`_length_positions` for any varint; raises ValueError or IndexError on a record
    that does not fit its batch."""
    positions: list[int] = []
    for first, count, stop in zip(firsts, counts, stops):
        pos = first
        for _ in range(count):
            positions.append(pos)
            length, pos = read_varint(buf, pos)
            if length < 0:
                raise ValueError(f"a record of negative length {length} at byte {pos}")
            pos += length
        if pos != stop:
            raise ValueError(
                f"the batch's {count} records end at byte {pos - first}, the batch at {stop - first}"
            )
    return positions


def _varints(data: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray | int]:
    """The zig-zag varints starting at positions ``at``: (values, sizes in bytes; 1 when every
    one is a single byte, the common case of small deltas and keys)."""
    b = data[at]
    if not (b >= 0x80).any():
        value = b.astype(np.int64)
        return (value >> 1) ^ -(value & 1), 1
    last = len(data) - 1
    b = b.astype(np.int64)
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


def _binary(buffer: pa.Buffer, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """``binary`` values at ``starts`` of ``lengths`` bytes (-1: null), gathered by one Arrow take:
    the buffer is first read as 2n values without a copy, each value followed by the bytes up to
    the next one (the values lie in buffer order), and the even ones are taken."""
    n = len(starts)
    valid = lengths >= 0
    large = len(buffer) >= 1 << 31
    offsets = np.empty(2 * n + 1, np.int64 if large else np.int32)
    offsets[0 : 2 * n : 2] = starts
    offsets[1 : 2 * n : 2] = starts + np.where(valid, lengths, 0)
    offsets[2 * n] = offsets[2 * n - 1] if n else 0
    validity = None
    if not valid.all():
        every = np.ones(2 * n, bool)
        every[0::2] = valid
        validity = pa.py_buffer(np.packbits(every, bitorder="little"))
    spans = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(), 2 * n, [validity, pa.py_buffer(offsets), buffer]
    )
    spans.validate(full=True)  # offsets in order and inside the buffer, or ArrowInvalid (never a bad read)
    taken = spans.take(_numbers(np.arange(0, 2 * n, 2), pa.int64()))
    return taken.cast(pa.binary()) if large else taken


def _numbers(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array of ``type_`` (32 or 64 bits wide), no nulls. Not ``pa.array``:
    its first call in a process imports pandas, when installed, to ask whether ``values`` is a
    pandas object, and every new Python worker of Spark would pay that import."""
    wide = np.ascontiguousarray(values, np.int32 if type_.bit_width == 32 else np.int64)
    return pa.Array.from_buffers(type_, len(wide), [None, pa.py_buffer(wide)])


def _constant_string(text: str, n: int) -> pa.Array:
    encoded = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * n)])


def _records_bytes(batch: RecordBatch) -> bytes | memoryview:
    """The batch's records, uncompressed; an uncompressed batch's are a view of the response, not
    a copy (``b"".join`` copies them once into the buffer the records are read from)."""
    try:
        return batch.records_bytes()
    except UndecodableBatch as exc:
        raise UndecodableBatch(exc.codec, f"the batch at offset {batch.base_offset}: {exc.detail}") from exc


def page_to_arrow(
    topic: str, partition: int, batches: Sequence[RecordBatch], start: int, end: int, include_headers: bool
) -> Iterator[pa.RecordBatch]:
    """The records of one page's ``batches`` with ``start <= offset < end``, as Arrow batches of
    whole record batches, each about :data:`BATCH_ROWS` records or :data:`BATCH_BYTES` (or one
    record batch, if larger)."""
    group: list[RecordBatch] = []
    payloads: list[bytes | memoryview] = []
    rows = size = 0
    for batch in batches:
        payload = _records_bytes(batch)
        if group and (rows + batch.count > BATCH_ROWS or size + len(payload) > BATCH_BYTES):
            yield _to_arrow(topic, partition, group, payloads, start, end, include_headers)
            group, payloads, rows, size = [], [], 0, 0
        group.append(batch)
        payloads.append(payload)
        rows += batch.count
        size += len(payload)
    if group:
        yield _to_arrow(topic, partition, group, payloads, start, end, include_headers)


def batches_to_arrow(
    topic: str, partition: int, batches: Sequence[RecordBatch], start: int, end: int, include_headers: bool
) -> pa.RecordBatch:
    """The records of ``batches`` with ``start <= offset < end``, in the data source's schema."""
    return _to_arrow(
        topic, partition, batches, [_records_bytes(b) for b in batches], start, end, include_headers
    )


class _Records(NamedTuple):
    """Per record of a page's batches (one entry each, in order): its batch, offset and time, and
    where its key, value and headers are in the joined buffer (a length of -1: null)."""

    which: np.ndarray
    offsets: np.ndarray
    timestamps: np.ndarray
    key_at: np.ndarray
    key_len: np.ndarray
    value_at: np.ndarray
    value_len: np.ndarray
    headers_at: np.ndarray
    no_headers: np.ndarray
    ends: np.ndarray


def _to_arrow(
    topic: str,
    partition: int,
    batches: Sequence[RecordBatch],
    payloads: Sequence[bytes | memoryview],
    start: int,
    end: int,
    include_headers: bool,
) -> pa.RecordBatch:
    buf = b"".join(payloads)
    records = _locate(buf, batches, payloads)
    keep = (records.offsets >= start) & (records.offsets < end)
    if not keep.all():
        records = _Records(*(column[keep] for column in records))
    columns = _columns(topic, partition, buf, batches, records)
    if include_headers:
        columns.append(
            _headers_column(buf, records.headers_at, records.no_headers, records.ends, batches, records.which)
        )
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


def _locate(buf: bytes, batches: Sequence[RecordBatch], payloads: Sequence[bytes | memoryview]) -> _Records:
    """Every record's fields, decoded for all records at once from their starts; a record whose
    fields do not end where its length says raises :class:`UndecodableBatch`."""
    stops = np.cumsum([len(p) for p in payloads]).tolist()
    firsts = [0] + stops[:-1]
    counts = [b.count for b in batches]
    try:
        data = np.frombuffer(buf, np.uint8)
        at = np.array(_length_positions(buf, counts, firsts, stops), np.int64)
        length, n0 = _varints(data, at)
        starts = at + n0  # each record's body: attributes first
        ends = starts + length
        which = np.repeat(np.arange(len(batches)), counts)
        ts_delta, n1 = _varints(data, starts + 1)  # + 1: the record's attributes byte
        offset_delta, n2 = _varints(data, starts + 1 + n1)
        key_at = starts + 1 + n1 + n2
        key_len, n3 = _varints(data, key_at)
        key_at += n3
        value_len, n4 = _varints(data, key_at + np.maximum(key_len, 0))
        value_at = key_at + np.maximum(key_len, 0) + n4
        headers_at = value_at + np.maximum(value_len, 0)
        if not (headers_at < ends).all():
            raise ValueError("a record's fields run past its length")
        no_headers = data[headers_at] == 0
        if not np.array_equal(headers_at[no_headers] + 1, ends[no_headers]):
            raise ValueError("a record does not end where its length says")
    except (IndexError, ValueError) as exc:
        codec = batches[0].codec if batches else None
        raise UndecodableBatch(
            codec,
            f"corrupt record in the batches from offset {batches[0].base_offset}: "
            f"{type(exc).__name__}: {exc}",
        ) from exc
    base = np.array([b.base_offset for b in batches], np.int64)
    log_append = np.array([b.timestamp_type == 1 for b in batches], bool)[which]
    timestamps = np.where(
        log_append,
        np.array([b.max_timestamp for b in batches], np.int64)[which],
        np.array([b.first_timestamp for b in batches], np.int64)[which] + ts_delta,
    )
    offsets = base[which] + offset_delta
    return _Records(
        which, offsets, timestamps, key_at, key_len, value_at, value_len, headers_at, no_headers, ends
    )


def _columns(
    topic: str, partition: int, buf: bytes, batches: Sequence[RecordBatch], records: _Records
) -> list[pa.Array]:
    """The data source's columns but the headers, for ``records``."""
    buffer = pa.py_buffer(buf)
    n = len(records.offsets)
    try:
        keys = _binary(buffer, records.key_at, records.key_len)
        values = _binary(buffer, records.value_at, records.value_len)
    except pa.ArrowInvalid as exc:  # a corrupt length the checks above let through: never read outside
        raise UndecodableBatch(
            batches[0].codec, f"corrupt record in the batches from offset {batches[0].base_offset}: {exc}"
        ) from exc
    return [
        keys,
        values,
        _constant_string(topic, n),
        _numbers(np.full(n, partition), pa.int32()),
        _numbers(records.offsets, pa.int64()),
        _numbers(records.timestamps * 1000, pa.timestamp("us", tz="UTC")),
        _numbers(
            np.array([b.timestamp_type for b in batches], np.int32)[records.which]
            if n
            else np.zeros(0, np.int32),
            pa.int32(),
        ),
    ]


def _headers_column(
    buf: bytes,
    headers_at: np.ndarray,
    no_headers: np.ndarray,
    ends: np.ndarray,
    batches: Sequence[RecordBatch],
    which: np.ndarray,
) -> pa.Array:
    """NULL for a record without headers (KafkaRecordToRowConverter), else its (key, value) pairs."""
    out: list = [None] * len(headers_at)
    for i in np.flatnonzero(~no_headers).tolist():
        try:
            pos, pairs = read_headers(buf, int(headers_at[i]))
            if pos != ends[i]:
                raise ValueError("a record does not end where its length says")
        except (IndexError, ValueError, UnicodeDecodeError) as exc:
            batch = batches[int(which[i])]
            raise UndecodableBatch(
                batch.codec,
                f"corrupt headers in the batch at offset {batch.base_offset}: {type(exc).__name__}: {exc}",
            ) from exc
        out[i] = [{"key": k, "value": v} for k, v in pairs]
    return pa.array(out, HEADERS_TYPE)
