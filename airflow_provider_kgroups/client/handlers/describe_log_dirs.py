"""DescribeLogDirs: the size in bytes of each partition's log on its leader, one request per
leader naming all its partitions.

A broker answers for the replicas it holds, per log directory (``ReplicaManager.describeLogDirs``):
a partition's size is its current replica's ``PartitionSize`` (the log segments on that broker's
disk: with tiered storage, the local part only); a *future* replica (``IsFutureKey``: a copy being
moved to another directory by AlterReplicaLogDirs) is left out. A partition the leader's answer
does not list has no replica there (leadership or the assignment moved): its leader is looked up
again, so a deleted topic then fails in the lookup; but when one of the broker's directories is
offline (an error such as KAFKA_STORAGE_ERROR), a partition it did not list fails with that error.

Describing log directories needs Describe on the cluster. From v3 a broker refusing it answers
CLUSTER_AUTHORIZATION_FAILED for the request; below v3 it answers no directory at all
(``KafkaApis.handleDescribeLogDirsRequest``), read here as the same refusal: an authorized answer
lists every directory of the broker, each partition asked for or not.
"""

from __future__ import annotations

from typing import Any

from ..contract import Outcome, RequestPlan
from ..errors import ErrorCode, Failure
from ..lookup import LeaderLookup
from ..protocol import DescribeLogDirsRequest, DescribeLogDirsResponse, KafkaApi
from ..results import TopicPartition, topic_partition
from .base import Handler, Notes, VersionNeed
from .common import by_topic

TOP_LEVEL_ERROR_VERSION = 3  # DescribeLogDirsResponse.json: "Version 3 adds the top-level ErrorCode field"


class DescribeLogDirsHandler(Handler[TopicPartition, int]):
    # 5: the codec's newest and Kafka 4.3's (v4 adds TotalBytes and UsableBytes, v5 IsCordoned:
    # nothing this handler reads changed after v3's top-level error). Negotiated per broker
    # (Kafka 2.8 answers up to v2).
    kafka_api = KafkaApi(DescribeLogDirsRequest, DescribeLogDirsResponse, max_version=5)
    # v1 is v0 with quota-first responses; the codec (Kafka 4's schemas) has no v0
    needs = (VersionNeed(1, "DescribeLogDirs at the codec's oldest version"),)

    def __init__(self, lookup: LeaderLookup) -> None:
        self.lookup = lookup

    def build(
        self, tps: list[TopicPartition], version: int, notes: Notes
    ) -> list[RequestPlan[TopicPartition]]:
        topic = DescribeLogDirsRequest.DescribableLogDirTopic
        request = DescribeLogDirsRequest(
            topics=[
                topic(topic=name, partitions=[p for p, _ in parts])
                for name, parts in by_topic(dict.fromkeys(tps)).items()
            ]
        )
        return [RequestPlan(request, version, tuple(tps))]

    def parse(
        self, plan: RequestPlan[TopicPartition], response: Any, notes: Notes
    ) -> Outcome[TopicPartition, int]:
        outcome: Outcome[TopicPartition, int] = Outcome()
        top_error = response.error_code if plan.version >= TOP_LEVEL_ERROR_VERSION else ErrorCode.NONE
        if top_error != ErrorCode.NONE or not response.results:
            failure = (
                Failure(top_error)
                if top_error != ErrorCode.NONE
                else Failure(
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    f"broker {plan.node} listed no log directory (below DescribeLogDirs v3, its answer "
                    "to a principal without Describe on the cluster)",
                )
            )
            outcome.failed.update(dict.fromkeys(plan.keys, failure))
            return outcome
        sizes: dict[TopicPartition, int] = {}
        offline: list[tuple[str, int]] = []  # (log dir, error) of the directories that answered an error
        for log_dir in response.results:
            if log_dir.error_code != ErrorCode.NONE:
                offline.append((log_dir.log_dir, log_dir.error_code))
                continue
            for topic in log_dir.topics:
                for p in topic.partitions:
                    tp = topic_partition(topic.name, p.partition_index)
                    if tp in plan.key_set and not p.is_future_key:
                        sizes[tp] = sizes.get(tp, 0) + p.partition_size
        outcome.completed.update(sizes)
        for tp in plan.keys:
            if tp in sizes:
                continue
            if offline:
                log_dir, code = offline[0]
                outcome.failed[tp] = Failure(
                    code, f"broker {plan.node} did not list it; its log directory {log_dir} answered an error"
                )
            else:
                outcome.requeue(
                    tp,
                    Failure(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {plan.node} holds no replica of it"),
                    relookup=True,
                )
        return outcome
