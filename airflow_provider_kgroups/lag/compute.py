"""The lag rules, pure: from what was read (descriptions, committed offsets, log start and end
offsets) to a :class:`~.model.LagSnapshot`, with no I/O and no clock (:mod:`.snapshot` reads).

Per partition (:func:`partition_lag`):

* committed read with an error, or no end offset -> ``ERROR``, lag unknown;
* no committed offset -> ``NO_COMMIT``; the lag is the policy's (:class:`UnknownLagPolicy`):
  ``fail`` unknown (and the group's total is unknown), ``ignore`` unknown but left out of
  totals, ``from_earliest`` log end - log start, ``from_latest`` 0;
* committed > log end -> ``CLAMPED``, lag 0;
* otherwise lag = log end - committed, and ``LOST`` when committed < log start (records
  the group never read were deleted by retention; the lag still counts them, as
  kafka-consumer-groups.sh does, so that it never jumps when retention runs).

A share group (KIP-932) commits no offsets: its position per share-partition is the *start
offset* (every record below it is done), read by :mod:`.share_positions` into a
:class:`~..client.results.ShareGroupOffsets` that stands for its commits here
(:func:`share_partition_lag`): ``committed`` is the start offset, and the lag is the broker's
exact lag (DescribeShareGroupOffsets v1, Kafka 4.2+: records not yet delivered completely);
where the broker gives none (v0, Kafka 4.1, or -1) the lag is unknown, flagged ``LAG_AT_MOST``
(log end - start offset is only an upper bound), except at the log end, where nothing is above
the start offset and the lag is exactly 0. A never-initialized share-partition (no start offset)
is ``NO_COMMIT``, under the policy.

Which partitions a group has: every partition it committed, every partition assigned to one
of its members (listed even without a commit), and, when ``topics`` is given, every partition
of those topics (and nothing else).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from operator import attrgetter
from typing import Any

from ..client.errors import CLIENT_NOT_READ, Failure
from ..client.results import (
    SHARE,
    GroupDescription,
    GroupOffsets,
    GroupState,
    KeyedResults,
    ListedOffset,
    ShareGroupOffsets,
    TopicPartition,
)
from .model import GroupLag, LagFlag, LagSnapshot, PartitionLag, UnknownLagPolicy
from .policy import parse_policy

__all__ = [
    "compute_lag",
    "partition_lag",
    "share_partition_lag",
    "partitions_of_groups",
    "unassigned_topics",
]


_NO_FLAGS: frozenset[LagFlag] = frozenset()
_LOST = frozenset({LagFlag.LOST})
_CLAMPED = frozenset({LagFlag.CLAMPED})
_CLAMPED_LOST = frozenset({LagFlag.CLAMPED, LagFlag.LOST})
_AT_MOST = frozenset({LagFlag.LAG_AT_MOST})


def partition_order(tp: TopicPartition) -> tuple[str, int]:
    """TopicPartition's own order, compared as a plain tuple (in C, instead of the dataclass's
    generated ``__lt__`` in Python: sorting tens of thousands of partitions)."""
    return tp.topic, tp.partition


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


def share_partition_lag(
    tp: TopicPartition,
    start: int | None,
    exact_lag: int | None,
    log_start: int | None,
    log_end: int | None,
    policy: UnknownLagPolicy,
    *,
    assigned_to: str | None = None,
    error: Failure | None = None,
) -> PartitionLag:
    """One share-partition's lag (module docstring): ``start`` the share-partition start offset
    (None: never initialized), ``exact_lag`` the broker's lag (None: v0 or -1). Read as a commit by
    :func:`partition_lag`, then the broker's lag in place of log end - start, which is only a bound."""
    as_commit = partition_lag(tp, start, log_start, log_end, policy, assigned_to=assigned_to, error=error)
    if start is None or error is not None or log_end is None:
        return as_commit
    if exact_lag is not None:
        return replace(as_commit, lag=exact_lag, flags=as_commit.flags - _CLAMPED)
    if start < log_end:  # only the bound is known: no lag
        return replace(as_commit, lag=None, flags=as_commit.flags | _AT_MOST)
    return as_commit  # at (or past) the log end: nothing above the start offset, exactly 0


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
        return sorted(
            (TopicPartition(t, p) for t, parts in topics.items() for p in parts), key=partition_order
        )
    assigned = description.assigned_partitions if description is not None else frozenset()
    # the committed partitions are already distinct (dict keys): a set only when members add some
    return sorted(
        set(group_offsets.partitions) | assigned if assigned else group_offsets.partitions,
        key=partition_order,
    )


#: a partition's (topic, partition): the sort key and the key of the offsets read, made and
#: hashed in C (the dataclass's own ``__hash__`` and ``__lt__`` are Python calls)
_TP_KEY = attrgetter("topic", "partition")


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
    ids = list(group_ids) if group_ids is not None else list(dict.fromkeys([*described, *committed_by_group]))
    bounds = _partition_bounds(_keyed(starts), _keyed(ends))
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
        group_offsets = committed_by_group.values[group_id]
        share = isinstance(group_offsets, ShareGroupOffsets)
        read = _share_partitions if share else _consumer_partitions
        partitions = read(description, group_offsets, bounds, policy, topics)
        groups[group_id] = _group_lag(group_id, description, partitions, described, policy, share=share)
    return LagSnapshot(taken_at_ms=taken_at_ms, groups=groups, policy=policy, failures=failures)


#: a partition's offsets read: (log start, log end, the failure reading its log end)
_Bounds = tuple[int | None, int | None, Failure | None]
_UNREAD: _Bounds = (None, None, None)


def _partition_bounds(
    starts: KeyedResults[TopicPartition, Any], ends: KeyedResults[TopicPartition, Any]
) -> dict[tuple[str, int], _Bounds]:
    """Each partition's offsets once, not once per group reading it, keyed by :data:`_TP_KEY`."""
    start_of, end_of, end_failures = starts.values, ends.values, ends.failures
    return {
        _TP_KEY(tp): (_offset_of(start_of.get(tp)), _offset_of(end_of.get(tp)), end_failures.get(tp))
        for tp in {*start_of, *end_of, *end_failures}
    }


def _owners(description: GroupDescription | None) -> dict[TopicPartition, str]:
    """Each assigned partition's member id ({} without members)."""
    if description is None or not description.members:
        return {}
    return {tp: m.member_id for m in description.members for tp in m.assignment}


def _share_partitions(
    description: GroupDescription | None,
    group_offsets: GroupOffsets,
    bounds: Mapping[tuple[str, int], _Bounds],
    policy: UnknownLagPolicy,
    topics: Mapping[str, Collection[int]] | None,
) -> list[PartitionLag]:
    """A share group's partitions, each by :func:`share_partition_lag`."""
    assert isinstance(group_offsets, ShareGroupOffsets)
    committed, lags, owners = group_offsets.partitions, group_offsets.lags or {}, _owners(description)
    partitions = []
    for tp in _group_partitions(description, group_offsets, topics):
        start = committed.get(tp)
        log_start, log_end, end_failure = bounds.get(_TP_KEY(tp), _UNREAD)
        partitions.append(
            share_partition_lag(
                tp,
                start.offset if start is not None else None,
                lags.get(tp),
                log_start,
                log_end,
                policy,
                assigned_to=owners.get(tp) if owners else None,
                error=(start.error if start is not None else None) or end_failure,
            )
        )
    return partitions


def _partition_rows(
    description: GroupDescription | None,
    group_offsets: GroupOffsets,
    topics: Mapping[str, Collection[int]] | None,
) -> Iterable[tuple[tuple[str, int], Any, TopicPartition]]:
    """The group's partitions (:func:`_group_partitions`) as (key, commit or None, partition)."""
    committed = group_offsets.partitions
    if topics is None and (
        description is None or not description.members or not description.assigned_partitions
    ):
        # the committed ones, read with their commits at once; the keys are distinct, so the
        # sort never compares further than them
        return sorted(zip(map(_TP_KEY, committed), committed.values(), committed))
    return [
        (_TP_KEY(tp), committed.get(tp), tp) for tp in _group_partitions(description, group_offsets, topics)
    ]


def _consumer_partitions(
    description: GroupDescription | None,
    group_offsets: GroupOffsets,
    bounds: Mapping[tuple[str, int], _Bounds],
    policy: UnknownLagPolicy,
    topics: Mapping[str, Collection[int]] | None,
) -> list[PartitionLag]:
    """A group's partitions by :func:`partition_lag`'s rules; the common case (committed, log end
    read, nothing failed) inline, without a call and a flags set per partition."""
    owners = _owners(description)
    left = (
        unassigned_topics(description, {tp.topic for tp in group_offsets.partitions})
        if owners
        else frozenset()
    )
    partitions = []
    for key, commit, tp in _partition_rows(description, group_offsets, topics):
        log_start, log_end, end_failure = bounds.get(key, _UNREAD)
        assigned_to = owners.get(tp) if owners else None
        if (
            commit is not None
            and (offset := commit.offset) is not None  # None: an answer's -1, no commit
            and log_end is not None
            and commit.error is None
            and end_failure is None
            and not (left and tp.topic in left)
        ):
            lost = log_start is not None and offset < log_start
            if offset > log_end:
                lag, flags = 0, _CLAMPED_LOST if lost else _CLAMPED
            else:
                lag, flags = log_end - offset, _LOST if lost else _NO_FLAGS
            partitions.append(
                PartitionLag(key[0], key[1], offset, log_start, log_end, lag, flags, assigned_to)
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
    return partitions


def _group_lag(
    group_id: str,
    description: GroupDescription | None,
    partitions: list[PartitionLag],
    described: KeyedResults[str, GroupDescription],
    policy: UnknownLagPolicy,
    *,
    share: bool = False,
) -> GroupLag:
    """``share``: its offsets are a share group's start offsets (a share group even when its
    description failed)."""
    return GroupLag(
        group_id=group_id,
        state=description.state if description else GroupState.UNKNOWN,
        protocol_type=description.protocol_type if description else (SHARE if share else ""),
        members=len(description.members) if description else 0,
        partitions=tuple(partitions),
        error=None
        if description
        else described.failures.get(group_id, Failure(CLIENT_NOT_READ, "group was not described")),
        policy=policy,
    )
