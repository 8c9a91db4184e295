"""Partition-log APIs answered by the partition leader: ListOffsets, a basic Fetch, and a
basic Produce (appends the records with their timestamps; no idempotence/transactions).
Transactions seeded with ``append_transaction`` are served as Kafka serves them: one batch per
run of a producer's records, control batches for markers, and, for read_committed, the
aborted transactions overlapping the fetched range (``UnifiedLog.collectAbortedTransactions``)."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse
from kafka.protocol.producer import ProduceResponse
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

from ..codec import Err
from ..model import Partition, Record
from ..recordbatch import control_key, control_value, encode_batch

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["HANDLERS", "build_record_batch"]

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
#: longest a Fetch that found nothing waits (Kafka waits up to MaxWaitMs for data)
FETCH_EMPTY_WAIT_CAP_S = 0.5


def _partition(ctx: RequestContext, topic: str | None, index: int) -> tuple[int, Partition | None]:
    """(error, partition) for a partition this broker must lead."""
    t = ctx.cluster.topics.get(topic) if topic is not None else None
    if t is None or not 0 <= index < len(t.partitions):
        return Err.UNKNOWN_TOPIC_OR_PARTITION, None
    part = t.partitions[index]
    injected = ctx.injected((topic, index))
    if injected is not None:
        return injected.error, None
    if part.leader != ctx.node:
        return Err.NOT_LEADER_OR_FOLLOWER, None
    return 0, part


def _offset_for(part: Partition, timestamp: int, isolation_level: int) -> tuple[int, int]:
    """(offset, timestamp) as Kafka's Partition.fetchOffsetForTimestamp answers: a lookup by
    timestamp or max timestamp that finds nothing fetchable is (-1, -1)."""
    fetchable = part.lso if isolation_level == 1 else part.end
    if timestamp == LATEST:
        return fetchable, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return part.log_start, -1
    if timestamp == LATEST_TIERED:
        return -1, -1  # no tiered storage
    found: Record | None = None
    if timestamp == MAX_TIMESTAMP:
        for record in part.records:
            if found is None or record.timestamp > found.timestamp:
                found = record
    else:
        found = next((r for r in part.records if r.timestamp >= timestamp), None)
    if found is None or found.offset >= fetchable:
        return -1, -1
    return found.offset, found.timestamp


def _still_catching_up(part: Partition, timestamp: int, offset: int) -> bool:
    """A new leader whose high watermark lags behind its epoch's start offset cannot answer
    "latest", nor a timestamp lookup that finds nothing below the high watermark; the
    earliest offset it can (Partition.fetchOffsetForTimestamp, ReplicaManager.fetchOffset)."""
    if part.catching_up <= 0 or timestamp in (EARLIEST, EARLIEST_LOCAL):
        return False
    return timestamp == LATEST or offset < 0


def list_offsets(ctx: RequestContext) -> Any:
    """KafkaApis.handleListOffsetRequestV1AndAbove: the topics the principal may not Describe
    answer TOPIC_AUTHORIZATION_FAILED (29) for every partition, after the others.
    ReplicaManager.fetchOffset: a partition named more than once in the request
    (ListOffsetsRequest.duplicatePartitions) is answered once, with INVALID_REQUEST (42)."""
    req = ctx.request
    R = ListOffsetsResponse
    T, P = R.ListOffsetsTopicResponse, R.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    isolation = req.isolation_level if ctx.version >= 2 else 0
    seen: set[tuple[str, int]] = set()
    duplicates = {
        (t.name, p.partition_index)
        for t in req.topics
        for p in t.partitions
        if (t.name, p.partition_index) in seen or seen.add((t.name, p.partition_index))
    }
    topics, denied = [], []
    answered: set[tuple[str, int]] = set()
    for t in req.topics:
        if not ctx.authorized("topic", t.name, "Describe"):
            denied.append(
                T(
                    name=t.name,
                    partitions=[
                        P(
                            partition_index=p.partition_index,
                            error_code=Err.TOPIC_AUTHORIZATION_FAILED,
                            timestamp=-1,
                            offset=-1,
                            leader_epoch=-1,
                        )
                        for p in t.partitions
                    ],
                )
            )
            continue
        rows = []
        for p in t.partitions:
            if (t.name, p.partition_index) in answered:
                continue
            answered.add((t.name, p.partition_index))
            if (t.name, p.partition_index) in duplicates:
                rows.append(
                    P(
                        partition_index=p.partition_index,
                        error_code=Err.INVALID_REQUEST,
                        timestamp=-1,
                        offset=-1,
                        leader_epoch=-1,
                    )
                )
                continue
            error, part = _partition(ctx, t.name, p.partition_index)
            if part is None:
                rows.append(
                    P(
                        partition_index=p.partition_index,
                        error_code=error,
                        timestamp=-1,
                        offset=-1,
                        leader_epoch=-1,
                    )
                )
                continue
            offset, ts = _offset_for(part, p.timestamp, isolation)
            if _still_catching_up(part, p.timestamp, offset):
                part.catching_up -= 1
                error = Err.OFFSET_NOT_AVAILABLE if ctx.version >= 5 else Err.LEADER_NOT_AVAILABLE
                rows.append(
                    P(
                        partition_index=p.partition_index,
                        error_code=error,
                        timestamp=-1,
                        offset=-1,
                        leader_epoch=-1,
                    )
                )
                continue
            rows.append(
                P(
                    partition_index=p.partition_index,
                    error_code=0,
                    timestamp=ts,
                    offset=offset,
                    leader_epoch=part.leader_epoch if offset >= 0 else -1,
                )
            )
        topics.append(T(name=t.name, partitions=rows))
    return R(throttle_time_ms=0, topics=topics + denied)


_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")


_ATTRIBUTES_OFFSET, _CRC_OFFSET, _CONTROL_FLAG = 21, 17, 0x20
_CONTROL_KEY = struct.Struct(">hh")  # version 0, type (0 abort, 1 commit): ControlRecordType
_CONTROL_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch: EndTransactionMarker


def _one_batch(records: list[Record], max_bytes: int, leader_epoch: int) -> tuple[bytes, int]:
    """One v2 batch of ``records`` (same producer and kind) holding at least the first; returns
    (bytes, how many records it holds)."""
    base = records[0].offset
    producer = records[0].producer_id
    transactional = producer >= 0
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=producer,
        producer_epoch=0 if transactional else -1,
        base_sequence=0 if transactional else -1,
        batch_size=max(max_bytes, 1),
    )
    count = 0
    for record in records:
        if record.control is not None:
            key, value = _CONTROL_KEY.pack(0, record.control), _CONTROL_VALUE.pack(0, 0)
        else:
            key, value = record.key, record.value
        if (
            builder.append(record.offset - base, timestamp=record.timestamp, key=key, value=value, headers=[])
            is None
        ):
            break
        count += 1
    buf = builder.build()
    _BASE_OFFSET.pack_into(buf, 0, base)
    _LEADER_EPOCH.pack_into(buf, 12, leader_epoch)
    if records[0].control is not None:  # the builder has no control flag: set it and sign again
        attributes = struct.unpack_from(">h", buf, _ATTRIBUTES_OFFSET)[0] | _CONTROL_FLAG
        struct.pack_into(">h", buf, _ATTRIBUTES_OFFSET, attributes)
        struct.pack_into(">I", buf, _CRC_OFFSET, calc_crc32c(memoryview(buf)[_ATTRIBUTES_OFFSET:]))
    return bytes(buf), count


def build_record_batch(records: list[Record], max_bytes: int, leader_epoch: int = 0) -> bytes:
    """Record batches for ``records``: a new batch at each change of producer or between data
    and markers; at least the first batch, then while the bytes fit ``max_bytes``.

    The builder writes offset deltas and leaves the base offset and leader epoch to the
    broker, which is us: both sit before the CRC'd part of the header.
    """
    out = b""
    i = 0
    while i < len(records):
        kind = (records[i].producer_id, records[i].control is not None)
        j = i
        while j < len(records) and (records[j].producer_id, records[j].control is not None) == kind:
            j += 1
        data, count = _one_batch(records[i:j], max_bytes - len(out), leader_epoch)
        if out and len(out) + len(data) > max_bytes:
            break
        out += data
        if count < j - i:
            break
        i = j
    return out


def _stored_batch(part: Partition, records: list[Record]) -> bytes:
    """The bytes of one stored batch (its surviving ``records``), encoded once and cached."""
    meta = part.batches[records[0].batch]
    key = (records[0].batch, records[0].offset, records[-1].offset, len(records), part.leader_epoch)
    data = part.encoded.get(key)
    if data is None:
        rows = [
            (
                r.offset,
                r.timestamp,
                *(
                    (control_key(r.control == 1), control_value())
                    if r.control is not None
                    else (r.key, r.value)
                ),
                r.headers,
            )
            for r in records
        ]
        data = encode_batch(
            meta.base_offset,
            rows,
            codec=meta.codec,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            base_sequence=meta.base_sequence,
            transactional=meta.transactional,
            control=meta.control,
            log_append_time_ms=meta.log_append_time_ms,
            leader_epoch=part.leader_epoch,
            payload=meta.payload,
        )
        part.encoded[key] = data
    return data


def _batch_last_offset(part: Partition, batch: int) -> int:
    last = -1
    for r in part.records_from(part.batches[batch].base_offset):
        if r.batch != batch:
            break
        last = r.offset
    return last


def read_log(part: Partition, fetch_offset: int, limit: int, max_bytes: int, whole_first: bool) -> bytes:
    """What ``LogSegment.read`` returns from ``fetch_offset``: whole batches, starting with the one
    holding the offset (a stored batch is served from its base offset), below ``limit`` (high
    watermark or LSO; a batch is never split by it). Past ``max_bytes`` the bytes are cut where the
    budget ends (a partial batch, as a file slice is), except that the first partition of a
    response gets at least its first batch whole (``minOneMessage``, KIP-74)."""
    records = part.records_from(fetch_offset)
    if records and records[0].batch >= 0:
        records = part.records_from(min(fetch_offset, part.batches[records[0].batch].base_offset))
    records = [r for r in records if r.offset < limit]
    if not records or all(r.batch < 0 for r in records):
        return build_record_batch(records, max_bytes, part.leader_epoch) if records else b""
    out = b""
    i = 0
    while i < len(records) and (len(out) < max_bytes or not out):
        j = i + 1
        while (
            j < len(records)
            and records[j].batch == records[i].batch
            and (
                records[i].batch >= 0
                or (records[j].producer_id, records[j].control)
                == (records[i].producer_id, records[i].control)
            )
        ):
            j += 1
        if records[i].batch >= 0:
            if _batch_last_offset(part, records[i].batch) >= limit:
                break  # the batch reaches past the limit: not served yet
            data = _stored_batch(part, records[i:j])
        else:
            data = build_record_batch(records[i:j], max(max_bytes - len(out), 1), part.leader_epoch)
        if out and len(out) + len(data) > max_bytes:
            out += data[: max_bytes - len(out)]
            break
        if not out and len(data) > max_bytes and not whole_first:
            return data[:max_bytes]
        out += data
        i = j
    return out


def _aborted_overlapping(part: Partition, fetch_offset: int, upper: int) -> list | None:
    """The aborted transactions a read_committed consumer needs for [fetch_offset, upper)."""
    T = FetchResponse.FetchableTopicResponse.PartitionData.AbortedTransaction
    return [
        T(producer_id=pid, first_offset=first)
        for pid, first, last in part.aborted_txns
        if first < upper and last >= fetch_offset
    ]


def fetch(ctx: RequestContext) -> Any:
    """Records from the fetch offset up to the high watermark (LSO for read_committed),
    as one batch bounded by the partition's max bytes; no fetch sessions (id 0)."""
    req, v, cluster = ctx.request, ctx.version, ctx.cluster
    R = FetchResponse
    T, P = R.FetchableTopicResponse, R.FetchableTopicResponse.PartitionData
    isolation = req.isolation_level
    budget = req.max_bytes if req.max_bytes and req.max_bytes > 0 else 0x7FFFFFFF
    topics, any_records = [], False
    for t in req.topics:
        name = t.topic
        unknown_error = Err.UNKNOWN_TOPIC_OR_PARTITION
        if v >= 13:
            topic = cluster.topics_by_id.get(t.topic_id)
            name = topic.name if topic is not None else None
            unknown_error = Err.UNKNOWN_TOPIC_ID
        rows = []
        for p in t.partitions:
            error, part = _partition(ctx, name, p.partition)
            if name is None:
                error = unknown_error
            if part is None:
                rows.append(
                    P(
                        partition_index=p.partition,
                        error_code=error,
                        high_watermark=-1,
                        last_stable_offset=-1,
                        log_start_offset=-1,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=b"",
                    )
                )
                continue
            limit = part.lso if isolation == 1 else part.end
            if not part.log_start <= p.fetch_offset <= part.end:
                # As Apache Kafka answers: ReplicaManager's read error result has -1 for the high
                # watermark and the log start (a reader asks ListOffsets where the log is now).
                rows.append(
                    P(
                        partition_index=p.partition,
                        error_code=Err.OFFSET_OUT_OF_RANGE,
                        high_watermark=-1,
                        last_stable_offset=-1,
                        log_start_offset=-1,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=b"",
                    )
                )
                continue
            data = (
                read_log(part, p.fetch_offset, limit, min(p.partition_max_bytes, budget), not any_records)
                if budget > 0
                else b""
            )
            budget -= len(data)
            any_records = any_records or bool(data)
            aborted = _aborted_overlapping(part, p.fetch_offset, limit) if isolation == 1 else None
            rows.append(
                P(
                    partition_index=p.partition,
                    error_code=0,
                    high_watermark=part.end,
                    last_stable_offset=part.lso,
                    log_start_offset=part.log_start,
                    aborted_transactions=aborted,
                    preferred_read_replica=-1,
                    records=data,
                )
            )
        topics.append(T(topic=t.topic, topic_id=getattr(t, "topic_id", None), partitions=rows))
    if not any_records and req.max_wait_ms > 0:
        ctx.extra_delay_s = min(req.max_wait_ms / 1000.0, FETCH_EMPTY_WAIT_CAP_S)
    return R(throttle_time_ms=0, error_code=0, session_id=0, responses=topics)


def produce(ctx: RequestContext) -> Any:
    """Append each record at the log end with its own (create) timestamp."""
    req, v, cluster = ctx.request, ctx.version, ctx.cluster
    R = ProduceResponse
    T, P = R.TopicProduceResponse, R.TopicProduceResponse.PartitionProduceResponse
    topics = []
    for t in req.topic_data:
        name = t.name
        if v >= 13:
            topic = cluster.topics_by_id.get(t.topic_id)
            name = topic.name if topic is not None else None
        rows = []
        for p in t.partition_data:
            error, part = _partition(ctx, name, p.index)
            if name is None:
                error = Err.UNKNOWN_TOPIC_ID
            if part is None:
                rows.append(
                    P(
                        index=p.index,
                        error_code=error,
                        base_offset=-1,
                        log_append_time_ms=-1,
                        log_start_offset=-1,
                        record_errors=[],
                        error_message=None,
                    )
                )
                continue
            base = part.end
            for batch in MemoryRecords(bytes(p.records or b"")):
                for record in batch:
                    part.add_record(
                        Record(
                            offset=part.end, timestamp=record.timestamp, key=record.key, value=record.value
                        )
                    )
                    part.end += 1
            rows.append(
                P(
                    index=p.index,
                    error_code=0,
                    base_offset=base,
                    log_append_time_ms=-1,
                    log_start_offset=part.log_start,
                    record_errors=[],
                    error_message=None,
                )
            )
        topics.append(T(name=t.name, topic_id=getattr(t, "topic_id", None), partition_responses=rows))
    if req.acks == 0:
        ctx.no_response = True
    return R(responses=topics, throttle_time_ms=0)


HANDLERS = {
    ApiKey.ListOffsets: list_offsets,
    ApiKey.Fetch: fetch,
    ApiKey.Produce: produce,
}
