"""Record batches for tests: records with every column shape (``RECORDS``), and a v2 batch built
by kafka-python's ``DefaultRecordBatchBuilder`` (an encoder independent of ours and the fake's)."""

from __future__ import annotations

import struct

from kafka.record.default_records import DefaultRecordBatchBuilder

HEADERS = (("trace", b"1"), ("trace", b"2"), ("empty", b""), ("null", None))  # duplicate keys, a null value
RECORDS = [  # (offset, timestamp, key, value, headers)
    (100, 1_700_000_000_000, b"k", b"v", ()),
    (101, 1_700_000_000_005, None, b"null key", HEADERS),
    (102, 1_699_999_999_000, b"", None, ()),  # empty key, null value, an earlier timestamp (negative delta)
    (103, 1_700_000_000_007, b"big", bytes(range(256)) * 4096, (("\u00e9t\u00e9", b"utf-8 key"),)),  # 1 MiB
]
#: control record types (ControlRecordType): a transaction's end
ABORT, COMMIT = 0, 1


def batch(
    base: int, offsets: list[int], *, ts: int = 1000, producer_id: int = -1, control: int | None = None
) -> bytes:
    """One v2 batch with records at ``offsets`` (timestamp ts + offset); a control batch when
    ``control`` is ABORT/COMMIT; transactional when ``producer_id`` >= 0."""
    transactional = producer_id >= 0
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=0 if transactional else -1,
        base_sequence=0 if transactional else -1,
        batch_size=1 << 20,
    )
    for offset in offsets:
        key = struct.pack(">hh", 0, control) if control is not None else b"k"
        builder.append(offset - base, timestamp=ts + offset, key=key, value=b"v", headers=[])
    data = builder.build()
    struct.pack_into(">q", data, 0, base)
    if control is not None:
        attributes = struct.unpack_from(">h", data, 21)[0] | 0x20
        struct.pack_into(">h", data, 21, attributes)
    return bytes(data)
