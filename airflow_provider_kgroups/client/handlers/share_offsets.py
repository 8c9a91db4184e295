"""Share groups' start offsets (KIP-932, Kafka 4.1+): DescribeShareGroupOffsets (API 90) and
AlterShareGroupOffsets (API 91).

A share group has no committed offsets (OffsetFetch answers it empty); each share-partition
has a *start offset*: records below it are done, records from it on may still be delivered.
From v1 (KIP-1226, Kafka 4.2+) the broker also answers each share-partition's exact ``Lag``: the
log end minus the start offset minus the records above the start offset whose delivery is
complete (``GroupCoordinatorService.computeShareGroupLagAndBuildResponse``), -1 when it does not
know it (a start offset of -1, an error, or a share coordinator without a delivery-complete
count: ``shouldComputeSharePartitionLag``). Before that (v0, Kafka 4.1) the log end minus the
start offset is only an upper bound: acknowledged records above the start offset count too.

* DescribeShareGroupOffsets carries many groups (``Groups[]``): one request per coordinator,
  as OffsetFetch v8+; ``Topics`` null asks for every share-partition the group initialized.
  Group-level errors route as every coordinator API's (14 retry, 15/16 re-lookup, 69
  GROUP_ID_NOT_FOUND for a group that is not a share group, 30 and the rest fail the group); a
  partition's error is that partition's. A start offset of -1: the share-partition was never
  initialized; a ``Lag`` of -1 (v1) or no ``Lag`` (v0): the lag is unknown, never 0.
* AlterShareGroupOffsets carries one group (``GroupCoordinatorService.alterShareGroupOffsets``):
  the group must be a share group (69) without members (68 NON_EMPTY_GROUP), errors at the top
  level of the response, then per partition.

A broker without these APIs (before 4.1, Tansu) fails every group with CLIENT_UNSUPPORTED
naming the API: refused by name, never read as "no start offsets".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..contract import Outcome, RequestPlan
from ..errors import CLIENT_INCOMPLETE_RESPONSE, Failure
from ..lookup import CoordinatorLookup
from ..protocol import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    KafkaApi,
)
from ..results import CommittedOffset, ShareGroupOffsets, TopicPartition, topic_partition
from .base import Handler, Notes
from .common import by_topic, missing_from_response, route_group_error

NOT_INITIALIZED = -1
FIRST_WITH_LAG = 1  # DescribeShareGroupOffsets v1 (KIP-1226) carries Lag


class DescribeShareGroupOffsetsHandler(Handler[str, ShareGroupOffsets]):
    """Per group: each share-partition's start offset as a :class:`CommittedOffset` (offset None:
    not initialized) and, from v1, the broker's lag (:class:`ShareGroupOffsets`)."""

    #: KIP-932 (Kafka 4.1+: v0); v1 (Kafka 4.2+, KIP-1226) adds each share-partition's Lag, the
    #: highest version there is (Kafka 4.4)
    kafka_api = KafkaApi(DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, max_version=1)

    def __init__(self, lookup: CoordinatorLookup, topics: Mapping[str, list[int]] | None = None) -> None:
        self.lookup = lookup
        self._topics = topics

    def build(self, group_ids: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        group_cls = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
        topics = (
            None
            if self._topics is None
            else [
                group_cls.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=list(ps))
                for t, ps in sorted(self._topics.items())
            ]
        )
        request = DescribeShareGroupOffsetsRequest(
            groups=[group_cls(group_id=g, topics=topics) for g in group_ids]
        )
        return [RequestPlan(request, version, tuple(group_ids))]

    def parse(self, plan: RequestPlan[str], response: Any, notes: Notes) -> Outcome[str, ShareGroupOffsets]:
        outcome: Outcome[str, ShareGroupOffsets] = Outcome()
        with_lag = plan.version >= FIRST_WITH_LAG
        for group in response.groups:
            g = group.group_id
            if g not in plan.key_set or route_group_error(outcome, g, group.error_code, group.error_message):
                continue
            partitions = {}
            lags: dict[TopicPartition, int | None] = {}
            for topic in group.topics:
                for p in topic.partitions:
                    tp = topic_partition(topic.topic_name, p.partition_index)
                    error = Failure(p.error_code, p.error_message or "") if p.error_code else None
                    start = None if error is not None or p.start_offset == NOT_INITIALIZED else p.start_offset
                    partitions[tp] = CommittedOffset(
                        start, "", p.leader_epoch if p.leader_epoch >= 0 else None, error
                    )
                    # -1 (the field's default) is the broker's "unknown": never read as a lag of 0
                    lags[tp] = p.lag if start is not None and p.lag >= 0 else None
            outcome.completed[g] = ShareGroupOffsets(g, partitions, lags if with_lag else None)
        missing_from_response(
            outcome, plan.keys, {g.group_id for g in response.groups}, "DescribeShareGroupOffsets"
        )
        return outcome


class AlterShareGroupOffsetsHandler(Handler[str, dict[TopicPartition, "Failure | None"]]):
    """Per group: each partition -> None (its start offset set) or its Failure."""

    #: KIP-932 (Kafka 4.1+)
    kafka_api = KafkaApi(AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, max_version=0)

    def __init__(
        self, lookup: CoordinatorLookup, offsets: Mapping[str, Mapping[TopicPartition, int]]
    ) -> None:
        self.lookup = lookup
        self._offsets = offsets

    def build(self, group_ids: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        topic_cls = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
        plans = []
        for g in group_ids:
            partition_cls = topic_cls.AlterShareGroupOffsetsRequestPartition
            request = AlterShareGroupOffsetsRequest(
                group_id=g,
                topics=[
                    topic_cls(
                        topic_name=t,
                        partitions=[partition_cls(partition_index=p, start_offset=o) for p, o in rows],
                    )
                    for t, rows in by_topic(self._offsets[g]).items()
                ],
            )
            plans.append(RequestPlan(request, version, (g,)))
        return plans

    def parse(
        self, plan: RequestPlan[str], response: Any, notes: Notes
    ) -> Outcome[str, dict[TopicPartition, Failure | None]]:
        outcome: Outcome[str, dict[TopicPartition, Failure | None]] = Outcome()
        g = plan.keys[0]
        if route_group_error(outcome, g, response.error_code, response.error_message):
            return outcome
        results: dict[TopicPartition, Failure | None] = {}
        for topic in response.responses:
            for p in topic.partitions:
                results[topic_partition(topic.topic_name, p.partition_index)] = (
                    Failure(p.error_code, p.error_message or "") if p.error_code else None
                )
        for tp in set(self._offsets[g]) - set(results):
            results[tp] = Failure(
                CLIENT_INCOMPLETE_RESPONSE, f"AlterShareGroupOffsets response did not mention {tp}"
            )
        outcome.completed[g] = {tp: results[tp] for tp in sorted(self._offsets[g])}
        return outcome
