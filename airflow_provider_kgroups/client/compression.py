"""Record-batch codecs: the payload of a compressed record batch back to its records' bytes.

Bits 0-2 of a v2 batch's attributes name the codec (Kafka's ``CompressionType``); everything
after the 61-byte header is then one compressed block. How Kafka's Java classes read each
(``org.apache.kafka.common.compress``, Kafka 4.x), and what this module does:

* gzip (1) - ``GzipCompression.wrapForInput``: a ``GZIPInputStream``, which reads concatenated
  members. The standard library's :func:`gzip.decompress` does the same.
* snappy (2) - ``SnappyCompression.wrapForInput``: xerial's ``SnappyInputStream``. Kafka's Java
  producer writes xerial's framing (a 16-byte header: ``0x82 "SNAPPY" 0x00``, version, minimum
  compatible version; then blocks of a big-endian int32 length and a raw snappy block; a header
  may start again where a block would, for concatenated streams). Without that header
  ``SnappyInputStream.readHeader`` reads the whole payload as one raw snappy block, and so do
  we: some clients (and old librdkafka builds) write raw snappy.
* lz4 (3) - ``Lz4BlockInputStream``: the LZ4 frame format (magic ``0x184D2204``, independent
  blocks, an uncompressed block flagged by the high bit of its size, optional content size and
  checksums). Magic v2 batches always carry the correct header checksum (the broken one of
  ``KafkaLZ4BlockOutputStream`` before 0.10 only ever appears in v0 message sets).
* zstd (4) - ``ZstdCompression.wrapForInput``: zstd-jni's ``ZstdInputStreamNoFinalizer``, which
  reads every frame and needs no content size in the frame header (librdkafka and the Java
  producer stream, so the size is usually absent).

One library for snappy, lz4 and zstd, chosen on purpose: ``cramjam`` (Rust bindings, wheels for
every platform, maintained, used by fastparquet and aiokafka for exactly this). kafka-python's
``kafka.codec`` would need three (python-snappy, lz4, zstandard), imports all of them when
``kafka.record`` is first imported, and this client no longer reads records through it. gzip
needs nothing beyond the standard library. ``cramjam`` is imported on the first batch that needs
it, so a CLI call or a lag check that never meets a compressed batch does not pay for it.

What kafka-python 3.0.12's ``kafka.codec`` would have done, checked against the above: its
``ZSTD_MAX_OUTPUT_SIZE`` (1 MiB) is declared but no longer used (``zstd_decode`` reads every frame
through a stream reader, so a batch of 1 MB records is not cut); ``snappy_decode`` detects xerial
framing by the magic alone, as ``SnappyInputStream`` does, but reads a second stream header as a
block length; lz4 goes through ``lz4.frame``. Sound enough, but three libraries loaded up front.

A payload that cannot be decoded raises :class:`UndecodableBatch` naming the codec and the
library; the Fetch handlers turn that into a per-partition Failure (``CLIENT_UNDECODABLE``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import IntEnum
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

__all__ = ["Codec", "LIBRARIES", "UndecodableBatch", "decompress", "xerial_unframe"]


class Codec(IntEnum):
    """Kafka's ``CompressionType`` ids (record batch attributes, bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


#: codec -> the library that decodes it here (named in every failure)
LIBRARIES = {
    Codec.GZIP: "gzip (Python standard library)",
    Codec.SNAPPY: "cramjam",
    Codec.LZ4: "cramjam",
    Codec.ZSTD: "cramjam",
}

#: xerial's SnappyCodec.MAGIC_HEADER; the full header adds two big-endian int32 (version, compatible)
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_BYTES = 16
_BLOCK_LENGTH = struct.Struct(">i")


class UndecodableBatch(Exception):
    """A record batch's payload could not be decompressed (unknown codec, missing library, or
    bytes that are not what the codec says)."""

    def __init__(self, codec: int | None, detail: str) -> None:
        self.codec = codec
        member = Codec(codec) if codec is not None and codec in Codec._value2member_map_ else None
        known = member is not None
        self.codec_name = (
            member.name.lower() if member is not None else ("unknown" if codec is None else f"id {codec}")
        )
        self.library = LIBRARIES.get(member, "none") if member is not None else "none"
        self.detail = detail
        what = (
            f"{self.codec_name} record batch could not be decoded with {self.library}"
            if known and codec
            else "record batch could not be read"
            if codec in (None, Codec.NONE)
            else f"record batch with compression codec id {codec} could not be decoded"
        )
        super().__init__(f"{what}: {detail}")


def _cramjam() -> ModuleType:
    try:
        import cramjam
    except ImportError as exc:  # a broken install: it is a dependency of the base package
        raise ImportError(
            "the cramjam library is missing: reinstall airflow-provider-kgroups "
            "(cramjam decodes snappy, lz4 and zstd record batches)"
        ) from exc
    return cramjam


def xerial_unframe(payload: bytes | memoryview, raw_block: Callable[[memoryview], Buffer]) -> bytes:
    """The bytes of a xerial-framed snappy stream (``SnappyInputStream.hasNextChunk``), each
    block decoded with ``raw_block``; a payload without the header is one raw snappy block."""
    view = memoryview(payload)
    if len(view) < XERIAL_HEADER_BYTES or bytes(view[:8]) != XERIAL_MAGIC:
        return bytes(raw_block(view))
    out = []
    pos, end = XERIAL_HEADER_BYTES, len(view)
    while pos < end:
        if end - pos >= 8 and bytes(view[pos : pos + 8]) == XERIAL_MAGIC:  # a concatenated stream
            pos += XERIAL_HEADER_BYTES
            continue
        if end - pos < 4:
            raise ValueError(f"xerial snappy block length cut off at byte {pos} of {end}")
        (length,) = _BLOCK_LENGTH.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise ValueError(
                f"xerial snappy block of {length} bytes at byte {pos} runs past the payload ({end})"
            )
        out.append(bytes(raw_block(view[pos : pos + length])))
        pos += length
    return b"".join(out)


def decompress(codec: int, payload: bytes | memoryview) -> bytes:
    """The uncompressed records of one batch. Raises :class:`UndecodableBatch`."""
    try:
        if codec == Codec.GZIP:
            import gzip

            return gzip.decompress(payload)
        if codec == Codec.SNAPPY:
            return xerial_unframe(payload, _cramjam().snappy.decompress_raw)
        if codec == Codec.LZ4:
            return bytes(_cramjam().lz4.decompress(payload))
        if codec == Codec.ZSTD:
            return bytes(_cramjam().zstd.decompress(payload))
    except UndecodableBatch:
        raise
    except Exception as exc:
        raise UndecodableBatch(codec, f"{type(exc).__name__}: {exc}") from exc
    raise UndecodableBatch(codec, "not a compression type Kafka defines (CompressionType: 0-4)")
