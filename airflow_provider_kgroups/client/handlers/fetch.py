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
(compaction removed the records) make the answer :attr:`~..results.RecordPosition.AFTER_GAP`.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from ..batches import RecordBatch, UndecodableBatch, read_batches
from ..contract import Outcome, RequestPlan
from ..errors import (
    CLIENT_UNDECODABLE,
    CLIENT_UNSUPPORTED,
    REFRESH_LEADER,
    ErrorCode,
    Failure,
    UndecodableFailure,
)
from ..lookup import LeaderLookup
from ..protocol import FetchRequest, FetchResponse, KafkaApi
from ..results import RecordPosition, RecordTimestamp, TimestampPage, TopicPartition
from .base import Handler, Notes, VersionNeed
from .common import missing_from_response
from .fetch_sizes import DEFAULT_PARTITION_BYTES
from .list_offsets import READ_COMMITTED

V = TypeVar("V")

MIN_FETCH_VERSION = 4  # isolation level and record format v2
#: what both Fetch handlers declare: a broker below it fails their partitions, unsent
#: both Fetch handlers (timestamps, records) speak it
FETCH = KafkaApi(FetchRequest, FetchResponse, max_version=12)  # v13 replaces topic names with topic ids
FETCH_NEEDS = (VersionNeed(MIN_FETCH_VERSION, "reading record batches v2 with an isolation level"),)
MAX_PARTITION_BYTES = 16 * 1024 * 1024
FETCH_MAX_WAIT_MS = 1
_LOG_APPEND_TIME = 1


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
    batches of a producer between its abort entry and its abort marker are ABORTED
    (``FetchCollector``/``CompletedFetch.nextFetchedRecord`` in Kafka's consumer).
    :attr:`truncated` tells whether bytes of a partial batch were left at the end.
    Raises :class:`~..batches.UndecodableBatch` for a batch that cannot be read."""

    def __init__(self, records: bytes | None, aborted: Iterable[Any] | None = None) -> None:
        self._batches, self.truncated = read_batches(records)
        self._aborted = aborted

    def __iter__(self) -> Iterator[tuple[BatchKind, RecordBatch]]:
        pending_aborts = sorted((a.first_offset, a.producer_id) for a in (self._aborted or ()))
        aborted_producers: set[int] = set()
        for batch in self._batches:
            while pending_aborts and pending_aborts[0][0] <= batch.last_offset:
                aborted_producers.add(heapq.heappop(pending_aborts)[1])
            if batch.is_control_batch:
                if any(marker.abort for marker in batch.markers()):
                    aborted_producers.discard(batch.producer_id)
                yield BatchKind.CONTROL, batch
            elif batch.is_transactional and batch.producer_id in aborted_producers:
                yield BatchKind.ABORTED, batch
            else:
                yield BatchKind.DATA, batch


def undecodable(tp: TopicPartition, offset: int, error: UndecodableBatch) -> UndecodableFailure:
    """The Failure of a partition whose page holds a batch this client cannot read."""
    return UndecodableFailure(
        CLIENT_UNDECODABLE,
        f"{tp}: cannot decode records from offset {offset}: {error}",
        error.codec_name,
        error.library,
        offset,
    )


def scan_page(
    records: bytes | None, aborted: Iterable[Any] | None = None
) -> tuple[list[ReadableRecord], int | None]:
    """The readable records of one fetched page, in offset order, and the offset after the
    last complete batch (None when there was none). Raises :class:`_Truncated` when the
    bytes hold only part of a batch."""
    batches = PageBatches(records, aborted)
    readable: list[ReadableRecord] = []
    seen_end: int | None = None  # the offset after the last thing seen
    skipped_from: int | None = None  # start of the run of markers/aborted offsets ending at seen_end

    for kind, batch in batches:
        last = batch.last_offset
        if kind is not BatchKind.DATA:
            if seen_end is None or batch.base_offset > seen_end:
                skipped_from = batch.base_offset
            seen_end = max(seen_end or 0, last + 1)
            continue
        log_append = batch.timestamp_type == _LOG_APPEND_TIME
        columns = batch.columns()
        for offset, timestamp in zip(columns.offsets, columns.timestamps):
            clean = skipped_from if seen_end == offset and skipped_from is not None else offset
            readable.append(ReadableRecord(offset, timestamp if timestamp >= 0 else None, log_append, clean))
            seen_end, skipped_from = offset + 1, offset + 1
        seen_end = max(seen_end or 0, last + 1)
    if batches.truncated and seen_end is None:
        raise _Truncated()
    return readable, seen_end


def resolve_offsets(
    readable: list[ReadableRecord],
    seen_end: int | None,
    offsets: Iterable[int],
    readable_end: int | None,
    high_watermark: int | None = None,
    log_start: int | None = None,
    page_start: int = 0,
) -> tuple[dict[int, RecordTimestamp], list[int]]:
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
            resolved[offset] = RecordTimestamp(
                offset, position, r.offset, r.timestamp_ms, r.log_append_time, high_watermark, log_start
            )
        elif readable_end is not None and max(offset, seen_end or 0) >= readable_end:
            resolved[offset] = RecordTimestamp(
                offset, RecordPosition.AT_LOG_END, high_watermark=high_watermark, log_start=log_start
            )
        else:
            unresolved.append(offset)
    return resolved, unresolved


def fetch_request(
    positions: Mapping[TopicPartition, int],
    budgets: Mapping[TopicPartition, int],
    tps: list[TopicPartition],
    version: int,
    isolation_level: int,
    max_wait_ms: int = FETCH_MAX_WAIT_MS,
) -> RequestPlan[TopicPartition]:
    """One sessionless Fetch for ``tps`` of one leader: each from ``positions[tp]`` with its byte budget."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in sorted(tps):
        by_topic.setdefault(tp.topic, []).append(tp)
    fetch_topic = FetchRequest.FetchTopic
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=min(2**31 - 1, sum(budgets[tp] for tp in tps)),
        isolation_level=isolation_level,
        session_id=0,
        session_epoch=-1,
        topics=[
            fetch_topic(
                topic=topic,
                partitions=[
                    fetch_topic.FetchPartition(
                        partition=tp.partition, fetch_offset=positions[tp], partition_max_bytes=budgets[tp]
                    )
                    for tp in parts
                ],
            )
            for topic, parts in by_topic.items()
        ],
    )
    return RequestPlan(request, version, tuple(tps))


def parse_fetch(
    plan: RequestPlan[TopicPartition],
    response: Any,
    read_partition: Callable[[Outcome[TopicPartition, V], TopicPartition, Any], None],
) -> Outcome[TopicPartition, V]:
    """A Fetch response read partition by partition (``read_partition(outcome, tp, data)``); a
    whole-request error fails every partition, and a partition the response left out fails."""
    outcome: Outcome[TopicPartition, V] = Outcome()
    top_error = getattr(response, "error_code", 0) or 0
    if top_error:
        failure = Failure(top_error, "Fetch failed for the whole request")
        return Outcome(failed={tp: failure for tp in plan.keys})
    if not response.responses and (getattr(response, "throttle_time_ms", 0) or 0) > 0:
        # A fetch over a quota (consumer_byte_rate, request_percentage) is answered with the
        # throttle time and no partitions at all (KafkaApis.handleFetchRequest ->
        # FetchContext.getThrottledResponse): ask again once the throttle ends, which the
        # connection waits out before writing anything more (KIP-219).
        reason = f"throttled by a quota for {response.throttle_time_ms} ms: no records this time"
        return Outcome(retry=set(plan.keys), reasons=dict.fromkeys(plan.keys, reason))
    for topic in response.responses:
        for p in topic.partitions:
            tp = TopicPartition(topic.topic, p.partition_index)
            if tp in plan.key_set:
                read_partition(outcome, tp, p)
    missing_from_response(
        outcome,
        plan.keys,
        set(outcome.completed) | set(outcome.failed) | outcome.unmapped | outcome.retry,
        "Fetch",
    )
    return outcome


def budget_of(tp: TopicPartition, notes: Notes, budgets: Mapping[TopicPartition, int]) -> int:
    """A partition's byte budget now: as grown during this run (the Fetch handlers' only note), or as given."""
    budget: int = notes.get(tp, budgets[tp])
    return budget


def grow_budget(outcome: Outcome[TopicPartition, Any], tp: TopicPartition, budget: int, offset: int) -> None:
    """The first batch at ``offset`` did not fit in ``budget``: ask again with four times the
    budget (noted for the rest of the run), or fail the partition once the ceiling is reached
    (KIP-74 returns at least that one batch)."""
    if budget >= MAX_PARTITION_BYTES:
        outcome.failed[tp] = Failure(
            CLIENT_UNSUPPORTED,
            f"the record batch at offset {offset} is larger than {MAX_PARTITION_BYTES} bytes",
        )
    else:
        outcome.notes[tp] = min(MAX_PARTITION_BYTES, budget * 4)
        outcome.requeue(
            tp, Failure(CLIENT_UNSUPPORTED, "record batch larger than the byte budget"), relookup=False
        )


class FetchTimestampHandler(Handler[TopicPartition, TimestampPage]):
    """Keys are partitions; each has a list of offsets. A completed partition's value is a
    :class:`TimestampPage`: every offset answered from this page, and what is left for the
    next page (the offsets, where it starts, the byte budget it needs)."""

    kafka_api = FETCH
    needs = FETCH_NEEDS

    def __init__(
        self,
        lookup: LeaderLookup,
        offsets: dict[TopicPartition, list[int]],
        isolation_level: int = 0,
        partition_bytes: int = DEFAULT_PARTITION_BYTES,
        budgets: dict[TopicPartition, int] | None = None,
        starts: dict[TopicPartition, int] | None = None,
    ) -> None:
        self.lookup = lookup
        self._offsets = {tp: sorted(set(wanted)) for tp, wanted in offsets.items()}
        self._isolation = isolation_level
        self._starts = {tp: max(self._offsets[tp][0], (starts or {}).get(tp, 0)) for tp in offsets}
        self._budgets = {tp: (budgets or {}).get(tp, partition_bytes) for tp in offsets}

    def build(
        self, tps: list[TopicPartition], version: int, notes: Notes
    ) -> list[RequestPlan[TopicPartition]]:
        budgets = {tp: budget_of(tp, notes, self._budgets) for tp in tps}
        return [fetch_request(self._starts, budgets, tps, version, self._isolation)]

    def parse(
        self, plan: RequestPlan[TopicPartition], response: Any, notes: Notes
    ) -> Outcome[TopicPartition, TimestampPage]:
        def read(outcome: Outcome[TopicPartition, TimestampPage], tp: TopicPartition, p: Any) -> None:
            self._read_partition(outcome, tp, p, budget_of(tp, notes, self._budgets))

        return parse_fetch(plan, response, read)

    def _read_partition(
        self, outcome: Outcome[TopicPartition, TimestampPage], tp: TopicPartition, p: Any, budget: int
    ) -> None:
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
            found = {
                o: RecordTimestamp(
                    o, RecordPosition.OUT_OF_RANGE, high_watermark=high_watermark, log_start=log_start
                )
                for o in answered
            }
            outcome.completed[tp] = TimestampPage(found, tuple(wanted[len(answered) :]), budget_bytes=budget)
            return
        if p.error_code != ErrorCode.NONE:
            outcome.failed[tp] = Failure(p.error_code)
            return
        readable_end = high_watermark
        if self._isolation == READ_COMMITTED and getattr(p, "last_stable_offset", -1) >= 0:
            readable_end = p.last_stable_offset
        try:
            readable, seen_end = scan_page(
                p.records, p.aborted_transactions if self._isolation == READ_COMMITTED else None
            )
        except _Truncated:
            grow_budget(outcome, tp, budget, wanted[0])
            return
        except UndecodableBatch as exc:
            outcome.failed[tp] = undecodable(tp, self._starts[tp], exc)
            return
        resolved, unresolved = resolve_offsets(
            readable, seen_end, wanted, readable_end, high_watermark, log_start, self._starts[tp]
        )
        next_start = max(unresolved[0], seen_end) if unresolved and seen_end is not None else None
        if not resolved and seen_end is None:
            # Nothing came back although there is something to read (a broker that answered an
            # empty page): say so rather than page forever.
            resolved = {
                o: RecordTimestamp(
                    o, RecordPosition.AT_LOG_END, high_watermark=high_watermark, log_start=log_start
                )
                for o in unresolved
            }
            unresolved = []
        outcome.completed[tp] = TimestampPage(resolved, tuple(unresolved), next_start, budget)
