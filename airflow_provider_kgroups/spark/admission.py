"""How much one micro-batch of the streaming ``kgroups`` source reads: the rules of Spark's Kafka
source (``KafkaMicroBatchStream.latestOffset``, ``rateLimit`` and ``delayBatch`` in
spark-sql-kafka-0-10), so that both split a backlog into the same micro-batches.

- ``maxOffsetsPerTrigger``: the limit is shared out over the partitions that have records, in
  proportion to each one's backlog; a share below one offset is rounded up (a small partition is
  never starved), any other share rounded down; never past the partition's end.
- ``minOffsetsPerTrigger``: a batch waits until that many offsets are there, or until
  ``maxTriggerDelay`` has passed since the last batch started.

Pure: no client, no Spark; the reader gives it offsets and a clock."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..client.results import TopicPartition

Offsets = Mapping[TopicPartition, int]


def rate_limit(limit: int, start: Offsets, until: Offsets, new_starts: Offsets) -> dict[TopicPartition, int]:
    """``until`` cut down to about ``limit`` offsets past ``start`` (``new_starts``: where partitions
    missing from ``start`` begin, their earliest offsets)."""
    sizes = {}
    for tp, end in until.items():
        begin = start.get(tp, new_starts.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(until)
    limited = {}
    for tp, end in until.items():
        if tp not in sizes:
            limited[tp] = end
            continue
        prorate = limit * (sizes[tp] / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        limited[tp] = min(end, start.get(tp, new_starts.get(tp, 0)) + share)
    return limited


@dataclass
class MinimumBatch:
    """``minOffsetsPerTrigger`` with ``maxTriggerDelay``: :meth:`wait` says whether to skip this
    trigger. As in Spark, the last trigger starts at time 0, so a query's first batch never waits."""

    min_offsets: int
    max_delay_ms: int
    last_trigger_ms: float

    def wait(self, start: Offsets, latest: Offsets, now_ms: float) -> bool:
        if now_ms - self.last_trigger_ms >= self.max_delay_ms:
            self.last_trigger_ms = now_ms
            return False
        available = sum(end - start.get(tp, 0) for tp, end in latest.items())
        if available < self.min_offsets:
            return True
        self.last_trigger_ms = now_ms
        return False
