"""The audit record of a run that changed (or, dry, would change) committed offsets: what was
asked, every group's decision, partition by partition what was committed or deleted and what
failed, the backup and who ran it. Written next to the cleanup's records (:mod:`..history.audit`)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..history.audit import write_audit
from ..lag.snapshot import now_ms as _now_ms
from .offset_results import ChangeOutcome, OffsetChangeResult

__all__ = ["write_change_audit", "AUDIT_VERSION"]

AUDIT_VERSION = 1


async def write_change_audit(
    result: OffsetChangeResult,
    base_url: str,
    *,
    started_ms: int,
    who: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    run: Any = None,
) -> OffsetChangeResult:
    """``result`` with its audit URL, or with the reason the record could not be written.
    ``run``: the :class:`.writeahead.ChangeRun` whose intent this record closes."""
    if run is not None:
        changed = result.ids(ChangeOutcome.DONE) + result.ids(ChangeOutcome.PARTIAL)
        result = replace(result, undo=run.undo_of(changed), reconciled=run.reconciled_summaries())
    record = {
        "version": AUDIT_VERSION,
        "action": result.action,
        "started_ms": started_ms,
        "finished_ms": _now_ms(),
        "who": dict(who or {}),
        "dry_run": result.dry_run,
        **dict(extra or {}),
        **(run.outcome_fields() if run is not None else {}),
        **result.to_dict(),
    }
    name = run.outcome_name() if run is not None else None
    try:
        url = await asyncio.to_thread(
            write_audit, base_url, record, started_ms=started_ms, storage_options=storage_options, name=name
        )
    except Exception as exc:  # noqa: BLE001 - the change is done; the run is not fine without its record
        if run is not None:
            run.finish(outcome_written=False)  # its intent stays open: the next run reconciles it
        return replace(result, audit_error=f"{type(exc).__name__}: {exc}")
    if run is not None:
        run.finish(outcome_written=True)
    return replace(result, audit_url=url)
