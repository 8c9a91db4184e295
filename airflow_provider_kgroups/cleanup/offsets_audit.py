"""The audit record of a run that changed (or, dry, would change) committed offsets: what was
asked, every group's decision, partition by partition what was committed or deleted and what
failed, the backup and who ran it. Written next to the cleanup's records (:mod:`..history.audit`)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Mapping

from ..history.audit import write_audit
from ..lag.snapshot import now_ms as _now_ms
from .offset_results import OffsetChangeResult

__all__ = ["write_change_audit", "AUDIT_VERSION"]

AUDIT_VERSION = 1


async def write_change_audit(result: OffsetChangeResult, base_url: str, *, started_ms: int,
                             who: Mapping[str, Any] | None = None, storage_options: Mapping[str, Any] | None = None,
                             extra: Mapping[str, Any] | None = None) -> OffsetChangeResult:
    """``result`` with its audit URL, or with the reason the record could not be written."""
    record = {"version": AUDIT_VERSION, "action": result.action, "started_ms": started_ms, "finished_ms": _now_ms(),
              "who": dict(who or {}), "dry_run": result.dry_run, **dict(extra or {}), **result.to_dict()}
    try:
        url = await asyncio.to_thread(write_audit, base_url, record, started_ms=started_ms,
                                      storage_options=storage_options)
    except Exception as exc:  # noqa: BLE001 - the change is done; the run is not fine without its record
        return replace(result, audit_error=f"{type(exc).__name__}: {exc}")
    return replace(result, audit_url=url)
