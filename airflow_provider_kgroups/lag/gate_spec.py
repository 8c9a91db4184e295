"""The two halves of a lag gate that travel from the sensor to its trigger (and
survive a triggerer restart): :class:`GateSpec`, what to wait for, validated on construction,
and :class:`GateState`, what one check leaves for the next.

A spec names its groups by exact ids, by patterns, or both. It validates without knowing
which groups the patterns will match: the gate binds them (:meth:`GateSpec.bind`) at its
first check, against the cluster's listing, and carries the bound ids from then on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..arguments import parse_str_list
from ..client.errors import ConfigurationError
from ..client.selection import GroupSelector
from .barrier import BarrierCheckpoint, BarrierTarget
from .gate_params import DEFAULT_FAIL_ON, LagMode, all_params, check_modes
from .model import UnknownLagPolicy
from .verdicts import VerdictRules

__all__ = ["LagMode", "GateSpec", "GateState", "DEFAULT_FAIL_ON"]


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
    margin_floor_s: float = 3600.0
    previous_barrier: Mapping[str, Mapping[str, int]] | None = None
    group_patterns: tuple[str, ...] = ()  # matched against the cluster's groups at the first check
    exclude_patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        def set_(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)  # frozen

        for name in ("group_ids", "group_patterns", "exclude_patterns"):
            set_(name, parse_str_list(name, getattr(self, name)))
        if not self.group_ids and not self.group_patterns:
            raise ConfigurationError(
                "give group_ids and/or group_patterns (e.g. group_ids=['orders-landing'] or "
                "group_patterns=['orders-*'])."
            )
        GroupSelector(
            self.group_ids, self.group_patterns, self.exclude_patterns
        )  # patterns compile, ids are ids
        parsed: dict[str, Any] = {}
        for param in all_params():  # each argument by its one parser (lag.gate_params)
            parsed[param.name] = param.parse(param.name, getattr(self, param.spec_field))
            set_(param.spec_field, parsed[param.name])
        check_modes(self.lag_mode, parsed)

    @property
    def bound(self) -> bool:
        """True once the groups are known by id (no pattern left to match)."""
        return not self.group_patterns

    @property
    def selector(self) -> GroupSelector:
        return GroupSelector(self.group_ids, self.group_patterns, self.exclude_patterns)

    def bind(self, group_ids: Iterable[str]) -> GateSpec:
        """The same spec for exactly these groups (what the patterns matched, plus the exact ids)."""
        return replace(self, group_ids=tuple(group_ids), group_patterns=(), exclude_patterns=())

    @property
    def policy(self) -> UnknownLagPolicy:
        return UnknownLagPolicy(self.unknown_lag)

    @property
    def rules(self) -> VerdictRules:
        stuck_ms = int(self.stuck_after_s * 1000)
        return VerdictRules(
            window_ms=3 * stuck_ms, stuck_after_ms=stuck_ms, margin_floor_ms=int(self.margin_floor_s * 1000)
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["lag_mode"] = self.lag_mode.value
        for key in ("group_ids", "topics", "fail_on_verdicts", "group_patterns", "exclude_patterns"):
            out[key] = list(out[key]) if out[key] is not None else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateSpec:
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
        self.checkpoints = [
            c if isinstance(c, BarrierCheckpoint) else BarrierCheckpoint.from_dict(c)
            for c in self.checkpoints
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "started_ms": self.started_ms,
            "target": self.target.to_dict() if self.target is not None else None,
            "checks": self.checks,
            "checkpoints": [c.to_dict() for c in self.checkpoints],
            "streaks": dict(self.streaks),
            "told": list(self.told),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateState:
        return cls(**data)
