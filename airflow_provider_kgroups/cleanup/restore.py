"""Restoring a backup through the safety path: a restore changes committed offsets like any other
change, so it is written ahead like one (:mod:`.writeahead`) and can itself be undone.

The groups are leased, their current offsets (the partitions the backup restores) backed up and
read back, the intent written, then :func:`..history.backup.restore_offsets` commits the backed-up
offsets (the broker refuses, partition by partition, a group with members) and removes those the
group had none for; the audit record is the outcome. The records go to the store the backup is
in (``<store>/_backups/<name>`` -> ``<store>``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..client import stepmarks
from ..client.errors import CLIENT_NOT_SENT, Failure
from ..client.results import GroupOffsets, KeyedResults, TopicPartition
from ..history.backup import OffsetsBackup, load_backup, restore_offsets
from .context import ChangeContext
from .guard import Step, StepDetail, StepResult, Words, read_offsets
from .intent import Intent
from .offset_results import ChangeOutcome, GroupChangeDecision, OffsetChangeResult
from .offsets_audit import change_record
from .workflow import Guarded, run_workflow

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["RestoreChange", "restore_context", "run_restore", "store_of"]


def store_of(backup_url: str) -> str:
    """The store a backup belongs to: the folder above ``_backups/`` (else the backup's folder)."""
    if "/_backups/" in backup_url:
        return backup_url.rsplit("/_backups/", 1)[0]
    return backup_url.rsplit("/", 1)[0]


class RestoreChange:
    words = Words("restore", "restoring", "restored")
    absent_ok = True  # a deleted group is what a restore is for
    needs_empty = False  # the broker refuses a commit into a group with members, per partition

    def __init__(self, backup: OffsetsBackup) -> None:
        self.backup = backup
        self.share_groups = frozenset(backup.share_groups)
        self.results: dict[str, KeyedResults[TopicPartition, int]] = {}

    async def read_offsets(
        self, aclient: AsyncGroupsClient, group_ids: list[str]
    ) -> KeyedResults[str, GroupOffsets]:
        return await read_offsets(aclient, group_ids, self.share_groups)

    def scope(self, group_id: str) -> frozenset[TopicPartition]:
        return frozenset(self.backup.groups[group_id]) | frozenset(self.backup.absent.get(group_id, ()))

    def backup_scope(self, group_id: str) -> frozenset[TopicPartition]:
        return self.scope(group_id)

    def moved(self, group_id: str, offsets: GroupOffsets) -> str | None:
        return None

    def intent(self, group_id: str) -> Intent:
        targets: dict[TopicPartition, int | None] = {
            tp: c.offset for tp, c in self.backup.groups[group_id].items()
        }
        targets.update(dict.fromkeys(self.backup.absent.get(group_id, ())))
        return Intent.commit(targets, from_backup=self.backup.url)

    async def apply(
        self, aclient: AsyncGroupsClient, group_ids: list[str], backup_url: str | None
    ) -> dict[str, Step]:
        self.results.update(await restore_offsets(aclient, self.backup, group_ids))
        stepmarks.reached("change_answered")
        steps = {}
        for g in group_ids:
            r = self.results.get(g, KeyedResults())
            changed, failed = dict(r.values), {tp: str(f) for tp, f in r.failures.items()}
            result = StepResult.DONE if not failed else StepResult.PARTIAL if changed else StepResult.FAILED
            listed = "" if not failed else f", {len(failed)} refused: {next(iter(failed.values()))}"
            steps[g] = Step(
                g,
                result,
                f"restored {len(changed)} partition(s) from {self.backup.url}{listed}",
                StepDetail(changed=changed, failed=failed),
            )
        return steps


_OUTCOME = {
    StepResult.DONE: ChangeOutcome.DONE,
    StepResult.PARTIAL: ChangeOutcome.PARTIAL,
    StepResult.CHANGED: ChangeOutcome.SKIPPED,
    StepResult.GONE: ChangeOutcome.SKIPPED,
    StepResult.FAILED: ChangeOutcome.FAILED,
}


def restore_context(
    client: AsyncGroupsClient,
    backup_url: str,
    *,
    who: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> ChangeContext:
    """The context of restoring the backup at ``backup_url``: the restore's own backup, intent and
    audit record go to the store the backup is in (:func:`store_of`)."""
    store = store_of(backup_url)
    return ChangeContext(client, store, store, dict(who or {}), storage_options)


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What the restore commits (``change``: the backup) to ``group_ids``; ``absent``: the
    partitions it commits that have no committed offset now."""

    change: RestoreChange
    group_ids: tuple[str, ...]
    absent: Mapping[str, list[TopicPartition]]


@dataclass(frozen=True, slots=True)
class RestoreWorkflow:
    """Restoring ``change``'s backup to ``group_ids``, as a change workflow (:mod:`.workflow`): never
    a dry run."""

    change: RestoreChange
    group_ids: tuple[str, ...]
    action: str = "restore"
    dry_run: bool = False

    async def plan(self, context: ChangeContext, started_ms: int) -> RestorePlan:
        change = self.change
        current = await change.read_offsets(context.client, list(self.group_ids))
        absent = {
            g: [
                tp
                for tp in change.scope(g)
                if (current.values[g].committed() if g in current.values else {}).get(tp) is None
            ]
            for g in self.group_ids
            if g not in change.share_groups
        }
        return RestorePlan(change, self.group_ids, absent)

    def guarded(self, context: ChangeContext, plan: RestorePlan) -> Guarded:
        return Guarded(plan.change, plan.group_ids, plan.absent)

    def result(
        self, plan: RestorePlan, steps: Mapping[str, Step], backup_url: str | None
    ) -> OffsetChangeResult:
        change, decisions = plan.change, {}
        for g in plan.group_ids:
            step = steps[g]
            decisions[g] = GroupChangeDecision(
                g,
                _OUTCOME[step.result],
                step.reason,
                changed=step.detail.changed or {},
                failed=step.detail.failed or {},
            )
            if (
                g not in change.results
            ):  # the path kept it (leased by another run, unreadable): say so per partition
                change.results[g] = KeyedResults(
                    {}, {tp: Failure(CLIENT_NOT_SENT, step.reason) for tp in sorted(change.scope(g))}
                )
        return OffsetChangeResult(
            self.action, False, decisions, {"from_backup": plan.change.backup.url}, backup_url
        )

    def changed(self, result: OffsetChangeResult) -> list[str]:
        return result.changed_groups()

    def record(
        self,
        context: ChangeContext,
        plan: RestorePlan,
        result: OffsetChangeResult,
        started_ms: int,
        run_fields: Mapping[str, Any],
    ) -> dict[str, Any]:
        return change_record(context, result, started_ms, run_fields)


async def run_restore(
    context: ChangeContext,
    backup: OffsetsBackup | str,
    group_ids: Sequence[str] | None = None,
) -> tuple[dict[str, KeyedResults[TopicPartition, int]], OffsetChangeResult]:
    """Restore ``group_ids`` (default: every group in the backup) written ahead: per group the
    partitions' results (as :func:`..history.backup.restore_offsets`) and the run's result, with
    the backup of the offsets it overwrote (its own undo) and its audit record, both in
    ``context``'s stores (:func:`restore_context`: the backup's own)."""
    if isinstance(backup, str):
        backup = load_backup(backup, storage_options=context.storage_options)
    ids = list(backup.groups) if group_ids is None else list(dict.fromkeys(group_ids))
    if not set(ids) <= set(backup.groups):  # the message names them (and the backup) before any change
        await restore_offsets(context.client, backup, ids)
    change = RestoreChange(backup)
    result = await run_workflow(context, RestoreWorkflow(change, tuple(ids)))
    return {g: change.results[g] for g in ids if g in change.results}, result
