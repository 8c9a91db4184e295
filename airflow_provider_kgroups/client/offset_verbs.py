"""The verbs that change committed offsets, for many groups in one call: commit (OffsetCommit as
an administrator) and delete (OffsetDelete). Mixed into :class:`~.client.AsyncGroupsClient`;
kept apart so the client module stays the read verbs' home.

Both APIs carry one group per request: the driver sends every group's request to its
coordinator at once (pipelined per connection), each group with its own outcome, each
partition with its own answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError, Failure
from .handlers.offset_commit import OffsetCommitHandler, OffsetToCommit
from .inputs import partitions_of, to_commit
from .results import CommittedOffset, KeyedResults, ShareGroupOffsets, TopicPartition
from .selection import validate_group_ids

if TYPE_CHECKING:
    from .lookup import CoordinatorLookup
    from .runner import Call

#: per group, each partition -> None (done) or why not
PartitionOutcomes = dict[TopicPartition, "Failure | None"]


def _by_group(value: Mapping[str, Any], what: str) -> dict[str, Mapping[Any, Any]]:
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{what} must be a mapping of group id -> partitions, got {type(value).__name__}."
        )
    validate_group_ids(list(value), what=what)
    return dict(value)


def _offsets_by_group(value: Mapping[str, Any], what: str) -> dict[str, dict[TopicPartition, OffsetToCommit]]:
    """``{group: {TopicPartition: offset}}`` checked: every group names at least one partition."""
    out = {}
    for group_id, partitions in _by_group(value, what).items():
        out[group_id] = {tp: to_commit(tp, v) for tp, v in partitions.items()}
        partitions_of(out[group_id])
        if not out[group_id]:
            raise ConfigurationError(f"no offsets to commit for group {group_id!r}.")
    return out


class OffsetVerbs:
    """Batched offset changes. Expects the client's ``_coordinators``, ``_call`` and ``_run_groups``."""

    _coordinators: CoordinatorLookup
    _call: Callable[[float | None], Call]
    _run_groups: Callable[..., Awaitable[KeyedResults[Any, Any]]]

    async def commit_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | CommittedOffset | OffsetToCommit],
        timeout_s: float | None = None,
    ) -> KeyedResults[TopicPartition, int]:
        """Commit ``offsets`` for one group without joining it (see :meth:`commit_group_offsets`):
        per partition, the committed offset or why not (a group-level failure is every partition's).
        Used to restore a backup."""
        validate_group_ids([group_id], what="group_id")
        commits = {tp: to_commit(tp, value) for tp, value in offsets.items()}
        results = await self.commit_group_offsets({group_id: commits}, timeout_s=timeout_s)
        if group_id in results.failures:
            return KeyedResults({}, {tp: results.failures[group_id] for tp in commits})
        per_partition = results.values[group_id]
        return KeyedResults(
            {tp: commits[tp].offset for tp, error in per_partition.items() if error is None},
            {tp: error for tp, error in per_partition.items() if error is not None},
        )

    async def commit_group_offsets(
        self,
        offsets: Mapping[str, Mapping[TopicPartition, int | CommittedOffset | OffsetToCommit]],
        timeout_s: float | None = None,
    ) -> KeyedResults[str, PartitionOutcomes]:
        """Commit offsets for many groups without joining them (generation/member epoch -1 and an
        empty member id, as the Java admin's ``AlterConsumerGroupOffsetsHandler`` sends them):
        Kafka accepts it only for a group without members (``ClassicGroup.validateOffsetCommit``:
        Empty; ``ConsumerGroup.validateOffsetCommit``: no members) and creates a group that does
        not exist. Per group, each partition -> None (committed) or its Failure; a group-level
        failure (authorization, coordinator) is the group's."""
        commits = _offsets_by_group(offsets, "offsets")
        if not commits:
            return KeyedResults()
        handler = OffsetCommitHandler(self._coordinators, commits)
        return await self._run_groups(self._call(timeout_s), handler, list(commits))

    async def delete_committed_offsets(
        self, partitions: Mapping[str, Iterable[TopicPartition]], timeout_s: float | None = None
    ) -> KeyedResults[str, PartitionOutcomes]:
        """Delete committed offsets (OffsetDelete, KIP-496, Kafka 2.4+) of the named partitions of
        many groups. Per group, each partition -> None (gone) or its Failure, e.g.
        GROUP_SUBSCRIBED_TO_TOPIC (a member still subscribes to the topic); a group the broker
        refuses as a whole (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, authorization) is the group's
        failure. A broker without the API fails every group with CLIENT_UNSUPPORTED."""
        groups = _by_group(partitions, "partitions")
        wanted: dict[str, frozenset[TopicPartition]] = {}
        for group_id, tps in groups.items():
            if isinstance(tps, (str, bytes, TopicPartition)) or not isinstance(tps, Iterable):
                raise ConfigurationError(f"partitions[{group_id!r}] must be a list of TopicPartition values.")
            wanted[group_id] = frozenset(partitions_of(tps))
            if not wanted[group_id]:
                raise ConfigurationError(f"no partitions named for group {group_id!r}.")
        if not wanted:
            return KeyedResults()
        from .handlers.offset_delete import OffsetDeleteHandler  # on first use: client.VERB_HANDLERS

        handler = OffsetDeleteHandler(self._coordinators, wanted)
        return await self._run_groups(self._call(timeout_s), handler, list(wanted))

    # -- share groups (KIP-932) -------------------------------------------------------------------

    async def describe_share_group_offsets(
        self,
        group_ids: Iterable[str],
        topics: Mapping[str, Iterable[int]] | None = None,
        timeout_s: float | None = None,
    ) -> KeyedResults[str, ShareGroupOffsets]:
        """Share groups' start offsets (DescribeShareGroupOffsets, Kafka 4.1+), one request per
        coordinator for all its groups: per group and share-partition a :class:`CommittedOffset`
        whose ``offset`` is the start offset (None: never initialized), and from v1 (Kafka 4.2+,
        KIP-1226) the broker's exact lag in ``lags`` (None: the broker answered v0). A group that
        is not a share group fails with GROUP_ID_NOT_FOUND; a broker without the API with
        CLIENT_UNSUPPORTED, naming it."""
        ids = validate_group_ids(group_ids)
        wanted = None
        if topics is not None:
            wanted = {t: sorted(set(ps)) for t, ps in topics.items()}
            partitions_of(TopicPartition(t, p) for t, ps in wanted.items() for p in ps)
        from .handlers.share_offsets import (
            DescribeShareGroupOffsetsHandler,  # on first use: client.VERB_HANDLERS
        )

        handler = DescribeShareGroupOffsetsHandler(self._coordinators, wanted)
        return await self._run_groups(self._call(timeout_s), handler, ids)

    async def alter_share_group_offsets(
        self, offsets: Mapping[str, Mapping[TopicPartition, int]], timeout_s: float | None = None
    ) -> KeyedResults[str, PartitionOutcomes]:
        """Set share groups' start offsets (AlterShareGroupOffsets, Kafka 4.1+); Kafka accepts it
        only for a share group without members (NON_EMPTY_GROUP otherwise). Per group, each
        partition -> None (set) or its Failure."""
        wanted = {
            g: {tp: c.offset for tp, c in commits.items()}
            for g, commits in _offsets_by_group(offsets, "offsets").items()
        }
        if not wanted:
            return KeyedResults()
        from .handlers.share_offsets import (
            AlterShareGroupOffsetsHandler,  # on first use: client.VERB_HANDLERS
        )

        handler = AlterShareGroupOffsetsHandler(self._coordinators, wanted)
        return await self._run_groups(self._call(timeout_s), handler, list(wanted))
