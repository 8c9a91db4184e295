"""OffsetDelete (API 47, KIP-496) with Apache Kafka's answers.

``KafkaApis.handleOffsetDeleteRequest``: no group Delete ACL -> GROUP_AUTHORIZATION_FAILED for
the whole request; each topic the principal may not Read -> TOPIC_AUTHORIZATION_FAILED (29) on
each of its partitions; a topic or partition the broker does not know -> UNKNOWN_TOPIC_OR_PARTITION
(3); the rest goes to the coordinator.

``OffsetMetadataManager.deleteOffsets`` and ``Group.validateOffsetDelete`` /
``isSubscribedToTopic`` (group-coordinator, Kafka 3.7+):

* the group absent or Dead -> GROUP_ID_NOT_FOUND (69); a share group -> 69 ("not a consumer group");
* a classic group with members (Stable, PreparingRebalance, CompletingRebalance) whose protocol
  type is not "consumer" -> NON_EMPTY_GROUP (68);
* per topic: a topic the group subscribes to -> GROUP_SUBSCRIBED_TO_TOPIC (86) on every partition
  asked. A classic group subscribes to its members' ``ConsumerProtocolSubscription`` topics (none
  while Empty; a group of another protocol type subscribes to nothing); a consumer (KIP-848)
  group to its members' subscribed topic names; a streams group with members to the topics its
  topology reads (source and repartition topics: Kafka 4.4 answers 86 for both while a Kafka
  Streams application runs; an Empty one subscribes to nothing, its offsets are deleted);
* otherwise each partition's committed offset (and any pending transactional one) is removed,
  error 0 whether or not there was one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import OffsetDeleteResponse

from ..codec import Err
from ..model import CLASSIC, CONSUMER, SHARE, STREAMS, Group
from .groups import _group_error, _live_group

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["HANDLERS"]

_MEMBER_STATES = frozenset({"Stable", "PreparingRebalance", "CompletingRebalance"})


def subscribed_topics(group: Group) -> set[str]:
    """The topics the coordinator counts the group as subscribed to (``isSubscribedToTopic``)."""
    if group.group_type == CLASSIC:
        if group.protocol_type != "consumer":
            return (
                set()
            )  # ClassicGroup.computeSubscribedTopics: empty Optional, usesConsumerGroupProtocol false
        return {t for m in group.members.values() for t in m.subscribed_topics()}
    if group.group_type == CONSUMER:
        return {t for m in group.members.values() for t in m.subscribed_topics()}
    if group.group_type == STREAMS:
        if not group.members:
            return set()
        return {t for sub in (group.topology or {}).values() for t in sub.read_topics}
    return set()


def _delete_error(group: Group | None, group_id: str) -> tuple[int, str | None]:
    if group is None:
        return Err.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
    if group.group_type == SHARE:
        return Err.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
    if group.group_type == CLASSIC and group.state in _MEMBER_STATES and group.protocol_type != "consumer":
        return Err.NON_EMPTY_GROUP, None
    return 0, None


def offset_delete(ctx: RequestContext) -> Any:
    req, cluster = ctx.request, ctx.cluster
    R = OffsetDeleteResponse
    T, P = R.OffsetDeleteResponseTopic, R.OffsetDeleteResponseTopic.OffsetDeleteResponsePartition
    error, _ = _group_error(ctx, req.group_id, "Delete")  # KafkaApis: group Delete, before anything else
    group = None
    if not error:
        group = _live_group(ctx, req.group_id)
        error, _ = _delete_error(group, req.group_id)
    if error:
        return R(error_code=error, throttle_time_ms=0, topics=[])
    subscribed = subscribed_topics(group)
    topics = []
    for t in req.topics:
        known = cluster.topics.get(t.name)
        rows = []
        for p in t.partitions:
            index = p.partition_index
            injected = ctx.injected((req.group_id, t.name, index), wildcard=False)
            if not ctx.authorized("topic", t.name, "Read"):
                code = Err.TOPIC_AUTHORIZATION_FAILED
            elif known is None or not 0 <= index < len(known.partitions):
                code = Err.UNKNOWN_TOPIC_OR_PARTITION
            elif injected is not None:
                code = injected.error
            elif t.name in subscribed:
                code = Err.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                group.offsets.pop((t.name, index), None)
                group.pending_offsets.discard((t.name, index))
                code = 0
            rows.append(P(partition_index=index, error_code=code))
        topics.append(T(name=t.name, partitions=rows))
    return R(error_code=0, throttle_time_ms=0, topics=topics)


HANDLERS = {ApiKey.OffsetDelete: offset_delete}
