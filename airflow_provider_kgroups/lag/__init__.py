"""The lag and group-health engine: pure logic over client results, no Airflow import.

Modules: ``model`` (the values), ``snapshot`` (lag of many groups in one call), ``totals``
(per topic, worst partitions), ``seconds`` (lag in seconds), ``barrier`` (catch-up targets),
``verdicts`` (OK/WARN/STALL/STOP/REWIND/LOST over a window), ``deadgroups`` (active, paused
or dead, with evidence).
"""

from .barrier import BarrierCheckpoint, BarrierStatus, BarrierTarget, TargetKind, check_barrier, fix_target
from .deadgroups import (
    DeadGroupRules, DeadReason, GroupHealth, GroupHealthReport, classify_groups, find_dead_groups,
)
from .model import HISTORY_COLUMNS, GroupLag, LagFlag, LagSnapshot, PartitionLag, UnknownLagPolicy
from .seconds import GroupLagSeconds, LagSecondsBasis, PartitionLagSeconds, lag_seconds
from .snapshot import compute_lag, take_snapshot
from .totals import TopicLag, topic_lags, worst_partitions
from .verdicts import GroupVerdict, PartitionVerdict, Verdict, VerdictRules, group_verdicts

__all__ = [
    "HISTORY_COLUMNS", "GroupLag", "LagFlag", "LagSnapshot", "PartitionLag", "UnknownLagPolicy",
    "take_snapshot", "compute_lag", "TopicLag", "topic_lags", "worst_partitions",
    "lag_seconds", "GroupLagSeconds", "PartitionLagSeconds", "LagSecondsBasis",
    "fix_target", "check_barrier", "BarrierTarget", "BarrierCheckpoint", "BarrierStatus", "TargetKind",
    "group_verdicts", "Verdict", "VerdictRules", "GroupVerdict", "PartitionVerdict",
    "find_dead_groups", "classify_groups", "DeadGroupRules", "DeadReason", "GroupHealth", "GroupHealthReport",
]
