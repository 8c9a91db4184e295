"""What the dead-group rules found, as values: a reason (:class:`Reason`) and what the rule
measured. No sentence is written here; ``cleanup.evidence_text`` renders findings for the CLI,
the audit records, the logs and the Spark job, which share these values.

Every reason has an :class:`Effect`: evidence that the group is abandoned (``DEAD``, naming a
:class:`DeadReason`), a rule that could not decide (``CANNOT_TELL``: the group is kept for it,
never called dead), or a measurement that is neither (``NOTE``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from ..client.errors import Failure
from ..client.results import GroupState, TopicPartition
from .observation import GroupObservation

__all__ = [
    "GroupHealth",
    "DeadReason",
    "Effect",
    "Reason",
    "BreakReason",
    "Finding",
    "TopicsFinding",
    "TopicsUnknown",
    "CommitsUnreadable",
    "ProgressFinding",
    "IdleBreak",
    "IdleFinding",
    "ExpiryFinding",
    "GroupEvidence",
]


class GroupHealth(str, Enum):
    ACTIVE = "active"
    PAUSED = "paused"
    DEAD = "dead"


class DeadReason(str, Enum):
    """Machine-readable dead reasons (``GroupHealthReport.dead_reasons``)."""

    STATE_DEAD = "state_dead"  # Kafka says Dead: nothing to delete
    IDLE = "idle"  # Empty with records to read and no commit progress for more than idle_hours
    TOPICS_DELETED = "topics_deleted"  # every committed topic answered UNKNOWN_TOPIC_OR_PARTITION by name
    NO_COMMITS = "no_commits"  # no committed offset at all, under assume_full_visibility


class Effect(str, Enum):
    DEAD = "dead"
    CANNOT_TELL = "cannot_tell"
    NOTE = "note"


class Reason(str, Enum):
    # the verdict (lag.deadgroups, first match)
    STATE_DEAD = "state_dead"  # Kafka answered Dead
    NOT_JUDGED_TYPE = "not_judged_type"  # a share or streams group: these rules do not apply
    ACTIVE = "active"  # members, or a state other than Empty
    # an Empty group's rules
    NOT_PLAIN_CONSUMER = "not_plain_consumer"  # its protocol type makes commits no evidence against it
    COMMITS_UNREADABLE = "commits_unreadable"  # some committed offsets were read with an error: unknown
    NO_VISIBLE_COMMITS = "no_visible_commits"  # no committed offset in an all-partitions fetch
    NO_COMMITS = "no_commits"  # ... and assume_full_visibility: evidence
    NO_COMMITS_UNSEEN = "no_commits_unseen"  # ... without it: topics may be hidden by ACLs
    TOPICS_DELETED = "topics_deleted"  # every committed topic absent by name
    SOME_TOPICS_DELETED = "some_topics_deleted"
    TOPICS_UNKNOWN = "topics_unknown"  # none exists by name, but some are hidden, failed or unchecked
    TOPICS_NOT_LISTED = "topics_not_listed"  # only a listing: every committed topic missing from it
    SOME_TOPICS_NOT_LISTED = "some_topics_not_listed"
    LAST_PROGRESS = "last_progress"  # the history saw its committed offsets change last at at_ms
    NO_PROGRESS = "no_progress"  # no change in the history since at_ms
    NO_HISTORY = "no_history"
    NOT_IDLE = "not_idle"  # no idle run, and known not idle for idle_hours
    IDLE = "idle"  # an idle run longer than idle_hours: evidence
    IDLE_SHORT = "idle_short"  # an idle run known to be shorter than idle_hours
    IDLE_UNKNOWN = "idle_unknown"  # a lower bound at or below idle_hours: cannot tell
    IDLE_NOT_EVIDENCE = "idle_not_evidence"  # an idle run of a group these rules never call idle
    EXPIRY_UNKNOWN = "expiry_unknown"  # when it became Empty is not in the history
    EXPIRES = "expires"  # Kafka expires its offsets at or before expires_at_ms (KIP-211)

    @property
    def effect(self) -> Effect:
        return _EFFECTS.get(self, Effect.NOTE)

    @property
    def dead_reason(self) -> DeadReason | None:
        return _DEAD_REASONS.get(self)


_DEAD_REASONS = {
    Reason.STATE_DEAD: DeadReason.STATE_DEAD,
    Reason.NO_COMMITS: DeadReason.NO_COMMITS,
    Reason.TOPICS_DELETED: DeadReason.TOPICS_DELETED,
    Reason.IDLE: DeadReason.IDLE,
}
_EFFECTS = {
    **dict.fromkeys(_DEAD_REASONS, Effect.DEAD),
    **dict.fromkeys(
        (
            Reason.NOT_JUDGED_TYPE,
            Reason.COMMITS_UNREADABLE,
            Reason.NO_COMMITS_UNSEEN,
            Reason.TOPICS_UNKNOWN,
            Reason.TOPICS_NOT_LISTED,
            Reason.NO_HISTORY,
            Reason.IDLE_UNKNOWN,
        ),
        Effect.CANNOT_TELL,
    ),
}


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (Failure, IdleBreak)):
        return value.to_dict()
    if isinstance(value, TopicPartition):
        return str(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class Finding:
    """A reason with nothing more measured (the observation holds the rest)."""

    reason: Reason

    @property
    def effect(self) -> Effect:
        return self.reason.effect

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self)}
        out["effect"] = self.effect.value
        return out


@dataclass(frozen=True, slots=True)
class TopicsFinding(Finding):
    """``topics``: the committed topics concerned (deleted, or missing from a listing), ``of``
    that many committed topics."""

    topics: tuple[str, ...] = ()
    of: int = 0


@dataclass(frozen=True, slots=True)
class TopicsUnknown(Finding):
    """Why no committed topic was found to exist, yet not every one is known to be deleted."""

    hidden: tuple[str, ...] = ()  # TOPIC_AUTHORIZATION_FAILED by name
    failed: tuple[tuple[str, Failure], ...] = ()  # the check by name failed
    unchecked: tuple[str, ...] = ()  # not checked by name


@dataclass(frozen=True, slots=True)
class CommitsUnreadable(Finding):
    partitions: tuple[tuple[TopicPartition, Failure | None], ...] = ()  # the error, when known


@dataclass(frozen=True, slots=True)
class ProgressFinding(Finding):
    at_ms: int = 0  # LAST_PROGRESS: the snapshot that saw the change; NO_PROGRESS: the history's first


class BreakReason(str, Enum):
    """Why a snapshot is not part of the idle run (going back in time from now)."""

    MEMBERS = "members"  # it had members, or a state other than Empty
    UNREADABLE = "unreadable"  # its committed offsets could not all be read
    OFFSETS_CHANGED = "offsets_changed"  # other committed offsets than now: progress since
    NO_VISIBLE_COMMIT = "no_visible_commit"
    CAUGHT_UP = "caught_up"  # nothing to read on any partition
    LOG_END_UNKNOWN = "log_end_unknown"  # its log end offsets were not read

    @property
    def proves_not_idle(self) -> bool:
        """The group was seen not idle then, so its idle time is less than the time since."""
        return self in (BreakReason.MEMBERS, BreakReason.OFFSETS_CHANGED, BreakReason.CAUGHT_UP)


@dataclass(frozen=True, slots=True)
class IdleBreak:
    reason: BreakReason
    at_ms: int
    state: GroupState | None = None  # MEMBERS: its state then
    members: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason.value,
            "at_ms": self.at_ms,
            "state": None if self.state is None else self.state.value,
            "members": self.members,
        }


@dataclass(frozen=True, slots=True)
class IdleFinding(Finding):
    """The idle rule. The idle time lies in ``[at_least_ms, at_most_ms)``: ``at_least_ms`` from
    the run's first snapshot ``since_ms`` to now (0 without a run); ``at_most_ms`` to the snapshot
    before the run when that one saw the group not idle, else None (unbounded: the run reaches
    back to the history's start, or the snapshot before it cannot tell)."""

    idle_hours: float = 0.0
    since_ms: int | None = None
    at_least_ms: int = 0
    at_most_ms: int | None = None
    before: IdleBreak | None = None


@dataclass(frozen=True, slots=True)
class ExpiryFinding(Finding):
    retention_minutes: int = 0  # offsets.retention.minutes
    empty_since_ms: int | None = None  # Empty since at least this time
    expires_at_ms: int | None = None  # Kafka expires its offsets at or before this time


@dataclass(frozen=True, slots=True)
class GroupEvidence:
    """The rules' answer for one group: its health and every finding behind it, in order (the
    verdict's reason first for a group that is not Empty)."""

    observation: GroupObservation
    health: GroupHealth
    findings: tuple[Finding, ...]
    last_progress_ms: int | None = None  # last time the history saw the committed offsets change
    idle_since_ms: int | None = None  # start of the idle run (Empty, records to read, no progress)
    empty_since_ms: int | None = None  # Empty since at least this time (history)
    expires_at_ms: int | None = None  # Kafka expires its offsets at or before this time (KIP-211)

    @property
    def dead_reasons(self) -> tuple[DeadReason, ...]:
        return tuple(f.reason.dead_reason for f in self.findings if f.reason.dead_reason is not None)

    @property
    def cannot_tell(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.effect is Effect.CANNOT_TELL)

    def finding(self, reason: Reason) -> Finding | None:
        """The first finding with this reason, if any."""
        return next((f for f in self.findings if f.reason is reason), None)

    def reasons(self) -> tuple[Reason, ...]:
        return tuple(f.reason for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "health": self.health.value,
            "findings": [f.to_dict() for f in self.findings],
            "observation": self.observation.to_dict(),
            "last_progress_ms": self.last_progress_ms,
            "idle_since_ms": self.idle_since_ms,
            "empty_since_ms": self.empty_since_ms,
            "expires_at_ms": self.expires_at_ms,
        }
