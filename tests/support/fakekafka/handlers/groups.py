"""Group coordinator APIs: OffsetFetch, OffsetCommit, DescribeGroups, ConsumerGroupDescribe,
ShareGroupDescribe, StreamsGroupDescribe, ListGroups, DeleteGroups, with Apache Kafka's (4.x
group coordinator) answers.

Each group-keyed API first applies an injected error for the group, then authorization
(GROUP_AUTHORIZATION_FAILED, 30: KafkaApis checks the ACL before the coordinator sees the
request, so on any broker), then answers NOT_COORDINATOR (16) when this broker is not the
group's coordinator.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafka.protocol.admin import DeleteGroupsResponse, DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import OffsetCommitResponse, OffsetFetchResponse

from ..codec import API_CLASSES, Err
from ..model import CLASSIC, CONSUMER, NON_EMPTY_STATES, SHARE, STREAMS, ZERO_UUID, Committed, Group

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["HANDLERS"]

NOT_COORDINATOR_MESSAGE = "This is not the correct coordinator."

# (partition, committed offset, leader epoch, metadata, error)
PartitionRow = tuple[int, int, int, str, int]


def _group_error(ctx: RequestContext, group_id: str, operation: str = "Describe") -> tuple[int, str | None]:
    """(error, message) that answers for the whole group before any lookup, or (0, None).
    ``operation``: the group ACL the API needs (KafkaApis: Describe to fetch offsets and
    describe, Read to commit, Delete to delete)."""
    injected = ctx.injected(group_id)
    if injected is not None:
        return injected.error, injected.message
    if not ctx.authorized("group", group_id, operation):
        return Err.GROUP_AUTHORIZATION_FAILED, None
    if not ctx.is_coordinator(group_id):
        return Err.NOT_COORDINATOR, NOT_COORDINATOR_MESSAGE
    return 0, None


def _live_group(ctx: RequestContext, group_id: str) -> Group | None:
    group = ctx.cluster.groups.get(group_id)
    return None if group is None or group.state == "Dead" else group


# ---------------------------------------------------------------------------- OffsetFetch


def _stable_fetch_error(
    ctx: RequestContext, group_id: str, topics: list[tuple[str, list[int]]] | None, require_stable: bool
) -> int:
    """Kafka 4.x (GroupCoordinatorService.fetchOffsets / fetchAllOffsets): with require_stable
    the fetch is a coordinator write that waits for pending transactional offsets; when its
    offset.commit.timeout.ms passes, handleOffsetFetchException remaps REQUEST_TIMED_OUT to
    NOT_COORDINATOR for the group. The fake's pending offsets never clear during that wait:
    the answer comes after ``offset_commit_timeout_s``, as NOT_COORDINATOR."""
    cluster = ctx.cluster
    group = _live_group(ctx, group_id)
    if (
        not require_stable
        or cluster.stable_offsets_model != "4.x"
        or group is None
        or not group.pending_offsets
    ):
        return 0
    wanted = None if topics is None else {(t, p) for t, ps in topics for p in ps}
    if wanted is not None and not (wanted & group.pending_offsets):
        return 0
    ctx.extra_delay_s = max(ctx.extra_delay_s, cluster.offset_commit_timeout_s)
    return Err.NOT_COORDINATOR


def _fetch_offsets(
    ctx: RequestContext,
    group_id: str,
    topics: Iterable[tuple[str, Iterable[int]]] | None,
    require_stable: bool = False,
) -> list[tuple[str, list[PartitionRow]]]:
    """Committed offsets, as Kafka's OffsetMetadataManager.fetch(All)Offsets returns them:
    ``topics=None`` -> every committed partition; unknown group -> nothing; an explicit
    partition without a commit -> offset -1, metadata "".

    Topic Describe ACLs as KafkaApis applies them: fetchAllOffsetsForGroup silently leaves
    out the topics the principal may not Describe; fetchOffsetsForGroup answers each
    partition of such a named topic with offset -1 and TOPIC_AUTHORIZATION_FAILED (29).

    Kafka 3.x (GroupMetadataManager.getOffsets): with ``require_stable``, a partition with a
    pending transactional offset commit answers offset -1 and UNSTABLE_OFFSET_COMMIT (88)."""
    group = _live_group(ctx, group_id)
    offsets = group.offsets if group is not None else {}
    pending = group.pending_offsets if group is not None and require_stable else set()
    if topics is None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(offsets):
            if ctx.authorized("topic", topic, "Describe"):
                by_topic.setdefault(topic, []).append(partition)
        topics = by_topic.items()
    result = []
    for topic, partitions in topics:
        rows = []
        if not ctx.authorized("topic", topic, "Describe"):
            result.append((topic, [(p, -1, -1, "", Err.TOPIC_AUTHORIZATION_FAILED) for p in partitions]))
            continue
        for p in partitions:
            injected = ctx.injected((group_id, topic, p), wildcard=False)
            committed = offsets.get((topic, p))
            if injected is not None:
                rows.append((p, -1, -1, "", injected.error))
            elif (topic, p) in pending:
                rows.append((p, -1, -1, "", Err.UNSTABLE_OFFSET_COMMIT))
            elif committed is None:
                rows.append((p, -1, -1, "", 0))
            else:
                rows.append((p, committed.offset, committed.leader_epoch, committed.metadata, 0))
        result.append((topic, rows))
    return result


def offset_fetch(ctx: RequestContext) -> Any:
    req, v = ctx.request, ctx.version
    R = OffsetFetchResponse
    stable = bool(getattr(req, "require_stable", False)) if v >= 7 else False
    if v >= 8:
        groups = []
        for g in req.groups:
            wanted = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
            error, _ = _group_error(ctx, g.group_id)
            error = error or _stable_fetch_error(ctx, g.group_id, wanted, stable)
            topics = (
                []
                if error
                else [
                    R.OffsetFetchResponseGroup.OffsetFetchResponseTopics(
                        name=topic,
                        partitions=[
                            R.OffsetFetchResponseGroup.OffsetFetchResponseTopics.OffsetFetchResponsePartitions(
                                partition_index=p,
                                committed_offset=off,
                                committed_leader_epoch=epoch,
                                metadata=meta,
                                error_code=err,
                            )
                            for p, off, epoch, meta, err in rows
                        ],
                    )
                    for topic, rows in _fetch_offsets(ctx, g.group_id, wanted, stable)
                ]
            )
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, topics=topics, error_code=error))
        return R(throttle_time_ms=0, groups=groups)

    requested = None if req.topics is None else [(t.name, t.partition_indexes) for t in req.topics]
    error, _ = _group_error(ctx, req.group_id)
    error = error or _stable_fetch_error(ctx, req.group_id, requested, stable)
    T, P = R.OffsetFetchResponseTopic, R.OffsetFetchResponseTopic.OffsetFetchResponsePartition
    if error:
        if v >= 2:
            return R(throttle_time_ms=0, topics=[], error_code=error)
        # v1 has no top-level error: every requested partition carries it
        rows_by_topic = [(t, [(p, -1, -1, "", error) for p in ps]) for t, ps in requested or []]
    else:
        rows_by_topic = _fetch_offsets(ctx, req.group_id, requested, stable)
    topics = [
        T(
            name=topic,
            partitions=[
                P(
                    partition_index=p,
                    committed_offset=off,
                    committed_leader_epoch=epoch,
                    metadata=meta,
                    error_code=err,
                )
                for p, off, epoch, meta, err in rows
            ],
        )
        for topic, rows in rows_by_topic
    ]
    return R(throttle_time_ms=0, topics=topics, error_code=0)


# ---------------------------------------------------------------------------- OffsetCommit


def _commit_error(group: Group | None, generation: int, member_id: str) -> int:
    """Kafka's validateOffsetCommit, simplified: admin commits (generation/epoch < 0) only
    into an Empty or absent group; member commits need a known member of that generation.
    A Dead classic group answers COORDINATOR_NOT_AVAILABLE (ClassicGroup.validateOffsetCommit:
    ``if (isInState(DEAD)) throw COORDINATOR_NOT_AVAILABLE``), it is not replaced by a new group."""
    if group is not None and group.group_type == CLASSIC and group.state == "Dead":
        return Err.COORDINATOR_NOT_AVAILABLE
    if group is None:
        return 0 if generation < 0 else Err.ILLEGAL_GENERATION
    if generation < 0:
        if group.group_type == CONSUMER:
            return 0 if not group.members else Err.UNKNOWN_MEMBER_ID
        return 0 if group.state == "Empty" else Err.UNKNOWN_MEMBER_ID
    member = group.members.get(member_id)
    if member is None:
        return Err.UNKNOWN_MEMBER_ID
    if group.group_type == CONSUMER:
        epoch = member.member_epoch if member.member_epoch is not None else group.generation
        return 0 if generation == epoch else Err.STALE_MEMBER_EPOCH
    return 0 if generation == group.generation else Err.ILLEGAL_GENERATION


def offset_commit(ctx: RequestContext) -> Any:
    req, v, cluster = ctx.request, ctx.version, ctx.cluster
    R = OffsetCommitResponse
    T, P = R.OffsetCommitResponseTopic, R.OffsetCommitResponseTopic.OffsetCommitResponsePartition
    error, _ = _group_error(ctx, req.group_id, "Read")  # KafkaApis.handleOffsetCommitRequest: group Read
    group = _live_group(ctx, req.group_id)
    if not error:
        error = _commit_error(
            cluster.groups.get(req.group_id), req.generation_id_or_member_epoch, req.member_id or ""
        )
    topics = []
    for t in req.topics:
        name = t.name
        topic_error = 0
        if v >= 10:
            topic = cluster.topics_by_id.get(t.topic_id)
            name = topic.name if topic is not None else None
            topic_error = 0 if topic is not None else Err.UNKNOWN_TOPIC_ID
        topic = cluster.topics.get(name) if name is not None else None
        rows = []
        for p in t.partitions:
            if error or topic_error:
                rows.append(P(partition_index=p.partition_index, error_code=error or topic_error))
                continue
            if not ctx.authorized("topic", name, "Read"):  # handleOffsetCommitRequest: topic Read, else 29
                rows.append(P(partition_index=p.partition_index, error_code=Err.TOPIC_AUTHORIZATION_FAILED))
                continue
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                rows.append(P(partition_index=p.partition_index, error_code=Err.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            injected = ctx.injected((req.group_id, name, p.partition_index), wildcard=False)
            if injected is not None:
                rows.append(P(partition_index=p.partition_index, error_code=injected.error))
                continue
            if group is None:
                group = cluster._create_simple_group(req.group_id)
            group.offsets[(name, p.partition_index)] = Committed(
                p.committed_offset, p.committed_metadata or "", p.committed_leader_epoch
            )
            rows.append(P(partition_index=p.partition_index, error_code=0))
        topics.append(T(name=t.name, topic_id=getattr(t, "topic_id", ZERO_UUID), partitions=rows))
    return R(throttle_time_ms=0, topics=topics)


# ---------------------------------------------------------------------------- DescribeGroups


def describe_groups(ctx: RequestContext) -> Any:
    """Classic groups only (GroupMetadataManager.describeGroups / classicGroup): a consumer,
    share or streams group, an absent or a Dead group is "Dead"; from v6 (KIP-1043) with
    GROUP_ID_NOT_FOUND (69) and the message "Group X is not a classic group." or "Group X not
    found.". Members carry metadata and assignment only when the group is Stable (Kafka's
    describeNoMetadata).
    KafkaApis.handleDescribeGroupsRequest: the groups the principal may not Describe come
    first, as DescribeGroupsResponse.groupError(id, GROUP_AUTHORIZATION_FAILED) (no message)."""
    req, v = ctx.request, ctx.version
    R = DescribeGroupsResponse
    G, M = R.DescribedGroup, R.DescribedGroup.DescribedGroupMember
    out = []
    allowed = [g for g in req.groups if ctx.authorized("group", g, "Describe")]
    allowed_set = set(allowed)
    for group_id in req.groups:
        if group_id not in allowed_set:
            out.append(
                G(
                    error_code=Err.GROUP_AUTHORIZATION_FAILED,
                    error_message=None,
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                )
            )
    for group_id in allowed:
        error, message = _group_error(ctx, group_id)
        if error:
            out.append(
                G(
                    error_code=error,
                    error_message=message,
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                )
            )
            continue
        group = _live_group(ctx, group_id)
        if group is None or group.group_type != CLASSIC:
            not_found = (
                f"Group {group_id} is not a classic group."
                if group is not None
                else f"Group {group_id} not found."
            )
            out.append(
                G(
                    error_code=Err.GROUP_ID_NOT_FOUND if v >= 6 else 0,
                    error_message=not_found if v >= 6 else None,
                    group_id=group_id,
                    group_state="Dead",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                )
            )
            continue
        stable = group.state == "Stable"
        members = [
            M(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.host,
                member_metadata=m.metadata() if stable else b"",
                member_assignment=m.assignment_data() if stable else b"",
            )
            for m in group.members.values()
        ]
        out.append(
            G(
                error_code=0,
                error_message=None,
                group_id=group_id,
                group_state=group.state,
                protocol_type=group.protocol_type,
                protocol_data=group.protocol if stable else "",
                members=members,
            )
        )
    return R(throttle_time_ms=0, groups=out)


# ---------------------------------------------------- ConsumerGroupDescribe, ShareGroupDescribe, StreamsGroupDescribe


def _new_group_describe(
    ctx: RequestContext, group_ids: list[str], group_type: str, describe, error_entry, *, per_shard: bool
) -> list:
    """The shared shape of GroupCoordinatorService.{consumer,share,streams}GroupDescribe.

    Each id: an injected error, else NOT_COORDINATOR off its coordinator, else the group
    described when it is a live group of ``group_type``, else GROUP_ID_NOT_FOUND (69) with
    GroupMetadataManager's messages ("Group X is not a <type> group." / "Group X not found.").

    ``per_shard`` (Kafka 3.7 to late 2024, consumer and share describe): the ids are grouped by
    ``__consumer_offsets`` partition, but each shard is handed *every* requested id, so each id
    gets one entry per distinct shard among the request's ids: the real answer from its own
    shard, 69 without a message from the others (their ``consumerGroup(groupId)`` lookup fails).

    KafkaApis.handle{Consumer,Share}GroupDescribe: the ids the principal may not Describe come
    first, with GROUP_AUTHORIZATION_FAILED and no message; only the others reach the coordinator.
    """
    denied = [
        error_entry(g, Err.GROUP_AUTHORIZATION_FAILED, None)
        for g in group_ids
        if not ctx.authorized("group", g, "Describe")
    ]
    group_ids = [g for g in group_ids if ctx.authorized("group", g, "Describe")]
    return denied + _described(ctx, group_ids, group_type, describe, error_entry, per_shard=per_shard)


def _described(
    ctx: RequestContext, group_ids: list[str], group_type: str, describe, error_entry, *, per_shard: bool
) -> list:
    def answer(group_id: str) -> Any:
        error, message = _group_error(ctx, group_id)
        group = None if error else _live_group(ctx, group_id)
        if not error and (group is None or group.group_type != group_type):
            error = Err.GROUP_ID_NOT_FOUND
            message = (
                f"Group {group_id} is not a {group_type} group."
                if group is not None
                else f"Group {group_id} not found."
            )
        return error_entry(group_id, error, message) if error else describe(group)

    if not per_shard:
        return [answer(g) for g in group_ids]
    cluster = ctx.cluster
    shards = sorted({cluster.offsets_partition_of(g) for g in group_ids})
    out = []
    for shard in shards:
        own = [g for g in group_ids if cluster.offsets_partition_of(g) == shard]
        if not any(
            ctx.is_coordinator(g) for g in own
        ):  # a shard not loaded here: NOT_COORDINATOR, its ids only
            out.extend(answer(g) for g in own)
            continue
        for group_id in group_ids:
            if cluster.offsets_partition_of(group_id) == shard:
                out.append(answer(group_id))
            else:
                out.append(error_entry(group_id, Err.GROUP_ID_NOT_FOUND, None))
    return out


def _assignment(cluster: Any, A: Any, parts: dict[str, list[int]]) -> Any:
    TP = A.TopicPartitions
    return A(
        topic_partitions=[
            TP(
                topic_id=cluster.topics[t].topic_id if t in cluster.topics else ZERO_UUID,
                topic_name=t,
                partitions=list(ps),
            )
            for t, ps in sorted(parts.items())
        ]
    )


def consumer_group_describe(ctx: RequestContext) -> Any:
    """KIP-848 groups only: a classic, share, streams or absent group is GROUP_ID_NOT_FOUND (69)
    (GroupMetadataManager.consumerGroupDescribe; duplicates: see ``_new_group_describe``)."""
    req, cluster = ctx.request, ctx.cluster
    R = API_CLASSES[ApiKey.ConsumerGroupDescribe][1]
    G = R.DescribedGroup
    M = G.Member

    def error_entry(group_id: str, error: int, message: str | None) -> Any:
        return G(
            error_code=error,
            error_message=message,
            group_id=group_id,
            group_state="",
            group_epoch=0,
            assignment_epoch=0,
            assignor_name="",
            members=[],
        )

    def describe(group: Group) -> Any:
        members = [
            M(
                member_id=m.member_id,
                instance_id=m.group_instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch if m.member_epoch is not None else group.generation,
                client_id=m.client_id,
                client_host=m.host,
                subscribed_topic_names=m.subscribed_topics(),
                subscribed_topic_regex=None,
                assignment=_assignment(cluster, M.Assignment, m.assignment),
                target_assignment=_assignment(
                    cluster,
                    M.Assignment,
                    m.target_assignment if m.target_assignment is not None else m.assignment,
                ),
            )
            for m in group.members.values()
        ]
        return G(
            error_code=0,
            error_message=None,
            group_id=group.group_id,
            group_state=group.state,
            group_epoch=group.generation,
            assignment_epoch=group.assignment_epoch
            if group.assignment_epoch is not None
            else group.generation,
            assignor_name=group.protocol,
            members=members,
        )

    out = _new_group_describe(
        ctx, list(req.group_ids), CONSUMER, describe, error_entry, per_shard=cluster.describe_per_shard
    )
    return R(throttle_time_ms=0, groups=out)


def share_group_describe(ctx: RequestContext) -> Any:
    """KIP-932 share groups only (GroupMetadataManager.shareGroupDescribe): members with their
    subscriptions and assigned partitions, the "simple" assignor; any other id 69."""
    req, cluster = ctx.request, ctx.cluster
    R = API_CLASSES[ApiKey.ShareGroupDescribe][1]
    G = R.DescribedGroup
    M = G.Member

    def error_entry(group_id: str, error: int, message: str | None) -> Any:
        return G(
            error_code=error,
            error_message=message,
            group_id=group_id,
            group_state="",
            group_epoch=0,
            assignment_epoch=0,
            assignor_name="",
            members=[],
        )

    def describe(group: Group) -> Any:
        members = [
            M(
                member_id=m.member_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch if m.member_epoch is not None else group.generation,
                client_id=m.client_id,
                client_host=m.host,
                subscribed_topic_names=m.subscribed_topics(),
                assignment=_assignment(cluster, M.Assignment, m.assignment),
            )
            for m in group.members.values()
        ]
        return G(
            error_code=0,
            error_message=None,
            group_id=group.group_id,
            group_state=group.state,
            group_epoch=group.generation,
            assignment_epoch=group.assignment_epoch
            if group.assignment_epoch is not None
            else group.generation,
            assignor_name=group.protocol,
            members=members,
        )

    out = _new_group_describe(
        ctx, list(req.group_ids), SHARE, describe, error_entry, per_shard=cluster.describe_per_shard
    )
    return R(throttle_time_ms=0, groups=out)


def streams_group_describe(ctx: RequestContext) -> Any:
    """KIP-1071 streams groups only (GroupMetadataManager.streamsGroupDescribe): the topology's
    subtopologies with their source, repartition and changelog topics (internal topics as
    TopicInfo with the topic's partition count, as Kafka 4.4 answers, changelogs included), the
    topology's own epoch, members with their active tasks (``{subtopology: [partitions]}``); any
    other id 69. v1 adds the coordinator's task assignor (AssignorName, "sticky" by default) and
    a topology description the fake never stores (status 1, NOT_STORED, when asked; 0 when not).
    Added after the per-shard fix: never duplicated."""
    req, cluster = ctx.request, ctx.cluster
    R = API_CLASSES[ApiKey.StreamsGroupDescribe][1]
    G = R.DescribedGroup
    M = G.Member
    A = M.Assignment
    Sub = G.Topology.Subtopology
    described_topology = 1 if getattr(req, "include_topology_description", False) else 0

    def error_entry(group_id: str, error: int, message: str | None) -> Any:
        return G(
            error_code=error,
            error_message=message,
            group_id=group_id,
            group_state="",
            group_epoch=0,
            assignment_epoch=0,
            topology=None,
            members=[],
            assignor_name=None,
        )

    def tasks(parts: dict[str, list[int]]) -> Any:
        return A(
            active_tasks=[
                A.TaskIds(subtopology_id=s, partitions=list(ps)) for s, ps in sorted(parts.items())
            ],
            standby_tasks=[],
            warmup_tasks=[],
        )

    def topic_info(name: str) -> Any:
        topic = cluster.topics.get(name)
        return Sub.TopicInfo(
            name=name,
            partitions=len(topic.partitions) if topic is not None else 0,
            replication_factor=1,
            topic_configs=[],
        )

    def describe(group: Group) -> Any:
        topology = None
        if group.topology is not None:
            topology = G.Topology(
                epoch=group.topology_epoch,
                subtopologies=[
                    Sub(
                        subtopology_id=s,
                        source_topics=list(sub.sources),
                        repartition_sink_topics=list(sub.repartition_sinks),
                        state_changelog_topics=[topic_info(t) for t in sub.changelogs],
                        repartition_source_topics=[topic_info(t) for t in sub.repartition_sources],
                    )
                    for s, sub in sorted(group.topology.items())
                ],
            )
        members = [
            M(
                member_id=m.member_id,
                member_epoch=m.member_epoch if m.member_epoch is not None else group.generation,
                instance_id=m.group_instance_id,
                rack_id=m.rack_id,
                client_id=m.client_id,
                client_host=m.host,
                topology_epoch=group.topology_epoch,
                process_id=f"process-{m.member_id}",
                user_endpoint=None,
                client_tags=[],
                task_offsets=[],
                task_end_offsets=[],
                assignment=tasks(m.assignment),
                target_assignment=tasks(
                    m.target_assignment if m.target_assignment is not None else m.assignment
                ),
                is_classic=False,
            )
            for m in group.members.values()
        ]
        return G(
            error_code=0,
            error_message=None,
            group_id=group.group_id,
            group_state=group.state,
            group_epoch=group.generation,
            assignment_epoch=group.assignment_epoch
            if group.assignment_epoch is not None
            else group.generation,
            topology=topology,
            members=members,
            topology_description=None,
            topology_description_status=described_topology,
            assignor_name=group.protocol,
        )

    return R(
        throttle_time_ms=0,
        groups=_new_group_describe(ctx, list(req.group_ids), STREAMS, describe, error_entry, per_shard=False),
    )


# ---------------------------------------------------------------------------- ListGroups


def list_groups(ctx: RequestContext) -> Any:
    """The groups this broker coordinates (Dead ones excepted), filtered by state (v4+) and
    type (v5+), case-insensitively as Kafka does. KafkaApis.handleListGroupsRequest: a
    principal with cluster Describe sees every group, any other only the groups it may
    Describe (the rest are left out, with no error). While its coordinator loads
    (``FakeCluster.start_loading``) the list is partial, with COORDINATOR_LOAD_IN_PROGRESS as
    a 3.x broker answers (``GroupCoordinator.handleListGroups`` / ``GroupCoordinatorAdapter.listGroups``)
    or with no error as 4.x does (``GroupCoordinatorService.listGroups``); a group whose
    coordinator moved may still be listed by its old broker (``FakeCluster.list_stale``)."""
    req, v, cluster = ctx.request, ctx.version, ctx.cluster
    R = ListGroupsResponse
    injected = ctx.injected(None)
    if injected is not None:
        return R(throttle_time_ms=0, error_code=injected.error, groups=[])
    states = {s.lower() for s in (req.states_filter or [])} if v >= 4 else set()
    types = {t.lower() for t in (req.types_filter or [])} if v >= 5 else set()
    sees_all = ctx.authorized("cluster", "kafka-cluster", "Describe")
    listed = []
    group_ids, error = cluster.listed_by(ctx.node)
    for group_id in group_ids:
        if not sees_all and not ctx.authorized("group", group_id, "Describe"):
            continue
        group = cluster.groups[group_id]
        if group.state == "Dead":
            continue
        if states and group.state.lower() not in states:
            continue
        if types and group.group_type not in types:
            continue
        listed.append(
            R.ListedGroup(
                group_id=group_id,
                protocol_type=group.protocol_type,
                group_state=group.state,
                group_type=group.group_type,
            )
        )
    return R(throttle_time_ms=0, error_code=error, groups=listed)


# ---------------------------------------------------------------------------- DeleteGroups


def delete_groups(ctx: RequestContext) -> Any:
    """Empty -> deleted with its offsets; a group with members or rebalancing -> 68
    NON_EMPTY_GROUP; absent or Dead -> 69 GROUP_ID_NOT_FOUND. KafkaApis.handleDeleteGroupsRequest:
    ids are de-duplicated; the groups the principal may not Delete are answered last, with
    GROUP_AUTHORIZATION_FAILED (30)."""
    req, cluster = ctx.request, ctx.cluster
    R = DeleteGroupsResponse
    results = []
    names = list(dict.fromkeys(req.groups_names))
    denied = [g for g in names if not ctx.authorized("group", g, "Delete")]
    for group_id in (g for g in names if ctx.authorized("group", g, "Delete")):
        error, _ = _group_error(ctx, group_id, "Delete")
        if not error:
            group = _live_group(ctx, group_id)
            if group is None:
                error = Err.GROUP_ID_NOT_FOUND
            elif group.state in NON_EMPTY_STATES:
                error = Err.NON_EMPTY_GROUP
            else:
                cluster._remove_group(group_id)
        results.append(R.DeletableGroupResult(group_id=group_id, error_code=error))
    results += [R.DeletableGroupResult(group_id=g, error_code=Err.GROUP_AUTHORIZATION_FAILED) for g in denied]
    return R(throttle_time_ms=0, results=results)


HANDLERS = {
    ApiKey.OffsetFetch: offset_fetch,
    ApiKey.OffsetCommit: offset_commit,
    ApiKey.DescribeGroups: describe_groups,
    ApiKey.ConsumerGroupDescribe: consumer_group_describe,
    ApiKey.ShareGroupDescribe: share_group_describe,
    ApiKey.StreamsGroupDescribe: streams_group_describe,
    ApiKey.ListGroups: list_groups,
    ApiKey.DeleteGroups: delete_groups,
}
