"""The keywords :class:`~.groups.KafkaGroupsHook`'s changing verbs pass on to the cleanup's safety
path (plan, describe again, back up, change, audit), as ``TypedDict``\\ s for ``**run``.

Each mirrors the keyword-only parameters of the function its verb runs; mypy checks the verb's
``function(..., **run)`` call against that function, so a keyword the function drops or retypes
is an error there. Only type checkers read this module (the hook imports it under
``TYPE_CHECKING``): at run time the keywords go through unchanged, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Required, TypedDict

if TYPE_CHECKING:
    from ..cleanup.plan import HistorySource


class ChangeRun(TypedDict, total=False):
    """Where the backup and the audit go, and who asked: every change takes these."""

    backup_base_url: Required[str]
    audit_base_url: str | None
    who: Mapping[str, Any] | None
    storage_options: Mapping[str, Any] | None


class ResetRun(ChangeRun, total=False):
    """:func:`..cleanup.reset.run_reset`'s."""

    connect_clusters: Sequence[Any]
    connect_timeout_s: float
    now_ms: int | None
    action: str | None


class ProgressRun(ResetRun, total=False):
    """:func:`..cleanup.progress.commit_progress`'s (the rest go on to ``run_reset``)."""

    allow_rewind: bool
    dry_run: bool


class DeletionRun(ChangeRun, total=False):
    """:func:`..cleanup.offset_deletion.run_offset_deletion`'s."""

    action: str
    extra: Mapping[str, Any] | None
    now_ms: int | None


class StaleRun(ChangeRun, total=False):
    """:func:`..cleanup.stale.run_stale_offsets`'s."""

    denied: Callable[[str], str | None]


class CleanupRun(ChangeRun, total=False):
    """:func:`..cleanup.run_cleanup`'s."""

    history: HistorySource | None
    connect_clusters: Sequence[Any]
    connect_timeout_s: float
    now_ms: int | None
