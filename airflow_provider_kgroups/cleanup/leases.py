"""The groups one run is changing (:class:`Leases`): one lease file per group in the run's journal
(exclusive create, owner and expiry). A group whose lease another live run holds is kept, not
changed, and the reason says whose; a dead run's lease is broken only once its intent has an
outcome (:mod:`.writeahead` reconciles it)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..client.errors import KafkaGroupsError
from ..history.journal import Journal, Owner
from ..lag.snapshot import now_ms as _now_ms

__all__ = ["Leases"]

log = logging.getLogger(__name__)


class Leases:
    """``owner``'s leases in ``journal``, each naming ``intent`` (the run's intent record)."""

    def __init__(self, journal: Journal, owner: Owner, intent: str, ttl_ms: int) -> None:
        self.journal, self.owner, self.intent, self.ttl_ms = journal, owner, intent, ttl_ms
        self.held: list[str] = []
        self.expires_ms: int | None = None

    def take(self, group_ids: list[str]) -> dict[str, str]:
        """Take the groups' leases: group -> why not, for those another run holds."""
        refused: dict[str, str] = {}
        expires = self.expires_ms = _now_ms() + self.ttl_ms
        for g in group_ids:
            for _ in range(3):  # a stale lease broken: try again
                held = self.journal.take_lease(g, self.owner, self.intent, expires)
                if held is None:
                    self.held.append(g)
                    break
                why = self._held_by(g, held)
                if why is not None:
                    refused[g] = why
                    break
            else:
                refused[g] = "its lease could not be taken (another run took it at the same moment)"
        return refused

    def check_unexpired(self) -> None:
        """Raise once the leases have expired: another run may have taken the groups since."""
        if self.expires_ms is not None and _now_ms() >= self.expires_ms:
            raise KafkaGroupsError(
                f"this run's leases expired before its change (after {self.ttl_ms} ms): "
                "another run may have taken the groups since"
            )

    def release(self) -> None:
        for g in self.held:
            self.journal.release_lease(g, self.owner.run_id)
        self.held = []

    def _held_by(self, group_id: str, held: Mapping[str, Any]) -> str | None:
        """Why the lease ``held`` keeps this run off the group, or None once it is broken (stale)."""
        owner = Owner.from_dict(held.get("owner") or {})
        where = f"{self.journal.url('_leases', '')}"
        if held.get("unreadable") or not owner.run_id:
            return f"its lease in {where} cannot be read: another run may be changing it; look and remove it by hand"
        if owner.run_id == self.owner.run_id:
            return "this run already holds its lease"
        gone = owner.gone(int(held.get("expires_ms") or 0), _now_ms())
        if gone is None:
            return (
                f"another run is changing it: run {owner.run_id[:12]} (process {owner.pid} on {owner.host}) "
                f"holds its lease until {_iso(int(held.get('expires_ms') or 0))}; not changed by this run"
            )
        intent = str(held.get("intent") or "")
        if intent and self.journal.is_open(intent):
            return (
                f"the run {owner.run_id[:12]} that held its lease died ({gone}) and its intent {intent} has no "
                "outcome yet (reconciliation could not write it): rerun once it has one"
            )
        self.journal.release_lease(group_id, owner.run_id)
        log.info("broke the stale lease of %s held by run %s: %s", group_id, owner.run_id[:12], gone)
        return None


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
