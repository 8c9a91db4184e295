"""Fetch, bounded: the timestamp of the record at (or first after) given offsets.

One request per partition leader carrying all its partitions, no fetch session
(``session_epoch=-1``), ``max_wait_ms=1`` with ``min_bytes=1`` (a broker that has data
answers at once; 0 would be the natural choice, but Tansu 0.6.0 answers ``max_wait_ms=0``
with no partitions at all), and a small byte budget per partition.

Several offsets on one partition (several groups reading it) are read from one page: the
fetch starts at the lowest offset and every asked offset the returned records cover is
answered from them. Offsets past the page are left for the next page, which the client
asks for with another request per leader (paging, not a retry). A first batch larger than
the budget comes back truncated (KIP-74); that partition is asked again with four times
the budget, up to a ceiling, instead of reading megabytes for every partition up front.

What counts as "the record at the offset" follows what a consumer would read next: control
batches (transaction markers) and, with ``read_committed``, aborted transactional batches are
skipped, and skipping them is not a gap. Missing offsets that are not explained that way
(compaction removed the records) make the answer :attr:`RecordPosition.AFTER_GAP`.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable

from kafka.record import MemoryRecords

from ..driver import Outcome, RequestPlan
from ..errors import CLIENT_UNSUPPORTED, REFRESH_LEADER, ErrorCode, Failure
from ..lookup import LeaderLookup
from ..protocol import FetchRequest
from ..results import TopicPartition
from .base import Handler, Notes
from .common import missing_from_response
from .list_offsets import READ_COMMITTED

MIN_FETCH_VERSION = 4  # isolation level and record format v2
DEFAULT_PARTITION_BYTES = 64 * 1024
MAX_PARTITION_BYTES = 16 * 1024 * 1024
FETCH_MAX_WAIT_MS = 1
_LOG_APPEND_TIME = 1


class RecordPosition(str, Enum):
    AT_OFFSET = "at_offset"  # the record at the offset (or the first after markers/aborted records)
    AFTER_GAP = "after_gap"  # the record at the offset is gone (compacted): the next surviving record
    OUT_OF_RANGE = "out_of_range"  # the offset is below the log start (deleted) or past the log end
    AT_LOG_END = "at_log_end"  # nothing to read at or after the offset (yet)


@dataclass(frozen=True, slots=True)
class RecordTimestamp:
    """What a bounded Fetch found at ``requested_offset``."""

    requested_offset: int
    position: RecordPosition
    offset: int | None = None  # the record found, if any
    timestamp_ms: int | None = None
    log_append_time: bool = False  # the timestamp was set by the broker, not the producer
    high_watermark: int | None = None
    log_start: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"requested_offset": self.requested_offset, "position": self.position.value, "offset": self.offset,
                "timestamp_ms": self.timestamp_ms, "log_append_time": self.log_append_time,
                "high_watermark": self.high_watermark, "log_start": self.log_start}


class _Truncated(Exception):
    """The partition's first batch did not fit in the byte budget."""


@dataclass(frozen=True, slots=True)
class ReadableRecord:
    """A record a consumer would read, and from which offset on it is the next one to read
    without a gap (``clean_from`` < ``offset`` when markers or aborted records precede it)."""

    offset: int
    timestamp_ms: int | None
    log_append_time: bool
    clean_from: int


class BatchKind(Enum):
    DATA = "data"
    CONTROL = "control"  # transaction markers: never returned to a consumer
    ABORTED = "aborted"  # records of an aborted transaction (only when their aborts were given)


class PageBatches:
    """The batches of one fetched page, each with what a consumer makes of it. With
    ``aborted`` (the response's aborted transactions, for read_committed), transactional
    batches of a producer between its abort entry and its abort marker are ABORTED.
    After iterating, :attr:`truncated` tells whether bytes of a partial batch were left."""

    def __init__(self, records: bytes | None, aborted: Iterable | None = None) -> None:
        self._memory = MemoryRecords(bytes(records)) if records else None
        self._aborted = aborted

    def __iter__(self):
        if self._memory is None:
            return
        memory = self._memory
        pending_aborts = sorted((a.first_offset, a.producer_id) for a in (self._aborted or ()))
        aborted_producers: set[int] = set()
        while memory.has_next():
            batch = memory.next_batch()
            last = getattr(batch, "last_offset", None)
            while pending_aborts and last is not None and pending_aborts[0][0] <= last:
                aborted_producers.add(heapq.heappop(pending_aborts)[1])
            producer = getattr(batch, "producer_id", -1)
            if getattr(batch, "is_control_batch", False):
                for marker in batch:
                    if getattr(marker, "abort", False):
                        aborted_producers.discard(producer)
                yield BatchKind.CONTROL, batch
            elif getattr(batch, "is_transactional", False) and producer in aborted_producers:
                yield BatchKind.ABORTED, batch
            else:
                yield BatchKind.DATA, batch

    @property
    def truncated(self) -> bool:
        return self._memory is not None and self._memory.valid_bytes() < self._memory.size_in_bytes()


def scan_page(records: bytes | None, aborted: Iterable | None = None) -> tuple[list[ReadableRecord], int | None]:
    """The readable records of one fetched page, in offset order, and the offset after the
    last complete batch (None when there was none). Raises :class:`_Truncated` when the
    bytes hold only part of a batch."""
    batches = PageBatches(records, aborted)
    readable: list[ReadableRecord] = []
    seen_end: int | None = None  # the offset after the last thing seen
    skipped_from: int | None = None  # start of the run of markers/aborted offsets ending at seen_end

    for kind, batch in batches:
        last = getattr(batch, "last_offset", None)
        if kind is not BatchKind.DATA:
            if seen_end is None or batch.base_offset > seen_end:
                skipped_from = batch.base_offset
            seen_end = max(seen_end or 0, last + 1)
            continue
        for record in batch:
            clean = skipped_from if seen_end == record.offset and skipped_from is not None else record.offset
            timestamp = record.timestamp if record.timestamp is not None and record.timestamp >= 0 else None
            readable.append(ReadableRecord(record.offset, timestamp, record.timestamp_type == _LOG_APPEND_TIME, clean))
            seen_end, skipped_from = record.offset + 1, record.offset + 1
        if last is not None:
            seen_end = max(seen_end or 0, last + 1)
    if batches.truncated and seen_end is None:
        raise _Truncated()
    return readable, seen_end


def resolve_offsets(readable: list[ReadableRecord], seen_end: int | None, offsets: Iterable[int],
                    readable_end: int | None, high_watermark: int | None = None,
                    log_start: int | None = None, page_start: int = 0) -> tuple[dict[int, RecordTimestamp], list[int]]:
    """Answer each offset from one page: the first readable record at or after it, or
    AT_LOG_END when the page reached ``readable_end`` (high watermark, or LSO with
    read_committed) without one. Offsets past the page are returned unresolved. An offset
    below ``page_start`` (the previous page held only markers after it) is judged from there."""
    positions = [r.offset for r in readable]
    resolved: dict[int, RecordTimestamp] = {}
    unresolved = []
    for offset in sorted(set(offsets)):
        i = bisect.bisect_left(positions, offset)
        if i < len(readable):
            r = readable[i]
            clean = max(offset, page_start) >= r.clean_from
            position = RecordPosition.AT_OFFSET if clean else RecordPosition.AFTER_GAP
            resolved[offset] = RecordTimestamp(offset, position, r.offset, r.timestamp_ms, r.log_append_time,
                                               high_watermark, log_start)
        elif readable_end is not None and max(offset, seen_end or 0) >= readable_end:
            resolved[offset] = RecordTimestamp(offset, RecordPosition.AT_LOG_END, high_watermark=high_watermark,
                                               log_start=log_start)
        else:
            unresolved.append(offset)
    return resolved, unresolved


def fetch_request(positions: dict[TopicPartition, int], budgets: dict[TopicPartition, int], tps: list[TopicPartition],
                  version: int, isolation_level: int, max_wait_ms: int = FETCH_MAX_WAIT_MS) -> RequestPlan[TopicPartition]:
    """One sessionless Fetch for ``tps`` of one leader: each from ``positions[tp]`` with its byte budget."""
    if version < MIN_FETCH_VERSION:
        raise ValueError(f"Fetch v{version} is below v{MIN_FETCH_VERSION}: the broker is too old "
                         "for record batches v2 with isolation levels")
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in sorted(tps):
        by_topic.setdefault(tp.topic, []).append(tp)
    fetch_topic = FetchRequest.FetchTopic
    request = FetchRequest(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1,
        max_bytes=min(2**31 - 1, sum(budgets[tp] for tp in tps)),
        isolation_level=isolation_level, session_id=0, session_epoch=-1,
        topics=[fetch_topic(topic=topic, partitions=[
            fetch_topic.FetchPartition(partition=tp.partition, fetch_offset=positions[tp],
                                       partition_max_bytes=budgets[tp])
            for tp in parts]) for topic, parts in by_topic.items()],
    )
    return RequestPlan(request, version, tuple(tps))


def parse_fetch(plan: RequestPlan[TopicPartition], response, read_partition) -> Outcome:
    """A Fetch response read partition by partition (``read_partition(outcome, tp, data)``); a
    whole-request error fails every partition, and a partition the response left out fails."""
    outcome: Outcome = Outcome()
    top_error = getattr(response, "error_code", 0) or 0
    if top_error:
        failure = Failure(top_error, "Fetch failed for the whole request")
        return Outcome(failed={tp: failure for tp in plan.keys})
    for topic in response.responses:
        for p in topic.partitions:
            tp = TopicPartition(topic.topic, p.partition_index)
            if tp in plan.key_set:
                read_partition(outcome, tp, p)
    missing_from_response(outcome, plan.keys,
                          set(outcome.completed) | set(outcome.failed) | outcome.unmapped | outcome.retry, "Fetch")
    return outcome


def grow_budget(outcome: Outcome, tp: TopicPartition, budgets: dict[TopicPartition, int], offset: int) -> None:
    """The first batch at ``offset`` did not fit: ask again with four times the budget, or fail
    the partition once the ceiling is reached (KIP-74 returns at least that one batch)."""
    if budgets[tp] >= MAX_PARTITION_BYTES:
        outcome.failed[tp] = Failure(CLIENT_UNSUPPORTED, f"the record batch at offset {offset} is larger "
                                                         f"than {MAX_PARTITION_BYTES} bytes")
    else:
        budgets[tp] = min(MAX_PARTITION_BYTES, budgets[tp] * 4)
        outcome.requeue(tp, Failure(CLIENT_UNSUPPORTED, "record batch larger than the byte budget"), relookup=False)


class FetchTimestampHandler(Handler[TopicPartition, dict[int, RecordTimestamp]]):
    """Keys are partitions; each has a list of offsets. A completed partition's value maps
    every offset answered from this page to its :class:`RecordTimestamp`; offsets past
    the page are in :attr:`unresolved` for the next page."""

    request_class = FetchRequest

    def __init__(self, lookup: LeaderLookup, offsets: dict[TopicPartition, list[int]], isolation_level: int = 0,
                 partition_bytes: int = DEFAULT_PARTITION_BYTES, budgets: dict[TopicPartition, int] | None = None,
                 starts: dict[TopicPartition, int] | None = None) -> None:
        self.lookup = lookup
        self._offsets = {tp: sorted(set(wanted)) for tp, wanted in offsets.items()}
        self._isolation = isolation_level
        self._starts = {tp: max(self._offsets[tp][0], (starts or {}).get(tp, 0)) for tp in offsets}
        self.budgets = {tp: (budgets or {}).get(tp, partition_bytes) for tp in offsets}
        self.unresolved: dict[TopicPartition, list[int]] = {}  # offsets for the next page
        self.next_starts: dict[TopicPartition, int] = {}  # where the next page starts

    def build(self, tps: list[TopicPartition], version: int, notes: Notes) -> list[RequestPlan[TopicPartition]]:
        return [fetch_request(self._starts, self.budgets, tps, version, self._isolation)]

    def parse(self, plan: RequestPlan[TopicPartition], response, notes: Notes) -> Outcome[TopicPartition, dict[int, RecordTimestamp]]:
        return parse_fetch(plan, response, self._read_partition)

    def _read_partition(self, outcome: Outcome, tp: TopicPartition, p) -> None:
        wanted = self._offsets[tp]
        high_watermark = p.high_watermark if p.high_watermark >= 0 else None
        log_start = p.log_start_offset if getattr(p, "log_start_offset", -1) >= 0 else None
        if p.error_code in REFRESH_LEADER:
            outcome.requeue(tp, Failure(p.error_code), relookup=True)
            return
        if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            # Only the lowest offset was asked; Kafka does not say which side it fell off, so
            # answer that one and let the next page try the rest.
            answered = [o for o in wanted if o <= self._starts[tp]]
            outcome.completed[tp] = {o: RecordTimestamp(o, RecordPosition.OUT_OF_RANGE, high_watermark=high_watermark,
                                                        log_start=log_start) for o in answered}
            self.unresolved[tp] = wanted[len(answered):]
            return
        if p.error_code != ErrorCode.NONE:
            outcome.failed[tp] = Failure(p.error_code)
            return
        readable_end = high_watermark
        if self._isolation == READ_COMMITTED and getattr(p, "last_stable_offset", -1) >= 0:
            readable_end = p.last_stable_offset
        try:
            readable, seen_end = scan_page(p.records, p.aborted_transactions
                                           if self._isolation == READ_COMMITTED else None)
        except _Truncated:
            grow_budget(outcome, tp, self.budgets, wanted[0])
            return
        except Exception as exc:  # noqa: BLE001 - a codec we lack (lz4, zstd, snappy) or a corrupt batch
            outcome.failed[tp] = Failure(CLIENT_UNSUPPORTED, f"cannot decode records: {type(exc).__name__}: {exc}")
            return
        resolved, unresolved = resolve_offsets(readable, seen_end, wanted, readable_end, high_watermark, log_start,
                                               self._starts[tp])
        if unresolved and seen_end is not None:
            self.next_starts[tp] = max(unresolved[0], seen_end)
        if not resolved and seen_end is None:
            # Nothing came back although there is something to read (a broker that answered an
            # empty page): say so rather than page forever.
            resolved = {o: RecordTimestamp(o, RecordPosition.AT_LOG_END, high_watermark=high_watermark,
                                           log_start=log_start) for o in unresolved}
            unresolved = []
        outcome.completed[tp] = resolved
        self.unresolved[tp] = unresolved
