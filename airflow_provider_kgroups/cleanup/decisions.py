"""One decision per group, with the reason: what a plan says and what a run did."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

__all__ = ["Outcome", "GroupDecision", "CleanupResult"]


class Outcome(str, Enum):
    DELETED = "deleted"  # gone (a real run); how, in ``deletion``
    WOULD_DELETE = "would_delete"  # a dry run's (or a plan's) "this one goes"
    KEEP = "keep"  # not deleted, by the rules or the evidence (``health`` None: could not be judged)
    SKIP = "skip"  # deletable, but not in this run: over the cap, or it changed before the delete
    REFUSED = (
        "refused"  # the broker refused the deletion (NON_EMPTY_GROUP: a member joined after the last check)
    )
    NOT_FOUND = "not_found"  # no such group (Kafka describes it as Dead, or answers GROUP_ID_NOT_FOUND)
    FAILED = "failed"  # a deletion (or its backup) failed unexpectedly

    @property
    def label(self) -> str:
        return {
            "keep": "kept",
            "skip": "skipped",
            "would_delete": "would delete",
            "not_found": "not found",
        }.get(self.value, self.value)


@dataclass(frozen=True, slots=True)
class GroupDecision:
    group_id: str
    outcome: Outcome
    reason: str
    health: str | None = None  # the evidence's verdict (active/paused/dead); None: not judged
    selected_by: str = "pattern"  # "name" (named explicitly) or "pattern" (judged by the evidence)
    evidence: tuple[str, ...] = ()
    cannot_tell: tuple[str, ...] = ()
    dead_reasons: tuple[str, ...] = ()
    connect: Mapping[str, Any] | None = None  # the Kafka Connect verdict, when Connect was asked
    deletion: str | None = None  # a GroupDeletion value when deleted
    findings: tuple[Any, ...] = ()  # the evidence as values (lag.deadfindings), rendered in ``evidence``
    order_key: tuple[Any, ...] = field(
        default=(), compare=False, repr=False
    )  # candidates: who goes first under a cap

    @property
    def unjudged(self) -> bool:
        """Kept because it could not be read: the run cannot say it is fine."""
        return self.outcome is Outcome.KEEP and self.health is None

    def becomes(self, outcome: Outcome, reason: str, **changes: Any) -> GroupDecision:
        return replace(self, outcome=outcome, reason=reason, **changes)

    def line(self) -> str:
        """One log line."""
        return f"{self.outcome.label.upper():12} {self.group_id}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.outcome.value,
            "reason": self.reason,
            "health": self.health,
            "selected_by": self.selected_by,
            "evidence": list(self.evidence),
            "cannot_tell": list(self.cannot_tell),
            "dead_reasons": list(self.dead_reasons),
            "connect": None if self.connect is None else dict(self.connect),
            "deletion": self.deletion,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True, slots=True)
class CleanupResult:
    dry_run: bool
    decisions: Mapping[str, GroupDecision]  # in the order decided
    cap: int
    candidates: int
    backup_url: str | None = None
    audit_url: str | None = None
    audit_error: str | None = None  # the audit record could not be written (the run is not fine)
    held: tuple[str, ...] = ()  # kept only because a configured Kafka Connect cluster could not be read
    connect_unreadable: tuple[str, ...] = ()  # those clusters' URLs
    #: group -> the backup that undoes this run's deletion of it (an interrupted earlier run's, when
    #: that run changed it first)
    undo: Mapping[str, str] = field(default_factory=dict)
    reconciled: tuple[Mapping[str, Any], ...] = ()  # outcomes this run wrote for interrupted runs

    def ids(self, outcome: Outcome) -> list[str]:
        return sorted(g for g, d in self.decisions.items() if d.outcome is outcome)

    @property
    def failed(self) -> list[str]:
        return self.ids(Outcome.FAILED)

    @property
    def refused(self) -> list[str]:
        return self.ids(Outcome.REFUSED)

    @property
    def unjudged(self) -> list[str]:
        return sorted(g for g, d in self.decisions.items() if d.unjudged)

    @property
    def ok(self) -> bool:
        """Nothing failed or was refused by the broker, every group could be judged, and no deletion
        was held for want of evidence."""
        return (
            not self.failed
            and not self.refused
            and not self.unjudged
            and not self.held
            and self.audit_error is None
        )

    def kept_by_health(self) -> dict[str, int]:
        kept: dict[str, int] = {}
        for d in self.decisions.values():
            if d.outcome is Outcome.KEEP:
                kept[d.health or "unread"] = kept.get(d.health or "unread", 0) + 1
        return kept

    def summary(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "examined": len(self.decisions),
            "candidates": self.candidates,
            "cap": self.cap,
            "deleted": self.ids(Outcome.DELETED),
            "would_delete": self.ids(Outcome.WOULD_DELETE),
            "skipped": self.ids(Outcome.SKIP),
            "refused": self.refused,
            "failed": self.failed,
            "not_found": self.ids(Outcome.NOT_FOUND),
            "unjudged": self.unjudged,
            "kept": self.kept_by_health(),
            "held": sorted(self.held),
            "connect_unreadable": list(self.connect_unreadable),
            "backup_url": self.backup_url,
            "audit_url": self.audit_url,
            "audit_error": self.audit_error,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "undo": dict(self.undo),
            "reconciled": [dict(r) for r in self.reconciled],
            "decisions": {g: d.to_dict() for g, d in self.decisions.items()},
        }
