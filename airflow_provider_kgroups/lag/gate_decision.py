"""What one check of a lag gate decided: one value for the sensor (poke and deferrable), its
trigger and the trigger's events.

Statuses and failure kinds are enums. In a trigger event (and so across a sensor -> trigger
hand-over and a triggerer restart) they travel as their values, plain JSON:
``{"status": "fail", "kind": "missing", "message": ..., "result": None}``; :meth:`Decision.from_event`
reads such an event back (and events written before the enums, which had the same strings).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from ..client.errors import ConfigurationError

__all__ = ["GateStatus", "FailureKind", "Decision", "NOT_RETRIABLE"]


class GateStatus(str, Enum):
    DONE = "done"  # the groups are there: ``result`` is the XCom
    WAIT = "wait"  # not yet, or not known yet: ``message`` says which and why
    FAIL = "fail"  # waiting cannot help: ``kind`` says why
    TIMEOUT = "timeout"  # the deadline passed while waiting (a trigger's last event)


class FailureKind(str, Enum):
    MISSING = "missing"  # a group is Dead, does not exist, or no group matches the patterns
    VERDICT = "verdict"  # a fail-fast verdict (STOP, STALL, LOST) persisted on a partition that has to move
    PROJECTION = "projection"  # the projected catch-up ends after the deadline, check after check
    NOT_RETRIABLE = "not_retriable"  # an error retrying cannot fix: bad input, authentication, authorization


#: Decision kind of an error that retrying cannot fix (kept under its old name).
NOT_RETRIABLE = FailureKind.NOT_RETRIABLE


@dataclass(frozen=True)
class Decision:
    status: GateStatus
    message: str
    result: dict[str, Any] | None = None  # with DONE: the XCom (plain JSON)
    kind: FailureKind | None = None  # with FAIL
    notes: tuple[str, ...] = ()  # what the check decided on the way (groups selected, barrier fixed): log lines
    fixed: dict[str, Any] | None = None  # what this check fixed once, as JSON (the barrier's target)
    warnings: tuple[str, ...] = ()  # what keeps the gate closed that the user can fix: log lines, once per gate

    def __post_init__(self) -> None:  # strings are accepted (events, older callers) and kept as enums
        object.__setattr__(self, "status", GateStatus(self.status))
        if self.kind is not None:
            object.__setattr__(self, "kind", FailureKind(self.kind))

    @property
    def finished(self) -> bool:
        return self.status is not GateStatus.WAIT

    def to_event(self) -> dict[str, Any]:
        return {"status": self.status.value, "message": self.message, "result": self.result,
                "kind": self.kind.value if self.kind is not None else None}

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> "Decision":
        """A trigger event back as a decision; a status or kind this version does not know is a
        ConfigurationError naming it."""
        try:
            return cls(event.get("status"), str(event.get("message", "")),  # type: ignore[arg-type]
                       event.get("result"), event.get("kind"))
        except ValueError:
            raise ConfigurationError(f"not a lag gate event (status {event.get('status')!r}, kind "
                                     f"{event.get('kind')!r}): {event.get('message')}") from None
