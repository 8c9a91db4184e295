"""What one check of a lag gate leaves for the next: :class:`GateState`, the half of a gate that
travels beside its :class:`~.gate_spec.GateSpec` from the sensor to its trigger."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .barrier import BarrierCheckpoint, BarrierTarget

__all__ = ["GateState"]


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
