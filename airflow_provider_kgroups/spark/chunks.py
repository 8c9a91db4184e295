"""The Spark tasks of a read: offset ranges cut into chunks as spark-sql-kafka-0-10 cuts them
(``KafkaOffsetRangeCalculator``), for the batch and the streaming ``kgroups`` source alike."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..client.results import TopicPartition


@dataclass(frozen=True)
class OffsetChunk:
    """One Spark partition: ``[start, end)`` of one Kafka partition."""

    topic: str
    partition: int
    start: int
    end: int


def split_ranges(
    ranges: Mapping[TopicPartition, tuple[int, int]], per_chunk: int, min_partitions: int | None = None
) -> list[OffsetChunk]:
    """Resolved ranges -> chunks, planned as spark-sql-kafka-0-10's ``KafkaOffsetRangeCalculator``
    plans its tasks, so both sources run as many: empty ranges give none; a range of more than
    ``per_chunk`` offsets is cut into ``ceil(size / per_chunk)`` near-equal parts; then, with
    ``min_partitions`` above the number of chunks, a chunk whose share of all offsets rounds to
    one part stays whole (with every chunk of its partition) and the others share the remaining
    parts in proportion to their size."""
    chunks = []
    for tp in sorted(ranges):
        start, end = ranges[tp]
        if end > start:
            chunks += _divide(OffsetChunk(tp.topic, tp.partition, start, end), -(-(end - start) // per_chunk))
    if min_partitions is None or len(chunks) >= min_partitions:
        return chunks

    def parts_of(size: int, total: int, parts: int) -> int:
        return max(math.floor(size / total * parts + 0.5), 1)  # Scala's math.round: half up

    total = sum(c.end - c.start for c in chunks)
    whole = [c for c in chunks if parts_of(c.end - c.start, total, min_partitions) == 1]
    whole_partitions = {(c.topic, c.partition) for c in whole}
    split_total = total - sum(c.end - c.start for c in whole)
    split_parts = max(min_partitions - len(whole), 1)
    return [
        piece
        for c in chunks
        for piece in _divide(
            c,
            1
            if (c.topic, c.partition) in whole_partitions
            else parts_of(c.end - c.start, split_total, split_parts),
        )
    ]


def _divide(chunk: OffsetChunk, parts: int) -> list[OffsetChunk]:
    """``chunk`` in ``parts`` near-equal pieces, the last taking the rest of the division."""
    pieces, remaining, start = [], chunk.end - chunk.start, chunk.start
    for part in range(parts):
        size = remaining // (parts - part)
        remaining -= size
        if size > 0:
            pieces.append(OffsetChunk(chunk.topic, chunk.partition, start, start + size))
        start += size
    return pieces
