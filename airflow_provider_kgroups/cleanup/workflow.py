"""The one driver every change workflow runs through: plan -> guarded -> audit.

A workflow (delete groups, reset, delete offsets, restore) is a :class:`Workflow`: it plans
(reading what it must through the context's client), names the change the safety path
(:func:`.guard.guarded`) carries out and on which groups, turns the path's steps into its own
result, and says what its audit record holds. :func:`run_workflow` does the rest, the same way
for all of them: the write-ahead run (:mod:`.writeahead`: reconcile interrupted runs first, the
intent before the change), dry runs stopping after the plan, and the audit record, which closes
the run's intent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import Field, dataclass, field, replace
from typing import Any, ClassVar, Protocol, TypeVar

from ..client.results import TopicPartition
from ..history.audit import write_audit
from ..lag.snapshot import now_ms as _now_ms
from .context import ChangeContext
from .guard import Change, Step, guarded
from .writeahead import ChangeRun, closing_on_error, reconciled_summaries

__all__ = ["AuditedResult", "Guarded", "Workflow", "run_workflow"]

PlanT = TypeVar("PlanT")
ResultT = TypeVar("ResultT", bound="AuditedResult")


class AuditedResult(Protocol):
    """What a workflow's result has for the driver to fill in: a frozen dataclass with these fields."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def dry_run(self) -> bool: ...
    @property
    def undo(self) -> Mapping[str, str]: ...
    @property
    def reconciled(self) -> tuple[Mapping[str, Any], ...]: ...
    @property
    def audit_url(self) -> str | None: ...
    @property
    def audit_error(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Guarded:
    """What the safety path is to carry out: ``change`` on ``group_ids``; ``absent``: partitions
    the change commits that have no committed offset now (the backup records them, so that
    restoring it removes them again)."""

    change: Change
    group_ids: Sequence[str]
    absent: Mapping[str, Sequence[TopicPartition]] = field(default_factory=dict)


class Workflow(Protocol[PlanT, ResultT]):
    """One kind of change: its plan (``PlanT``, a typed value) and its result (``ResultT``)."""

    @property
    def action(self) -> str:
        """The audit's name of the run ("delete-groups", "reset-offsets", ...)."""
        ...

    @property
    def dry_run(self) -> bool: ...

    async def plan(self, context: ChangeContext, started_ms: int) -> PlanT:
        """Decide per group what the run would do (no change)."""
        ...

    def guarded(self, context: ChangeContext, plan: PlanT) -> Guarded | None:
        """What a real run changes (None: nothing)."""
        ...

    def result(self, plan: PlanT, steps: Mapping[str, Step], backup_url: str | None) -> ResultT:
        """The plan's decisions updated by the safety path's steps (none in a dry run)."""
        ...

    def changed(self, result: ResultT) -> list[str]:
        """The groups ``result`` says were changed (their undo is named in the record)."""
        ...

    def record(
        self,
        context: ChangeContext,
        plan: PlanT,
        result: ResultT,
        started_ms: int,
        run_fields: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The audit record (``run_fields``: the write-ahead run's, to include)."""
        ...


async def run_workflow(
    context: ChangeContext, workflow: Workflow[PlanT, ResultT], *, now_ms: int | None = None
) -> ResultT:
    """Plan; unless a dry run, carry out the change through the safety path, written ahead when the
    run keeps an audit trail; write the audit record (none without ``context.audit_base_url``)."""
    started = _now_ms() if now_ms is None else now_ms
    run = context.start_run(workflow.action, dry_run=workflow.dry_run, started_ms=started)
    return await closing_on_error(run, context.client, _run(context, workflow, run, started))


async def _run(
    context: ChangeContext, workflow: Workflow[PlanT, ResultT], run: ChangeRun | None, started: int
) -> ResultT:
    if run is not None:
        await run.reconcile(context.client)
    plan = await workflow.plan(context, started)
    steps: Mapping[str, Step] = {}
    backup_url = None
    work = None if workflow.dry_run else workflow.guarded(context, plan)
    if work is not None and work.group_ids:
        steps, backup_url = await guarded(
            context, work.change, list(work.group_ids), absent=work.absent, run=run
        )
    result = workflow.result(plan, steps, backup_url)
    if run is not None:
        result = replace(
            result,
            undo=run.undo_of(workflow.changed(result)),
            reconciled=reconciled_summaries(run.reconciled),
        )
    if context.audit_base_url is None:
        return result
    record = workflow.record(context, plan, result, started, run.outcome_fields() if run is not None else {})
    return await _audited(context, run, result, record, started)


async def _audited(
    context: ChangeContext, run: ChangeRun | None, result: ResultT, record: dict[str, Any], started: int
) -> ResultT:
    """``result`` with its audit URL, or with the reason the record could not be written; the
    record closes the run's intent."""
    assert context.audit_base_url is not None
    name = run.outcome_name() if run is not None else None
    try:
        url = await asyncio.to_thread(
            write_audit,
            context.audit_base_url,
            record,
            started_ms=started,
            storage_options=context.storage_options,
            name=name,
        )
    except Exception as exc:  # noqa: BLE001 - the change is done; the run is not fine without its record
        if run is not None:
            run.finish(outcome_written=False)  # its intent stays open: the next run reconciles it
        return replace(result, audit_error=f"{type(exc).__name__}: {exc}")
    if run is not None:
        run.finish(outcome_written=True)
    return replace(result, audit_url=url)
