"""OffsetFetch: committed offsets of many groups. v8+ carries many groups per request
(KIP-709), in chunks within :class:`~..chunking.RequestLimits`; below v8 each group gets its own
request, all pipelined on the connection.

What Kafka's message specs (clients/src/main/resources/common/message/OffsetFetch*.json) say of
the old versions: v0 reads offsets committed to ZooKeeper ("In version 0, the request read
offsets from ZK"), not the group's, so it is never sent; v0-v1 have no top-level ErrorCode
("versions": "2-7"), so a coordinator error arrives on every partition. As Java's
``OffsetFetchResponse`` (its constructor's ``topLevelError``: any partition error but
UNKNOWN_TOPIC_OR_PARTITION and TOPIC_AUTHORIZATION_FAILED is the group's), such an error is
promoted to the group below v2 and routed like one: COORDINATOR_LOAD_IN_PROGRESS asks the same
coordinator again, NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE look it up again, anything else
fails the group.
"""

from __future__ import annotations

from typing import Any

from ..chunking import Chunker, RequestLimits
from ..contract import Outcome, RequestPlan
from ..errors import ErrorCode, Failure
from ..lookup import CoordinatorLookup
from ..protocol import AllOffsetsFetch, KafkaApi, OffsetFetchRequest, OffsetFetchResponse
from ..results import CommittedOffset, GroupOffsets, TopicPartition, committed_offset, topic_partition
from .base import Handler, Notes, VersionNeed
from .common import missing_from_response, route_group_error

BATCHED_OFFSET_FETCH = 8
NULL_TOPICS_MIN_VERSION = 2  # "all partitions" (Topics=null) and a top-level ErrorCode need v2+
KAFKA_STORED_VERSION = 1  # v0 reads offsets committed to ZooKeeper
#: the partition errors below v2 that are the partition's own (OffsetFetchResponse.PARTITION_ERRORS)
PARTITION_ERRORS = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.TOPIC_AUTHORIZATION_FAILED})


def group_error_below_v2(topics: Any) -> int:
    """The group's error of a v0-v1 answer: the first partition error that is not a partition's
    own (Java's ``OffsetFetchResponse.topLevelError``), else NONE."""
    for topic in topics:
        for p in topic.partitions:
            if p.error_code and p.error_code not in PARTITION_ERRORS:
                return int(p.error_code)
    return ErrorCode.NONE


def committed_of(topics: Any) -> tuple[dict[TopicPartition, CommittedOffset], bool]:
    """A v0-v7 answer's partitions (kafka-python's containers) as values, and whether any carries
    an error code: what :func:`..wire.decode_offset_fetch` makes of a v8-v9 group's."""
    partitions = {}
    errors = False
    for topic in topics:
        name = topic.name
        for p in topic.partitions:
            partitions[topic_partition(name, p.partition_index)] = committed_offset(
                p.committed_offset, p.metadata, p.committed_leader_epoch, p.error_code
            )
            errors = errors or bool(p.error_code)
    return partitions, errors


class OffsetFetchHandler(Handler[str, GroupOffsets]):
    #: v10 replaces topic names with topic ids
    kafka_api = KafkaApi(OffsetFetchRequest, OffsetFetchResponse, max_version=9)
    needs = (
        VersionNeed(KAFKA_STORED_VERSION, "offsets committed to Kafka (v0 reads ZooKeeper's)"),
        VersionNeed(
            NULL_TOPICS_MIN_VERSION,
            "asking for all partitions (no topics named)",
            lambda handler, group_id: handler._topics is None,
        ),
    )

    def __init__(
        self,
        lookup: CoordinatorLookup,
        topics: dict[str, list[int]] | None = None,
        require_stable: bool = False,
        *,
        limits: RequestLimits = RequestLimits(),
    ) -> None:
        self.lookup = lookup
        self._topics = topics  # None: every partition the group committed
        self._require_stable = require_stable
        self._chunker = Chunker(limits, lambda ids, version: self._batched(ids))

    def build(self, group_ids: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        if version >= BATCHED_OFFSET_FETCH:
            make = (
                self._every_offset
                if self._topics is None and version in AllOffsetsFetch.VERSIONS
                else self._batched
            )
            return [
                RequestPlan(make(ids), version, tuple(ids))
                for ids in self._chunker.chunks(group_ids, version)
            ]
        return [
            RequestPlan(
                OffsetFetchRequest(
                    group_id=g, topics=self._single_topics(), require_stable=self._require_stable
                ),
                version,
                (g,),
            )
            for g in group_ids
        ]

    def _every_offset(self, group_ids: list[str]) -> Any:
        """The common request (every committed offset of each group), encoded by :mod:`..wire`."""
        return AllOffsetsFetch(group_ids, self._require_stable)

    def _batched(self, group_ids: list[str]) -> OffsetFetchRequest:
        groups = [
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=self._batched_topics())
            for g in group_ids
        ]
        return OffsetFetchRequest(groups=groups, require_stable=self._require_stable)

    def _batched_topics(self) -> list[Any] | None:
        if self._topics is None:
            return None
        return [
            OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=t, partition_indexes=p)
            for t, p in self._topics.items()
        ]

    def _single_topics(self) -> list[Any] | None:
        if self._topics is None:
            return None
        return [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p)
            for t, p in self._topics.items()
        ]

    def parse(self, plan: RequestPlan[str], response: Any, notes: Notes) -> Outcome[str, GroupOffsets]:
        outcome: Outcome[str, GroupOffsets] = Outcome()
        if plan.version >= BATCHED_OFFSET_FETCH:
            # decoded by ..wire straight into values: (group id, error code, partitions, errors)
            answers = response.groups
        elif plan.version >= NULL_TOPICS_MIN_VERSION:
            answers = [(plan.keys[0], response.error_code, *committed_of(response.topics))]
        else:
            answers = [(plan.keys[0], group_error_below_v2(response.topics), *committed_of(response.topics))]
        key_set = plan.key_set
        for group_id, error_code, partitions, errors in answers:
            if group_id not in key_set or route_group_error(outcome, group_id, error_code):
                continue
            unstable = (
                sorted(
                    tp
                    for tp, c in partitions.items()
                    if c.error is not None and c.error.code == ErrorCode.UNSTABLE_OFFSET_COMMIT
                )
                if errors and self._require_stable
                else ()
            )
            if unstable:
                # Pending transactional offsets (Kafka 3.x answers 88 per partition). As the Java
                # consumer does (ConsumerCoordinator.OffsetFetchResponseHandler: "just retry"),
                # ask again after a backoff until they clear; the call's deadline bounds it and
                # a timeout names them. (The Java admin handler drops such partitions from its
                # answer, which would pass an unknown offset off as "no commit".)
                outcome.requeue(
                    group_id,
                    Failure(
                        ErrorCode.UNSTABLE_OFFSET_COMMIT,
                        "pending transactional offsets on " + ", ".join(map(str, unstable)),
                    ),
                    relookup=False,
                )
                continue
            outcome.completed[group_id] = GroupOffsets(group_id, partitions)
        missing_from_response(outcome, plan.keys, {a[0] for a in answers}, "OffsetFetch")
        return outcome
