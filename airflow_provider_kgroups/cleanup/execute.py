"""Carrying out a plan: describe again, back up, delete.

1. describe the chosen groups **again**, right before deleting: anything no longer Empty, or
   with a member, is skipped (a consumer re-joined since the plan); a group now Dead is not found;
2. read their committed offsets and write a backup that must read back identical
   (:func:`..history.backup.backup_offsets`); no backup, no deletion;
3. delete (DeleteGroups): the broker's NON_EMPTY_GROUP (a member joined after the second
   describe) is a skip, GROUP_ID_NOT_FOUND not found, a lost response whose retry found the
   group gone is "deleted (confirmed gone after a lost response)", anything else a failure.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping

from ..client.errors import ErrorCode
from ..client.results import GroupDeletion, GroupState
from ..history.backup import backup_offsets
from .decisions import GroupDecision, Outcome
from .plan import CleanupPlan

__all__ = ["execute_plan"]


async def execute_plan(aclient, plan: CleanupPlan, *, backup_base_url: str, note: str = "",
                       storage_options: Mapping[str, Any] | None = None) -> tuple[dict[str, GroupDecision], str | None]:
    """Returns every decision (the plan's, updated for the chosen groups) and the backup URL
    (None when nothing was backed up)."""
    decisions = dict(plan.decisions)
    chosen = list(plan.chosen)
    if not chosen:
        return decisions, None

    def set_(group_id: str, outcome: Outcome, reason: str, **changes: Any) -> None:
        decisions[group_id] = decisions[group_id].becomes(outcome, reason, **changes)

    again = await aclient.describe_groups(chosen)
    confirmed = []
    for g in chosen:
        if g in again.failures:
            set_(g, Outcome.SKIP, f"describing it again before deleting failed ({again.failures[g]}): not deleted")
            continue
        d = again.values[g]
        if d.state is GroupState.DEAD:
            set_(g, Outcome.NOT_FOUND, "gone before the delete (described as Dead right before it): nothing deleted")
        elif d.state is not GroupState.EMPTY or d.members:
            set_(g, Outcome.SKIP, f"changed since it was judged: now {d.state.value} with {len(d.members)} "
                                  "member(s); not deleted")
        else:
            confirmed.append(g)
    if not confirmed:
        return decisions, None

    offsets = await aclient.fetch_committed_offsets(confirmed)
    for g, failure in offsets.failures.items():
        set_(g, Outcome.SKIP, f"its committed offsets could not be read for the backup ({failure}): not deleted")
    to_back_up = {g: offsets.values[g] for g in confirmed if g in offsets.values}
    if not to_back_up:
        return decisions, None
    try:
        backup_url = await asyncio.to_thread(backup_offsets, backup_base_url, to_back_up, note=note,
                                             storage_options=storage_options)
    except Exception as exc:  # no backup, no deletion (the message names the place, never a secret)
        for g in to_back_up:
            set_(g, Outcome.FAILED, f"the backup of its offsets failed ({type(exc).__name__}: {exc}): not deleted")
        return decisions, None

    deleted = await aclient.delete_groups(list(to_back_up))
    for g in to_back_up:
        planned = decisions[g].reason
        if g in deleted.values:
            how = deleted.values[g]
            note_ = "" if how is GroupDeletion.DELETED else \
                "; confirmed gone after a lost response (the retry answered GROUP_ID_NOT_FOUND)"
            set_(g, Outcome.DELETED, f"{planned}; offsets backed up to {backup_url}{note_}",
                 deletion=GroupDeletion(how).value)
            continue
        failure = deleted.failures[g]
        if failure.code == ErrorCode.NON_EMPTY_GROUP:
            set_(g, Outcome.SKIP, "the broker refused: the group has members again (NON_EMPTY_GROUP); not deleted")
        elif failure.code == ErrorCode.GROUP_ID_NOT_FOUND:
            set_(g, Outcome.NOT_FOUND, "already gone when deleted (GROUP_ID_NOT_FOUND)")
        else:
            set_(g, Outcome.FAILED, f"delete failed: {failure}")
    return decisions, backup_url
