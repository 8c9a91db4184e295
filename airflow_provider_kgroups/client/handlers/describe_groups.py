"""The describe APIs, one per group type: DescribeGroups (classic), ConsumerGroupDescribe
(KIP-848), ShareGroupDescribe (KIP-932) and StreamsGroupDescribe (KIP-1071).

Each batches the groups of one coordinator into as few requests as
:class:`~..chunking.RequestLimits` allow and answers, per group, a
:class:`~..results.GroupDescription` when the group is of its type, or :class:`NotDescribed`
when it is not (GROUP_ID_NOT_FOUND, a pre-v6 "Dead", or a coordinator without the API).
Which API to ask next is :mod:`..describe`'s business.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from ..chunking import Chunker, RequestLimits
from ..contract import Outcome, RequestPlan
from ..errors import RELOOKUP, RETRY_SAME_BROKER, ErrorCode
from ..lookup import CoordinatorLookup
from ..protocol import (
    ApiMessage,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    KafkaApi,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)
from ..results import (
    CLASSIC,
    CONSUMER,
    SHARE,
    STREAMS,
    GroupDescription,
    GroupState,
    MemberDescription,
    TopicPartition,
)
from .base import Handler, Notes
from .common import missing_from_response, route_group_error

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NotDescribed:
    """The API has no group of its type under that id.

    ``absent``: proven that no group of any type exists (DescribeGroups v6 "Group X not
    found."). ``non_classic``: a group exists, or may, that is not classic (DescribeGroups v6
    69 with any other message, e.g. "Group X is not a classic group."). ``unavailable``: the
    coordinator lacks the API (or answered UNSUPPORTED_VERSION).
    """

    absent: bool = False
    non_classic: bool = False
    unavailable: bool = False


UNAVAILABLE = NotDescribed(unavailable=True)


def decode_assignment(data: bytes | None) -> tuple[TopicPartition, ...]:
    """A classic consumer's assignment bytes -> partitions; () when empty or not the consumer protocol."""
    if not data:
        return ()
    try:
        assignment = ConsumerProtocolAssignment.decode(bytes(data))
    except Exception:  # noqa: BLE001 - not the consumer protocol (Connect, Streams use their own)
        return ()
    return tuple(
        sorted(TopicPartition(t.topic, p) for t in assignment.assigned_partitions for p in t.partitions)
    )


def decode_subscription(data: bytes | None) -> tuple[str, ...]:
    if not data:
        return ()
    try:
        return tuple(ConsumerProtocolSubscription.decode(bytes(data)).topics or ())
    except Exception:  # noqa: BLE001 - not the consumer protocol: no topics to show
        return ()


def _describe_groups(group_ids: list[str], version: int) -> DescribeGroupsRequest:
    return DescribeGroupsRequest(groups=group_ids, include_authorized_operations=False)


class DescribeGroupsHandler(Handler[str, "GroupDescription | NotDescribed"]):
    """Classic groups. Kafka answers every other group (and an absent one) "Dead"; from v6
    (KIP-1043) with GROUP_ID_NOT_FOUND and GroupMetadataManager's message, which tells an
    absent group ("Group X not found.") from a group of another type ("Group X is not a
    classic group.")."""

    #: v6: 69 with "not a classic group" / "not found" instead of a bare Dead
    kafka_api = KafkaApi(DescribeGroupsRequest, DescribeGroupsResponse, max_version=6)
    group_type = CLASSIC

    def __init__(self, lookup: CoordinatorLookup, *, limits: RequestLimits = RequestLimits()) -> None:
        self.lookup = lookup
        self._chunker = Chunker(limits, _describe_groups)

    def build(self, group_ids: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        return [
            RequestPlan(_describe_groups(ids, version), version, tuple(ids))
            for ids in self._chunker.chunks(group_ids, version)
        ]

    def parse(
        self, plan: RequestPlan[str], response: Any, notes: Notes
    ) -> Outcome[str, GroupDescription | NotDescribed]:
        outcome: Outcome[str, GroupDescription | NotDescribed] = Outcome()
        node = plan.node
        for group in response.groups:
            group_id = group.group_id
            if group_id not in plan.key_set:
                continue
            if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                absent = (getattr(group, "error_message", None) or "") == f"Group {group_id} not found."
                outcome.completed[group_id] = NotDescribed(absent=absent, non_classic=not absent)
                continue
            if route_group_error(outcome, group_id, group.error_code, getattr(group, "error_message", None)):
                continue
            state = GroupState.parse(group.group_state)
            if state is GroupState.DEAD:  # below v6: absent, or a group of another type
                outcome.completed[group_id] = NotDescribed()
                continue
            consumer = group.protocol_type in ("consumer", "")
            members = (
                tuple(
                    MemberDescription(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        assignment=decode_assignment(m.member_assignment) if consumer else (),
                        subscribed_topics=decode_subscription(m.member_metadata) if consumer else (),
                    )
                    for m in group.members
                )
                # an Empty group, as most of a big cluster's are: no generator for no member (a
                # null array, which the spec does not allow, still fails as before: not iterable)
                if group.members != []
                else ()
            )
            outcome.completed[group_id] = GroupDescription(
                group_id=group_id,
                state=state,
                protocol_type=group.protocol_type or "",
                protocol=group.protocol_data or "",
                members=members,
                coordinator_id=node,
                group_type=CLASSIC,
            )
        missing_from_response(outcome, plan.keys, {g.group_id for g in response.groups}, "DescribeGroups")
        return outcome


def _rank(entry: Any) -> int:
    """Which of several entries for one group to believe: success, then a retriable error, then
    any other error, then "not of this type"."""
    if entry.error_code == ErrorCode.NONE:
        return 0
    if entry.error_code in RETRY_SAME_BROKER or entry.error_code in RELOOKUP:
        return 1
    if entry.error_code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION):
        return 3
    return 2


class _TypedDescribeHandler(Handler[str, "GroupDescription | NotDescribed"]):
    """ConsumerGroupDescribe, ShareGroupDescribe and StreamsGroupDescribe share one shape.

    Brokers from 3.7 to late 2024 hand every requested id to every coordinator shard among them
    (GroupCoordinatorService.consumerGroupDescribe / shareGroupDescribe), so one group can come
    back several times: its own shard's answer among GROUP_ID_NOT_FOUND from the others. As
    DescribeConsumerGroupsHandler ends up doing, the successful entry wins, whatever the order.
    """

    group_type: str

    def __init__(self, lookup: CoordinatorLookup, *, limits: RequestLimits = RequestLimits()) -> None:
        self.lookup = lookup
        self._chunker = Chunker(limits, self._request)

    def _request(self, group_ids: list[str], version: int) -> ApiMessage:
        return self.request_class(group_ids=group_ids, include_authorized_operations=False)

    def build(self, group_ids: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        return [
            RequestPlan(self._request(ids, version), version, tuple(ids))
            for ids in self._chunker.chunks(group_ids, version)
        ]

    def unsupported(self, group_ids: list[str], node: int) -> Outcome[str, GroupDescription | NotDescribed]:
        return Outcome(completed={g: UNAVAILABLE for g in group_ids})

    def parse(
        self, plan: RequestPlan[str], response: Any, notes: Notes
    ) -> Outcome[str, GroupDescription | NotDescribed]:
        outcome: Outcome[str, GroupDescription | NotDescribed] = Outcome()
        node = plan.node
        best: dict[str, Any] = {}  # group id -> its entry in the response
        for entry in response.groups:
            if entry.group_id in plan.key_set and (
                entry.group_id not in best or _rank(entry) < _rank(best[entry.group_id])
            ):
                best[entry.group_id] = entry
        for group_id, entry in best.items():
            if entry.error_code == ErrorCode.UNSUPPORTED_VERSION:
                outcome.completed[group_id] = UNAVAILABLE
            elif entry.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                outcome.completed[group_id] = NotDescribed()
            elif not route_group_error(outcome, group_id, entry.error_code, entry.error_message):
                outcome.completed[group_id] = self.describe(entry, node)
        missing_from_response(
            outcome, plan.keys, set(best), self.request_class.__name__.removesuffix("Request")
        )
        return outcome

    def describe(self, entry: Any, node: int) -> GroupDescription:
        raise NotImplementedError


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    return tuple(
        sorted(
            TopicPartition(t.topic_name, p) for t in (assignment.topic_partitions or []) for p in t.partitions
        )
    )


def _member_group(group: Any, node: int, group_type: str) -> GroupDescription:
    """A KIP-848 consumer group or a KIP-932 share group: the same member shape (a share group's
    members have no static instance id); the group type is also its protocol type."""
    members = tuple(
        MemberDescription(
            member_id=m.member_id,
            group_instance_id=getattr(m, "instance_id", None),
            client_id=m.client_id,
            client_host=m.client_host,
            assignment=_partitions(m.assignment),
            subscribed_topics=tuple(m.subscribed_topic_names or ()),
        )
        for m in group.members
    )
    return GroupDescription(
        group_id=group.group_id,
        state=GroupState.parse(group.group_state),
        protocol_type=group_type,
        protocol=group.assignor_name or "",
        members=members,
        coordinator_id=node,
        group_type=group_type,
    )


class ConsumerGroupDescribeHandler(_TypedDescribeHandler):
    """KIP-848 consumer groups (GroupMetadataManager.consumerGroupDescribe)."""

    kafka_api = KafkaApi(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, max_version=0)
    group_type = CONSUMER

    def describe(self, group: Any, node: int) -> GroupDescription:
        return _member_group(group, node, CONSUMER)


class ShareGroupDescribeHandler(_TypedDescribeHandler):
    """KIP-932 share groups (GroupMetadataManager.shareGroupDescribe). A share group's members
    share partitions; it commits no offsets (OffsetFetch answers it with nothing)."""

    #: v1 = Kafka 4.1's stable v0 (same fields)
    kafka_api = KafkaApi(ShareGroupDescribeRequest, ShareGroupDescribeResponse, max_version=1)
    group_type = SHARE

    def describe(self, group: Any, node: int) -> GroupDescription:
        return _member_group(group, node, SHARE)


class StreamsGroupDescribeHandler(_TypedDescribeHandler):
    """KIP-1071 streams groups (GroupMetadataManager.streamsGroupDescribe). A member's active
    tasks are (subtopology, partition) pairs; task p of a subtopology reads partition p of each
    of its source topics and of the repartition topics it reads (Kafka lists those apart, as
    RepartitionSourceTopics), which is the assignment reported here. The protocol is the
    coordinator's task assignor ("sticky" by default), which v1 (Kafka 4.4) gives; "" from v0."""

    #: v1 (Kafka 4.4) adds AssignorName and an opt-in topology description (not asked for)
    kafka_api = KafkaApi(StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, max_version=1)
    group_type = STREAMS

    def describe(self, group: Any, node: int) -> GroupDescription:
        sources: dict[str, tuple[str, ...]] = {}
        for sub in (group.topology.subtopologies or []) if group.topology is not None else []:
            sources[sub.subtopology_id] = tuple(sub.source_topics or ()) + tuple(
                t.name for t in (sub.repartition_source_topics or [])
            )
        every_source = tuple(sorted({t for topics in sources.values() for t in topics}))
        members = tuple(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                assignment=tuple(
                    sorted(
                        {
                            TopicPartition(t, p)
                            for task in (m.assignment.active_tasks or [])
                            for t in sources.get(task.subtopology_id, ())
                            for p in task.partitions
                        }
                    )
                ),
                subscribed_topics=every_source,
            )
            for m in group.members
        )
        return GroupDescription(
            group_id=group.group_id,
            state=GroupState.parse(group.group_state),
            protocol_type="streams",
            protocol=getattr(group, "assignor_name", None) or "",
            members=members,
            coordinator_id=node,
            group_type=STREAMS,
        )


#: the describe API of each group type
HANDLER_FOR_TYPE = {
    CLASSIC: DescribeGroupsHandler,
    CONSUMER: ConsumerGroupDescribeHandler,
    SHARE: ShareGroupDescribeHandler,
    STREAMS: StreamsGroupDescribeHandler,
}
