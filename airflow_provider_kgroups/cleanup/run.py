"""The one safety path, end to end: (unless a dry run) reconcile interrupted runs, plan, (unless a
dry run) execute with the write-ahead intent, audit (the intent's outcome)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..connect import fetch_connect_evidence
from ..history.audit import write_audit
from ..lag.snapshot import now_ms as _now_ms
from .decisions import CleanupResult, Outcome
from .execute import execute_plan
from .plan import HistorySource, plan_cleanup
from .policy import CleanupPolicy
from .writeahead import closing_on_error, start_run

__all__ = ["run_cleanup"]

AUDIT_VERSION = 1


async def run_cleanup(
    aclient,
    policy: CleanupPolicy,
    *,
    backup_base_url: str,
    history: HistorySource | None = None,
    connect_clusters: Sequence[Any] = (),
    connect_timeout_s: float = 30.0,
    audit_base_url: str | None = None,
    who: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    now_ms: int | None = None,
) -> CleanupResult:
    """Plan; delete what the plan chose unless ``policy.dry_run``; write an audit record under
    ``audit_base_url`` (None: none). ``connect_clusters``: ``ConnectClusterConfig`` values
    (none: Connect is not asked and ``connect-*`` groups stay behind the default deny).
    ``who``: who ran it (the CLI, or the Airflow run's ids), for the audit."""
    started = _now_ms() if now_ms is None else now_ms
    run = start_run(
        audit_base_url,
        "delete-groups",
        dry_run=policy.dry_run,
        who=who,
        storage_options=storage_options,
        started_ms=started,
    )
    return await closing_on_error(
        run,
        aclient,
        _run_cleanup(
            aclient,
            policy,
            run,
            started,
            backup_base_url=backup_base_url,
            history=history,
            connect_clusters=connect_clusters,
            connect_timeout_s=connect_timeout_s,
            audit_base_url=audit_base_url,
            who=who,
            storage_options=storage_options,
        ),
    )


async def _run_cleanup(
    aclient,
    policy: CleanupPolicy,
    run,
    started: int,
    *,
    backup_base_url: str,
    history: HistorySource | None,
    connect_clusters: Sequence[Any],
    connect_timeout_s: float,
    audit_base_url: str | None,
    who: Mapping[str, Any] | None,
    storage_options: Mapping[str, Any] | None,
) -> CleanupResult:
    if run is not None:
        await run.reconcile(aclient)
    connect = None
    if connect_clusters:
        connect = await asyncio.to_thread(fetch_connect_evidence, list(connect_clusters), connect_timeout_s)
    plan = await plan_cleanup(aclient, policy, history=history, connect=connect, now_ms=started)
    decisions, backup_url = dict(plan.decisions), None
    if not policy.dry_run:
        note = ", ".join(f"{k}={v}" for k, v in (who or {}).items())
        decisions, backup_url = await execute_plan(
            aclient,
            plan,
            backup_base_url=backup_base_url,
            note=note,
            storage_options=storage_options,
            run=run,
        )
    result = CleanupResult(
        policy.dry_run,
        decisions,
        plan.cap,
        plan.candidates,
        backup_url,
        held=plan.held,
        connect_unreadable=plan.connect_unreadable,
    )
    if run is not None:
        deleted = [g for g, d in decisions.items() if d.outcome is Outcome.DELETED]
        result = replace(result, undo=run.undo_of(deleted), reconciled=run.reconciled_summaries())
    if audit_base_url is None:
        return result
    record = {
        "version": AUDIT_VERSION,
        "started_ms": started,
        "finished_ms": _now_ms(),
        "who": dict(who or {}),
        "dry_run": policy.dry_run,
        "rules": policy.to_dict(),
        "connect_clusters": [c.url for c in connect_clusters],
        "connect_failures": [f.to_dict() for f in connect.failures] if connect is not None else [],
        **(run.outcome_fields() if run is not None else {}),
        "undo": dict(result.undo),
        "reconciled": [dict(r) for r in result.reconciled],
        "summary": result.summary(),
        "decisions": {g: d.to_dict() for g, d in sorted(decisions.items())},
    }
    name = run.outcome_name() if run is not None else None
    try:
        url = await asyncio.to_thread(
            write_audit,
            audit_base_url,
            record,
            started_ms=started,
            storage_options=storage_options,
            name=name,
        )
    except Exception as exc:  # noqa: BLE001 - the change is done; the run is not fine without its record
        if run is not None:
            run.finish(outcome_written=False)  # its intent stays open: the next run reconciles it
        return replace(result, audit_error=f"{type(exc).__name__}: {exc}")
    if run is not None:
        run.finish(outcome_written=True)
    return replace(result, audit_url=url)
