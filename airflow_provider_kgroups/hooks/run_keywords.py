"""The keywords :class:`~.groups.KafkaGroupsHook`'s changing verbs take, as ``TypedDict``\\ s for
``**run``: the change's context (:class:`..cleanup.context.ContextKeywords`: where the backup and
the audit go, who asked, the Kafka Connect clusters), which the verb makes into one
:class:`..cleanup.context.ChangeContext`, and the workflow's own keywords, passed on to it.

Only type checkers read this module (the hook imports it under ``TYPE_CHECKING``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..cleanup.context import ContextKeywords

if TYPE_CHECKING:
    from ..cleanup.plan import HistorySource


class ResetRun(ContextKeywords, total=False):
    """:func:`..cleanup.reset.run_reset`'s."""

    now_ms: int | None
    action: str | None


class ProgressRun(ResetRun, total=False):
    """:func:`..cleanup.progress.commit_progress`'s (the rest go on to ``run_reset``)."""

    allow_rewind: bool
    dry_run: bool


class DeletionRun(ContextKeywords, total=False):
    """:func:`..cleanup.offset_deletion.run_offset_deletion`'s."""

    action: str
    extra: Mapping[str, Any] | None
    now_ms: int | None


class StaleRun(ContextKeywords, total=False):
    """:func:`..cleanup.stale.run_stale_offsets`'s."""

    denied: Callable[[str], str | None]


class CleanupRun(ContextKeywords, total=False):
    """:func:`..cleanup.run_cleanup`'s."""

    history: HistorySource | None
    now_ms: int | None
