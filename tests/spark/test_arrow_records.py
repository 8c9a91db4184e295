"""The data source's column-wise decoder (spark/arrow_records.py) gives exactly what the record-by-
record reader (client/batches.py) gives, on every codec, for the records Kafka allows: null and
empty keys and values, values either side of Arrow's 12-byte inline limit, headers with duplicate
keys and null values, 1 MiB values, negative timestamp deltas, log-append time, a batch the log
cleaner thinned; and refuses a corrupt record the same way."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_kgroups.client.batches import UndecodableBatch, read_batches
from airflow_provider_kgroups.spark import arrow_records
from airflow_provider_kgroups.spark.arrow_records import batches_to_arrow, page_to_arrow
from tests.support.batches import RECORDS
from tests.support.fakekafka.recordbatch import CODECS, encode_batch

EDGE = [
    (200, 1_700_000_000_000, b"k" * 12, b"v" * 12, ()),
    (201, 1_700_000_000_001, b"k" * 13, b"v" * 13, ()),
    (205, 1_699_000_000_000, None, b"", (("a", None), ("a", b"x" * 20))),
]  # 202-204 compacted away


def columns(batch) -> list[tuple]:
    ts = [int(t.timestamp() * 1000) for t in batch.column("timestamp").to_pylist()]
    headers = [
        None if h is None else tuple((x["key"], x["value"]) for x in h)
        for h in batch.column("headers").to_pylist()
    ]
    return list(
        zip(
            batch.column("offset").to_pylist(),
            ts,
            batch.column("key").to_pylist(),
            batch.column("value").to_pylist(),
            headers,
            batch.column("timestampType").to_pylist(),
        )
    )


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_column_wise_equals_record_by_record(codec):
    data = (
        encode_batch(100, RECORDS, codec=codec)
        + encode_batch(200, EDGE, codec=codec)
        + encode_batch(
            206, [(206, 5, b"t", b"log append", ())], codec=codec, log_append_time_ms=1_800_000_000_000
        )
    )
    batches, _ = read_batches(data)
    assert batches[1].count == 3 and batches[1].last_offset == 205  # thinned: fewer records than offsets
    for start, end in ((0, 1000), (101, 206), (103, 104), (300, 400)):
        got = batches_to_arrow("orders", 7, batches, start, end, include_headers=True)
        expected = [
            (o, ts, k, v, h or None, b.timestamp_type)
            for b in batches
            for o, ts, k, v, h in zip(*b.columns())
            if start <= o < end
        ]
        assert columns(got) == expected, (start, end)
        assert got.column("topic").to_pylist() == ["orders"] * len(expected)
        assert got.column("partition").to_pylist() == [7] * len(expected)
    plain = batches_to_arrow("orders", 7, batches, 0, 1000, include_headers=False)
    assert plain.schema.names == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]


def test_no_batches_is_an_empty_batch_of_the_schema():
    empty = batches_to_arrow("t", 0, [], 0, 10, include_headers=True)
    assert empty.num_rows == 0 and empty.schema.names[-1] == "headers"


def test_a_corrupt_record_is_refused_naming_the_codec():
    data = bytearray(encode_batch(0, RECORDS[:2]))
    data[61] += 2  # the first record claims one byte more than it has
    batches, _ = read_batches(bytes(data))
    with pytest.raises(UndecodableBatch, match="record batch could not be read: corrupt record"):
        batches_to_arrow("t", 0, batches, 0, 10, include_headers=False)
    lz4 = encode_batch(0, RECORDS[:1], codec="lz4", payload=b"\x04\x22\x4d\x18 broken frame")
    with pytest.raises(UndecodableBatch, match="lz4 record batch could not be decoded with cramjam"):
        batches_to_arrow("t", 0, read_batches(lz4)[0], 0, 10, include_headers=False)


@pytest.mark.parametrize("claimed", [1, 3])
def test_a_batch_its_records_do_not_fill_exactly_is_refused(claimed):
    """Kafka's DefaultRecordBatch.ensureNoneRemaining: bytes left after the batch's record count, or
    a count the bytes do not hold, is a corrupt batch, also when the batch after it is sound."""
    for codec in sorted(CODECS):
        data = bytearray(encode_batch(0, RECORDS[:2], codec=codec))
        data[57:61] = claimed.to_bytes(4, "big")  # the batch's record count (its records start at byte 61)
        batches, _ = read_batches(bytes(data) + encode_batch(2, RECORDS[2:3], codec=codec))
        assert [b.count for b in batches] == [claimed, 1]
        with pytest.raises(UndecodableBatch, match="corrupt record in the batches from offset 0"):
            batches_to_arrow("t", 0, batches, 0, 10, include_headers=False)
        with pytest.raises(UndecodableBatch, match="corrupt record in the batch at offset 0"):
            batches[0].columns()  # as the record-by-record reader


@pytest.mark.parametrize("bound", ["rows", "bytes"])
def test_a_page_is_yielded_in_bounded_groups_of_whole_batches(monkeypatch, bound):
    """page_to_arrow (what each task yields): whole record batches per Arrow batch, a new one when
    the next record batch would pass BATCH_ROWS records or BATCH_BYTES decompressed bytes (one
    larger record batch alone), and together exactly what one decode of the page gives."""
    monkeypatch.setattr(
        arrow_records, "BATCH_ROWS" if bound == "rows" else "BATCH_BYTES", 5 if bound == "rows" else 300
    )
    sizes = [2, 2, 1, 7, 3, 3]
    data, offset = b"", 0
    for size in sizes:
        data += encode_batch(
            offset,
            [(offset + i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * 60, ()) for i in range(size)],
            codec="zstd",
        )
        offset += size
    batches, _ = read_batches(data)
    got = list(page_to_arrow("t", 3, batches, 1, offset - 1, include_headers=False))
    whole = batches_to_arrow("t", 3, batches, 1, offset - 1, include_headers=False)
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches([whole]))
    groups = [[0, 1, 2], [3], [4], [5]] if bound == "rows" else [[0, 1], [2], [3], [4], [5]]
    starts = [sum(sizes[: g[0]]) for g in groups]
    assert [b.column("offset")[0].as_py() for b in got] == [max(1, s) for s in starts]
