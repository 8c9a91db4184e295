"""What the lag verdict rules find, as values (:mod:`.verdicts` decides, :mod:`.verdict_text` words
them): the verdict, the reason (the rule that matched) and the numbers it measured. The shape of
:mod:`.deadfindings` for the dead-group rules."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..client.frozen import fast_init

__all__ = ["GroupReason", "Verdict", "VerdictFinding", "VerdictReason"]

_SEVERITY = ("OK", "UNKNOWN", "WARN", "STALL", "STOP", "ABANDONED", "REWIND", "AT_RISK", "LOST")


class Verdict(str, Enum):
    OK = "OK"
    UNKNOWN = "UNKNOWN"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"
    ABANDONED = "ABANDONED"  # the group stopped consuming the topic; its old commits stay behind
    REWIND = "REWIND"
    AT_RISK = "AT_RISK"  # retention may delete records the group has not read before it gets there
    LOST = "LOST"

    @property
    def severity(self) -> int:
        return _SEVERITY.index(self.value)


class VerdictReason(str, Enum):
    """Why a partition got its verdict: the rule that matched (module docstring)."""

    NO_SNAPSHOT = "no_snapshot"  # UNKNOWN: no point at all
    UNREADABLE = "unreadable"  # UNKNOWN: its offsets could not be read at the latest point
    NEVER_COMMITTED = "never_committed"  # STOP: no commit for ``for_ms`` while the log grew by ``grew_by``
    NOTHING_TO_READ = "nothing_to_read"  # OK: no commit, and nothing to read
    NO_COMMIT = "no_commit"  # UNKNOWN: no commit, the lag is unknown under the policy
    BELOW_LOG_START = "below_log_start"  # LOST: ``deleted`` records deleted by retention unread
    WENT_BACK = "went_back"  # REWIND: from ``went_back_from`` to ``committed`` within ``window_ms``
    CAUGHT_UP = "caught_up"  # OK: lag 0
    WITHIN_ALLOWED = "within_allowed"  # OK: lag <= ``allowed_lag``
    TOPIC_LEFT = "topic_left"  # ABANDONED: stuck ``for_ms``, no member assigned the topic meanwhile
    STUCK_WHILE_GROWING = "stuck_while_growing"  # STOP: stuck ``for_ms`` while the log grew by ``grew_by``
    STUCK = "stuck"  # STALL: stuck ``for_ms`` with ``lag`` to read, the log end not moving
    GROWING = (
        "growing"  # WARN: ``slope_per_s`` over ``for_ms``, ``first_lag`` -> ``lag``, ``rises`` of ``steps``
    )
    MOVING = "moving"  # OK: the committed offset moved
    NOT_GROWING = "not_growing"  # OK: enough points, the lag not growing
    MAY_BE_DELETED = (
        "may_be_deleted"  # AT_RISK: ``margin_s`` under ``margin_floor_s`` or ``catch_up_s`` (or never)
    )
    TOO_FEW_POINTS = (
        "too_few_points"  # UNKNOWN: ``points`` of ``points_needed`` in ``window_ms``, nothing moved
    )


@fast_init
@dataclass(frozen=True, slots=True)
class VerdictFinding:
    """What a partition's rule found: the verdict, the reason and the numbers it measured (None:
    not part of this reason). ``log_start_unread``: the log start was not read, so LOST cannot be
    ruled out (an OK becomes UNKNOWN, keeping the reason the other rules found)."""

    verdict: Verdict
    reason: VerdictReason
    committed: int | None = None
    lag: int | None = None
    log_start: int | None = None
    deleted: int | None = None
    went_back_from: int | None = None
    grew_by: int | None = None
    for_ms: int | None = None
    window_ms: int | None = None
    slope_per_s: float | None = None
    first_lag: int | None = None
    rises: int | None = None
    steps: int | None = None
    points: int | None = None
    points_needed: int | None = None
    allowed_lag: int | None = None
    log_start_unread: bool = False
    # AT_RISK: the retention margin (at least), the catch-up time (None with ``never_catches_up``:
    # slower than the producers), the floor; ``then``: the verdict the other rules found
    margin_s: float | None = None
    catch_up_s: float | None = None
    never_catches_up: bool = False
    margin_floor_s: float | None = None
    then: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict.value, "reason": self.reason.value}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name not in out and value is not None and value is not False:
                out[name] = value
        return out


class GroupReason(str, Enum):
    """How a group's verdict was reached."""

    NOT_READ = "not_read"  # UNKNOWN: absent from the latest snapshot
    NO_PARTITIONS = "no_partitions"  # UNKNOWN: no committed offset, no assigned partition
    ALL_OK = "all_ok"  # OK on every partition (more than one)
    WORST_PARTITION = "worst_partition"  # its worst partition's verdict
