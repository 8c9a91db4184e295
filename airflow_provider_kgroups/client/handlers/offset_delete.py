"""OffsetDelete (API 47, KIP-496): remove a group's committed offsets for some partitions.

One group per request (the API carries one), the requests of a coordinator pipelined. As
Kafka's ``DeleteConsumerGroupOffsetsHandler`` (clients/.../admin/internals/) reads the
answer: a group-level error fails the whole group (30 GROUP_AUTHORIZATION_FAILED, 69
GROUP_ID_NOT_FOUND, 24 INVALID_GROUP_ID, 68 NON_EMPTY_GROUP), 14 retries on the same
coordinator, 15/16 look the coordinator up again; otherwise each partition has its own answer.

What the broker answers per partition (``KafkaApis.handleOffsetDeleteRequest`` and
``OffsetMetadataManager.deleteOffsets``):

* 0: the offset is gone (or there was none: deleting nothing is not an error);
* 86 GROUP_SUBSCRIBED_TO_TOPIC: a member of the group still subscribes to the topic
  (``Group.isSubscribedToTopic``); every partition of that topic is refused;
* 3 UNKNOWN_TOPIC_OR_PARTITION: the broker does not know the topic or partition (it checks
  its metadata cache before the coordinator sees the request);
* 29 TOPIC_AUTHORIZATION_FAILED: the principal may not Read the topic.

Which groups accept it (``Group.validateOffsetDelete``): a classic group that is Empty, or one
whose members use the consumer protocol (the subscription decides per topic; any other
protocol type with members answers 68); a consumer (KIP-848) group always (per topic); a share
group never (69, "not a consumer group").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..contract import Outcome, RequestPlan
from ..errors import CLIENT_INCOMPLETE_RESPONSE, Failure
from ..lookup import CoordinatorLookup
from ..protocol import KafkaApi, OffsetDeleteRequest, OffsetDeleteResponse
from ..results import TopicPartition, topic_partition
from .base import Handler, Notes
from .common import by_topic, missing_from_response, route_group_error


class OffsetDeleteHandler(Handler[str, dict[TopicPartition, "Failure | None"]]):
    """Per group: each asked partition -> None (deleted, or nothing was committed) or its Failure."""

    #: KIP-496 (Kafka 2.4+)
    kafka_api = KafkaApi(OffsetDeleteRequest, OffsetDeleteResponse, max_version=0)

    def __init__(
        self, lookup: CoordinatorLookup, partitions: Mapping[str, frozenset[TopicPartition]]
    ) -> None:
        self.lookup = lookup
        self._partitions = partitions

    def build(self, group_ids: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        topic_cls = OffsetDeleteRequest.OffsetDeleteRequestTopic
        plans = []
        for group_id in group_ids:
            topics = by_topic(dict.fromkeys(self._partitions[group_id]))
            request = OffsetDeleteRequest(
                group_id=group_id,
                topics=[
                    topic_cls(
                        name=topic,
                        partitions=[
                            topic_cls.OffsetDeleteRequestPartition(partition_index=p) for p, _ in rows
                        ],
                    )
                    for topic, rows in topics.items()
                ],
            )
            plans.append(RequestPlan(request, version, (group_id,)))
        return plans

    def parse(
        self, plan: RequestPlan[str], response: Any, notes: Notes
    ) -> Outcome[str, dict[TopicPartition, Failure | None]]:
        outcome: Outcome[str, dict[TopicPartition, Failure | None]] = Outcome()
        group_id = plan.keys[0]
        if route_group_error(outcome, group_id, response.error_code):
            return outcome
        results: dict[TopicPartition, Failure | None] = {}
        for topic in response.topics:
            for p in topic.partitions:
                results[topic_partition(topic.name, p.partition_index)] = (
                    Failure(p.error_code) if p.error_code else None
                )
        for tp in self._partitions[group_id] - set(results):
            results[tp] = Failure(CLIENT_INCOMPLETE_RESPONSE, f"OffsetDelete response did not mention {tp}")
        outcome.completed[group_id] = {tp: results[tp] for tp in sorted(self._partitions[group_id])}
        missing_from_response(outcome, plan.keys, {group_id}, "OffsetDelete")
        return outcome
