"""A Spark job's processed range made visible as a consumer group: after the job that read
``[startingOffsets, endingOffsets)`` straight from Kafka succeeded, ``endingOffsets`` (exclusive:
the next record to read, exactly what a committed offset means) is committed to a named
*progress group*, so Burrow, KMinion and this project's own sensor see the job's progress and
lag; the next run starts where the group says (:func:`progress_offsets`).

It is a reset to given offsets through the same safety path (:mod:`.reset`): the group is
created Empty on its first commit and never one with members is committed to; the offsets are
backed up and read back first, and the commit is audited. A range that would move the group
back (a rerun of an older interval) is refused unless ``allow_rewind``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..client.errors import ConfigurationError, KafkaGroupsError
from ..client.numbers import is_int
from ..client.results import TopicPartition
from ..client.selection import validate_group_ids
from ..lag.offset_range import nest_offsets
from ..offsets.spec import ResetSpec, Scope, Strategy
from .context import ChangeContext
from .offset_results import OffsetChangeResult
from .reset import ResetOptions, run_reset

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["commit_progress", "progress_offsets"]


async def commit_progress(
    context: ChangeContext,
    group_id: str,
    ending: Mapping[TopicPartition, int],
    *,
    allow_rewind: bool = False,
    dry_run: bool = False,
    now_ms: int | None = None,
    action: str | None = None,
) -> OffsetChangeResult:
    """Commit ``ending`` (per partition, the first offset *not* processed) to ``group_id``
    (``now_ms``, ``action``: see :func:`.reset.run_reset`)."""
    validate_group_ids([group_id], what="progress group")
    bad = {tp: o for tp, o in ending.items() if not is_int(o) or o < 0}
    if not ending or bad:
        raise ConfigurationError(
            f"the processed range's ending offsets must be offsets >= 0 per partition "
            f"(-1, latest, is not an offset the job read up to), got {dict(bad) or 'none'}."
        )
    spec = ResetSpec(Strategy.FROM_FILE, Scope(), file_offsets={group_id: dict(ending)})
    return await run_reset(
        context,
        spec,
        [group_id],
        ResetOptions(dry_run=dry_run, forward_only=not allow_rewind),
        now_ms=now_ms,
        action=action,
    )


async def progress_offsets(aclient: AsyncGroupsClient, group_id: str) -> dict[str, dict[str, int]] | None:
    """The progress group's committed offsets in Spark's ``startingOffsets`` form
    (``{"topic": {"0": 42}}``), or None when it has none yet (the first run)."""
    validate_group_ids([group_id], what="progress group")
    committed = await aclient.fetch_committed_offsets([group_id])
    if group_id in committed.failures:
        raise KafkaGroupsError(
            f"the progress group {group_id!r} could not be read: {committed.failures[group_id]}"
        )
    offsets = committed.values[group_id].committed()
    return nest_offsets(offsets) if offsets else None
