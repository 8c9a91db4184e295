"""ListOffsets: log-start, log-end (high watermark or last stable offset) and offsets for a
timestamp, one request per partition leader carrying all its partitions.

Errors a partition's leader answers while leadership moves (:data:`REFRESH_LEADER`: a new
leader catching up answers OFFSET_NOT_AVAILABLE, the old one NOT_LEADER_OR_FOLLOWER, ...) and
UNKNOWN_TOPIC_OR_PARTITION (a broker that has not yet learned of the topic) send the partition
back to the leader lookup: metadata is refreshed and the leader asked again until the deadline,
as the Java consumer does (OffsetFetcherUtils.handleListOffsetResponse). A topic that is really
gone then fails in the lookup, after one Metadata request.
"""

from __future__ import annotations

from typing import Any

from ..contract import Outcome, RequestPlan
from ..errors import REFRESH_LEADER, ErrorCode, Failure
from ..lookup import LeaderLookup
from ..protocol import KafkaApi, ListOffsetsRequest, ListOffsetsResponse
from ..results import ListedOffset, TopicPartition, topic_partition
from .base import Handler, Notes, VersionNeed
from .common import missing_from_response

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
SINGLE_OFFSET_VERSION = 1  # ListOffsetsRequest.json: "Version 1 removes MaxNumOffsets"
MAX_TIMESTAMP_VERSION = 7  # KIP-734


class ListOffsetsHandler(Handler[TopicPartition, ListedOffset]):
    kafka_api = KafkaApi(ListOffsetsRequest, ListOffsetsResponse, max_version=9)
    # v0 (Kafka 0.10.0) answers in OldStyleOffsets, a list of log segments' base offsets, and has
    # no Offset field (ListOffsetsResponse.json: "OldStyleOffsets" versions "0", "Offset" "1+"):
    # read as v1 every partition would be offset -1 with no error. Below v7 a broker does not
    # know "max timestamp": those partitions fail, the rest go.
    needs = (
        VersionNeed(SINGLE_OFFSET_VERSION, "one exact offset per partition (v0 answers segment offsets)"),
        VersionNeed(
            MAX_TIMESTAMP_VERSION, "max_timestamp", lambda handler, tp: handler._specs[tp] == MAX_TIMESTAMP
        ),
    )

    def __init__(
        self, lookup: LeaderLookup, specs: dict[TopicPartition, int], isolation_level: int = READ_UNCOMMITTED
    ) -> None:
        self.lookup = lookup
        self._specs = specs
        self._isolation = isolation_level

    def build(
        self, tps: list[TopicPartition], version: int, notes: Notes
    ) -> list[RequestPlan[TopicPartition]]:
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp)
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=self._isolation,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=tp.partition, timestamp=self._specs[tp], current_leader_epoch=-1
                        )
                        for tp in sorted(parts)
                    ],
                )
                for topic, parts in sorted(by_topic.items())
            ],
        )
        return [RequestPlan(request, version, tuple(tps))]

    def parse(
        self, plan: RequestPlan[TopicPartition], response: Any, notes: Notes
    ) -> Outcome[TopicPartition, ListedOffset]:
        outcome: Outcome[TopicPartition, ListedOffset] = Outcome()
        for topic in response.topics:
            for p in topic.partitions:
                tp = topic_partition(topic.name, p.partition_index)
                if tp not in plan.key_set:
                    continue
                if p.error_code in REFRESH_LEADER or p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    outcome.requeue(tp, Failure(p.error_code), relookup=True)
                elif p.error_code != ErrorCode.NONE:
                    outcome.failed[tp] = Failure(p.error_code)
                else:
                    outcome.completed[tp] = ListedOffset(
                        offset=p.offset,
                        timestamp=p.timestamp,
                        leader_epoch=p.leader_epoch if p.leader_epoch >= 0 else None,
                    )
        missing_from_response(
            outcome, plan.keys, set(outcome.completed) | set(outcome.failed) | outcome.unmapped, "ListOffsets"
        )
        return outcome
