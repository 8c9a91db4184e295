"""The lag and group-health engine: pure logic over client results, no Airflow import.

Modules: ``model`` (the values), ``snapshot`` (lag of many groups in one call), ``totals``
(per topic, worst partitions), ``seconds`` (lag in seconds), ``barrier`` (catch-up targets),
``verdicts`` (OK/WARN/STALL/STOP/REWIND/AT_RISK/LOST over a window; ``retention``: the margin and catch-up time AT_RISK is made of), ``deadgroups`` (active, paused
or dead, with findings as values; the permission and the words are ``cleanup``'s).

The names below are loaded on first use (PEP 562): importing ``lag.model`` does not load
every engine module (and, through ``seconds``, the client's Fetch handler).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

_HOMES = {
    **dict.fromkeys(
        ("BarrierCheckpoint", "BarrierStatus", "BarrierTarget", "TargetKind", "check_barrier", "fix_target"),
        "barrier",
    ),
    **dict.fromkeys(("DeadGroupRules", "DeadReason", "GroupHealth", "judge_group"), "deadgroups"),
    **dict.fromkeys(
        ("HISTORY_COLUMNS", "GroupLag", "LagFlag", "LagSnapshot", "PartitionLag", "UnknownLagPolicy"), "model"
    ),
    **dict.fromkeys(("GroupLagSeconds", "LagSecondsBasis", "PartitionLagSeconds", "lag_seconds"), "seconds"),
    "compute_lag": "compute",
    "take_snapshot": "snapshot",
    **dict.fromkeys(("TopicLag", "topic_lags", "worst_partitions"), "totals"),
    **dict.fromkeys(
        ("GroupVerdict", "PartitionVerdict", "Verdict", "VerdictRules", "group_verdicts"), "verdicts"
    ),
}

__all__ = [
    "HISTORY_COLUMNS",
    "GroupLag",
    "LagFlag",
    "LagSnapshot",
    "PartitionLag",
    "UnknownLagPolicy",
    "take_snapshot",
    "compute_lag",
    "TopicLag",
    "topic_lags",
    "worst_partitions",
    "lag_seconds",
    "GroupLagSeconds",
    "PartitionLagSeconds",
    "LagSecondsBasis",
    "fix_target",
    "check_barrier",
    "BarrierTarget",
    "BarrierCheckpoint",
    "BarrierStatus",
    "TargetKind",
    "group_verdicts",
    "Verdict",
    "VerdictRules",
    "GroupVerdict",
    "PartitionVerdict",
    "judge_group",
    "DeadGroupRules",
    "DeadReason",
    "GroupHealth",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from .barrier import (
        BarrierCheckpoint,
        BarrierStatus,
        BarrierTarget,
        TargetKind,
        check_barrier,
        fix_target,
    )
    from .compute import compute_lag
    from .deadgroups import DeadGroupRules, DeadReason, GroupHealth, judge_group
    from .model import HISTORY_COLUMNS, GroupLag, LagFlag, LagSnapshot, PartitionLag, UnknownLagPolicy
    from .seconds import GroupLagSeconds, LagSecondsBasis, PartitionLagSeconds, lag_seconds
    from .snapshot import take_snapshot
    from .totals import TopicLag, topic_lags, worst_partitions
    from .verdicts import GroupVerdict, PartitionVerdict, Verdict, VerdictRules, group_verdicts
