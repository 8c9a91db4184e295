"""Deleting groups through the one safety path (:mod:`.guard`): describe again,
back up (read back), delete.

1. the chosen groups are described **again**, right before deleting: anything no longer Empty,
   or with a member, is skipped (a consumer re-joined since the plan); a group now Dead is not found;
2. their committed offsets are backed up (read back identical); no backup, no deletion;
3. delete (DeleteGroups): the broker's NON_EMPTY_GROUP (a member joined after the second
   describe) is a refusal (not deleted, and the run says so), GROUP_ID_NOT_FOUND not found, a
   lost response whose retry found the group gone is "deleted (confirmed gone after a lost
   response)", anything else a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..client import stepmarks
from ..client.errors import ErrorCode
from ..client.results import GroupDeletion, GroupOffsets
from .decisions import GroupDecision, Outcome
from .guard import Step, StepDetail, StepResult, Words
from .intent import Intent, IntentKind

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["GroupDeletionChange", "executed"]

#: what the safety path's step means for a deletion
_OUTCOME = {
    StepResult.DONE: Outcome.DELETED,
    StepResult.CHANGED: Outcome.SKIP,
    StepResult.GONE: Outcome.NOT_FOUND,
    StepResult.REFUSED: Outcome.REFUSED,
    StepResult.FAILED: Outcome.FAILED,
}


class GroupDeletionChange:
    """Deleting whole groups (DeleteGroups) through :func:`.guard.guarded`."""

    words = Words("delete", "deleting", "deleted")
    absent_ok = False
    needs_empty = True

    def __init__(self, reasons: Mapping[str, str]) -> None:
        self._reasons = reasons  # the plan's reason per group, kept in the deleted decision

    def backup_scope(self, group_id: str) -> None:
        return None  # the whole group goes: whatever it committed is backed up

    def moved(self, group_id: str, offsets: GroupOffsets) -> str | None:
        return None

    def intent(self, group_id: str) -> Intent:
        return Intent(IntentKind.DELETE_GROUP)

    async def apply(
        self, aclient: AsyncGroupsClient, group_ids: list[str], backup_url: str | None
    ) -> dict[str, Step]:
        deleted = await aclient.delete_groups(group_ids)
        stepmarks.reached("change_answered")
        steps = {}
        for g in group_ids:
            planned = self._reasons[g]
            if g in deleted.values:
                how = deleted.values[g]
                note = (
                    ""
                    if how is GroupDeletion.DELETED
                    else "; confirmed gone after a lost response (the retry answered GROUP_ID_NOT_FOUND)"
                )
                steps[g] = Step(
                    g,
                    StepResult.DONE,
                    f"{planned}; offsets backed up to {backup_url}{note}",
                    StepDetail(deletion=GroupDeletion(how).value),
                )
                continue
            failure = deleted.failures[g]
            if failure.code == ErrorCode.NON_EMPTY_GROUP:
                steps[g] = Step(
                    g,
                    StepResult.REFUSED,
                    "the broker refused: the group has members again (NON_EMPTY_GROUP); not deleted",
                )
            elif failure.code == ErrorCode.GROUP_ID_NOT_FOUND:
                steps[g] = Step(g, StepResult.GONE, "already gone when deleted (GROUP_ID_NOT_FOUND)")
            else:
                steps[g] = Step(g, StepResult.FAILED, f"delete failed: {failure}")
        return steps


def executed(planned: Mapping[str, GroupDecision], steps: Mapping[str, Step]) -> dict[str, GroupDecision]:
    """Every decision of the plan, those of the groups the safety path ran updated by their step."""
    decisions = dict(planned)
    for g, step in steps.items():
        decisions[g] = decisions[g].becomes(_OUTCOME[step.result], step.reason, **step.detail.changes())
    return decisions
