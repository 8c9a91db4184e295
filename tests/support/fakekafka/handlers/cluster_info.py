"""ApiVersions, Metadata and FindCoordinator: what any broker answers about the cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import ApiVersionsResponse, FindCoordinatorResponse, MetadataResponse

from ..codec import Err
from ..model import ZERO_UUID

if TYPE_CHECKING:
    from ..dispatch import RequestContext

_MESSAGES = {
    Err.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    Err.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    Err.NOT_COORDINATOR: "This is not the correct coordinator.",
    Err.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
}


def api_versions_body(versions: dict[int, tuple[int, int]], error: int = 0) -> Any:
    """The ApiVersions answer listing ``versions`` ({api key: (min, max)})."""
    entry = ApiVersionsResponse.ApiVersion
    return ApiVersionsResponse(
        error_code=error,
        throttle_time_ms=0,
        api_keys=[
            entry(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(versions.items())
        ],
    )


def api_versions(ctx: RequestContext) -> Any:
    # A version above the broker's maximum never reaches here: dispatch answers it at v0
    # with UNSUPPORTED_VERSION (35) and the api list, which is how clients negotiate.
    return api_versions_body(ctx.broker.versions)


def metadata(ctx: RequestContext) -> Any:
    """KafkaApis.handleTopicMetadataRequest: an all-topics request leaves out the topics the
    principal may not Describe, with no error; a named one answers TOPIC_AUTHORIZATION_FAILED
    (29, zero topic id, no partitions) whether or not the topic exists. With
    ``cluster.auto_create_topics`` (the broker's ``auto.create.topics.enable``) a named topic
    that does not exist is created, unless the request (v4+) says AllowAutoTopicCreation false."""
    req, v, cluster = ctx.request, ctx.version, ctx.cluster
    R = MetadataResponse
    brokers = [
        R.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in cluster.brokers.values()
    ]
    if req.topics is None or (v == 0 and not req.topics):
        wanted: list[tuple[str | None, Any]] = [
            (name, None) for name in sorted(cluster.topics) if ctx.authorized("topic", name, "Describe")
        ]
    else:
        wanted = [(t.name, getattr(t, "topic_id", None)) for t in req.topics]
    topics = []
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            topic = cluster.topics_by_id.get(topic_id)
            if topic is None:
                topics.append(
                    R.MetadataResponseTopic(
                        error_code=Err.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id, partitions=[]
                    )
                )
                continue
            name = topic.name
        topic = cluster.topics.get(name)
        injected = ctx.injected(name)
        if not ctx.authorized("topic", name, "Describe"):
            topics.append(
                R.MetadataResponseTopic(
                    error_code=Err.TOPIC_AUTHORIZATION_FAILED,
                    name=name,
                    topic_id=ZERO_UUID,
                    is_internal=False,
                    partitions=[],
                )
            )
        elif injected is not None:
            topics.append(
                R.MetadataResponseTopic(
                    error_code=injected.error, name=name, topic_id=ZERO_UUID, partitions=[]
                )
            )
        elif topic is None and cluster.auto_create_topics and (v < 4 or req.allow_auto_topic_creation):
            # KafkaApis.handleTopicMetadataRequest: allowAutoCreation = autoCreateTopicsEnable &&
            # allowAutoTopicCreation (true below v4: MetadataRequest.json has no such field there)
            # && !isAllTopics; AutoTopicCreationManager answers a topic it created LEADER_NOT_AVAILABLE.
            cluster.add_topic(name, 1)
            topics.append(
                R.MetadataResponseTopic(
                    error_code=Err.LEADER_NOT_AVAILABLE, name=name, topic_id=ZERO_UUID, partitions=[]
                )
            )
        elif topic is None:
            topics.append(
                R.MetadataResponseTopic(
                    error_code=Err.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID, partitions=[]
                )
            )
        else:
            P = R.MetadataResponseTopic.MetadataResponsePartition
            topics.append(
                R.MetadataResponseTopic(
                    error_code=0,
                    name=name,
                    topic_id=topic.topic_id,
                    is_internal=topic.internal,
                    partitions=[
                        P(
                            error_code=0,
                            partition_index=p.index,
                            leader_id=p.leader,
                            leader_epoch=p.leader_epoch,
                            replica_nodes=[p.leader],
                            isr_nodes=[p.leader],
                            offline_replicas=[],
                        )
                        for p in topic.partitions
                    ],
                )
            )
    return R(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=topics,
        error_code=0,
    )


def find_coordinator(ctx: RequestContext) -> Any:
    """Any broker answers, with the coordinator whether or not the group exists (Kafka
    names the leader of the group's ``__consumer_offsets`` partition).

    KafkaApis.getCoordinator: a group the principal may not Describe is
    GROUP_AUTHORIZATION_FAILED (30) with Node.noNode. Below v4 the error is the whole
    response, with ``Errors.message()`` (FindCoordinatorResponse.prepareOldResponse); from v4
    each key carries its error and no ErrorMessage (handleFindCoordinatorRequestV4AndAbove
    sets none), so only an injection's explicit ``message`` appears there."""
    req, v, cluster = ctx.request, ctx.version, ctx.cluster
    R = FindCoordinatorResponse

    def lookup(key: str) -> tuple[int, str | None, int, str, int]:
        injected = ctx.injected(key)
        if injected is not None:
            return (
                injected.error,
                injected.message or (_MESSAGES.get(injected.error) if v < 4 else None),
                -1,
                "",
                -1,
            )
        if req.key_type == 0 and not ctx.authorized("group", key, "Describe"):
            error = Err.GROUP_AUTHORIZATION_FAILED
            return error, _MESSAGES[error] if v < 4 else None, -1, "", -1
        broker = cluster.brokers[cluster.coordinator_of(key)]
        return 0, None, broker.node_id, broker.host, broker.port

    if v < 4:
        error, message, node_id, host, port = lookup(req.key)
        return R(
            throttle_time_ms=0, error_code=error, error_message=message, node_id=node_id, host=host, port=port
        )
    coordinators = []
    for key in req.coordinator_keys:
        error, message, node_id, host, port = lookup(key)
        coordinators.append(
            R.Coordinator(
                key=key, node_id=node_id, host=host, port=port, error_code=error, error_message=message
            )
        )
    return R(throttle_time_ms=0, coordinators=coordinators)


HANDLERS = {
    ApiKey.ApiVersions: api_versions,
    ApiKey.Metadata: metadata,
    ApiKey.FindCoordinator: find_coordinator,
}

__all__ = ["HANDLERS", "api_versions_body"]
