"""The one safety path every change to groups' offsets goes through, whatever the change:
deleting groups (``kgroups delete``, the cleanup operator), resetting offsets
(``kgroups reset-offsets``, ``ConsumerGroupOffsetResetOperator``) and deleting offsets
(``kgroups delete-offsets``, the cleanup's stale-offsets rule).

For the groups a plan chose, in order, right before the change:

1. describe them **again**: a group that failed to describe is left alone, and so is one that
   gained a member or left Empty (a consumer joined since the plan) when the change needs an
   Empty group; a group now Dead is "gone" unless the change may create it (a reset commits
   into an absent group: Kafka creates it Empty);
2. read their committed offsets; the change may still refuse a group whose offsets moved since
   the plan (a standalone consumer committing into an Empty group);
3. write a backup of those offsets (the partitions the change touches) that must read back identical
   (:func:`..history.backup.backup_offsets`); no backup, no change;
4. with a :class:`.writeahead.ChangeRun` (every run that keeps an audit trail): the groups are
   leased before step 1 (a group another live run is changing is kept), and after the backup the
   run's intent (groups, planned change, backup, undo) is written and read back; no intent, no change;
5. apply the change; what it did, group by group and partition by partition, is its answer.

A change says what it is through :class:`Change`: its words, whether an absent group is fine,
its own last check of the offsets, and how it is applied. The path returns one
:class:`Step` per group, which each workflow turns into its own decisions (deleted / reset / ...).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..client import stepmarks
from ..client.results import (
    GroupDescription,
    GroupOffsets,
    GroupState,
    KeyedResults,
    ShareGroupOffsets,
    TopicPartition,
)
from ..history.backup import backup_offsets
from .intent import Intent

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient
    from .context import ChangeContext
    from .writeahead import ChangeRun

__all__ = ["Change", "Step", "StepDetail", "StepResult", "Words", "guarded", "read_offsets"]

V = TypeVar("V")


class StepResult(str, Enum):
    DONE = "done"  # changed as planned
    PARTIAL = "partial"  # some partitions changed, some not (the step says which)
    REFUSED = (
        "refused"  # the broker refused the change on every partition (or the whole group): nothing changed
    )
    CHANGED = "changed"  # the group changed since the plan, or could not be checked: left alone
    GONE = "gone"  # the group no longer exists: nothing to change
    FAILED = "failed"  # the backup or the change itself failed


@dataclass(frozen=True, slots=True)
class StepDetail:
    """What a change did to one group, partition by partition (what it names is set)."""

    changed: Mapping[TopicPartition, int | None] | None = None  # partition -> what it became (None: gone)
    failed: Mapping[TopicPartition, str] | None = None  # partition -> why not
    kept: Mapping[TopicPartition, str] | None = None  # kept by the broker's rule (not changed)
    refusal: str | None = None  # the broker refused the change (``offset_results.BROKER_REFUSAL``)
    deletion: str | None = None  # how a group went (a ``GroupDeletion`` value)

    def changes(self) -> dict[str, Any]:
        """The fields set, as the keywords of the decision's ``becomes``."""
        return {f: getattr(self, f) for f in self.__slots__ if getattr(self, f) is not None}


@dataclass(frozen=True, slots=True)
class Step:
    group_id: str
    result: StepResult
    reason: str
    detail: StepDetail = StepDetail()  # what the change did (partitions, errors)


@dataclass(frozen=True, slots=True)
class Words:
    """How a change is named in sentences: ``noun`` ("delete"), ``doing`` ("deleting"), ``done`` ("deleted")."""

    noun: str
    doing: str
    done: str


class Change(Protocol):
    words: Words
    #: a group that does not exist (Dead) may be changed (a reset creates it); else it is GONE
    absent_ok: bool
    #: only a group without members may be changed (deleting a group, committing as an
    #: administrator); False where the broker judges each partition itself (OffsetDelete)
    needs_empty: bool

    def backup_scope(self, group_id: str) -> frozenset[TopicPartition] | None:
        """The partitions whose committed offsets the backup keeps (None: all of the group's):
        what the change touches, so that restoring it touches nothing else."""

    # Optional: ``read_offsets(aclient, group_ids) -> KeyedResults[str, GroupOffsets]`` reads what
    # the backup keeps when it is not OffsetFetch's committed offsets (a share group's start
    # offsets), and ``share_groups`` names those groups so that restoring uses their own API.

    def moved(self, group_id: str, offsets: GroupOffsets) -> str | None:
        """Why the group's committed offsets, read right before the change, no longer match the
        plan (None: they do)."""

    def intent(self, group_id: str) -> Intent:
        """What the change will do to the group, for the run's write-ahead intent."""

    async def apply(
        self, aclient: AsyncGroupsClient, group_ids: list[str], backup_url: str | None
    ) -> dict[str, Step]:
        """Carry the change out for ``group_ids`` (checked and backed up): one step per group.
        Calls ``stepmarks.reached("change_answered")`` once the change's answer is in."""


async def read_offsets(
    aclient: AsyncGroupsClient, group_ids: Sequence[str], share_groups: Collection[str]
) -> KeyedResults[str, GroupOffsets]:
    """The groups' committed offsets, and a share group's start offsets (DescribeShareGroupOffsets),
    read at once: what a change of offsets checks, backs up and reads back."""
    shares = [g for g in group_ids if g in share_groups]
    others = [g for g in group_ids if g not in share_groups]
    committed, started = await asyncio.gather(
        aclient.fetch_committed_offsets(others) if others else _nothing(GroupOffsets),
        aclient.describe_share_group_offsets(shares) if shares else _nothing(ShareGroupOffsets),
    )
    values: dict[str, GroupOffsets] = {**committed.values, **started.values}
    return KeyedResults(values, {**committed.failures, **started.failures})


async def _nothing(kind: type[V]) -> KeyedResults[str, V]:
    return KeyedResults()


def _still_admissible(change: Change, description: GroupDescription) -> tuple[StepResult, str] | None:
    w = change.words
    if description.state is GroupState.DEAD and not description.members:
        if change.absent_ok:
            return None
        return (
            StepResult.GONE,
            f"gone before the {w.noun} (described as Dead right before it): nothing {w.done}",
        )
    if change.needs_empty and (description.state is not GroupState.EMPTY or description.members):
        return StepResult.CHANGED, (
            f"changed since it was judged: now {description.state.value} with "
            f"{len(description.members)} member(s); not {w.done}"
        )
    return None


async def guarded(
    context: ChangeContext,
    change: Change,
    group_ids: list[str],
    *,
    absent: Mapping[str, Sequence[TopicPartition]] | None = None,
    run: ChangeRun | None = None,
) -> tuple[dict[str, Step], str | None]:
    """Run ``change`` for ``group_ids`` through the safety path with ``context``'s client and backup
    store: (one step per group, the backup URL or None when nothing was backed up). ``absent``:
    partitions the change will commit that have no committed offset now, recorded in the backup so
    that restoring it removes them again.
    ``run``: the run's :class:`.writeahead.ChangeRun` (leases, intent), None for none."""
    steps: dict[str, Step] = {}
    if not group_ids:
        return steps, None
    ids = list(group_ids) if run is None else await _leased(run, change, group_ids, steps)
    ids = await _still_as_planned(context.client, change, ids, steps) if ids else []
    to_back_up = await _offsets_to_back_up(context.client, change, ids, steps) if ids else {}
    if not to_back_up:
        return steps, None
    backup_url = await _backed_up(context, change, to_back_up, absent or {}, steps)
    if backup_url is None:
        return steps, None
    if run is not None and not await _intent_written(run, change, to_back_up, backup_url, steps):
        return steps, backup_url
    steps.update(await change.apply(context.client, list(to_back_up), backup_url))
    return steps, backup_url


def _left_alone(steps: dict[str, Step], group_ids: Iterable[str], result: StepResult, why: str) -> None:
    for g in group_ids:
        steps[g] = Step(g, result, why)


async def _leased(run: ChangeRun, change: Change, group_ids: list[str], steps: dict[str, Step]) -> list[str]:
    """1. The groups whose leases this run took; the others are held by another run."""
    held = await asyncio.to_thread(run.lease, list(group_ids))
    for g, why in held.items():
        steps[g] = Step(g, StepResult.CHANGED, f"{why}; not {change.words.done}")
    return [g for g in group_ids if g not in held]


async def _still_as_planned(
    aclient: AsyncGroupsClient, change: Change, group_ids: list[str], steps: dict[str, Step]
) -> list[str]:
    """2. The groups that, described again right before the change, the change still admits."""
    w = change.words
    again = await aclient.describe_groups(group_ids)
    confirmed = []
    for g in group_ids:
        if g in again.failures:
            steps[g] = Step(
                g,
                StepResult.CHANGED,
                f"describing it again before {w.doing} failed ({again.failures[g]}): not {w.done}",
            )
            continue
        stop = _still_admissible(change, again.values[g])
        if stop is not None:
            steps[g] = Step(g, *stop)
        else:
            confirmed.append(g)
    return confirmed


async def _offsets_to_back_up(
    aclient: AsyncGroupsClient, change: Change, group_ids: list[str], steps: dict[str, Step]
) -> dict[str, GroupOffsets]:
    """3. Per group whose offsets did not move since the plan, the offsets its backup keeps."""
    w = change.words
    read = getattr(change, "read_offsets", None)  # share groups keep start offsets, read with their own API
    offsets = await (
        read(aclient, group_ids) if read is not None else aclient.fetch_committed_offsets(group_ids)
    )
    to_back_up: dict[str, GroupOffsets] = {}
    for g in group_ids:
        if g in offsets.failures:
            steps[g] = Step(
                g,
                StepResult.CHANGED,
                f"its committed offsets could not be read for the backup "
                f"({offsets.failures[g]}): not {w.done}",
            )
            continue
        moved = change.moved(g, offsets.values[g])
        if moved is not None:
            steps[g] = Step(g, StepResult.CHANGED, f"{moved}; not {w.done}")
            continue
        scope = change.backup_scope(g)
        kept = offsets.values[g]
        to_back_up[g] = (
            kept
            if scope is None
            else GroupOffsets(g, {tp: c for tp, c in kept.partitions.items() if tp in scope})
        )
    return to_back_up


async def _backed_up(
    context: ChangeContext,
    change: Change,
    to_back_up: Mapping[str, GroupOffsets],
    absent: Mapping[str, Sequence[TopicPartition]],
    steps: dict[str, Step],
) -> str | None:
    """4. The backup's URL once it is written and read back (None: it failed, nothing is changed)."""
    stepmarks.reached("before_backup")
    try:
        backup_url = await asyncio.to_thread(
            backup_offsets,
            context.backup_base_url,
            to_back_up,
            note=context.note,
            storage_options=context.storage_options,
            absent={g: list(absent.get(g, ())) for g in to_back_up},
            share_groups=[g for g in to_back_up if g in getattr(change, "share_groups", ())],
        )
    except Exception as exc:  # noqa: BLE001 - no backup, no change (the message names the place, never a secret)
        why = f"the backup of its offsets failed ({type(exc).__name__}: {exc}): not {change.words.done}"
        _left_alone(steps, to_back_up, StepResult.FAILED, why)
        return None
    stepmarks.reached("after_backup")
    return backup_url


async def _intent_written(
    run: ChangeRun,
    change: Change,
    to_back_up: Mapping[str, GroupOffsets],
    backup_url: str,
    steps: dict[str, Step],
) -> bool:
    """5. Whether the run's intent is written and read back (False: nothing is changed)."""
    try:
        await asyncio.to_thread(
            run.write_intent,
            {g: change.intent(g) for g in to_back_up},
            backup_url,
            {g: kept.committed() for g, kept in to_back_up.items()},
        )
    except Exception as exc:  # noqa: BLE001 - any failure to record the intent means no change is made
        why = f"the intent record could not be written ({type(exc).__name__}: {exc}): not {change.words.done}"
        _left_alone(steps, to_back_up, StepResult.FAILED, why)
        return False
    stepmarks.reached("after_intent")
    return True
