"""What a run that changes offsets (a reset, an offset deletion) decided and did, group by group:
one value shared by the CLI, the operators' XCom and the audit record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ..client.results import TopicPartition

__all__ = ["BROKER_REFUSAL", "ChangeOutcome", "GroupChangeDecision", "OffsetChangeResult"]

#: ``GroupChangeDecision.refusal`` of a change the broker refused (a plan's refusals name the plan's reason)
BROKER_REFUSAL = "broker"


class ChangeOutcome(str, Enum):
    DONE = "done"  # changed (a real run)
    WOULD_DO = "would_do"  # a dry run's "this is what a real run does"
    REFUSED = "refused"  # not changed: by the plan (members, Connect, a share group, ...) or by the broker
    #                      on every partition (``refusal`` "broker"; ``failed`` and ``kept`` say why)
    SKIPPED = "skipped"  # ready, but not in this run: over the cap, or it changed before the change
    PARTIAL = "partial"  # some partitions changed, some not: ``changed`` and ``failed`` say which
    FAILED = "failed"  # the backup or the change failed

    @property
    def label(self) -> str:
        return {"would_do": "dry run", "done": "done"}.get(self.value, self.value)


@dataclass(frozen=True, slots=True)
class GroupChangeDecision:
    group_id: str
    outcome: ChangeOutcome
    reason: str
    refusal: str | None = (
        None  # the plan's Refusal value when refused or skipped; BROKER_REFUSAL: the broker's
    )
    rows: tuple[Mapping[str, Any], ...] = ()  # the plan's partitions (to_dict form)
    changed: Mapping[TopicPartition, Any] = field(default_factory=dict)  # partition -> what it became
    failed: Mapping[TopicPartition, str] = field(default_factory=dict)  # partition -> why not
    kept: Mapping[TopicPartition, str] = field(
        default_factory=dict
    )  # kept by the broker's rule (not changed)
    via: str = "kafka"  # "kafka" (OffsetCommit / OffsetDelete) or "connect" (KIP-875 REST)

    def becomes(self, outcome: ChangeOutcome, reason: str, **changes: Any) -> GroupChangeDecision:
        return replace(self, outcome=outcome, reason=reason, **changes)

    @property
    def refused_by_broker(self) -> bool:
        return self.outcome is ChangeOutcome.REFUSED and self.refusal == BROKER_REFUSAL

    def line(self) -> str:
        return f"{self.outcome.label.upper():9} {self.group_id}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.outcome.value,
            "reason": self.reason,
            "refusal": self.refusal,
            "partitions": [dict(r) for r in self.rows],
            "via": self.via,
            "changed": {f"{tp.topic}:{tp.partition}": v for tp, v in sorted(self.changed.items())},
            "failed": {f"{tp.topic}:{tp.partition}": v for tp, v in sorted(self.failed.items())},
            "kept": {f"{tp.topic}:{tp.partition}": v for tp, v in sorted(self.kept.items())},
        }


@dataclass(frozen=True, slots=True)
class OffsetChangeResult:
    action: str  # "reset-offsets" / "delete-offsets"
    dry_run: bool
    decisions: Mapping[str, GroupChangeDecision]  # in the order asked
    plan: Mapping[str, Any] = field(default_factory=dict)  # the plan's to_dict (strategy, spec, ...)
    backup_url: str | None = None
    audit_url: str | None = None
    audit_error: str | None = None
    undo: Mapping[str, str] = field(default_factory=dict)  # group -> the backup that undoes its change
    reconciled: tuple[Mapping[str, Any], ...] = ()  # outcomes this run wrote for interrupted runs

    def ids(self, outcome: ChangeOutcome) -> list[str]:
        return [g for g, d in self.decisions.items() if d.outcome is outcome]

    def changed_groups(self) -> list[str]:
        """The groups changed, wholly or in part."""
        return self.ids(ChangeOutcome.DONE) + self.ids(ChangeOutcome.PARTIAL)

    @property
    def ok(self) -> bool:
        """Every group asked was changed (or, in a dry run, would be) and the audit was written."""
        wanted = ChangeOutcome.WOULD_DO if self.dry_run else ChangeOutcome.DONE
        return all(d.outcome is wanted for d in self.decisions.values()) and self.audit_error is None

    def summary(self) -> dict[str, Any]:
        counts = {o.value: len(self.ids(o)) for o in ChangeOutcome}
        return {
            "action": self.action,
            "dry_run": self.dry_run,
            "groups": len(self.decisions),
            **counts,
            "backup_url": self.backup_url,
            "audit_url": self.audit_url,
            "audit_error": self.audit_error,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "plan": dict(self.plan),
            "undo": dict(self.undo),
            "reconciled": [dict(r) for r in self.reconciled],
            "decisions": {g: d.to_dict() for g, d in self.decisions.items()},
        }
