"""Deleting groups as a change workflow (:mod:`.workflow`): plan (with Kafka Connect's evidence),
delete what the plan chose through the safety path (:mod:`.execute`), audit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..lag.snapshot import now_ms as _now_ms
from .context import ChangeContext
from .decisions import CleanupResult, Outcome
from .execute import GroupDeletionChange, executed
from .guard import Step
from .plan import CleanupPlan, HistorySource, plan_cleanup
from .policy import CleanupPolicy
from .workflow import Guarded, run_workflow

if TYPE_CHECKING:
    from ..connect import ConnectEvidence

__all__ = ["run_cleanup"]

AUDIT_VERSION = 1


@dataclass(frozen=True, slots=True)
class DeletionPlan:
    """The cleanup's plan and the Connect evidence it was made with (None: none configured)."""

    plan: CleanupPlan
    connect: ConnectEvidence | None


@dataclass(frozen=True, slots=True)
class CleanupWorkflow:
    policy: CleanupPolicy
    history: HistorySource | None
    action: str = "delete-groups"

    @property
    def dry_run(self) -> bool:
        return self.policy.dry_run

    async def plan(self, context: ChangeContext, started_ms: int) -> DeletionPlan:
        connect = await context.connect_evidence()
        plan = await plan_cleanup(
            context.client, self.policy, history=self.history, connect=connect, now_ms=started_ms
        )
        return DeletionPlan(plan, connect)

    def guarded(self, context: ChangeContext, plan: DeletionPlan) -> Guarded:
        reasons = {g: plan.plan.decisions[g].reason for g in plan.plan.chosen}
        return Guarded(GroupDeletionChange(reasons), plan.plan.chosen)

    def result(self, plan: DeletionPlan, steps: Mapping[str, Step], backup_url: str | None) -> CleanupResult:
        p = plan.plan
        return CleanupResult(
            self.dry_run,
            executed(p.decisions, steps),
            p.cap,
            p.candidates,
            backup_url,
            held=p.held,
            connect_unreadable=p.connect_unreadable,
        )

    def changed(self, result: CleanupResult) -> list[str]:
        return [g for g, d in result.decisions.items() if d.outcome is Outcome.DELETED]

    def record(
        self,
        context: ChangeContext,
        plan: DeletionPlan,
        result: CleanupResult,
        started_ms: int,
        run_fields: Mapping[str, Any],
    ) -> dict[str, Any]:
        return {
            "version": AUDIT_VERSION,
            "started_ms": started_ms,
            "finished_ms": _now_ms(),
            "who": dict(context.who),
            "dry_run": self.dry_run,
            "rules": self.policy.to_dict(),
            "connect_clusters": [c.url for c in context.connect_clusters],
            "connect_failures": [f.to_dict() for f in plan.connect.failures]
            if plan.connect is not None
            else [],
            **run_fields,
            "undo": dict(result.undo),
            "reconciled": [dict(r) for r in result.reconciled],
            "summary": result.summary(),
            "decisions": {g: d.to_dict() for g, d in sorted(result.decisions.items())},
        }


async def run_cleanup(
    context: ChangeContext,
    policy: CleanupPolicy,
    *,
    history: HistorySource | None = None,
    now_ms: int | None = None,
) -> CleanupResult:
    """Plan; delete what the plan chose unless ``policy.dry_run``; write an audit record under
    ``context.audit_base_url`` (None: none)."""
    return await run_workflow(context, CleanupWorkflow(policy, history), now_ms=now_ms)
