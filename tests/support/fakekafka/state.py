"""Cluster-wide state shared by all fake brokers, with the helpers tests use to seed it.

Every public method takes the cluster lock, so a test thread may seed or inspect the
cluster while the brokers serve requests on their event loop thread. API handlers run with
the lock held (see :mod:`.dispatch`) and read the attributes directly.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence

from .acl import ANONYMOUS, Acls
from .model import (
    CLASSIC,
    DEFAULT_ASSIGNOR,
    DEFAULT_PROTOCOL_TYPE,
    GROUP_TYPES,
    SHARE,
    STATES_BY_TYPE,
    Committed,
    Group,
    Member,
    Partition,
    Record,
    StoredBatch,
    Subtopology,
    Topic,
    kafka_partition_for,
    topic_id_for,
)

#: one record of a produced batch: ``value`` or ``(key, value)`` or ``(key, value, headers)`` or
#: ``(key, value, headers, timestamp_ms)``
BatchRecord = bytes | None | tuple

__all__ = ["ClusterState"]

OffsetsArg = Mapping  # {(topic, partition): offset | (offset, metadata[, epoch]) | Committed}
# or {topic: {partition: ...}}


def _flatten_offsets(offsets: OffsetsArg | None) -> dict[tuple[str, int], Committed]:
    out: dict[tuple[str, int], Committed] = {}
    for key, value in (offsets or {}).items():
        if isinstance(key, tuple):
            out[(key[0], int(key[1]))] = Committed.of(value)
        else:
            for partition, committed in value.items():
                out[(key, int(partition))] = Committed.of(committed)
    return out


def _batch_record(item: BatchRecord, now: int) -> tuple[bytes | None, bytes | None, tuple, int]:
    """(key, value, headers, timestamp) of one record given to ``append_batch``."""
    if not isinstance(item, tuple):
        return None, item, (), now
    key, value, *rest = item
    return key, value, tuple(rest[0]) if rest else (), rest[1] if len(rest) > 1 else now


def _config_text(config: Mapping[str, object] | None) -> dict[str, str]:
    """Settings as Kafka keeps them: text (``True`` -> "true", ``-1`` -> "-1")."""
    return {
        key: (str(value).lower() if isinstance(value, bool) else str(value))
        for key, value in (config or {}).items()
    }


def _check_state(group_type: str, state: str) -> None:
    allowed = STATES_BY_TYPE[group_type]
    if state not in allowed:
        raise ValueError(f"state {state!r} is not a {group_type} group state {allowed}")


def _per_partition(value: int | Sequence[int] | None, partitions: int, default: int) -> list[int]:
    if value is None:
        return [default] * partitions
    if isinstance(value, int):
        return [value] * partitions
    if len(value) != partitions:
        raise ValueError(f"expected {partitions} values, got {len(value)}")
    return [int(v) for v in value]


class ClusterState:
    """Brokers' shared view: topics, partition leaders, groups, coordinators.

    ``node_ids``: the broker ids. ``offsets_topic_partitions``: partitions of the
    (virtual) ``__consumer_offsets`` topic, used by the default coordinator choice, which
    is Kafka's: partition ``abs(groupId.hashCode) % 50`` whose leader is
    ``node_ids[partition % len(node_ids)]``.
    """

    def __init__(self, node_ids: Sequence[int], *, offsets_topic_partitions: int = 50) -> None:
        if not node_ids:
            raise ValueError("a cluster needs at least one broker")
        self.lock = threading.RLock()
        self.node_ids: list[int] = list(node_ids)
        self.offsets_topic_partitions = offsets_topic_partitions
        self.cluster_id = "fakekafka-cluster"
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.groups: dict[str, Group] = {}
        self._coordinator_override: dict[str, int] = {}
        self._groups_by_coordinator: dict[int, set[str]] = {n: set() for n in self.node_ids}
        self._next_leader = 0
        self.acls = Acls()
        self.default_principal = ANONYMOUS  # the principal of a connection without SASL
        #: how an OffsetFetch with require_stable meets pending transactional offsets: "3.x"
        #: (GroupMetadataManager.getOffsets: UNSTABLE_OFFSET_COMMIT per partition) or "4.x"
        #: (GroupCoordinatorService.fetchOffsets: a write that waits offset.commit.timeout.ms,
        #: then NOT_COORDINATOR for the group)
        self.stable_offsets_model = "3.x"
        self.offset_commit_timeout_s = 5.0
        #: every broker's server.properties as far as topics see it (``log.retention.ms`` -> "-1"):
        #: a topic setting without an override takes it (DescribeConfigs: STATIC_BROKER_CONFIG)
        self.broker_config: dict[str, str] = {}

    # ------------------------------------------------------------------ authorization

    def allow(self, principal: str, resource_type: str, name: str, *operations: str) -> None:
        """An ALLOW ACL (see :mod:`.acl`); the first one turns authorization on for every request:
        ``allow("alice", "group", "billing", "Describe")``, ``allow("*", "topic", "*", "Describe")``."""
        with self.lock:
            self.acls.allow(principal, resource_type, name, operations)

    # ------------------------------------------------------------------ topics

    def add_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        end_offsets: int | Sequence[int] | None = None,
        start_offsets: int | Sequence[int] | None = None,
        last_stable_offsets: int | Sequence[int] | None = None,
        leaders: Sequence[int] | None = None,
        config: Mapping[str, object] | None = None,
    ) -> None:
        """Create (or replace) a topic. Leaders go round robin over the brokers, continuing
        across topics, unless ``leaders`` gives one node id per partition. ``config``: the topic's
        own settings (``{"retention.ms": 3600000, "cleanup.policy": "compact"}``), as CreateTopics
        takes them."""
        with self.lock:
            ends = _per_partition(end_offsets, partitions, 0)
            starts = _per_partition(start_offsets, partitions, 0)
            if leaders is None:
                leaders = [
                    self.node_ids[(self._next_leader + p) % len(self.node_ids)] for p in range(partitions)
                ]
                self._next_leader += partitions
            elif len(leaders) != partitions:
                raise ValueError("one leader per partition")
            parts = []
            for p in range(partitions):
                self._check_node(leaders[p])
                if starts[p] > ends[p]:
                    raise ValueError(f"partition {p}: start offset {starts[p]} > end offset {ends[p]}")
                parts.append(Partition(index=p, leader=leaders[p], log_start=starts[p], end=ends[p]))
            if last_stable_offsets is not None:
                for part, lso in zip(parts, _per_partition(last_stable_offsets, partitions, 0), strict=True):
                    part.last_stable = lso
            self.delete_topic(name)
            topic = Topic(
                name=name, partitions=parts, topic_id=topic_id_for(name), config=_config_text(config)
            )
            self.topics[name] = topic
            self.topics_by_id[topic.topic_id] = topic

    def set_topic_config(self, name: str, config: Mapping[str, object | None]) -> None:
        """Set (None: remove) some of a topic's own settings, as ``kafka-configs --alter``
        (IncrementalAlterConfigs SET / DELETE) does."""
        with self.lock:
            topic = self.topics[name]
            for key, value in config.items():
                if value is None:
                    topic.config.pop(key, None)
                else:
                    topic.config.update(_config_text({key: value}))

    def set_broker_config(self, config: Mapping[str, object | None]) -> None:
        """Every broker's static settings (``{"log.retention.ms": -1}``; None removes one), as
        server.properties would set them before the brokers start."""
        with self.lock:
            for key, value in config.items():
                if value is None:
                    self.broker_config.pop(key, None)
                else:
                    self.broker_config.update(_config_text({key: value}))

    def delete_topic(self, name: str) -> None:
        """Remove a topic (committed offsets on it stay, as in Kafka until they expire)."""
        with self.lock:
            topic = self.topics.pop(name, None)
            if topic is not None:
                self.topics_by_id.pop(topic.topic_id, None)

    def append_batch(
        self,
        topic: str,
        partition: int,
        records: Sequence[BatchRecord],
        *,
        codec: str = "none",
        producer_id: int = -1,
        transactional: bool = False,
        timestamp_ms: int | None = None,
        log_append_time_ms: int | None = None,
        payload: bytes | None = None,
    ) -> tuple[int, int]:
        """One record batch as a producer sends it and the log keeps it (compressed with ``codec``;
        ``producer_id`` >= 0: an idempotent producer, with ``transactional`` inside a transaction
        whose marker :meth:`end_transaction` writes). A record is a value, or a tuple ``(key, value
        [, headers [, timestamp_ms]])``; the default timestamp is ``timestamp_ms`` or now. A Fetch
        at any offset of the batch returns all of it. Returns (first offset, new end offset)."""
        with self.lock:
            part = self._partition(topic, partition)
            first = part.end
            now = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
            sequence = (
                sum(1 for b in part.batches if b.producer_id == producer_id) if producer_id >= 0 else -1
            )
            part.batches.append(
                StoredBatch(
                    first,
                    codec,
                    producer_id,
                    0 if producer_id >= 0 else -1,
                    sequence * 1000 if producer_id >= 0 else -1,
                    transactional,
                    log_append_time_ms=log_append_time_ms,
                    payload=payload,
                )
            )
            batch = len(part.batches) - 1
            for i, item in enumerate(records):
                key, value, headers, ts = _batch_record(item, now)
                part.add_record(
                    Record(
                        offset=first + i,
                        timestamp=ts,
                        key=key,
                        value=value,
                        headers=tuple(headers),
                        producer_id=producer_id,
                        batch=batch,
                    )
                )
            part.end = first + len(records)
            return first, part.end

    def end_transaction(
        self, topic: str, partition: int, *, producer_id: int, commit: bool, timestamp_ms: int | None = None
    ) -> tuple[int, int]:
        """The marker the coordinator's WriteTxnMarkers appends (a control batch of one record);
        an abort also goes into the partition's aborted-transaction index from the producer's
        first transactional offset (``ProducerStateManager``). Returns (marker offset, new end)."""
        with self.lock:
            part = self._partition(topic, partition)
            marker = part.end
            started = []  # the producer's transactional offsets since its last marker
            for r in reversed(part.records):
                if r.producer_id == producer_id:
                    if r.control is not None:
                        break
                    if r.batch >= 0 and part.batches[r.batch].transactional:
                        started.append(r.offset)
            ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
            part.batches.append(StoredBatch(marker, "none", producer_id, 0, -1, True, True))
            part.add_record(
                Record(
                    offset=marker,
                    timestamp=ts,
                    producer_id=producer_id,
                    control=1 if commit else 0,
                    batch=len(part.batches) - 1,
                )
            )
            if not commit and started:
                part.aborted_txns.append((producer_id, min(started), marker))
            part.end = marker + 1
            return marker, part.end

    def append_transaction(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes],
        *,
        producer_id: int,
        commit: bool,
        timestamp_ms: int | None = None,
    ) -> tuple[int, int]:
        """One transaction's records followed by its marker (a control batch), as a transactional
        producer and the coordinator's WriteTxnMarkers leave them in the log; an abort is also
        recorded in the partition's aborted-transaction index. Returns (first offset, new end)."""
        with self.lock:
            part = self._partition(topic, partition)
            first = part.end
            ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
            for i, value in enumerate(values):
                part.add_record(Record(offset=first + i, timestamp=ts, value=value, producer_id=producer_id))
            marker = first + len(values)
            part.add_record(
                Record(offset=marker, timestamp=ts, producer_id=producer_id, control=1 if commit else 0)
            )
            if not commit:
                part.aborted_txns.append((producer_id, first, marker))
            part.end = marker + 1
            return first, part.end

    def append(
        self,
        topic: str,
        partition: int,
        n: int = 1,
        *,
        timestamp_ms: int | Sequence[int] | Callable[[int], int] | None = None,
        value: bytes | Callable[[int], bytes | None] | None = None,
        key: bytes | None = None,
    ) -> tuple[int, int]:
        """Append ``n`` records at the end of the log; return (first offset, new end offset).

        ``timestamp_ms``: one value for all, a sequence of ``n``, a function of the offset,
        or None for now.
        """
        with self.lock:
            part = self._partition(topic, partition)
            first = part.end
            for i in range(n):
                offset = first + i
                if timestamp_ms is None:
                    ts = int(time.time() * 1000)
                elif callable(timestamp_ms):
                    ts = int(timestamp_ms(offset))
                elif isinstance(timestamp_ms, int):
                    ts = timestamp_ms
                else:
                    ts = int(timestamp_ms[i])
                val = value(offset) if callable(value) else value
                part.add_record(Record(offset=offset, timestamp=ts, key=key, value=val))
            part.end = first + n
            return first, part.end

    def set_offsets(
        self,
        topic: str,
        partition: int,
        *,
        start: int | None = None,
        end: int | None = None,
        last_stable: int | None = None,
    ) -> None:
        """Move a partition's log start / end (high watermark) / last stable offset."""
        with self.lock:
            part = self._partition(topic, partition)
            if end is not None:
                part.end = end
            if start is not None:
                part.log_start = start
                part.truncate_before(start)
            if last_stable is not None:
                part.last_stable = last_stable

    def compact(self, topic: str, partition: int, offsets: Sequence[int]) -> None:
        """Remove the records at ``offsets`` and keep every other offset, as Kafka's log cleaner
        does for superseded keys (``LogCleaner``: offsets are never reassigned, so gaps remain)."""
        with self.lock:
            part = self._partition(topic, partition)
            gone = set(offsets)
            kept = [r for r in part.records if r.offset not in gone]
            part.records, part._offsets = kept, [r.offset for r in kept]

    def move_leader(self, topic: str, partition: int, node: int, *, catching_up: int = 0) -> None:
        """Make ``node`` the partition leader (bumps the leader epoch).

        ``catching_up``: how many ListOffsets requests the new leader answers while its high
        watermark is still behind the start offset of its epoch: OFFSET_NOT_AVAILABLE (78)
        from v5, LEADER_NOT_AVAILABLE (5) below, for "latest" and for a timestamp lookup
        that finds nothing below the high watermark (Partition.fetchOffsetForTimestamp,
        ReplicaManager.fetchOffset)."""
        with self.lock:
            self._check_node(node)
            part = self._partition(topic, partition)
            part.leader = node
            part.leader_epoch += 1
            part.catching_up = catching_up

    def leader_of(self, topic: str, partition: int) -> int:
        with self.lock:
            return self._partition(topic, partition).leader

    def end_offset(self, topic: str, partition: int) -> int:
        with self.lock:
            return self._partition(topic, partition).end

    def start_offset(self, topic: str, partition: int) -> int:
        with self.lock:
            return self._partition(topic, partition).log_start

    def partitions_led_by(self, node: int) -> list[tuple[str, int]]:
        with self.lock:
            return [(t.name, p.index) for t in self.topics.values() for p in t.partitions if p.leader == node]

    # ------------------------------------------------------------------ groups

    def add_group(
        self,
        group_id: str,
        *,
        offsets: OffsetsArg | None = None,
        members: Iterable[Member | Mapping] | None = None,
        state: str | None = None,
        protocol_type: str | None = None,
        protocol: str | None = None,
        coordinator: int | None = None,
        group_type: str = CLASSIC,
        generation: int = 1,
        topology: Mapping[str, Sequence[str] | Subtopology | Mapping[str, Sequence[str]]] | None = None,
    ) -> None:
        """Create (or replace) a group.

        ``state`` defaults to Stable with members, else Empty. ``group_type`` "classic",
        "consumer" (KIP-848), "share" (KIP-932) or "streams" (KIP-1071). ``protocol_type``
        defaults to the type's ("consumer", "share", "streams"). ``protocol`` is the assignor
        ("range" classic, "uniform" KIP-848, "simple" share, "sticky" streams). ``topology``
        (streams): subtopology id -> its source topics, or a :class:`Subtopology` (or a mapping of
        its fields) to name repartition and changelog topics; members' ``assignment`` are then
        ``{subtopology: [partitions]}``.
        ``coordinator`` pins the coordinator (else Kafka's hash).
        """
        with self.lock:
            if group_type not in GROUP_TYPES:
                raise ValueError(f"group_type must be one of {GROUP_TYPES}")
            if protocol_type is None:
                protocol_type = DEFAULT_PROTOCOL_TYPE[group_type]
            member_list = [Member.of(m) for m in (members or [])]
            if state is None:
                state = "Stable" if member_list else "Empty"
            _check_state(group_type, state)
            if protocol is None:
                protocol = DEFAULT_ASSIGNOR[group_type]
            if coordinator is not None:
                self._check_node(coordinator)
                self._set_coordinator(group_id, coordinator)
            self._remove_group(group_id)
            self.groups[group_id] = Group(
                group_id=group_id,
                state=state,
                protocol_type=protocol_type,
                protocol=protocol,
                group_type=group_type,
                members={m.member_id: m for m in member_list},
                offsets=_flatten_offsets(offsets),
                generation=generation,
                topology={k: Subtopology.of(v) for k, v in topology.items()}
                if topology is not None
                else None,
            )
            self._groups_by_coordinator[self.coordinator_of(group_id)].add(group_id)

    def delete_group(self, group_id: str) -> None:
        with self.lock:
            self._remove_group(group_id)

    def set_group_state(self, group_id: str, state: str) -> None:
        with self.lock:
            group = self._group(group_id)
            _check_state(group.group_type, state)
            group.state = state

    def set_members(
        self, group_id: str, members: Iterable[Member | Mapping], *, state: str | None = None
    ) -> None:
        """Replace the members (and optionally the state) of an existing group."""
        with self.lock:
            group = self._group(group_id)
            if state is not None:
                _check_state(group.group_type, state)
                group.state = state
            group.members = {m.member_id: m for m in (Member.of(x) for x in members)}

    def commit(self, group_id: str, offsets: OffsetsArg) -> None:
        """Store committed offsets (creating an Empty classic group if missing)."""
        with self.lock:
            if group_id not in self.groups:
                self.add_group(group_id)
            self.groups[group_id].offsets.update(_flatten_offsets(offsets))

    def begin_transactional_commit(self, group_id: str, partitions: Iterable[tuple[str, int]]) -> None:
        """A TxnOffsetCommit whose transaction is still open: these partitions have pending
        offsets until :meth:`end_transactional_commit` (creating an Empty classic group if missing)."""
        with self.lock:
            if group_id not in self.groups:
                self.add_group(group_id)
            self.groups[group_id].pending_offsets.update(partitions)

    def end_transactional_commit(self, group_id: str) -> None:
        """The transaction ended (committed or aborted): nothing is pending any more."""
        with self.lock:
            self._group(group_id).pending_offsets.clear()

    def move_coordinator(self, group_id: str, node: int) -> None:
        """From now on ``node`` coordinates the group (works for absent groups too)."""
        with self.lock:
            self._check_node(node)
            self._set_coordinator(group_id, node)

    def offsets_partition_of(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition (coordinator shard) of a group."""
        return kafka_partition_for(group_id, self.offsets_topic_partitions)

    def coordinator_of(self, group_id: str) -> int:
        """The coordinator FindCoordinator names, whether the group exists or not."""
        with self.lock:
            node = self._coordinator_override.get(group_id)
            if node is None:
                p = kafka_partition_for(group_id, self.offsets_topic_partitions)
                node = self.node_ids[p % len(self.node_ids)]
            return node

    def group(self, group_id: str) -> Group | None:
        """A deep copy of the group (None if absent), safe to inspect from any thread."""
        with self.lock:
            g = self.groups.get(group_id)
            return copy.deepcopy(g) if g is not None else None

    def has_group(self, group_id: str) -> bool:
        with self.lock:
            return group_id in self.groups

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """``{(topic, partition): offset}`` committed by the group ({} if absent)."""
        with self.lock:
            g = self.groups.get(group_id)
            return {tp: c.offset for tp, c in g.offsets.items()} if g else {}

    def group_ids(self) -> list[str]:
        with self.lock:
            return sorted(self.groups)

    def groups_coordinated_by(self, node: int) -> list[str]:
        """Ids of existing groups whose coordinator is ``node``."""
        with self.lock:
            return sorted(self._groups_by_coordinator.get(node, ()))

    # ------------------------------------------------------------------ internals (lock held)

    def _check_node(self, node: int) -> None:
        if node not in self._groups_by_coordinator:
            raise ValueError(f"no broker with node id {node} (brokers: {self.node_ids})")

    def _partition(self, topic: str, partition: int) -> Partition:
        try:
            return self.topics[topic].partitions[partition]
        except (KeyError, IndexError):
            raise KeyError(f"no partition {topic}-{partition}") from None

    def _group(self, group_id: str) -> Group:
        try:
            return self.groups[group_id]
        except KeyError:
            raise KeyError(f"no group {group_id!r}") from None

    def _set_coordinator(self, group_id: str, node: int) -> None:
        old = self.coordinator_of(group_id)
        self._coordinator_override[group_id] = node
        if group_id in self.groups:
            self._groups_by_coordinator[old].discard(group_id)
            self._groups_by_coordinator[node].add(group_id)

    def set_share_offsets(
        self,
        group_id: str,
        offsets: Mapping[tuple[str, int], int],
        delivery_complete: Mapping[tuple[str, int], int] | None = None,
    ) -> None:
        """A share group's initialized share-partitions and their start offsets (KIP-932), and
        per share-partition how many records above the start offset were already delivered
        completely (acknowledged, rejected or archived; KIP-1226's DeliveryCompleteCount: 0 where
        not given, as after AlterShareGroupOffsets; -1: a share coordinator that keeps no count)."""
        with self.lock:
            group = self.groups[group_id]
            if group.group_type != "share":
                raise ValueError(f"{group_id} is a {group.group_type} group, not a share group")
            done = dict(delivery_complete or {})
            for (topic, partition), start in offsets.items():
                epoch = self._partition(topic, partition).leader_epoch
                count = int(done.get((topic, partition), 0))
                group.share_offsets[(topic, int(partition))] = (int(start), epoch, count)

    def share_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        with self.lock:
            return {tp: start for tp, (start, _, _) in self.groups[group_id].share_offsets.items()}

    def _remove_group(self, group_id: str) -> None:
        if self.groups.pop(group_id, None) is not None:
            self._groups_by_coordinator[self.coordinator_of(group_id)].discard(group_id)

    def _create_share_group(self, group_id: str) -> Group:
        """What Kafka 4.4 does on an AlterShareGroupOffsets for an unknown group: an Empty share
        group that holds the start offsets (checked on the real broker:
        tests/apachekafka/test_group_types.py)."""
        group = Group(
            group_id=group_id,
            state="Empty",
            protocol_type=DEFAULT_PROTOCOL_TYPE[SHARE],
            protocol=DEFAULT_ASSIGNOR[SHARE],
            group_type=SHARE,
            generation=0,
        )
        self.groups[group_id] = group
        self._groups_by_coordinator[self.coordinator_of(group_id)].add(group_id)
        return group

    def _create_simple_group(self, group_id: str) -> Group:
        """What Kafka does on an OffsetCommit for an unknown group: an Empty classic group
        with no protocol type."""
        group = Group(group_id=group_id, state="Empty", protocol_type="", protocol="", generation=0)
        self.groups[group_id] = group
        self._groups_by_coordinator[self.coordinator_of(group_id)].add(group_id)
        return group
