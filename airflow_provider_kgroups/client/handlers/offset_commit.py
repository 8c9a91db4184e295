"""OffsetCommit as an administrator: generation -1 and an empty member id, which Kafka accepts
only for a group without members (Empty, or absent: the commit then creates it). This is
how a backup of committed offsets is restored after a group was deleted.

OffsetCommit carries one group per request; the requests of one coordinator are pipelined
on its connection. Errors come per partition; the coordinator errors among them (14 retry,
15/16 look the coordinator up again) send the whole group round again, since committing the
same offsets twice is harmless.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..contract import Outcome, RequestPlan
from ..errors import CLIENT_INCOMPLETE_RESPONSE, RELOOKUP, RETRY_SAME_BROKER, ErrorCode, Failure
from ..lookup import CoordinatorLookup
from ..protocol import KafkaApi, OffsetCommitRequest, OffsetCommitResponse
from ..results import TopicPartition
from .base import Handler, Notes, VersionNeed
from .common import by_topic, missing_from_response

ADMIN_GENERATION = -1
ADMIN_MEMBER_ID = ""
MIN_COMMIT_VERSION = 2
_NOT_EMPTY = frozenset(
    {ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.REBALANCE_IN_PROGRESS}
)


@dataclass(frozen=True, slots=True)
class OffsetToCommit:
    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class OffsetCommitHandler(Handler[str, dict[TopicPartition, "Failure | None"]]):
    #: v10 replaces topic names with topic ids
    kafka_api = KafkaApi(OffsetCommitRequest, OffsetCommitResponse, max_version=9)
    # v0-v1 are deprecated (OffsetCommitRequest.json) and carry a per-partition commit timestamp
    needs = (VersionNeed(MIN_COMMIT_VERSION, "committing without a per-partition commit timestamp"),)

    def __init__(
        self, lookup: CoordinatorLookup, offsets: Mapping[str, Mapping[TopicPartition, OffsetToCommit]]
    ) -> None:
        self.lookup = lookup
        self._offsets = offsets

    def build(self, group_ids: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
        plans = []
        for group_id in group_ids:
            request = OffsetCommitRequest(
                group_id=group_id,
                generation_id_or_member_epoch=ADMIN_GENERATION,
                member_id=ADMIN_MEMBER_ID,
                group_instance_id=None,
                retention_time_ms=-1,
                topics=[
                    topic_cls(
                        name=topic,
                        partitions=[
                            topic_cls.OffsetCommitRequestPartition(
                                partition_index=p,
                                committed_offset=c.offset,
                                committed_leader_epoch=c.leader_epoch if c.leader_epoch is not None else -1,
                                committed_metadata=c.metadata,
                            )
                            for p, c in rows
                        ],
                    )
                    for topic, rows in by_topic(self._offsets[group_id]).items()
                ],
            )
            plans.append(RequestPlan(request, version, (group_id,)))
        return plans

    def parse(
        self, plan: RequestPlan[str], response: Any, notes: Notes
    ) -> Outcome[str, dict[TopicPartition, Failure | None]]:
        outcome: Outcome[str, dict[TopicPartition, Failure | None]] = Outcome()
        group_id = plan.keys[0]
        results: dict[TopicPartition, Failure | None] = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if p.error_code in RETRY_SAME_BROKER or p.error_code in RELOOKUP:
                    outcome.requeue(group_id, Failure(p.error_code), relookup=p.error_code in RELOOKUP)
                    return outcome
                if p.error_code in _NOT_EMPTY:
                    results[tp] = Failure(
                        p.error_code,
                        "the group has members: offsets can be committed by an "
                        "administrator only while the group is Empty",
                    )
                else:
                    results[tp] = Failure(p.error_code) if p.error_code else None
        missing = set(self._offsets[group_id]) - set(results)
        for tp in missing:
            results[tp] = Failure(CLIENT_INCOMPLETE_RESPONSE, f"OffsetCommit response did not mention {tp}")
        outcome.completed[group_id] = results
        missing_from_response(outcome, plan.keys, {group_id}, "OffsetCommit")
        return outcome
