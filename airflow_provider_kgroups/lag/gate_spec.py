"""The two plain-JSON halves of a lag gate that travel from the sensor to its trigger (and
survive a triggerer restart): :class:`GateSpec`, what to wait for, validated on construction,
and :class:`GateState`, what one check leaves for the next.

A spec names its groups by exact ids, by patterns, or both. It validates without knowing
which groups the patterns will match: the gate binds them (:meth:`GateSpec.bind`) at its
first check, against the cluster's listing, and carries the bound ids from then on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any, Iterable, Mapping

from ..arguments import (
    parse_check_count, parse_interval, parse_lag_mode, parse_names, parse_offset_count, parse_offsets_map,
    parse_seconds, parse_str_list, parse_timestamp_ms,
)
from ..client.errors import ConfigurationError
from ..client.selection import GroupSelector
from .barrier import BarrierCheckpoint, BarrierTarget
from .model import UnknownLagPolicy
from .policy import parse_policy
from .verdicts import Verdict, VerdictRules

__all__ = ["LagMode", "GateSpec", "GateState", "DEFAULT_FAIL_ON"]

DEFAULT_FAIL_ON = ("STOP", "STALL", "LOST")


class LagMode(str, Enum):
    """How a gate decides that the groups are there (``lag_mode``)."""

    BARRIER = "barrier"  # committed >= a target fixed at the first check, on every partition
    THRESHOLD = "threshold"  # every group provably within the lag thresholds


@dataclass(frozen=True)
class GateSpec:
    """What to wait for; plain data, validated on construction."""

    group_ids: tuple[str, ...] = ()
    lag_mode: LagMode = LagMode.BARRIER
    topics: tuple[str, ...] | None = None
    barrier_timestamp_ms: int | None = None
    unknown_lag: str = UnknownLagPolicy.FAIL.value
    read_committed: bool = False
    max_lag_per_partition: int | None = None
    max_total_lag: int | None = None
    max_lag_seconds: float | None = None
    fail_on_verdicts: tuple[str, ...] = DEFAULT_FAIL_ON
    verdict_checks: int = 2
    stuck_after_s: float = 600.0
    previous_barrier: Mapping[str, Mapping[str, int]] | None = None
    group_patterns: tuple[str, ...] = ()  # matched against the cluster's groups at the first check
    exclude_patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        for name in ("group_ids", "group_patterns", "exclude_patterns"):
            set_(name, parse_str_list(name, getattr(self, name)))
        if not self.group_ids and not self.group_patterns:
            raise ConfigurationError("give group_ids and/or group_patterns (e.g. group_ids=['orders-landing'] or "
                                     "group_patterns=['orders-*']).")
        GroupSelector(self.group_ids, self.group_patterns, self.exclude_patterns)  # patterns compile, ids are ids
        if not isinstance(self.lag_mode, LagMode):
            set_("lag_mode", LagMode(parse_lag_mode("lag_mode", self.lag_mode)))
        if self.topics is not None:
            set_("topics", parse_names("topics", self.topics))
        set_("unknown_lag", parse_policy(self.unknown_lag).value)
        set_("barrier_timestamp_ms", parse_timestamp_ms("barrier_timestamp", self.barrier_timestamp_ms))
        set_("max_lag_per_partition", parse_offset_count("max_lag_per_partition", self.max_lag_per_partition))
        set_("max_total_lag", parse_offset_count("max_total_lag", self.max_total_lag))
        set_("max_lag_seconds", parse_seconds("max_lag_seconds", self.max_lag_seconds))
        verdicts = parse_str_list("fail_on_verdicts", self.fail_on_verdicts)
        known = [v.value for v in Verdict]
        unknown = [v for v in verdicts if v.upper() not in known]
        if unknown:
            raise ConfigurationError(f"fail_on_verdicts has {unknown[0]!r}: use some of {', '.join(known)} (or []).")
        set_("fail_on_verdicts", tuple(v.upper() for v in verdicts))
        set_("verdict_checks", parse_check_count("verdict_checks", self.verdict_checks))
        set_("stuck_after_s", parse_interval("stuck_after", self.stuck_after_s))
        set_("previous_barrier", parse_offsets_map("previous_barrier", self.previous_barrier))
        thresholds = (self.max_lag_per_partition, self.max_total_lag, self.max_lag_seconds)
        if self.lag_mode is LagMode.THRESHOLD and all(t is None for t in thresholds):
            raise ConfigurationError("lag_mode='threshold' needs at least one of max_lag_per_partition, "
                                     "max_total_lag, max_lag_seconds.")
        if self.lag_mode is LagMode.BARRIER and any(t is not None for t in thresholds):
            raise ConfigurationError("max_lag_per_partition / max_total_lag / max_lag_seconds apply to "
                                     "lag_mode='threshold'; a barrier waits for committed >= target. "
                                     "Set lag_mode='threshold' or drop the thresholds.")
        if self.lag_mode is LagMode.THRESHOLD and self.barrier_timestamp_ms is not None:
            raise ConfigurationError("barrier_timestamp applies to lag_mode='barrier': drop it or switch modes.")

    @property
    def bound(self) -> bool:
        """True once the groups are known by id (no pattern left to match)."""
        return not self.group_patterns

    @property
    def selector(self) -> GroupSelector:
        return GroupSelector(self.group_ids, self.group_patterns, self.exclude_patterns)

    def bind(self, group_ids: Iterable[str]) -> "GateSpec":
        """The same spec for exactly these groups (what the patterns matched, plus the exact ids)."""
        return replace(self, group_ids=tuple(group_ids), group_patterns=(), exclude_patterns=())

    @property
    def policy(self) -> UnknownLagPolicy:
        return UnknownLagPolicy(self.unknown_lag)

    @property
    def rules(self) -> VerdictRules:
        stuck_ms = int(self.stuck_after_s * 1000)
        return VerdictRules(window_ms=3 * stuck_ms, stuck_after_ms=stuck_ms)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["lag_mode"] = self.lag_mode.value
        for key in ("group_ids", "topics", "fail_on_verdicts", "group_patterns", "exclude_patterns"):
            out[key] = list(out[key]) if out[key] is not None else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GateSpec":
        return cls(**data)


@dataclass
class GateState:
    """What survives from one check to the next, and from the sensor to its trigger: values in
    the process, plain JSON only in :meth:`to_dict` / :meth:`from_dict` (the trigger's kwargs)."""

    started_ms: int
    target: BarrierTarget | None = None  # fixed once by a mode that needs one (barrier)
    checks: int = 0
    checkpoints: list[BarrierCheckpoint] = field(default_factory=list)  # oldest first: the rate's base
    streaks: dict[str, int] = field(default_factory=dict)
    told: list[str] = field(default_factory=list)  # keys of the warnings already logged (Judgement.warnings)

    def __post_init__(self) -> None:  # JSON halves accepted (a trigger's kwargs, older callers)
        if isinstance(self.target, Mapping):
            self.target = BarrierTarget.from_dict(self.target)
        self.checkpoints = [c if isinstance(c, BarrierCheckpoint) else BarrierCheckpoint.from_dict(c)
                            for c in self.checkpoints]

    def to_dict(self) -> dict[str, Any]:
        return {"started_ms": self.started_ms, "target": self.target.to_dict() if self.target is not None else None,
                "checks": self.checks, "checkpoints": [c.to_dict() for c in self.checkpoints],
                "streaks": dict(self.streaks), "told": list(self.told)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GateState":
        return cls(**data)
