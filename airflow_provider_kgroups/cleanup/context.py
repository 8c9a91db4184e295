"""What every change run needs besides its own plan: :class:`ChangeContext`, built once by the
hook's changing verbs or the CLI's commands and handed to the workflow (delete groups, reset,
delete offsets, stale offsets, restore, commit progress).

A workflow reads from it the client it plans and changes through, where the backup of the
offsets it changes goes, where the audit record (and the write-ahead intent) goes, who asked,
and the Kafka Connect clusters to ask about a ``connect-*`` group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Required, TypedDict

from .writeahead import ChangeRun

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient
    from ..connect import ConnectClusterConfig, ConnectEvidence

__all__ = ["ChangeContext", "ContextKeywords", "context_from"]

DEFAULT_CONNECT_TIMEOUT_S = 30.0


class ContextKeywords(TypedDict, total=False):
    """:class:`ChangeContext`'s fields as keywords, as the hook's changing verbs take them."""

    backup_base_url: Required[str]
    audit_base_url: str | None
    who: Mapping[str, Any] | None
    storage_options: Mapping[str, Any] | None
    connect_clusters: Sequence[ConnectClusterConfig]
    connect_timeout_s: float


@dataclass(frozen=True, slots=True)
class ChangeContext:
    """:param client: the client every request of the run goes through.
    :param backup_base_url: the store the backup of the changed offsets goes to (read back before
        any change).
    :param audit_base_url: the store of the audit record and the write-ahead intent (None: the run
        keeps no audit trail, and so no intent either).
    :param who: who ran it (the CLI, or the Airflow run's ids), for the audit and the backup's note.
    :param storage_options: fsspec's options for both stores (credentials: never logged).
    :param connect_clusters: the Kafka Connect clusters asked about ``connect-*`` groups (none:
        Connect is not asked, and such groups stay behind the default deny).
    :param connect_timeout_s: the deadline of reading all of them."""

    client: AsyncGroupsClient
    backup_base_url: str
    audit_base_url: str | None = None
    who: Mapping[str, Any] = field(default_factory=dict)
    storage_options: Mapping[str, Any] | None = field(default=None, repr=False)  # may hold credentials
    connect_clusters: tuple[ConnectClusterConfig, ...] = ()
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S

    @property
    def note(self) -> str:
        """``who`` in one line, for the backup's note."""
        return ", ".join(f"{k}={v}" for k, v in self.who.items())

    def in_store(self, store_url: str) -> ChangeContext:
        """This context with the backup and the audit both in ``store_url`` (a restore's)."""
        return replace(self, backup_base_url=store_url, audit_base_url=store_url)

    def start_run(self, action: str, *, dry_run: bool, started_ms: int) -> ChangeRun | None:
        """The write-ahead records of a run: None for a dry run or one without an audit store."""
        if dry_run or self.audit_base_url is None:
            return None
        return ChangeRun(
            self.audit_base_url,
            action,
            who=self.who,
            storage_options=self.storage_options,
            started_ms=started_ms,
        )

    async def connect_evidence(self) -> ConnectEvidence | None:
        """What the Kafka Connect clusters say (None: none is configured)."""
        if not self.connect_clusters:
            return None
        from ..connect import fetch_connect_evidence

        return await asyncio.to_thread(
            fetch_connect_evidence, list(self.connect_clusters), self.connect_timeout_s
        )


_FIELDS = frozenset(f.name for f in fields(ChangeContext)) - {"client"}


def context_from(
    client: AsyncGroupsClient, keywords: Mapping[str, Any]
) -> tuple[ChangeContext, dict[str, Any]]:
    """The context made of the :class:`ContextKeywords` among ``keywords`` (a hook verb's), and the
    other keywords (the workflow's own: ``now_ms``, ``action``, ...)."""
    if "backup_base_url" not in keywords:
        raise TypeError("a change needs backup_base_url: the store its backup of the offsets goes to")
    given = {k: v for k, v in keywords.items() if k in _FIELDS}
    context = ChangeContext(
        client,
        given["backup_base_url"],
        given.get("audit_base_url"),
        dict(given.get("who") or {}),
        given.get("storage_options"),
        tuple(given.get("connect_clusters") or ()),
        given.get("connect_timeout_s", DEFAULT_CONNECT_TIMEOUT_S),
    )
    return context, {k: v for k, v in keywords.items() if k not in _FIELDS}
