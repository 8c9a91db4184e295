"""Deleting committed offsets (OffsetDelete, KIP-496) through the cleanup's safety path, for
``kgroups delete-offsets`` and the cleanup operator's opt-in stale-offsets rule (:mod:`.stale`):
plan -> cap -> (dry run: stop) -> describe again (still there), check the offsets did not move,
back up the partitions to delete (read back) -> OffsetDelete -> audit.

The group need not be Empty: the broker judges each partition (a member subscribing to the
topic keeps it: GROUP_SUBSCRIBED_TO_TOPIC, reported per partition). Undo: ``kgroups restore
<backup>`` commits the deleted offsets back, which Kafka accepts only while the group is Empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..client import stepmarks
from ..client.errors import ConfigurationError, ErrorCode, Failure
from ..client.numbers import check_int
from ..client.results import GroupOffsets, TopicPartition
from ..offsets.deletion import GroupOffsetDeletion
from .context import ChangeContext
from .guard import Step, StepDetail, StepResult, Words
from .intent import Intent, IntentKind
from .offset_results import BROKER_REFUSAL, ChangeOutcome, GroupChangeDecision, OffsetChangeResult
from .offsets_audit import change_record
from .workflow import Guarded, run_workflow

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["DeletionOptions", "OffsetDeletionChange", "cap_plans", "run_offset_deletion"]


@dataclass(frozen=True, slots=True)
class DeletionOptions:
    """:param dry_run: plan and report only (default). :param max_groups: at most this many
    groups changed per run (None: no cap). :param max_partitions: at most this many partitions
    deleted per run, counted group by group in order (None: no cap)."""

    dry_run: bool = True
    max_groups: int | None = None
    max_partitions: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.dry_run, bool):
            raise ConfigurationError(f"dry_run must be True or False, got {self.dry_run!r}.")
        for name in ("max_groups", "max_partitions"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), at_least=0, must_be="a whole number >= 0")


class OffsetDeletionChange:
    words = Words("offset deletion", "deleting offsets", "deleted")
    absent_ok = False
    needs_empty = False  # the broker decides per partition (GROUP_SUBSCRIBED_TO_TOPIC)

    def __init__(self, plans: Mapping[str, GroupOffsetDeletion]) -> None:
        self._plans = plans

    def backup_scope(self, group_id: str) -> frozenset[TopicPartition]:
        return frozenset(self._plans[group_id].deletable())

    def moved(self, group_id: str, offsets: GroupOffsets) -> str | None:
        planned, now = self._plans[group_id].committed, offsets.committed()
        diff = [
            f"{tp}: {planned.get(tp)} -> {now.get(tp)}"
            for tp in self._plans[group_id].deletable()
            if planned.get(tp) != now.get(tp)
        ]
        return f"its committed offsets moved since the plan ({', '.join(diff)})" if diff else None

    def intent(self, group_id: str) -> Intent:
        return Intent(IntentKind.DELETE_OFFSETS, frozenset(self._plans[group_id].deletable()))

    async def apply(
        self, aclient: AsyncGroupsClient, group_ids: list[str], backup_url: str | None
    ) -> dict[str, Step]:
        answers = await aclient.delete_committed_offsets({g: self._plans[g].deletable() for g in group_ids})
        stepmarks.reached("change_answered")
        steps = {}
        for g in group_ids:
            if g in answers.failures:
                steps[g] = _group_refused(g, answers.failures[g], self._plans[g].deletable())
            else:
                steps[g] = _partitions_answered(g, answers.values[g])
        return steps


def _group_refused(group_id: str, failure: Failure, partitions: list[TopicPartition]) -> Step:
    """The broker answered for the whole group: nothing was deleted."""
    failed = {tp: str(failure) for tp in partitions}
    if failure.code == ErrorCode.GROUP_ID_NOT_FOUND:
        return Step(
            group_id,
            StepResult.GONE,
            f"gone before the offset deletion ({failure}): nothing deleted",
            StepDetail(failed=failed),
        )
    if failure.code == ErrorCode.NON_EMPTY_GROUP:
        return Step(
            group_id,
            StepResult.REFUSED,
            f"the broker refused the group: {failure}; nothing deleted",
            StepDetail(failed=failed, refusal=BROKER_REFUSAL),
        )
    return Step(
        group_id,
        StepResult.FAILED,
        f"the offset deletion failed: {failure}; nothing deleted",
        StepDetail(failed=failed),
    )


def _partitions_answered(group_id: str, per_tp: Mapping[TopicPartition, Failure | None]) -> Step:
    """The broker's answer per partition: all deleted is done, some is partial, none is refused
    (every partition kept by GROUP_SUBSCRIBED_TO_TOPIC) or failed (any other error)."""
    deleted = {tp: None for tp, f in per_tp.items() if f is None}
    kept = {
        tp: str(f)
        for tp, f in per_tp.items()
        if f is not None and f.code == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    }
    failed = {tp: str(f) for tp, f in per_tp.items() if f is not None and tp not in kept}
    detail = StepDetail(changed=deleted, failed=failed, kept=kept)
    listed = ", ".join(f"{tp} {why}" for tp, why in sorted({**kept, **failed}.items()))
    if not kept and not failed:
        return Step(group_id, StepResult.DONE, f"deleted the offsets of {len(deleted)} partition(s)", detail)
    if deleted:
        return Step(
            group_id,
            StepResult.PARTIAL,
            f"deleted {len(deleted)} partition(s), the broker kept {len(kept) + len(failed)}: {listed}",
            detail,
        )
    if failed:
        return Step(group_id, StepResult.FAILED, f"nothing deleted: {listed}", detail)
    return Step(
        group_id,
        StepResult.REFUSED,
        f"the broker refused every partition: a member subscribes to the "
        f"topic (GROUP_SUBSCRIBED_TO_TOPIC); nothing deleted ({len(kept)} partition(s))",
        replace(detail, refusal=BROKER_REFUSAL),
    )


_OUTCOME = {
    StepResult.DONE: ChangeOutcome.DONE,
    StepResult.PARTIAL: ChangeOutcome.PARTIAL,
    StepResult.REFUSED: ChangeOutcome.REFUSED,
    StepResult.CHANGED: ChangeOutcome.SKIPPED,
    StepResult.GONE: ChangeOutcome.SKIPPED,
    StepResult.FAILED: ChangeOutcome.FAILED,
}


def _planned(plan: GroupOffsetDeletion, reason: str | None) -> GroupChangeDecision:
    if not plan.ok:
        return GroupChangeDecision(
            plan.group_id,
            ChangeOutcome.REFUSED,
            plan.refusal or "nothing to delete",
            "not_deletable",
            plan.rows(),
        )
    if reason is not None:
        return GroupChangeDecision(plan.group_id, ChangeOutcome.SKIPPED, reason, "over_cap", plan.rows())
    kept = len(plan.partitions) - len(plan.deletable())
    if not plan.deletable():
        return GroupChangeDecision(
            plan.group_id,
            ChangeOutcome.REFUSED,
            (
                f"every partition ({kept}) is kept: a member subscribes to the topic (GROUP_SUBSCRIBED_TO_TOPIC)"
            ),
            "subscribed",
            plan.rows(),
        )
    note = f"; {kept} kept: a member subscribes to the topic (GROUP_SUBSCRIBED_TO_TOPIC)" if kept else ""
    return GroupChangeDecision(
        plan.group_id,
        ChangeOutcome.WOULD_DO,
        f"{len(plan.deletable())} partition(s){note}",
        None,
        plan.rows(),
    )


def _with_predicted_kept(plan: GroupOffsetDeletion, decision: GroupChangeDecision) -> GroupChangeDecision:
    """Partitions the plan left out (a member subscribes to the topic) were asked for too: a group
    whose every requested partition went is still partial while those offsets remain."""
    predicted = {
        tp: "subscribed: not sent (GROUP_SUBSCRIBED_TO_TOPIC)"
        for tp in plan.partitions
        if tp not in plan.deletable()
    }
    if not predicted or decision.outcome not in (ChangeOutcome.DONE, ChangeOutcome.PARTIAL):
        return decision
    return decision.becomes(
        ChangeOutcome.PARTIAL,
        f"{decision.reason}; {len(predicted)} kept: a member subscribes "
        "to the topic (GROUP_SUBSCRIBED_TO_TOPIC)",
        kept={**decision.kept, **predicted},
    )


def cap_plans(plans: Mapping[str, GroupOffsetDeletion], options: DeletionOptions) -> dict[str, str | None]:
    """group -> None (in this run) or why not (over a cap), for the groups that can go."""
    out: dict[str, str | None] = {}
    groups = partitions = 0
    for g, plan in plans.items():
        if not plan.ok or not plan.deletable():
            continue
        n = len(plan.deletable())
        if options.max_groups is not None and groups >= options.max_groups:
            out[g] = f"over this run's cap of {options.max_groups} group(s) (max_groups): next run"
        elif options.max_partitions is not None and partitions + n > options.max_partitions:
            out[g] = (
                f"over this run's cap of {options.max_partitions} partition(s) (max_partitions): next run"
            )
        else:
            out[g], groups, partitions = None, groups + 1, partitions + n
    return out


@dataclass(frozen=True, slots=True)
class CappedDeletion:
    """The deletion plans and, per group that can go, None (in this run) or why not (over a cap)."""

    plans: Mapping[str, GroupOffsetDeletion]
    capped: Mapping[str, str | None]


@dataclass(frozen=True, slots=True)
class OffsetDeletionWorkflow:
    """Deleting the planned offsets, as a change workflow (:mod:`.workflow`). ``extra``: what the
    result's plan and the audit record say of the run (the topics asked, the stale topics)."""

    plans: Mapping[str, GroupOffsetDeletion]
    options: DeletionOptions
    action: str = "delete-offsets"
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dry_run(self) -> bool:
        return self.options.dry_run

    async def plan(self, context: ChangeContext, started_ms: int) -> CappedDeletion:
        return CappedDeletion(self.plans, cap_plans(self.plans, self.options))

    def guarded(self, context: ChangeContext, plan: CappedDeletion) -> Guarded:
        ready = [g for g, why in plan.capped.items() if why is None]
        return Guarded(OffsetDeletionChange(plan.plans), ready)

    def result(
        self, plan: CappedDeletion, steps: Mapping[str, Step], backup_url: str | None
    ) -> OffsetChangeResult:
        plans = plan.plans
        decisions = {g: _planned(p, plan.capped.get(g)) for g, p in plans.items()}
        for g, step in steps.items():
            decisions[g] = _with_predicted_kept(
                plans[g], decisions[g].becomes(_OUTCOME[step.result], step.reason, **step.detail.changes())
            )
        return OffsetChangeResult(self.action, self.dry_run, decisions, dict(self.extra), backup_url)

    def changed(self, result: OffsetChangeResult) -> list[str]:
        return result.changed_groups()

    def record(
        self,
        context: ChangeContext,
        plan: CappedDeletion,
        result: OffsetChangeResult,
        started_ms: int,
        run_fields: Mapping[str, Any],
    ) -> dict[str, Any]:
        options = {"max_groups": self.options.max_groups, "max_partitions": self.options.max_partitions}
        return change_record(context, result, started_ms, run_fields, extra={"options": options})


async def run_offset_deletion(
    context: ChangeContext,
    plans: Mapping[str, GroupOffsetDeletion],
    options: DeletionOptions,
    *,
    action: str = "delete-offsets",
    extra: Mapping[str, Any] | None = None,
    now_ms: int | None = None,
) -> OffsetChangeResult:
    """Delete the offsets ``plans`` name, within ``options``' caps, through the safety path (unless a
    dry run); write an audit record under ``context.audit_base_url`` (None: none)."""
    workflow = OffsetDeletionWorkflow(plans, options, action, dict(extra or {}))
    return await run_workflow(context, workflow, now_ms=now_ms)
