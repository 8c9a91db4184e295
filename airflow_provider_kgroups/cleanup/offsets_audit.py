"""The audit record of a run that changed (or, dry, would change) committed offsets: what was
asked, every group's decision, partition by partition what was committed or deleted and what
failed, the backup and who ran it. Written next to the cleanup's records (:mod:`..history.audit`)
by :func:`.workflow.run_workflow`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..lag.snapshot import now_ms as _now_ms
from .context import ChangeContext
from .offset_results import OffsetChangeResult

__all__ = ["change_record", "AUDIT_VERSION"]

AUDIT_VERSION = 1


def change_record(
    context: ChangeContext,
    result: OffsetChangeResult,
    started_ms: int,
    run_fields: Mapping[str, Any],
    *,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of ``result`` (``run_fields``: the write-ahead run's, ``extra``: the workflow's own)."""
    return {
        "version": AUDIT_VERSION,
        "action": result.action,
        "started_ms": started_ms,
        "finished_ms": _now_ms(),
        "who": dict(context.who),
        "dry_run": result.dry_run,
        **dict(extra or {}),
        **run_fields,
        **result.to_dict(),
    }
