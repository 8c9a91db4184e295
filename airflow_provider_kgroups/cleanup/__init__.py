"""Deleting consumer groups safely: the one path shared by ``kgroups delete`` and
``DeadConsumerGroupCleanupOperator``. No Airflow import.

* :mod:`.policy`: what a run may do (rules, scope, named groups, deny overrides, caps, dry run);
* :mod:`.plan`: select -> classify -> Connect -> permission -> caps: one decision per group;
* :mod:`.execute`: describe again, back up (read back), delete;
* :mod:`.run`: plan + execute + the audit record (:mod:`..history.audit`).
"""

from .decisions import CleanupResult, GroupDecision, Outcome
from .plan import CleanupPlan, plan_cleanup
from .policy import CONNECT_DENY_PATTERN, CleanupPolicy
from .run import run_cleanup

__all__ = ["CleanupPolicy", "CleanupPlan", "CleanupResult", "GroupDecision", "Outcome", "plan_cleanup",
           "run_cleanup", "CONNECT_DENY_PATTERN"]
