"""Deleting consumer groups safely: the one path shared by ``kgroups delete`` and
``DeadConsumerGroupCleanupOperator``. No Airflow import.

* :mod:`.policy`: what a run may do (rules, scope, named groups, deny overrides, caps, dry run);
* :mod:`.permission`: may the patterns delete a group; :mod:`.report`: evidence + permission
  (``find_dead_groups``); :mod:`.evidence_text`: the evidence in words;
* :mod:`.plan`: select -> classify -> Connect -> permission -> caps: one decision per group;
* :mod:`.execute`: describe again, back up (read back), delete;
* :mod:`.run`: plan + execute + the audit record (:mod:`..history.audit`), driven by :mod:`.workflow`
  (plan -> guarded -> audit) as every change is, with its :class:`.context.ChangeContext`.
"""

from .context import ChangeContext
from .decisions import CleanupResult, GroupDecision, Outcome
from .plan import CleanupPlan, plan_cleanup
from .policy import CONNECT_DENY_PATTERN, CleanupPolicy
from .report import DeadGroupsResult, GroupHealthReport, classify_groups, find_dead_groups
from .run import run_cleanup

__all__ = [
    "ChangeContext",
    "CleanupPolicy",
    "CleanupPlan",
    "CleanupResult",
    "GroupDecision",
    "Outcome",
    "plan_cleanup",
    "run_cleanup",
    "CONNECT_DENY_PATTERN",
    "DeadGroupsResult",
    "GroupHealthReport",
    "classify_groups",
    "find_dead_groups",
]
