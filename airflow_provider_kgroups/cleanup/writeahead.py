"""Write-ahead audit for every change to groups' offsets, and the reconciliation of runs that died.

A run that may change groups (``ChangeRun``, made by the workflows that keep an audit trail):

1. **reconciles** first: every intent in the store without an outcome whose run cannot be running
   any more (its process on this host is gone, or its lease expired) gets its outcome written now,
   per group "interrupted: changed / not changed / cannot tell" from the groups' current state
   against the intent's backup and plan, with the undo from that backup;
2. **leases** the groups it is about to change (:mod:`.leases`: one lease file per group,
   exclusive create, owner and expiry): a group whose lease another live run holds is kept, not
   changed, and says whose; a dead run's lease is broken only once its intent has an outcome;
3. after the backup is read back, writes its **intent** (the run, the groups, the planned change
   per group, the backup, the undo per group) and reads it back, before the first change request;
4. writes its **outcome** (the audit record, under the intent's name: that closes it, written by
   :func:`.workflow.run_workflow`), then releases the leases.

The undo of a group is the backup taken before the first change of the interrupted work: the
reconciliation leaves a pending undo per group it found changed (or cannot tell), with the offsets
the dead run left; the next run that changes the group while it still has exactly those offsets
names that undo, not its own backup of the already-changed state, in its intent and its outcome
(whichever run reconciled), and takes the pending undo away once its outcome is written.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..client import stepmarks
from ..client.results import TopicPartition
from ..history.audit import write_audit
from ..history.backup import OffsetsBackup, load_backup
from ..history.journal import ACTIVE_RUNS, Journal, Owner
from ..history.records import record_name
from ..lag.snapshot import now_ms as _now_ms
from .intent import Intent, tp_from_key, tp_key
from .leases import Leases

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

T = TypeVar("T")

__all__ = [
    "ChangeRun",
    "LEASE_TTL_S",
    "Verdict",
    "reconcile_open_intents",
    "reconciled_summaries",
    "undo_by_backup",
]

log = logging.getLogger(__name__)

#: how long a run's leases hold without it (a run on another host that died is known only by this)
LEASE_TTL_S = 600.0
RECONCILE_VERSION = 1


class Verdict:
    CHANGED = "changed"
    NOT_CHANGED = "not_changed"
    CANNOT_TELL = "cannot_tell"


class ChangeRun:
    """One run's write-ahead records under ``store_url`` (the audit store)."""

    def __init__(
        self,
        store_url: str,
        action: str,
        *,
        who: Mapping[str, Any] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        started_ms: int | None = None,
        lease_ttl_s: float = LEASE_TTL_S,
    ) -> None:
        self.journal = Journal(store_url, storage_options)
        self.action, self.who = action, dict(who or {})
        self.started_ms = _now_ms() if started_ms is None else started_ms
        self.run_id = uuid.uuid4().hex
        self.name = record_name(self.started_ms, self.run_id)
        self.owner = Owner.me(self.run_id)
        self.leases = Leases(self.journal, self.owner, self.name, int(lease_ttl_s * 1000))
        self.intent_url: str | None = None
        self.reconciled: list[dict[str, Any]] = []  # the outcomes this run wrote for runs that died
        self.undo: dict[str, str] = {}  # group -> the backup that undoes this run's change of it
        self.changed: list[str] = []  # the groups the outcome says this run changed
        ACTIVE_RUNS.add(self.run_id)

    # -- 1. reconcile --------------------------------------------------------------------

    async def reconcile(self, aclient: AsyncGroupsClient) -> list[dict[str, Any]]:
        found = await reconcile_open_intents(aclient, self.journal, by={"run_id": self.run_id, **self.who})
        self.reconciled.extend(found)
        return found

    # -- 2. leases (:mod:`.leases`) ------------------------------------------------------

    def lease(self, group_ids: list[str]) -> dict[str, str]:
        """Take the groups' leases: group -> why not, for those another run holds."""
        return self.leases.take(group_ids)

    @property
    def leased(self) -> list[str]:
        return self.leases.held

    # -- 3. intent -----------------------------------------------------------------------

    def write_intent(
        self,
        planned: Mapping[str, Intent],
        backup_url: str,
        backed_up: Mapping[str, Mapping[TopicPartition, int]],
    ) -> str:
        """``planned``: group -> what the change will do to it; ``backed_up``: group -> the offsets
        the backup holds."""
        self.leases.check_unexpired()
        for g in planned:
            left = {tp_key(tp): o for tp, o in (backed_up.get(g) or {}).items()}
            self.undo[g] = self._earlier_undo(g, left) or backup_url
        document = {
            "version": RECONCILE_VERSION,
            "run_id": self.run_id,
            "action": self.action,
            "who": self.who,
            "started_ms": self.started_ms,
            "owner": self.owner.to_dict(),
            "expires_ms": self.leases.expires_ms or _now_ms() + self.leases.ttl_ms,
            "backup_url": backup_url,
            "groups": {g: {**p.to_dict(), "undo": self.undo[g]} for g, p in planned.items()},
        }
        self.intent_url = self.journal.write_intent(self.name, document)
        return self.intent_url

    def _earlier_undo(self, group_id: str, backed_up: Mapping[str, int]) -> str | None:
        """The backup from before an interrupted run's change of the group, when the group is
        still as that run left it (its offsets now are the ones the reconciliation read): then
        this run's own backup holds the interrupted run's result, not the group's offsets."""
        pending = self.journal.pending_undo(group_id)
        if not pending or not pending.get("undo"):
            return None
        left = pending.get("offsets_left")
        return str(pending["undo"]) if left is not None and dict(left) == dict(backed_up) else None

    # -- 4. outcome ----------------------------------------------------------------------

    def outcome_fields(self) -> dict[str, Any]:
        """What the outcome record adds: the run and its intent."""
        return {
            "run_id": self.run_id,
            "intent": self.journal.closed_url(self.name) if self.intent_url else None,
        }

    def undo_of(self, changed: list[str]) -> dict[str, str]:
        """group -> the backup that undoes this run's change of it (an interrupted run's when that
        run changed it first), for the groups this run changed."""
        self.changed = [g for g in changed if g in self.undo]
        return {g: self.undo[g] for g in self.changed}

    def outcome_name(self) -> str | None:
        """The name the outcome record is written under (the intent's), None when no intent was
        written (nothing was changed: the record gets a name of its own)."""
        stepmarks.reached("before_outcome")
        return self.name if self.intent_url is not None else None

    def finish(self, outcome_written: bool) -> None:
        """Release the leases: always when no intent was written (nothing changed), else only once
        the outcome is written (an open intent keeps its groups until it is reconciled)."""
        if self.intent_url is not None and outcome_written:
            self.journal.close_intent(self.name)
            for g in self.changed:  # its outcome names the earlier undo now: the pending one is taken
                self.journal.clear_pending_undo(g)
        if self.intent_url is None or outcome_written:
            self.leases.release()
        ACTIVE_RUNS.discard(self.run_id)

    async def close_after_error(self, aclient: AsyncGroupsClient, error: BaseException) -> None:
        """The run raised after (maybe) changing groups: reconcile its own intent now (its
        outcome from the groups' state) so that its leases can go."""
        ACTIVE_RUNS.discard(self.run_id)
        if self.intent_url is None:
            self.finish(False)
            return
        if not isinstance(error, Exception):
            return  # cancelled or interrupted: no more requests; the next run reconciles
        try:
            found = await reconcile_open_intents(
                aclient,
                self.journal,
                by={"run_id": self.run_id, **self.who},
                only=self.name,
                error=f"{type(error).__name__}: {error}",
            )
            self.finish(bool(found))
        except Exception:
            log.exception(
                "could not write the outcome of run %s after its error; the next run reconciles it",
                self.run_id[:12],
            )


def reconciled_summaries(reconciled: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """One line's worth per interrupted run's outcome in ``reconciled`` (:attr:`ChangeRun.reconciled`)."""
    return tuple(
        {
            "audit": r["audit"],
            "run_id": r["run_id"],
            "action": r["action"],
            "why": r["interrupted"]["why"],
            "groups": r["groups"],
            "undo": r["undo"],
        }
        for r in reconciled
    )


def undo_by_backup(
    backup_url: str | None, changed: list[str], undo: Mapping[str, str]
) -> dict[str, list[str]]:
    """backup URL -> the changed groups it undoes (a group changed first by an interrupted run is
    undone by that run's backup, the others by ``backup_url``)."""
    out: dict[str, list[str]] = {}
    for g in changed:
        url = undo.get(g, backup_url)
        if url:
            out.setdefault(url, []).append(g)
    return out


async def closing_on_error(run: ChangeRun | None, aclient: AsyncGroupsClient, work: Awaitable[T]) -> T:
    """``work``'s result; when it raises, ``run`` (if any) first closes its records: its own intent
    reconciled from the groups' state so that its leases can go."""
    try:
        return await work
    except BaseException as exc:
        if run is not None:
            await run.close_after_error(aclient, exc)
        raise


# -- reconciliation ----------------------------------------------------------------------


def _verdict(
    kind: str,
    plan: Mapping[str, Any],
    before: Mapping[TopicPartition, int | None] | None,
    now: Mapping[TopicPartition, int] | None,
    state: str | None,
) -> tuple[str, str]:
    """(verdict, why) for one group: ``before`` the backup's offsets (None: unreadable), ``now``
    the committed offsets read now (None: unreadable), ``state`` the described state."""
    if before is None:
        return Verdict.CANNOT_TELL, "its backup cannot be read"
    if now is None:
        return Verdict.CANNOT_TELL, "its committed offsets cannot be read now"
    if kind == "delete-group":
        if state == "Dead":
            return Verdict.CHANGED, "the broker describes it as Dead: deleted"
        if not before:
            return Verdict.CANNOT_TELL, (
                "it had no committed offset and is described as "
                f"{state or 'unknown'} (a broker may say Empty for a group that is gone)"
            )
        if not now:
            return (
                Verdict.CHANGED,
                f"its {len(before)} committed offset(s) are gone, as the deletion leaves it",
            )
        if dict(now) == dict(before):
            return Verdict.NOT_CHANGED, "its committed offsets are the backed-up ones"
        return Verdict.CANNOT_TELL, "its committed offsets are neither the backed-up ones nor gone"
    scope = [tp_from_key(k) for k in plan.get("partitions") or ()]
    targets = {tp_from_key(k): v for k, v in (plan.get("targets") or {}).items()}
    changed, same, other = [], [], []
    for tp in scope:
        planned = targets.get(tp) if kind == "commit" else None  # delete-offsets: gone is the target
        if planned is not None and planned == before.get(tp):
            same.append(tp)  # the plan sets what it had: either way the same
        elif now.get(tp) == planned:
            changed.append(tp)
        elif now.get(tp) == before.get(tp):
            same.append(tp)
        else:
            other.append(tp)
    listed = ", ".join(f"{tp_key(tp)} reads {now.get(tp)}" for tp in other)
    if other:
        return Verdict.CANNOT_TELL, f"{listed}: neither the backed-up nor the planned offset"
    if changed:
        part = "" if not same else f" ({len(same)} other(s) not)"
        return Verdict.CHANGED, f"{len(changed)} partition(s) read the planned offset{part}"
    return Verdict.NOT_CHANGED, "every partition reads the backed-up offset"


async def reconcile_open_intents(
    aclient: AsyncGroupsClient,
    journal: Journal,
    *,
    by: Mapping[str, Any],
    only: str | None = None,
    error: str | None = None,
) -> list[dict[str, Any]]:
    """Write the outcome of every open intent whose run cannot be running any more (``only``: that
    one intent, whatever its owner: the run itself after an error). Returns the outcomes written."""
    written = []
    now = _now_ms()
    for name, intent in await asyncio.to_thread(journal.open_intents):
        if only is not None and name != only:
            continue
        owner = Owner.from_dict(intent.get("owner") or {})
        gone = (
            "it raised before writing its outcome"
            if only is not None
            else owner.gone(int(intent.get("expires_ms") or 0), now)
            if intent
            else "its intent cannot be read"
        )
        if gone is None:
            continue  # a live run: its groups are leased, it writes its own outcome
        record = await _reconcile_one(aclient, journal, name, intent, gone, by, error)
        try:
            url = await asyncio.to_thread(
                write_audit,
                journal.store_url,
                record,
                started_ms=int(intent.get("started_ms") or now),
                storage_options=journal.storage_options,
                name=name,
            )
        except FileExistsError:
            continue  # its outcome was written meanwhile (the run itself, or another reconciler)
        journal.close_intent(name)
        for g, url in record["undo"].items():  # the next change of g undoes to url while g is as left
            journal.set_pending_undo(
                g, {"undo": url, "interrupted": name, "offsets_left": record["decisions"][g]["offsets_left"]}
            )
        if only is None:  # the dead run's leases: its groups are free again
            for g in intent.get("groups") or {}:
                journal.release_lease(g, owner.run_id)
        log.warning(
            "run %s (%s) was interrupted (%s): outcome %s",
            str(intent.get("run_id", "?"))[:12],
            intent.get("action", "?"),
            gone,
            url,
        )
        written.append({**record, "audit": url})
    return written


def _left(plan: Mapping[str, Any], now: Mapping[TopicPartition, int] | None) -> dict[str, int] | None:
    """The offsets the interrupted run left, on the partitions its change touched (all for a
    deletion), as a later run's backup of the same partitions holds them."""
    if now is None:
        return None
    scope = set(plan.get("partitions") or ()) if plan.get("kind") != "delete-group" else None
    return {tp_key(tp): o for tp, o in sorted(now.items()) if scope is None or tp_key(tp) in scope}


def _interrupted(
    plan: Mapping[str, Any],
    before: Mapping[TopicPartition, int | None] | None,
    now: Mapping[TopicPartition, int] | None,
    state: str | None,
) -> dict[str, Any]:
    """One group's decision in an interrupted run's outcome (``plan``: the group's intent record)."""
    verdict, why = _verdict(str(plan.get("kind")), plan, before, now, state)
    return {
        "decision": "interrupted",
        "interrupted": verdict,
        "reason": f"interrupted: {verdict.replace('_', ' ')} ({why})",
        "state_now": state,
        "undo_backup": plan.get("undo"),
        "offsets_left": _left(plan, now),
    }


async def _reconcile_one(
    aclient: AsyncGroupsClient,
    journal: Journal,
    name: str,
    intent: Mapping[str, Any],
    gone: str,
    by: Mapping[str, Any],
    error: str | None,
) -> dict[str, Any]:
    groups: Mapping[str, Mapping[str, Any]] = intent.get("groups") or {}
    backup: OffsetsBackup | None = None
    try:
        backup = await asyncio.to_thread(
            load_backup, str(intent.get("backup_url")), storage_options=journal.storage_options
        )
    except Exception:  # noqa: BLE001 - every group then says "cannot tell" and why
        backup = None
    ids = list(groups)
    described, committed = await asyncio.gather(
        aclient.describe_groups(ids), aclient.fetch_committed_offsets(ids)
    )
    decisions, undo = {}, {}
    for g, plan in groups.items():
        before = (
            None
            if backup is None or g not in backup.groups or g in backup.share_groups
            else {tp: c.offset for tp, c in backup.groups[g].items()}
        )
        now = committed.values[g].committed() if g in committed.values else None
        state = described.values[g].state.value if g in described.values else None
        decisions[g] = _interrupted(plan, before, now, state)
        if decisions[g]["interrupted"] != Verdict.NOT_CHANGED and plan.get("undo"):
            undo[g] = plan["undo"]
    counts = {
        v: sorted(g for g, d in decisions.items() if d["interrupted"] == v)
        for v in (Verdict.CHANGED, Verdict.NOT_CHANGED, Verdict.CANNOT_TELL)
    }
    return {
        "version": RECONCILE_VERSION,
        "action": intent.get("action") or "unknown",
        "run_id": intent.get("run_id"),
        "started_ms": intent.get("started_ms"),
        "finished_ms": None,
        "who": intent.get("who") or {},
        "dry_run": False,
        "interrupted": {"why": gone, "error": error, "reconciled_ms": _now_ms(), "reconciled_by": dict(by)},
        "intent": journal.closed_url(name),
        "backup_url": intent.get("backup_url"),
        "summary": {"backup_url": intent.get("backup_url"), **counts},
        "groups": counts,
        "undo": undo,
        "decisions": decisions,
    }
