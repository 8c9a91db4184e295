"""Where a share group (KIP-932) stands, for the lag snapshot and the barrier: its share-partition
start offsets (DescribeShareGroupOffsets), in place of the committed offsets it does not have.

Kafka answers OffsetFetch for a share group with no partition and no error (checked on Kafka 4.4,
tests/apachekafka/test_group_types.py): read as commits, a share group would have no partition
and a lag of 0. So the groups described as share groups have their OffsetFetch answer replaced by
their start offsets (a :class:`~..client.results.ShareGroupOffsets`, with the broker's exact lag
from v1), or by the failure to read them (a broker without the API: CLIENT_UNSUPPORTED, named).
A group that may be one (its description failed, or was not read, and it committed nothing) is
asked too, and keeps its OffsetFetch answer unless DescribeShareGroupOffsets reads it (a group
that is not a share group fails there with GROUP_ID_NOT_FOUND).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from ..client.errors import CLIENT_NOT_READ, Failure
from ..client.results import SHARE, GroupDescription, GroupOffsets, KeyedResults

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["share_candidates", "with_share_positions"]


def share_candidates(
    ids: Iterable[str],
    descriptions: KeyedResults[str, GroupDescription] | None,
    offsets: KeyedResults[str, GroupOffsets],
) -> tuple[list[str], list[str]]:
    """(the groups described as share groups, the groups that may be one: not described and
    nothing committed)."""
    described = descriptions.values if descriptions is not None else {}
    share, maybe = [], []
    for group_id in ids:
        description = described.get(group_id)
        if description is not None:
            if description.group_type == SHARE:
                share.append(group_id)
        elif group_id in offsets.values and not offsets.values[group_id].partitions:
            maybe.append(group_id)
    return share, maybe


async def with_share_positions(
    client: AsyncGroupsClient,
    offsets: KeyedResults[str, GroupOffsets],
    share_ids: Collection[str],
    maybe_share: Collection[str] = (),
    *,
    topics: Mapping[str, Collection[int]] | None = None,
    timeout_s: float | None = None,
) -> KeyedResults[str, GroupOffsets]:
    """``offsets`` with the start offsets of ``share_ids`` (or the failure to read them) in place of
    their OffsetFetch answers, and those of ``maybe_share`` where they read. One
    DescribeShareGroupOffsets per coordinator; nothing when there is no group to ask."""
    ask = [*share_ids, *(g for g in maybe_share if g not in share_ids)]
    if not ask:
        return offsets
    starts = await client.describe_share_group_offsets(ask, topics=topics, timeout_s=timeout_s)
    values: dict[str, GroupOffsets] = dict(offsets.values)
    failures: dict[str, Failure] = dict(offsets.failures)
    for group_id in ask:
        read = starts.values.get(group_id)
        if read is not None:
            values[group_id] = read
            failures.pop(group_id, None)
        elif group_id in share_ids:
            values.pop(group_id, None)
            failures[group_id] = starts.failures.get(group_id) or Failure(
                CLIENT_NOT_READ, "the share group's start offsets were not read"
            )
    return KeyedResults(values, failures)
