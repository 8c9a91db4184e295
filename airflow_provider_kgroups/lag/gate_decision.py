"""What one check of a lag gate decided: one value for the sensor (poke and deferrable), its
trigger and the trigger's events.

Statuses and failure kinds are enums. In a trigger event (and so across a sensor -> trigger
hand-over and a triggerer restart) they travel as their values, plain JSON:
``{"status": "fail", "kind": "missing", "message": ..., "result": None}``; :meth:`Decision.from_event`
reads such an event back (and events written before the enums, which had the same strings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..client.errors import ConfigurationError
from ..client.offset_map import OffsetKind, OffsetMap
from ..client.results import TopicPartition
from .offset_range import OffsetRange
from .verdicts import PartitionVerdict

__all__ = ["GateStatus", "FailureKind", "Decision", "GateOpened", "VerdictHeld", "NOT_RETRIABLE"]


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
class GateOpened:
    """What a gate that opened hands on, as a value; :meth:`to_xcom` is its one JSON form (the
    sensor's XCom, the trigger's ``done`` event). ``extra``: the mode's own result keys (JSON)."""

    lag_mode: str
    group_ids: tuple[str, ...]
    checks: int
    waited_s: float
    reached: Mapping[str, Mapping[TopicPartition, int]]
    range: OffsetRange
    extra: Mapping[str, Any]

    def to_xcom(self) -> dict[str, Any]:
        return {
            "lag_mode": self.lag_mode,
            "group_ids": list(self.group_ids),
            "checks": self.checks,
            "waited_s": self.waited_s,
            "reached": {
                g: OffsetMap(offsets, OffsetKind.COMMITTED, name=f"reached[{g!r}]").nested()
                for g, offsets in self.reached.items()
            },
            "offsets": self.range.ending.nested(),  # type: ignore[attr-defined]  # an OffsetMap once made
            **self.range.to_xcom(),  # startingOffsets, endingOffsets
            **self.extra,
        }


@dataclass(frozen=True)
class VerdictHeld:
    """The fail-fast verdict that failed a gate: the group, its partition's verdict (with the
    finding: :class:`~.verdicts.VerdictFinding`) and for how many checks in a row it held."""

    group_id: str
    partition: PartitionVerdict
    checks: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "topic": self.partition.topic,
            "partition": self.partition.partition,
            "checks": self.checks,
            **self.partition.finding.to_dict(),
        }


@dataclass(frozen=True)
class Decision:
    status: GateStatus
    message: str
    result: dict[str, Any] | None = None  # with DONE: the XCom (plain JSON)
    kind: FailureKind | None = None  # with FAIL
    notes: tuple[
        str, ...
    ] = ()  # what the check decided on the way (groups selected, barrier fixed): log lines
    fixed: dict[str, Any] | None = None  # what this check fixed once, as JSON (the barrier's target)
    warnings: tuple[
        str, ...
    ] = ()  # what keeps the gate closed that the user can fix: log lines, once per gate
    opened: GateOpened | None = (
        None  # with DONE, decided in this process: the value ``result`` is the JSON of
    )
    held: VerdictHeld | None = None  # with FAIL of kind VERDICT: the verdict, as a value

    def __post_init__(self) -> None:  # strings are accepted (events, older callers) and kept as enums
        object.__setattr__(self, "status", GateStatus(self.status))
        if self.kind is not None:
            object.__setattr__(self, "kind", FailureKind(self.kind))

    @property
    def finished(self) -> bool:
        return self.status is not GateStatus.WAIT

    def to_event(self) -> dict[str, Any]:
        event = {
            "status": self.status.value,
            "message": self.message,
            "result": self.result,
            "kind": self.kind.value if self.kind is not None else None,
        }
        if self.held is not None:
            event["verdict"] = self.held.to_dict()
        return event

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> Decision:
        """A trigger event back as a decision; a status or kind this version does not know is a
        ConfigurationError naming it."""
        try:
            return cls(
                event.get("status"),  # type: ignore[arg-type]  # __post_init__ turns it into a GateStatus or refuses it
                str(event.get("message", "")),
                event.get("result"),
                event.get("kind"),
            )
        except ValueError:
            raise ConfigurationError(
                f"not a lag gate event (status {event.get('status')!r}, kind "
                f"{event.get('kind')!r}): {event.get('message')}"
            ) from None
