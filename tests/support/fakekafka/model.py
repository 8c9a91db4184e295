"""The data the fake cluster holds: topics, partitions, records, groups, members, offsets.

Plain mutable dataclasses; :mod:`.state` owns them and guards them with a lock. Group
states and the Java-compatible coordinator hash live here too.
"""

from __future__ import annotations

import bisect
import functools
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka.protocol.consumer import ConsumerProtocolAssignment, ConsumerProtocolSubscription

__all__ = [
    "CLASSIC",
    "CONSUMER",
    "SHARE",
    "STREAMS",
    "GROUP_TYPES",
    "STATES_BY_TYPE",
    "CLASSIC_STATES",
    "CONSUMER_STATES",
    "NON_EMPTY_STATES",
    "Committed",
    "Member",
    "Group",
    "Subtopology",
    "Partition",
    "Record",
    "StoredBatch",
    "Topic",
    "java_string_hash",
    "kafka_partition_for",
    "topic_id_for",
    "encode_assignment",
    "encode_subscription",
]

CLASSIC = "classic"
CONSUMER = "consumer"  # KIP-848 group type
SHARE = "share"  # KIP-932
STREAMS = "streams"  # KIP-1071
GROUP_TYPES = (CLASSIC, CONSUMER, SHARE, STREAMS)

# Kafka's group state enums: ClassicGroupState, ConsumerGroup.ConsumerGroupState,
# ShareGroup.ShareGroupState, StreamsGroup.StreamsGroupState (their toString names).
CLASSIC_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
CONSUMER_STATES = ("Empty", "Assigning", "Reconciling", "Stable", "Dead")
SHARE_STATES = ("Empty", "Stable", "Dead")
STREAMS_STATES = ("Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead")
STATES_BY_TYPE = {
    CLASSIC: CLASSIC_STATES,
    CONSUMER: CONSUMER_STATES,
    SHARE: SHARE_STATES,
    STREAMS: STREAMS_STATES,
}
#: protocol type ListGroups reports per group type (ConsumerProtocol.PROTOCOL_TYPE, ShareGroup /
#: StreamsGroup.PROTOCOL_TYPE); a classic group carries what its members joined with.
DEFAULT_PROTOCOL_TYPE = {CLASSIC: "consumer", CONSUMER: "consumer", SHARE: "share", STREAMS: "streams"}
#: the assignor each type reports: a streams group's is the coordinator's task assignor, "sticky" by
#: default (group.streams.assignor.name; StreamsGroupDescribe v1's AssignorName, Kafka 4.4)
DEFAULT_ASSIGNOR = {CLASSIC: "range", CONSUMER: "uniform", SHARE: "simple", STREAMS: "sticky"}
#: states in which Kafka refuses DeleteGroups with NON_EMPTY_GROUP (validateDeleteGroup: anything
#: but Empty for the new group types)
NON_EMPTY_STATES = frozenset(
    {"Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "NotReady"}
)

ZERO_UUID = uuid.UUID(int=0)


def java_string_hash(s: str) -> int:
    """``String.hashCode()`` of Java (over UTF-16 code units, signed 32-bit)."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


@functools.lru_cache(maxsize=1 << 18)
def kafka_partition_for(group_id: str, partitions: int) -> int:
    """Kafka's ``partitionFor(groupId)``: ``Utils.abs(groupId.hashCode) % partitions``. Cached:
    every group-keyed request asks it for each of its groups (100,000-group tests)."""
    h = java_string_hash(group_id)
    h = 0 if h == -(1 << 31) else abs(h)
    return h % partitions


def topic_id_for(name: str) -> uuid.UUID:
    """A stable topic id per name (Kafka's are random; stable ids make tests reproducible)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "fakekafka-topic:" + name)


Assignment = Mapping[str, Iterable[int]]


def _normalise_assignment(assignment: Assignment | Iterable[tuple[str, int]] | None) -> dict[str, list[int]]:
    """``{"t": [0, 1]}`` or ``[("t", 0), ("t", 1)]`` -> ``{"t": [0, 1]}``."""
    if not assignment:
        return {}
    if isinstance(assignment, Mapping):
        return {topic: sorted(int(p) for p in parts) for topic, parts in assignment.items()}
    out: dict[str, list[int]] = {}
    for topic, partition in assignment:
        out.setdefault(topic, []).append(int(partition))
    return {topic: sorted(parts) for topic, parts in out.items()}


def encode_assignment(assignment: Mapping[str, list[int]], user_data: bytes | None = None) -> bytes:
    """ConsumerProtocolAssignment v0 bytes: int16 version, [topic, [int32]], user_data."""
    tp = ConsumerProtocolAssignment.TopicPartition
    msg = ConsumerProtocolAssignment(
        version=0,
        assigned_partitions=[tp(topic=t, partitions=list(ps)) for t, ps in sorted(assignment.items())],
        user_data=user_data,
    )
    return bytes(msg.encode())


def encode_subscription(topics: Iterable[str], user_data: bytes | None = None) -> bytes:
    """ConsumerProtocolSubscription v0 bytes: int16 version, [topic], user_data."""
    return bytes(ConsumerProtocolSubscription(version=0, topics=sorted(topics), user_data=user_data).encode())


@dataclass
class Committed:
    """One committed offset, as OffsetFetch returns it."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1

    @classmethod
    def of(cls, value: int | tuple | Committed) -> Committed:
        """``5``, ``(5, "meta")``, ``(5, "meta", 3)`` or a :class:`Committed`."""
        if isinstance(value, Committed):
            return Committed(value.offset, value.metadata, value.leader_epoch)
        if isinstance(value, tuple):
            return cls(*value)
        return cls(int(value))


@dataclass
class Member:
    """A group member. ``assignment`` is ``{topic: [partitions]}`` (or ``[(topic, p), ...]``).

    For protocol type "consumer" the member metadata and assignment bytes are generated
    (ConsumerProtocolSubscription / ConsumerProtocolAssignment v0); for other protocol types
    (Connect, ...) pass the opaque bytes in ``metadata_bytes`` / ``assignment_bytes``.
    """

    member_id: str
    assignment: Assignment | Iterable[tuple[str, int]] | None = None
    client_id: str = "consumer-1"
    host: str = "/127.0.0.1"
    group_instance_id: str | None = None
    subscription: list[str] | None = None  # topics; default: the assigned topics
    metadata_bytes: bytes | None = None
    assignment_bytes: bytes | None = None
    member_epoch: int | None = None  # KIP-848 groups; default: the group epoch
    rack_id: str | None = None
    target_assignment: Assignment | Iterable[tuple[str, int]] | None = None  # KIP-848; default: assignment

    def __post_init__(self) -> None:
        self.assignment = _normalise_assignment(self.assignment)
        if self.target_assignment is not None:
            self.target_assignment = _normalise_assignment(self.target_assignment)

    @classmethod
    def of(cls, value: Member | Mapping) -> Member:
        if isinstance(value, Member):
            return value
        return cls(**value)

    def subscribed_topics(self) -> list[str]:
        if self.subscription is not None:
            return sorted(self.subscription)
        return sorted(self.assignment)  # type: ignore[arg-type]  # a decoded assignment here

    def metadata(self) -> bytes:
        if self.metadata_bytes is not None:
            return self.metadata_bytes
        return encode_subscription(self.subscribed_topics())

    def assignment_data(self) -> bytes:
        if self.assignment_bytes is not None:
            return self.assignment_bytes
        return encode_assignment(self.assignment)  # type: ignore[arg-type]  # a decoded assignment here


@dataclass(frozen=True)
class Subtopology:
    """One subtopology of a streams group's topology, as StreamsGroupDescribe gives it (Kafka 4.4,
    checked with a real Kafka Streams application): ``sources`` are the user's input topics, the
    repartition topics it reads (``repartition_sources``) and writes (``repartition_sinks``) and
    its stores' changelogs are apart. Task ``p`` of the subtopology reads partition ``p`` of each
    source and repartition source."""

    sources: tuple[str, ...] = ()
    repartition_sources: tuple[str, ...] = ()
    repartition_sinks: tuple[str, ...] = ()
    changelogs: tuple[str, ...] = ()

    @classmethod
    def of(cls, value: Subtopology | Iterable[str] | Mapping[str, Iterable[str]]) -> Subtopology:
        """A Subtopology, a list of source topics, or a mapping of this class's field names."""
        if isinstance(value, Subtopology):
            return value
        if isinstance(value, Mapping):
            return cls(**{k: tuple(v) for k, v in value.items()})
        return cls(sources=tuple(value))

    @property
    def read_topics(self) -> tuple[str, ...]:
        return self.sources + self.repartition_sources


@dataclass
class Group:
    group_id: str
    state: str = "Empty"
    protocol_type: str = "consumer"
    protocol: str = "range"  # classic: the chosen assignor; KIP-848: the server assignor name
    group_type: str = CLASSIC
    members: dict[str, Member] = field(default_factory=dict)
    offsets: dict[tuple[str, int], Committed] = field(default_factory=dict)
    generation: int = 1  # classic generation id / KIP-848 group epoch
    assignment_epoch: int | None = None  # KIP-848; default: the group epoch
    #: streams groups: subtopology id -> its topics; a streams member's ``assignment`` is then
    #: its active tasks, ``{subtopology id: [partitions]}``
    topology: dict[str, Subtopology] | None = None
    #: streams groups: the topology's own epoch (0 for the first one), not the group epoch
    topology_epoch: int = 0
    #: partitions with a transactional offset commit not yet committed or aborted
    #: (GroupMetadata.hasPendingOffsetCommitsForTopicPartition)
    pending_offsets: set[tuple[str, int]] = field(default_factory=set)
    #: share groups (KIP-932): each initialized share-partition's (start offset, leader epoch,
    #: delivery-complete count), as the share coordinator keeps it (ShareGroupOffset in the
    #: share-group state; the count, KIP-1226, is the records above the start offset whose
    #: delivery is complete, -1 where the coordinator keeps none)
    share_offsets: dict[tuple[str, int], tuple[int, int, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None = None
    value: bytes | None = None
    producer_id: int = -1  # >= 0: written in a transaction (or, with ``batch``, by an idempotent producer)
    control: int | None = None  # a transaction marker: 0 abort, 1 commit (ControlRecordType)
    headers: tuple[tuple[str, bytes | None], ...] = ()
    batch: int = -1  # >= 0: the stored batch it was produced in (Partition.batches); -1: batched when fetched


@dataclass(frozen=True, slots=True)
class StoredBatch:
    """How a batch was produced (``ClusterState.append_batch``): what its header says. A Fetch
    serves it whole, from its base offset, whichever of its offsets was asked for (Kafka reads
    the log by batch: ``LogSegment.read`` starts at the batch holding the fetch offset)."""

    base_offset: int
    codec: str = "none"
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: bool = False
    log_append_time_ms: int | None = None
    payload: bytes | None = None  # replaces the compressed records (a batch no codec can read)


@dataclass
class Partition:
    """One partition's log as far as admin APIs see it.

    ``records`` are optional and sparse: a topic seeded with ``end_offsets`` has offsets but
    no records; :meth:`.state.ClusterState.append` adds records with timestamps.
    """

    index: int
    leader: int
    leader_epoch: int = 0
    log_start: int = 0
    end: int = 0  # log end offset = high watermark (one replica)
    last_stable: int | None = None  # read_committed bound; None = end
    # ListOffsets requests the leader still answers while its high watermark lags behind the
    # start offset of its epoch (a new leader catching up, see ClusterState.move_leader)
    catching_up: int = 0
    records: list[Record] = field(default_factory=list)
    #: aborted transactions (producer id, first offset, last offset incl. its marker), as Kafka's
    #: transaction index keeps them (``ProducerStateManager`` / ``TransactionIndex``)
    aborted_txns: list[tuple[int, int, int]] = field(default_factory=list)
    batches: list[StoredBatch] = field(default_factory=list)  # by Record.batch
    _offsets: list[int] = field(default_factory=list, repr=False)
    encoded: dict = field(default_factory=dict, repr=False)  # encoded batch bytes, cached by content

    @property
    def lso(self) -> int:
        return self.end if self.last_stable is None else min(self.last_stable, self.end)

    def add_record(self, record: Record) -> None:
        self.records.append(record)
        self._offsets.append(record.offset)

    def records_from(self, offset: int) -> list[Record]:
        return self.records[bisect.bisect_left(self._offsets, offset) :]

    def truncate_before(self, offset: int) -> None:
        """Drop the records below ``offset``, except those of a stored batch holding it: Kafka
        deletes whole segments, so a batch straddling the new log start is still served whole."""
        i = bisect.bisect_left(self._offsets, offset)
        while (
            0 < i < len(self.records)
            and self.records[i].batch >= 0
            and self.records[i - 1].batch == self.records[i].batch
        ):
            i -= 1
        del self.records[:i]
        del self._offsets[:i]


@dataclass
class Topic:
    name: str
    partitions: list[Partition]
    topic_id: uuid.UUID = ZERO_UUID
    internal: bool = False
    #: the topic's own settings (``retention.ms`` -> "3600000"), as CreateTopics' configs or
    #: ``kafka-configs --alter`` leave them; the rest come from the brokers (:mod:`.handlers.configs`)
    config: dict[str, str] = field(default_factory=dict)
