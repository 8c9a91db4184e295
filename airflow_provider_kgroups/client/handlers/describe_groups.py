"""DescribeGroups (classic groups) and ConsumerGroupDescribe (KIP-848 groups).

Both batch every group of one coordinator into one request. The client describes with
DescribeGroups first and asks ConsumerGroupDescribe only about groups DescribeGroups called
Dead; ConsumerGroupDescribe's GROUP_ID_NOT_FOUND (or a coordinator without API 69) then
confirms the classic answer.
"""

from __future__ import annotations

import logging

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from ..driver import Outcome, RequestPlan
from ..errors import ErrorCode, Failure
from ..lookup import CoordinatorLookup
from ..protocol import ConsumerGroupDescribeRequest, DescribeGroupsRequest
from ..results import GroupDescription, GroupState, MemberDescription, TopicPartition
from .common import missing_from_response, route_group_error

log = logging.getLogger(__name__)

#: A ConsumerGroupDescribe value meaning "not a KIP-848 group here: the classic answer stands".
NOT_A_CONSUMER_GROUP = "not-a-kip-848-group"
_NOT_A_NEW_GROUP = {ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION}


def decode_assignment(data: bytes | None) -> tuple[TopicPartition, ...]:
    """A classic consumer's assignment bytes -> partitions; () when empty or not the consumer protocol."""
    if not data:
        return ()
    try:
        assignment = ConsumerProtocolAssignment.decode(bytes(data))
    except Exception:  # noqa: BLE001 - not the consumer protocol (Connect, Streams use their own)
        return ()
    return tuple(sorted(TopicPartition(t.topic, p) for t in assignment.assigned_partitions for p in t.partitions))


def decode_subscription(data: bytes | None) -> tuple[str, ...]:
    if not data:
        return ()
    try:
        return tuple(ConsumerProtocolSubscription.decode(bytes(data)).topics or ())
    except Exception:  # noqa: BLE001
        return ()


class DescribeGroupsHandler:
    request_class = DescribeGroupsRequest

    def __init__(self, lookup: CoordinatorLookup) -> None:
        self.lookup = lookup

    def build(self, group_ids: list[str], version: int) -> list[RequestPlan[str]]:
        return [RequestPlan(DescribeGroupsRequest(groups=list(group_ids), include_authorized_operations=False),
                            version, tuple(group_ids))]

    def parse(self, plan: RequestPlan[str], response) -> Outcome[str, GroupDescription]:
        outcome: Outcome[str, GroupDescription] = Outcome()
        node = self.lookup.cached(plan.keys[0]) if plan.keys else -1
        for group in response.groups:
            if group.group_id not in plan.key_set:
                continue
            if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                # v6+: the broker says outright that the group does not exist; that is an answer.
                outcome.completed[group.group_id] = _dead(group.group_id, node)
                continue
            if route_group_error(outcome, group.group_id, group.error_code, group.error_message):
                continue
            consumer = group.protocol_type in ("consumer", "")
            members = tuple(
                MemberDescription(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                    client_host=m.client_host,
                    assignment=decode_assignment(m.member_assignment) if consumer else (),
                    subscribed_topics=decode_subscription(m.member_metadata) if consumer else (),
                ) for m in group.members)
            outcome.completed[group.group_id] = GroupDescription(
                group_id=group.group_id, state=GroupState.parse(group.group_state),
                protocol_type=group.protocol_type or "", protocol=group.protocol_data or "",
                members=members, coordinator_id=node if node is not None else -1, group_type="classic")
        missing_from_response(outcome, plan.keys, {g.group_id for g in response.groups}, "DescribeGroups")
        return outcome


def _dead(group_id: str, node: int | None) -> GroupDescription:
    return GroupDescription(group_id=group_id, state=GroupState.DEAD, protocol_type="", protocol="",
                            members=(), coordinator_id=node if node is not None else -1)


class ConsumerGroupDescribeHandler:
    request_class = ConsumerGroupDescribeRequest

    def __init__(self, lookup: CoordinatorLookup) -> None:
        self.lookup = lookup

    def build(self, group_ids: list[str], version: int) -> list[RequestPlan[str]]:
        return [RequestPlan(ConsumerGroupDescribeRequest(group_ids=list(group_ids),
                                                         include_authorized_operations=False),
                            version, tuple(group_ids))]

    def unsupported(self, group_ids: list[str], node: int) -> Outcome:
        return Outcome(completed={g: NOT_A_CONSUMER_GROUP for g in group_ids})

    def parse(self, plan: RequestPlan[str], response) -> Outcome:
        outcome: Outcome = Outcome()
        node = self.lookup.cached(plan.keys[0]) if plan.keys else -1
        for group in response.groups:
            if group.group_id not in plan.key_set:
                continue
            if group.error_code in _NOT_A_NEW_GROUP:
                outcome.completed[group.group_id] = NOT_A_CONSUMER_GROUP
                continue
            if route_group_error(outcome, group.group_id, group.error_code, group.error_message):
                continue
            members = tuple(
                MemberDescription(
                    member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                    client_host=m.client_host,
                    assignment=tuple(sorted(TopicPartition(t.topic_name, p)
                                            for t in (m.assignment.topic_partitions or []) for p in t.partitions)),
                    subscribed_topics=tuple(m.subscribed_topic_names or ()),
                ) for m in group.members)
            outcome.completed[group.group_id] = GroupDescription(
                group_id=group.group_id, state=GroupState.parse(group.group_state), protocol_type="consumer",
                protocol=group.assignor_name or "", members=members,
                coordinator_id=node if node is not None else -1, group_type="consumer")
        missing_from_response(outcome, plan.keys, {g.group_id for g in response.groups}, "ConsumerGroupDescribe")
        return outcome
