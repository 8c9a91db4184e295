"""What the client returns: frozen, typed values with one JSON path (``to_dict``) each.

Over 400 lines because it is the one home of every value the client returns (the layout in
docs/development.rst): the lag engine, the CLI and the hooks import them from here alone."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any, Generic, TypeVar

from .errors import Failure
from .frozen import fast_init

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]"


@lru_cache(maxsize=1 << 16)
def topic_partition(topic: str, partition: int) -> TopicPartition:
    """One shared instance per partition: a response for 3,000 groups names the same few
    hundred partitions over and over."""
    return TopicPartition(topic, partition)


#: Kafka's group types (ListGroups v5, GroupDescription.group_type).
CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"
GROUP_TYPES = (CLASSIC, CONSUMER, SHARE, STREAMS)


class GroupState(str, Enum):
    """Classic, consumer (KIP-848), share (KIP-932) and streams (KIP-1071) group states, plus
    UNKNOWN for anything a broker invents."""

    STABLE = "Stable"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    NOT_READY = "NotReady"  # streams: the topology's internal topics are missing or not yet created
    EMPTY = "Empty"
    DEAD = "Dead"
    UNKNOWN = "Unknown"

    @classmethod
    def parse(cls, text: str | None) -> GroupState:
        if not text:
            return cls.UNKNOWN
        state = _STATE_BY_TEXT.get(text)  # what brokers send: the exact value (one dict lookup per group)
        if state is not None:
            return state
        return _STATE_BY_TEXT.get(text.replace("_", "").replace(" ", "").lower(), cls.UNKNOWN)

    @property
    def is_rebalancing(self) -> bool:
        return self in (
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.ASSIGNING,
            GroupState.RECONCILING,
        )


#: GroupState by its exact value and by its folded form (no "_" or " ", lower case)
_STATE_BY_TEXT: dict[str, GroupState] = {
    **{s.value.lower(): s for s in GroupState},
    **{s.value: s for s in GroupState},
}


class GroupDeletion(str, Enum):
    """How a deleted group went. Both values are truthy: the group is gone either way.

    ``CONFIRMED_GONE_AFTER_LOST_RESPONSE``: a DeleteGroups for the group was sent but its
    response was lost (connection dropped, request timed out), and the retry answered
    GROUP_ID_NOT_FOUND: the lost request most likely deleted it (or someone else did
    meanwhile); either way it is gone, which is what was asked.
    """

    DELETED = "deleted"
    CONFIRMED_GONE_AFTER_LOST_RESPONSE = "deleted (confirmed gone after a lost response)"


class TopicExistence(str, Enum):
    """What a Metadata request naming a topic proves about it (:meth:`~airflow_provider_kgroups.client.AsyncGroupsClient.check_topics`).

    Kafka (``KafkaApis.handleTopicMetadataRequest``) answers a named topic the principal may not
    Describe with TOPIC_AUTHORIZATION_FAILED whether or not it exists, so NOT_VISIBLE is not
    ABSENT: only UNKNOWN_TOPIC_OR_PARTITION proves that a topic is gone.
    """

    EXISTS = "exists"
    ABSENT = "absent"  # UNKNOWN_TOPIC_OR_PARTITION (3)
    NOT_VISIBLE = "not_visible"  # TOPIC_AUTHORIZATION_FAILED (29): cannot tell whether it exists


def nest_by_topic(items: Mapping[TopicPartition, Any]) -> dict[str, dict[str, Any]]:
    """``{TopicPartition: v}`` -> ``{topic: {"partition": v}}``: the JSON shape used everywhere."""
    out: dict[str, dict[str, Any]] = {}
    for tp in sorted(items):
        value = items[tp]
        out.setdefault(tp.topic, {})[str(tp.partition)] = (
            value.to_dict() if hasattr(value, "to_dict") else value
        )
    return out


@dataclass(frozen=True, slots=True)
class KeyedResults(Generic[K, V]):
    """One outcome per key: a value in ``values`` or a :class:`Failure` in ``failures``, never both."""

    values: Mapping[K, V] = field(default_factory=dict)
    failures: Mapping[K, Failure] = field(default_factory=dict)

    def __iter__(self) -> Iterator[K]:
        yield from self.values
        yield from self.failures

    def __len__(self) -> int:
        return len(self.values) + len(self.failures)

    def __contains__(self, key: object) -> bool:
        return key in self.values or key in self.failures

    def __getitem__(self, key: K) -> V:
        """The value for ``key``; a failed key raises ``KeyError`` naming its failure."""
        if key in self.values:
            return self.values[key]
        if key in self.failures:
            raise KeyError(f"{key}: {self.failures[key]}")
        raise KeyError(key)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        def encode_key(key: Any) -> str:
            return f"{key.topic}:{key.partition}" if isinstance(key, TopicPartition) else str(key)

        def encode_value(value: Any) -> Any:
            return value.to_dict() if hasattr(value, "to_dict") else value

        return {
            "results": {encode_key(k): encode_value(v) for k, v in self.values.items()},
            "errors": {encode_key(k): f.to_dict() for k, f in self.failures.items()},
        }


@fast_init  # one per listed group: 100,000 in a big listing
@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: GroupState
    group_type: str | None
    coordinator_id: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "protocol_type": self.protocol_type,
            "state": self.state.value,
            "group_type": self.group_type,
            "coordinator_id": self.coordinator_id,
        }


@dataclass(frozen=True, slots=True)
class ListGroupsResult:
    """Groups from every broker; a broker that failed is listed in ``broker_failures``, not dropped.
    ``listed_twice``: groups two brokers listed (their coordinator moving): one entry each in
    ``groups``, whose state may be the old coordinator's."""

    groups: tuple[GroupListing, ...]
    broker_failures: Mapping[int, Failure] = field(default_factory=dict)
    listed_twice: frozenset[str] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        return {
            "groups": [g.to_dict() for g in self.groups],
            "broker_failures": {str(k): f.to_dict() for k, f in self.broker_failures.items()},
        }


@fast_init
@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...]
    subscribed_topics: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "assignment": {
                t: sorted(p.partition for p in self.assignment if p.topic == t)
                for t in sorted({p.topic for p in self.assignment})
            },
            "subscribed_topics": list(self.subscribed_topics),
        }


@fast_init
@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: GroupState
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator_id: int
    group_type: str = CLASSIC  # one of GROUP_TYPES: which describe API answered (or ListGroups, see describe)

    @property
    def is_plain_consumer_group(self) -> bool:
        """Connect, Streams and other protocol types are groups, but not plain consumer groups."""
        return self.protocol_type in ("consumer", "")

    @property
    def assigned_partitions(self) -> frozenset[TopicPartition]:
        return frozenset(tp for member in self.members for tp in member.assignment)

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "state": self.state.value,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol,
            "group_type": self.group_type,
            "coordinator_id": self.coordinator_id,
            "members": [m.to_dict() for m in self.members],
        }


@fast_init  # one per group and partition: 36,000 for 3,000 groups
@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """A group's commit for one partition. ``offset`` is None when the group has no commit there."""

    offset: int | None
    metadata: str = ""
    leader_epoch: int | None = None
    error: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "offset": self.offset,
            "metadata": self.metadata,
            "leader_epoch": self.leader_epoch,
        }
        if self.error is not None:
            out["error"] = self.error.to_dict()
        return out


def committed_offset(
    offset: int, metadata: str | None, leader_epoch: int, error_code: int
) -> CommittedOffset:
    """An OffsetFetch answer's partition as a value: offset -1 is no commit (None), a negative
    leader epoch is unknown (None), null metadata is "", a non-zero error code its Failure."""
    return CommittedOffset(
        None if offset == -1 else offset,
        metadata or "",
        leader_epoch if leader_epoch >= 0 else None,
        Failure(error_code) if error_code else None,
    )


@fast_init
@dataclass(frozen=True, slots=True)
class GroupOffsets:
    group_id: str
    partitions: Mapping[TopicPartition, CommittedOffset]

    def committed(self) -> dict[TopicPartition, int]:
        """Only the partitions with a usable commit."""
        return {tp: c.offset for tp, c in self.partitions.items() if c.offset is not None and c.error is None}

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(tp.topic for tp in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "partitions": nest_by_topic(self.partitions)}


@dataclass(frozen=True, slots=True)
class ShareGroupOffsets(GroupOffsets):
    """A share group's start offsets (KIP-932): ``partitions`` as :class:`GroupOffsets` (offset
    None: a share-partition never initialized), so the reset and restore paths read them as
    offsets; and the lag the broker computed, from DescribeShareGroupOffsets v1 (KIP-1226, Kafka
    4.2+): the log end minus the start offset minus the records above it whose delivery is
    complete (``GroupCoordinatorService.computeShareGroupLagAndBuildResponse``).

    ``lags`` is None when the broker answered v0 (Kafka 4.1: no lag in the protocol); otherwise
    each share-partition's lag, None where the broker said it does not know it (-1: never
    initialized, an error, or a share coordinator that keeps no delivery-complete count)."""

    lags: Mapping[TopicPartition, int | None] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = GroupOffsets.to_dict(self)
        if self.lags is not None:
            out["lags"] = nest_by_topic(self.lags)
        return out


@fast_init
@dataclass(frozen=True, slots=True)
class ListedOffset:
    """A ListOffsets answer. ``timestamp`` is -1 for latest/earliest specs."""

    offset: int
    timestamp: int = -1
    leader_epoch: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "timestamp": self.timestamp, "leader_epoch": self.leader_epoch}


@dataclass(frozen=True, slots=True)
class FetchedRecord:
    """One record as a consumer reads it (Spark's Kafka source columns, less topic/partition)."""

    offset: int
    timestamp_ms: int
    timestamp_type: int  # 0 create time, 1 log-append time (Spark's ``timestampType``)
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class RecordPage:
    """What one bounded Fetch returned for a partition, from ``fetch_offset`` on.

    ``records`` are the records a consumer would read (data batches only); ``skipped`` the
    offset ranges (first, last) of transaction markers and, with read_committed, aborted
    records: offsets that exist but are never read. Offsets in neither (below ``next_offset``)
    are gone (compaction). ``out_of_range``: ``fetch_offset`` is below the log start (deleted
    by retention) or past the log end."""

    fetch_offset: int
    records: tuple[FetchedRecord, ...]
    skipped: tuple[tuple[int, int], ...]
    next_offset: int  # where the next page starts: after the last complete batch
    high_watermark: int
    last_stable_offset: int
    log_start: int
    out_of_range: bool = False
    budget_bytes: int = 0  # the byte budget this page needed (grown past the asked one for a large batch)
    #: fetched with ``decode=False``: the data batches reaching ``fetch_offset`` or past it, not yet
    #: decoded (``records`` is then empty; :mod:`..spark.arrow_records` reads them column-wise)
    batches: tuple[Any, ...] = ()


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
        return {
            "requested_offset": self.requested_offset,
            "position": self.position.value,
            "offset": self.offset,
            "timestamp_ms": self.timestamp_ms,
            "log_append_time": self.log_append_time,
            "high_watermark": self.high_watermark,
            "log_start": self.log_start,
        }


@dataclass(frozen=True, slots=True)
class TimestampPage:
    """What one bounded Fetch answered for a partition's offsets: ``found`` those the page
    reached; ``unresolved`` those past it, for the next page, which starts at ``next_start``
    (None: at the lowest unresolved offset) with ``budget_bytes`` (the budget this page needed)."""

    found: Mapping[int, RecordTimestamp]
    unresolved: tuple[int, ...] = ()
    next_start: int | None = None
    budget_bytes: int = 0


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    partitions: Mapping[int, int]  # partition -> leader id (-1 when none)
    is_internal: bool = False


class ConfigSource(str, Enum):
    """Where a topic's setting comes from: DescribeConfigs' ``ConfigSource``, named as the Java
    admin client's ``ConfigEntry.ConfigSource`` and ``kafka-configs.sh --describe`` print it.
    Only ``DYNAMIC_TOPIC_CONFIG`` is the topic's own override; the others are what the broker
    applies to every topic without one (its dynamic or static configuration, else Kafka's
    default)."""

    DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"  # 1: set on the topic (kafka-configs --alter, CreateTopics)
    DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"  # 2: the broker's dynamic configuration
    DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"  # 3: every broker's dynamic default
    STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"  # 4: server.properties
    DEFAULT_CONFIG = "DEFAULT_CONFIG"  # 5: Kafka's own default
    UNKNOWN = "UNKNOWN"  # 0, or a source no topic setting has

    @classmethod
    def of(cls, wire_id: int) -> ConfigSource:
        """The source DescribeConfigs v1+ names by number (``DescribeConfigsResponse.ConfigSource``)."""
        return _CONFIG_SOURCES.get(wire_id, cls.UNKNOWN)

    @property
    def is_topic_override(self) -> bool:
        return self is ConfigSource.DYNAMIC_TOPIC_CONFIG


_CONFIG_SOURCES = {
    1: ConfigSource.DYNAMIC_TOPIC_CONFIG,
    2: ConfigSource.DYNAMIC_BROKER_CONFIG,
    3: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    4: ConfigSource.STATIC_BROKER_CONFIG,
    5: ConfigSource.DEFAULT_CONFIG,
}


@dataclass(frozen=True, slots=True)
class TopicRetention:
    """What decides when a topic's records are deleted, from DescribeConfigs (see
    :meth:`~airflow_provider_kgroups.client.AsyncGroupsClient.describe_topic_retention`).

    ``retention_ms`` / ``retention_bytes``: ``retention.ms`` / ``retention.bytes`` (per partition),
    None for -1 (no limit). They delete only when ``cleanup_policy`` holds "delete"
    (:attr:`deletes`); a compacted-only topic keeps each key's last record whatever its age.
    ``cleanup_policy``: ``cleanup.policy``'s values, sorted: ``("delete",)``, ``("compact",)``,
    ``("compact", "delete")``. ``message_timestamp_type``: "CreateTime" or "LogAppendTime" (which
    timestamp time-based retention reads). ``segment_ms`` / ``segment_bytes``: when a segment is
    rolled; retention deletes whole closed segments, so a record may outlive ``retention_ms`` by up
    to a segment's span (None: the broker did not answer the setting).

    ``local_retention_ms`` / ``local_retention_bytes``: how long records stay on the brokers' disks
    under tiered storage (KIP-405, ``local.retention.*``; then ``retention_*`` is the total, remote
    included): as Kafka applies them, -2 is ``retention_*``, -1 no limit (None), and without
    ``remote_storage`` (``remote.storage.enable``) or on a broker that has no such setting (before
    3.6) they are ``retention_*``.

    ``sources``: for each setting the broker answered (by its Kafka name, ``"retention.ms"``),
    where its value comes from: a topic override or the broker's value (:class:`ConfigSource`).
    """

    topic: str
    retention_ms: int | None
    retention_bytes: int | None
    cleanup_policy: tuple[str, ...]
    message_timestamp_type: str
    segment_ms: int | None
    segment_bytes: int | None
    local_retention_ms: int | None
    local_retention_bytes: int | None
    remote_storage: bool
    sources: Mapping[str, ConfigSource]

    @property
    def deletes(self) -> bool:
        """Whether retention deletes records at all (``cleanup.policy`` holds "delete")."""
        return "delete" in self.cleanup_policy

    def overrides(self) -> frozenset[str]:
        """The settings the topic sets itself."""
        return frozenset(name for name, source in self.sources.items() if source.is_topic_override)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "retention_ms": self.retention_ms,
            "retention_bytes": self.retention_bytes,
            "cleanup_policy": list(self.cleanup_policy),
            "message_timestamp_type": self.message_timestamp_type,
            "segment_ms": self.segment_ms,
            "segment_bytes": self.segment_bytes,
            "local_retention_ms": self.local_retention_ms,
            "local_retention_bytes": self.local_retention_bytes,
            "remote_storage": self.remote_storage,
            "sources": {name: self.sources[name].value for name in sorted(self.sources)},
        }
