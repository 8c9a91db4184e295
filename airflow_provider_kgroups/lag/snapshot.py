"""A lag snapshot of many groups in one call.

Order of reads (why it matters): groups are described (state, members, assignments) and
their committed offsets read in the same round (the two are independent: neither answer
shapes the other request), and only when both are in, the log-start and log-end offsets of
every partition involved, deduplicated across groups, in one ListOffsets round per leader
(earliest and latest go out together). Because the end offsets are read after the commits,
a lag can only be overstated by what was produced in between, never negative; if a commit
still lands past the end offset we read (the commit raced ahead of our ListOffsets), the lag
is clamped to 0 and flagged ``CLAMPED``.

Per partition (:func:`partition_lag`):

* committed read with an error, or no end offset -> ``ERROR``, lag unknown;
* no committed offset -> ``NO_COMMIT``; the lag is the policy's (:class:`UnknownLagPolicy`):
  ``fail`` unknown (and the group's total is unknown), ``ignore`` unknown but left out of
  totals, ``from_earliest`` log end - log start, ``from_latest`` 0;
* committed > log end -> ``CLAMPED``, lag 0;
* otherwise lag = log end - committed, and ``LOST`` when committed < log start (records
  the group never read were deleted by retention; the lag still counts them, as
  kafka-consumer-groups.sh does, so that it never jumps when retention runs).

Which partitions a group has: every partition it committed, every partition assigned to one
of its members (listed even without a commit), and, when ``topics`` is given, every partition
of those topics (and nothing else).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..client.errors import CLIENT_NOT_READ, ConfigurationError, Failure, RequestTimeout
from ..client.gcpause import fewer_collections
from ..client.numbers import check_int
from ..client.results import (
    CLASSIC,
    CONSUMER,
    GroupDescription,
    GroupListing,
    GroupOffsets,
    GroupState,
    KeyedResults,
    ListedOffset,
    TopicExistence,
    TopicPartition,
)
from ..client.selection import validate_group_ids
from .model import GroupLag, LagFlag, LagSnapshot, PartitionLag, UnknownLagPolicy
from .policy import parse_policy

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = [
    "take_snapshot",
    "iter_snapshot",
    "compute_lag",
    "partition_lag",
    "partitions_of_groups",
    "topic_partitions",
    "now_ms",
]


_NO_FLAGS: frozenset[LagFlag] = frozenset()
_LOST = frozenset({LagFlag.LOST})
_CLAMPED = frozenset({LagFlag.CLAMPED})
_CLAMPED_LOST = frozenset({LagFlag.CLAMPED, LagFlag.LOST})


def _tp_key(tp: TopicPartition) -> tuple[str, int]:
    """TopicPartition's own order, compared as a plain tuple (in C, instead of the dataclass's
    generated ``__lt__`` in Python: sorting tens of thousands of partitions)."""
    return tp.topic, tp.partition


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _keyed(results: Any) -> KeyedResults[Any, Any]:
    return results if isinstance(results, KeyedResults) else KeyedResults(dict(results or {}), {})


def _offset_of(value: ListedOffset | int | None) -> int | None:
    if value is None:
        return None
    offset = value.offset if isinstance(value, ListedOffset) else value
    return offset if offset >= 0 else None


def partition_lag(
    tp: TopicPartition,
    committed: int | None,
    log_start: int | None,
    log_end: int | None,
    policy: UnknownLagPolicy,
    *,
    assigned_to: str | None = None,
    error: Failure | None = None,
    topic_unassigned: bool = False,
) -> PartitionLag:
    """One partition's lag by the rules in the module docstring. ``topic_unassigned``: the group
    reads none of this topic's partitions (:func:`unassigned_topics`)."""
    failure = None
    if error is not None:
        lag, flags, failure = (
            None,
            (LagFlag.ERROR, *((LagFlag.NO_COMMIT,) if committed is None else ())),
            error,
        )
    elif committed is None:
        if policy is UnknownLagPolicy.FROM_LATEST:
            lag, flags = 0, (LagFlag.NO_COMMIT,)
        elif policy is not UnknownLagPolicy.FROM_EARLIEST:
            lag, flags = None, (LagFlag.NO_COMMIT,)
        elif log_start is None or log_end is None:
            lag, flags = None, (LagFlag.NO_COMMIT, LagFlag.ERROR)
            failure = Failure(CLIENT_NOT_READ, "log start or end offset unknown: cannot count from earliest")
        else:
            lag, flags = max(0, log_end - log_start), (LagFlag.NO_COMMIT,)
    elif log_end is None:
        lag, flags, failure = None, (LagFlag.ERROR,), Failure(CLIENT_NOT_READ, "log end offset unknown")
    else:
        lost = (LagFlag.LOST,) if log_start is not None and committed < log_start else ()
        lag, flags = (0, (LagFlag.CLAMPED, *lost)) if committed > log_end else (log_end - committed, lost)
    if topic_unassigned:
        flags = (*flags, LagFlag.TOPIC_UNASSIGNED)
    return PartitionLag(
        tp.topic,
        tp.partition,
        committed,
        log_start,
        log_end,
        lag,
        frozenset(flags) if flags else _NO_FLAGS,
        assigned_to,
        failure,
    )


def unassigned_topics(description: GroupDescription | None, topics: Iterable[str]) -> frozenset[str]:
    """Of ``topics``, those no member of the group is assigned a partition of, when that is known:
    a plain consumer group, Stable, with members and at least one member's assignment read (an
    assignment that could not be decoded reads as none, so a group with no assignment at all
    proves nothing). Empty when unknown."""
    if (
        description is None
        or description.state is not GroupState.STABLE
        or not description.members
        or not description.is_plain_consumer_group
    ):
        return frozenset()
    read = {tp.topic for member in description.members for tp in member.assignment}
    if not read:
        return frozenset()
    return frozenset(t for t in topics if t not in read)


def partitions_of_groups(
    descriptions: Mapping[str, GroupDescription],
    offsets: Mapping[str, GroupOffsets],
    topics: Mapping[str, Collection[int]] | None = None,
) -> dict[str, list[TopicPartition]]:
    """Per group (of those whose offsets were read): committed + assigned partitions, or with
    ``topics`` exactly the partitions of those topics."""
    return {
        group_id: _group_partitions(descriptions.get(group_id), group_offsets, topics)
        for group_id, group_offsets in offsets.items()
    }


def _group_partitions(
    description: GroupDescription | None,
    group_offsets: GroupOffsets,
    topics: Mapping[str, Collection[int]] | None,
) -> list[TopicPartition]:
    if topics is not None:
        return sorted((TopicPartition(t, p) for t, parts in topics.items() for p in parts), key=_tp_key)
    assigned = description.assigned_partitions if description is not None else frozenset()
    # the committed partitions are already distinct (dict keys): a set only when members add some
    return sorted(
        set(group_offsets.partitions) | assigned if assigned else group_offsets.partitions, key=_tp_key
    )


def _item_key(item: tuple[TopicPartition, Any]) -> tuple[str, int]:
    return item[0].topic, item[0].partition


def compute_lag(
    descriptions: KeyedResults[str, GroupDescription] | Mapping[str, GroupDescription],
    offsets: KeyedResults[str, GroupOffsets] | Mapping[str, GroupOffsets],
    starts: KeyedResults[TopicPartition, ListedOffset] | Mapping[TopicPartition, int],
    ends: KeyedResults[TopicPartition, ListedOffset] | Mapping[TopicPartition, int],
    policy: UnknownLagPolicy | str = UnknownLagPolicy.FAIL,
    taken_at_ms: int = 0,
    *,
    topics: Mapping[str, Collection[int]] | None = None,
    group_ids: Iterable[str] | None = None,
) -> LagSnapshot:
    """The snapshot from what was read; pure (no I/O, no clock).

    A group whose committed offsets could not be read is in ``failures``. A group whose
    description failed but whose offsets were read gets state ``Unknown`` and the
    description's failure in ``GroupLag.error``: its lag is still known.
    """
    policy = parse_policy(policy)
    described, committed_by_group = _keyed(descriptions), _keyed(offsets)
    starts, ends = _keyed(starts), _keyed(ends)
    ids = list(group_ids) if group_ids is not None else list(dict.fromkeys([*described, *committed_by_group]))
    # each partition's offsets once, not once per group reading it: (log start, log end, end failure)
    start_of, end_of, end_failures = starts.values, ends.values, ends.failures
    bounds = {
        tp: (_offset_of(start_of.get(tp)), _offset_of(end_of.get(tp)), end_failures.get(tp))
        for tp in {*start_of, *end_of, *end_failures}
    }
    unread = (None, None, None)
    groups: dict[str, GroupLag] = {}
    failures: dict[str, Failure] = {}
    for group_id in ids:
        if group_id not in committed_by_group.values:
            failures[group_id] = (
                committed_by_group.failures.get(group_id)
                or described.failures.get(group_id)
                or Failure(CLIENT_NOT_READ, "committed offsets were not read")
            )
            continue
        description = described.values.get(group_id)
        committed = committed_by_group.values[group_id].partitions
        owners = (
            {tp: m.member_id for m in description.members for tp in m.assignment}
            if description is not None and description.members
            else {}
        )
        partitions = []
        left = unassigned_topics(description, {tp.topic for tp in committed}) if owners else frozenset()
        if topics is None and (description is None or not description.assigned_partitions):
            # what _group_partitions gives (the committed ones), read with their commits at once
            pairs: Iterable[tuple[TopicPartition, Any]] = sorted(committed.items(), key=_item_key)
        else:
            pairs = [
                (tp, committed.get(tp))
                for tp in _group_partitions(description, committed_by_group.values[group_id], topics)
            ]
        for tp, commit in pairs:
            log_start, log_end, end_failure = bounds.get(tp, unread)
            assigned_to = owners.get(tp) if owners else None
            if (
                commit is not None
                and log_end is not None
                and commit.error is None
                and end_failure is None
                and not (left and tp.topic in left)
            ):
                # the common case (committed, log end read, nothing failed), inline: what
                # partition_lag decides for it, without a call and a flags set per partition
                offset = commit.offset
                lost = log_start is not None and offset < log_start
                if offset > log_end:
                    lag, flags = 0, _CLAMPED_LOST if lost else _CLAMPED
                else:
                    lag, flags = log_end - offset, _LOST if lost else _NO_FLAGS
                partitions.append(
                    PartitionLag(tp.topic, tp.partition, offset, log_start, log_end, lag, flags, assigned_to)
                )
                continue
            if commit is None:
                offset, error = None, end_failure
            else:
                offset, error = commit.offset, commit.error or end_failure
            partitions.append(
                partition_lag(
                    tp,
                    offset,
                    log_start,
                    log_end,
                    policy,
                    assigned_to=assigned_to,
                    error=error,
                    topic_unassigned=tp.topic in left if left else False,
                )
            )
        groups[group_id] = GroupLag(
            group_id=group_id,
            state=description.state if description else GroupState.UNKNOWN,
            protocol_type=description.protocol_type if description else "",
            members=len(description.members) if description else 0,
            partitions=tuple(partitions),
            error=None
            if description
            else described.failures.get(group_id, Failure(CLIENT_NOT_READ, "group was not described")),
            policy=policy,
        )
    return LagSnapshot(taken_at_ms=taken_at_ms, groups=groups, policy=policy, failures=failures)


async def topic_partitions(client: AsyncGroupsClient, topics: Iterable[str]) -> dict[str, list[int]]:
    """Every partition of ``topics``; a topic the cluster does not have is a ConfigurationError."""
    if isinstance(topics, str):
        raise ConfigurationError(f"topics must be a list of topic names, not the single string {topics!r}.")
    names = sorted(set(topics))
    if not names or any(not isinstance(t, str) or not t for t in names):
        raise ConfigurationError(f"topics must be a non-empty list of topic names, got {list(topics)!r}.")
    described = await client.describe_topics(names)
    missing = [t for t in names if t not in described]
    if missing:
        # Kafka leaves a topic this principal may not Describe out of Metadata as if it did not
        # exist: ask by name, which tells "gone" from "not visible" (TOPIC_AUTHORIZATION_FAILED).
        existence = await client.check_topics(missing)
        hidden = [t for t in missing if existence.values.get(t) is TopicExistence.NOT_VISIBLE]
        if hidden:
            raise ConfigurationError(
                f"topic(s) {', '.join(map(repr, hidden))} are not visible to this principal "
                "(TOPIC_AUTHORIZATION_FAILED: Kafka answers it whether or not the topic exists): grant it Describe "
                "on them (an ACL), or leave them out of topics."
            )
        raise ConfigurationError(
            f"topic(s) {', '.join(map(repr, missing))} do not exist in the cluster: "
            "check the names (topics are case-sensitive)."
        )
    return {t: sorted(described[t].partitions) for t in names}


async def take_snapshot(
    client: AsyncGroupsClient,
    group_ids: Iterable[str],
    *,
    policy: UnknownLagPolicy | str = UnknownLagPolicy.FAIL,
    read_committed: bool = False,
    topics: Iterable[str] | None = None,
    timeout_s: float | None = None,
    listings: Mapping[str, GroupListing] | None = None,
) -> LagSnapshot:
    """Lag of ``group_ids`` now (see the module docstring for the order of reads and the rules).

    ``client`` is an :class:`~airflow_provider_kgroups.client.AsyncGroupsClient` (from sync
    code: ``groups_client.run(take_snapshot(groups_client.aclient, ...))``). ``topics``
    limits the snapshot to those topics and lists all their partitions; naming a topic that
    does not exist raises :class:`ConfigurationError`. ``read_committed`` uses the last
    stable offset as log end (transactional topics: no phantom lag of 1 for commit markers).
    ``listings``: what a listing just read said of the groups (``select_listed``): a group it
    listed as Empty is taken as listed (state, protocol type, no members) instead of being
    described (:func:`described_by_listing`).
    """
    policy = parse_policy(policy)
    ids = validate_group_ids(group_ids)
    wanted_topics = await topic_partitions(client, topics) if topics is not None else None
    with fewer_collections():  # see client/gcpause.py: a third of the CPU of 100,000 groups
        return await _read(client, ids, policy, read_committed, wanted_topics, timeout_s, listings)


#: groups per batch of :func:`iter_snapshot`, and how many batches are read at once
STREAM_BATCH, STREAM_CONCURRENCY = 5_000, 4


async def iter_snapshot(
    client: AsyncGroupsClient,
    group_ids: Iterable[str],
    *,
    policy: UnknownLagPolicy | str = UnknownLagPolicy.FAIL,
    read_committed: bool = False,
    topics: Iterable[str] | None = None,
    timeout_s: float | None = None,
    batch_size: int = STREAM_BATCH,
    concurrency: int = STREAM_CONCURRENCY,
    listings: Mapping[str, GroupListing] | None = None,
    in_order: bool = False,
) -> AsyncIterator[LagSnapshot]:
    """:func:`take_snapshot` in parts, for many groups: the groups are read in batches of
    ``batch_size`` (``concurrency`` batches at a time), and each batch's snapshot is yielded as
    soon as it is complete, in completion order. Each part follows the order of reads of the
    module docstring on its own (its end offsets are read after its commits), so each part is
    exact for its groups; ``taken_at_ms`` is per part. Every group is in exactly one part
    (in ``groups`` or ``failures``). Memory: about ``concurrency`` batches, whatever the number
    of groups. With at most ``batch_size`` groups it reads exactly what take_snapshot reads
    (``listings`` as there). ``in_order``: the parts come in the order of ``group_ids`` (a part
    read early waits for the ones before it; the next batches are read meanwhile)."""
    check_int("batch_size", batch_size, at_least=1, must_be="a positive int")
    check_int("concurrency", concurrency, at_least=1, must_be="a positive int")
    policy = parse_policy(policy)
    ids = validate_group_ids(group_ids)
    wanted_topics = await topic_partitions(client, topics) if topics is not None else None
    batches = iter([ids[i : i + batch_size] for i in range(0, len(ids), batch_size)])
    running: dict[asyncio.Task[LagSnapshot], None] = {}  # in the order the batches started

    def start_next() -> None:
        batch = next(batches, None)
        if batch is not None:
            task = asyncio.ensure_future(
                _read(client, batch, policy, read_committed, wanted_topics, timeout_s, listings)
            )
            running[task] = None

    with fewer_collections():  # see client/gcpause.py
        for _ in range(concurrency):
            start_next()
        try:
            while running:
                if in_order:
                    first = next(iter(running))
                    await asyncio.wait((first,))
                    done = {first}
                else:
                    done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    del running[task]
                    start_next()
                    yield task.result()
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)


def _partitions_read(
    descriptions: Mapping[str, GroupDescription],
    offsets: Mapping[str, GroupOffsets],
    topics: Mapping[str, Collection[int]] | None,
) -> set[TopicPartition]:
    """Every partition of :func:`partitions_of_groups`, without listing them group by group."""
    if topics is not None:
        return {TopicPartition(t, p) for t, parts in topics.items() for p in parts} if offsets else set()
    out: set[TopicPartition] = set()
    for group_id, group_offsets in offsets.items():
        out.update(group_offsets.partitions)
        description = descriptions.get(group_id)
        if description is not None:
            for member in description.members:
                out.update(member.assignment)
    return out


def described_by_listing(listing: GroupListing) -> GroupDescription | None:
    """What DescribeGroups would answer for a group that ListGroups just listed as Empty: no
    members (so no assignment), the listed protocol type, protocol "" (Kafka keeps none for an
    Empty group). None for any other state or a share or streams group (their own describe
    APIs say more): those are described. A member that joins after the listing shows in the
    next snapshot; the lag itself is read as always."""
    if listing.state is not GroupState.EMPTY or listing.group_type not in (None, CLASSIC, CONSUMER):
        return None
    return GroupDescription(
        group_id=listing.group_id,
        state=GroupState.EMPTY,
        protocol_type=listing.protocol_type,
        protocol="",
        members=(),
        coordinator_id=listing.coordinator_id,
        group_type=listing.group_type or CLASSIC,
    )


async def _describe(
    client: AsyncGroupsClient,
    ids: list[str],
    listings: Mapping[str, GroupListing] | None,
    timeout_s: float | None,
) -> KeyedResults[str, GroupDescription]:
    """The groups' descriptions: from ``listings`` where they suffice, DescribeGroups for the rest."""
    known = {}
    if listings:
        for group_id in ids:
            listing = listings.get(group_id)
            if listing is not None and (description := described_by_listing(listing)) is not None:
                known[group_id] = description
    if not known:
        return await client.describe_groups(ids, timeout_s=timeout_s)
    rest = [g for g in ids if g not in known]
    if not rest:
        return KeyedResults(known, {})
    described = await client.describe_groups(rest, timeout_s=timeout_s)
    return KeyedResults({**known, **described.values}, dict(described.failures))


async def _read(
    client: AsyncGroupsClient,
    ids: list[str],
    policy: UnknownLagPolicy,
    read_committed: bool,
    wanted_topics: Mapping[str, Collection[int]] | None,
    timeout_s: float | None,
    listings: Mapping[str, GroupListing] | None = None,
) -> LagSnapshot:
    taken_at = now_ms()
    descriptions, offsets = await asyncio.gather(
        _describe(client, ids, listings, timeout_s),
        client.fetch_committed_offsets(ids, timeout_s=timeout_s),
    )
    tps = sorted(_partitions_read(descriptions.values, offsets.values, wanted_topics), key=_tp_key)
    if tps and wanted_topics is None:
        try:
            await client.describe_topics(
                {tp.topic for tp in tps}, timeout_s=timeout_s
            )  # one Metadata, leaders cached
        except RequestTimeout:
            pass  # the deadline passed: the offset reads below fail each partition with it (unknown, not an abort)
    if tps:
        starts, ends = await asyncio.gather(
            client.log_start_offsets(tps, timeout_s=timeout_s),
            client.log_end_offsets(tps, read_committed=read_committed, timeout_s=timeout_s),
        )
    else:
        starts = ends = KeyedResults()
    return compute_lag(
        descriptions, offsets, starts, ends, policy, taken_at, topics=wanted_topics, group_ids=ids
    )
