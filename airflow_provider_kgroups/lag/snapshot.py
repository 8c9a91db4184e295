"""A lag snapshot of many groups in one call.

Order of reads (why it matters): groups are described (state, members, assignments) and
their committed offsets read in the same round (the two are independent: neither answer
shapes the other request), and only when both are in, the log-start and log-end offsets of
every partition involved, deduplicated across groups, in one ListOffsets round per leader
(earliest and latest go out together). Because the end offsets are read after the commits,
a lag can only be overstated by what was produced in between, never negative; if a commit
still lands past the end offset we read (the commit raced ahead of our ListOffsets), the lag
is clamped to 0 and flagged ``CLAMPED``.

A share group (KIP-932) commits nothing: the groups described as share groups have their
share-partition start offsets read (DescribeShareGroupOffsets, one more round, only when there
is one: :mod:`.share_positions`) before the log offsets, and stand in for their commits.

The rules (per partition, which partitions a group has) are :mod:`.compute`'s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from ..client.errors import ConfigurationError, RequestTimeout
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
    TopicExistence,
    TopicPartition,
)
from ..client.selection import validate_group_ids
from .compute import compute_lag, partition_lag, partition_order, partitions_of_groups
from .model import LagSnapshot, UnknownLagPolicy
from .policy import parse_policy
from .share_positions import share_candidates, with_share_positions

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


def now_ms() -> int:
    return time.time_ns() // 1_000_000


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
    share, maybe_share = share_candidates(ids, descriptions, offsets)
    offsets = await with_share_positions(
        client, offsets, share, maybe_share, topics=wanted_topics, timeout_s=timeout_s
    )
    tps = sorted(_partitions_read(descriptions.values, offsets.values, wanted_topics), key=partition_order)
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
