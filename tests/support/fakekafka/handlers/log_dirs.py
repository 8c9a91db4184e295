"""DescribeLogDirs, as a broker answers it for the replicas it holds (KafkaApis.handleDescribeLogDirsRequest,
ReplicaManager.describeLogDirs). Each fake broker has one log directory (:func:`log_dir`) holding
the partitions it leads (the fake keeps one replica per partition, its leader).

A partition's size is the bytes of its log as a Fetch from its log start serves it: its stored
batches as produced (``append_batch``: one batch per record for a producer that sends one at a
time, as Kafka stores them) and records appended one by one batched as the Fetch batches them; a
partition seeded with offsets only (``end_offsets``) has no bytes. The directory's answer lists
every partition asked for that this broker holds (all of them when ``Topics`` is null), none of
another broker's, and no future replicas (the fake never moves one between directories).

A principal without Describe on the cluster gets no directory, with CLUSTER_AUTHORIZATION_FAILED
from v3 (before, nothing says why). An injected error (any key; ``node=`` picks the broker) takes
the broker's directory offline: it is listed with that error (Kafka: KAFKA_STORAGE_ERROR) and no
topics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.admin import DescribeLogDirsResponse
from kafka.protocol.api_key import ApiKey

from ..acl import CLUSTER_NAME
from ..codec import Err
from ..model import Partition
from .logs import read_log

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["HANDLERS", "log_dir", "partition_size"]

TOP_LEVEL_ERROR_VERSION = 3
VOLUME_BYTES = 1 << 40  # TotalBytes and UsableBytes (v4+): each broker's volume, 1 TiB, free


def log_dir(node: int) -> str:
    return f"/var/lib/fakekafka/broker-{node}/logs"


def partition_size(part: Partition) -> int:
    """The bytes of the partition's log (its segments, as ``UnifiedLog.size`` sums them)."""
    return len(read_log(part, part.log_start, part.end, 1 << 62, True))


def describe_log_dirs(ctx: RequestContext) -> Any:
    R = DescribeLogDirsResponse
    T, P = (
        R.DescribeLogDirsResult.DescribeLogDirsTopic,
        R.DescribeLogDirsResult.DescribeLogDirsTopic.DescribeLogDirsPartition,
    )
    if not ctx.authorized("cluster", CLUSTER_NAME, "Describe"):
        error = Err.CLUSTER_AUTHORIZATION_FAILED if ctx.version >= TOP_LEVEL_ERROR_VERSION else Err.NONE
        return R(throttle_time_ms=0, error_code=error, results=[])
    injected = ctx.injected(log_dir(ctx.node))
    if injected is not None:
        offline = R.DescribeLogDirsResult(
            error_code=injected.error, log_dir=log_dir(ctx.node), topics=[], total_bytes=-1, usable_bytes=-1
        )
        return R(throttle_time_ms=0, error_code=Err.NONE, results=[offline])
    held = {
        (name, part.index): part
        for name, topic in ctx.cluster.topics.items()
        for part in topic.partitions
        if part.leader == ctx.node
    }
    if ctx.request.topics is None:
        wanted = sorted(held)
    else:
        wanted = [(t.topic, p) for t in ctx.request.topics for p in t.partitions if (t.topic, p) in held]
    by_topic: dict[str, list[Any]] = {}
    for name, index in dict.fromkeys(wanted):
        size = partition_size(held[(name, index)])
        by_topic.setdefault(name, []).append(
            P(partition_index=index, partition_size=size, offset_lag=0, is_future_key=False)
        )
    directory = R.DescribeLogDirsResult(
        error_code=Err.NONE,
        log_dir=log_dir(ctx.node),
        topics=[T(name=name, partitions=parts) for name, parts in by_topic.items()],
        total_bytes=VOLUME_BYTES,
        usable_bytes=VOLUME_BYTES,
        is_cordoned=False,
    )
    return R(throttle_time_ms=0, error_code=Err.NONE, results=[directory])


HANDLERS = {ApiKey.DescribeLogDirs: describe_log_dirs}
