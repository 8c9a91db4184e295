"""The one safety path, end to end: plan, (unless a dry run) execute, audit."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Mapping, Sequence

from ..connect import fetch_connect_evidence
from ..history.audit import write_audit
from ..lag.snapshot import now_ms as _now_ms
from .decisions import CleanupResult
from .execute import execute_plan
from .plan import HistorySource, plan_cleanup
from .policy import CleanupPolicy

__all__ = ["run_cleanup"]

AUDIT_VERSION = 1


async def run_cleanup(aclient, policy: CleanupPolicy, *, backup_base_url: str, history: HistorySource | None = None,
                      connect_clusters: Sequence[Any] = (), connect_timeout_s: float = 30.0,
                      audit_base_url: str | None = None, who: Mapping[str, Any] | None = None,
                      storage_options: Mapping[str, Any] | None = None, now_ms: int | None = None) -> CleanupResult:
    """Plan; delete what the plan chose unless ``policy.dry_run``; write an audit record under
    ``audit_base_url`` (None: none). ``connect_clusters``: ``ConnectClusterConfig`` values
    (none: Connect is not asked and ``connect-*`` groups stay behind the default deny).
    ``who``: who ran it (the CLI, or the Airflow run's ids), for the audit."""
    started = _now_ms() if now_ms is None else now_ms
    connect = None
    if connect_clusters:
        connect = await asyncio.to_thread(fetch_connect_evidence, list(connect_clusters), connect_timeout_s)
    plan = await plan_cleanup(aclient, policy, history=history, connect=connect, now_ms=started)
    decisions, backup_url = dict(plan.decisions), None
    if not policy.dry_run:
        note = ", ".join(f"{k}={v}" for k, v in (who or {}).items())
        decisions, backup_url = await execute_plan(aclient, plan, backup_base_url=backup_base_url, note=note,
                                                   storage_options=storage_options)
    result = CleanupResult(policy.dry_run, decisions, plan.cap, plan.candidates, backup_url, held=plan.held,
                           connect_unreadable=plan.connect_unreadable)
    if audit_base_url is None:
        return result
    record = {"version": AUDIT_VERSION, "started_ms": started, "finished_ms": _now_ms(), "who": dict(who or {}),
              "dry_run": policy.dry_run, "rules": policy.to_dict(), "connect_clusters": [c.url for c in connect_clusters],
              "connect_failures": [f.to_dict() for f in connect.failures] if connect is not None else [],
              "summary": result.summary(), "decisions": {g: d.to_dict() for g, d in sorted(decisions.items())}}
    try:
        url = await asyncio.to_thread(write_audit, audit_base_url, record, started_ms=started,
                                      storage_options=storage_options)
    except Exception as exc:  # noqa: BLE001 - the change is done; the run is not fine without its record
        return replace(result, audit_error=f"{type(exc).__name__}: {exc}")
    return replace(result, audit_url=url)
