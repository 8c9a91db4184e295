"""Record batches the client cannot decode, served by the fake cluster: what an lz4 topic looked
like to the client before it had the codec (issue 18: the gate opened for a group 3.6 h behind).

:func:`undecodable_batches` relabels every v2 batch the fake serves as lz4 (attributes codec
bits = 3, CRC32C signed again over attributes..end, as ``DefaultRecordBatch`` does) while its
bytes stay uncompressed records: no lz4 decoder can read them, with or without the library
installed, so the client's Fetch fails the partition (``cannot decode records``) and every
number that needs the record is *unknown*. It patches the fake's batch encoder for the test's
duration only (a ``monkeypatch``); the fake itself is left as it is.
"""

from __future__ import annotations

import struct

from kafka.record.util import calc_crc32c

_BATCH_HEADER = struct.Struct(">qi")  # base offset, batch length (bytes after this field)
_ATTRIBUTES_OFFSET, _CRC_OFFSET, _CODEC_MASK, LZ4 = 21, 17, 0x07, 3


def relabel_as_lz4(data: bytes) -> bytes:
    """Each batch in ``data`` marked lz4-compressed (its payload unchanged), signed again."""
    out = bytearray(data)
    position = 0
    while position + _BATCH_HEADER.size <= len(out):
        _, length = _BATCH_HEADER.unpack_from(out, position)
        end = position + _BATCH_HEADER.size + length
        attributes = struct.unpack_from(">h", out, position + _ATTRIBUTES_OFFSET)[0]
        struct.pack_into(">h", out, position + _ATTRIBUTES_OFFSET, (attributes & ~_CODEC_MASK) | LZ4)
        crc = calc_crc32c(memoryview(out)[position + _ATTRIBUTES_OFFSET : end])
        struct.pack_into(">I", out, position + _CRC_OFFSET, crc)
        position = end
    return bytes(out)


def undecodable_batches(monkeypatch) -> None:
    """From now on (until the test ends) every batch the fake cluster serves is unreadable lz4."""
    from tests.support.fakekafka.handlers import logs

    original = logs.build_record_batch
    monkeypatch.setattr(logs, "build_record_batch", lambda *a, **k: relabel_as_lz4(original(*a, **k)))
