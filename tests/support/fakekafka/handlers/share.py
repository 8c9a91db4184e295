"""Share groups' start offsets (KIP-932) with Apache Kafka's answers: DescribeShareGroupOffsets
(API 90) and AlterShareGroupOffsets (API 91).

``KafkaApis``: DescribeShareGroupOffsets needs group Describe (else GROUP_AUTHORIZATION_FAILED
for that group) and topic Describe (else TOPIC_AUTHORIZATION_FAILED on its partitions);
AlterShareGroupOffsets needs group Read and topic Read.

``GroupCoordinatorService.describeShareGroupOffsets`` / ``GroupMetadataManager``: a group that is
not a share group, or absent, is GROUP_ID_NOT_FOUND; ``Topics`` null answers every initialized
share-partition; a named partition never initialized answers start offset -1 (no error). v1
(KIP-1226, Kafka 4.2+) adds ``Lag``, as ``computeShareGroupLagAndBuildResponse`` fills it: the
latest offset (the high watermark) minus the start offset minus the share-partition's
delivery-complete count; -1 where the start offset is -1, the partition has an error, or the share
coordinator keeps no count (``shouldComputeSharePartitionLag``).
``alterShareGroupOffsets``: only a share group (69 for another type) that has no members (68
NON_EMPTY_GROUP), answered at the top level of the response; an unknown group id is created as an
Empty share group holding the offsets (Kafka 4.4, checked on the real broker); a topic or partition the broker
does not know answers UNKNOWN_TOPIC_OR_PARTITION for it; the others get their start offset
(the share coordinator initializes the share-partition there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey

from ..codec import API_CLASSES, Err
from ..model import SHARE, ZERO_UUID
from .groups import _group_error, _live_group

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["HANDLERS"]


def _share_group(ctx: RequestContext, group_id: str):
    group = _live_group(ctx, group_id)
    if group is None:
        return None, (Err.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group.group_type != SHARE:
        return None, (Err.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    return group, None


def describe_share_group_offsets(ctx: RequestContext) -> Any:
    req, cluster = ctx.request, ctx.cluster
    R = API_CLASSES[ApiKey.DescribeShareGroupOffsets][1]
    G = R.DescribeShareGroupOffsetsResponseGroup
    T = G.DescribeShareGroupOffsetsResponseTopic
    P = T.DescribeShareGroupOffsetsResponsePartition
    groups = []
    for g in req.groups:
        error, message = _group_error(ctx, g.group_id)
        group = None
        if not error:
            group, failure = _share_group(ctx, g.group_id)
            error, message = failure or (0, None)
        if error:
            groups.append(G(group_id=g.group_id, topics=[], error_code=error, error_message=message))
            continue
        if g.topics is None:
            wanted: dict[str, list[int]] = {}
            for topic, partition in sorted(group.share_offsets):
                wanted.setdefault(topic, []).append(partition)
        else:
            wanted = {t.topic_name: list(t.partitions) for t in g.topics}
        topics = []
        for name, partitions in wanted.items():
            known = cluster.topics.get(name)
            rows = []
            for p in partitions:
                if not ctx.authorized("topic", name, "Describe"):
                    rows.append(
                        P(
                            partition_index=p,
                            start_offset=-1,
                            leader_epoch=-1,
                            error_code=Err.TOPIC_AUTHORIZATION_FAILED,
                            error_message=None,
                        )
                    )
                elif known is None or not 0 <= p < len(known.partitions):
                    rows.append(
                        P(
                            partition_index=p,
                            start_offset=-1,
                            leader_epoch=-1,
                            error_code=Err.UNKNOWN_TOPIC_OR_PARTITION,
                            error_message=None,
                        )
                    )
                else:
                    start, epoch, done = group.share_offsets.get((name, p), (-1, -1, -1))
                    lag = -1
                    if ctx.version >= 1 and start != -1 and done != -1:
                        lag = known.partitions[p].end - start - done
                    rows.append(
                        P(
                            partition_index=p,
                            start_offset=start,
                            leader_epoch=epoch,
                            lag=lag,
                            error_code=0,
                            error_message=None,
                        )
                    )
            topics.append(
                T(topic_name=name, topic_id=known.topic_id if known else ZERO_UUID, partitions=rows)
            )
        groups.append(G(group_id=g.group_id, topics=topics, error_code=0, error_message=None))
    return R(throttle_time_ms=0, groups=groups)


def alter_share_group_offsets(ctx: RequestContext) -> Any:
    req, cluster = ctx.request, ctx.cluster
    R = API_CLASSES[ApiKey.AlterShareGroupOffsets][1]
    T = R.AlterShareGroupOffsetsResponseTopic
    P = T.AlterShareGroupOffsetsResponsePartition
    error, message = _group_error(ctx, req.group_id, "Read")
    group = None
    if not error:
        if ctx.cluster.groups.get(req.group_id) is None:
            # Kafka 4.4 creates the share group (Empty) to hold the start offsets
            group, failure = ctx.cluster._create_share_group(req.group_id), None
        else:
            group, failure = _share_group(ctx, req.group_id)
        error, message = failure or (0, None)
        if not error and group.members:
            error, message = Err.NON_EMPTY_GROUP, f"Share group {req.group_id} is not empty."
    if error:
        return R(throttle_time_ms=0, error_code=error, error_message=message, responses=[])
    responses = []
    for t in req.topics:
        known = cluster.topics.get(t.topic_name)
        rows = []
        for p in t.partitions:
            if not ctx.authorized("topic", t.topic_name, "Read"):
                code = Err.TOPIC_AUTHORIZATION_FAILED
            elif known is None or not 0 <= p.partition_index < len(known.partitions):
                code = Err.UNKNOWN_TOPIC_OR_PARTITION
            else:
                epoch = known.partitions[p.partition_index].leader_epoch
                # the share coordinator initializes the share-partition there: nothing delivered yet
                group.share_offsets[(t.topic_name, p.partition_index)] = (p.start_offset, epoch, 0)
                code = 0
            rows.append(P(partition_index=p.partition_index, error_code=code, error_message=None))
        responses.append(
            T(topic_name=t.topic_name, topic_id=known.topic_id if known else ZERO_UUID, partitions=rows)
        )
    return R(throttle_time_ms=0, error_code=0, error_message=None, responses=responses)


HANDLERS = {
    ApiKey.DescribeShareGroupOffsets: describe_share_group_offsets,
    ApiKey.AlterShareGroupOffsets: alter_share_group_offsets,
}
