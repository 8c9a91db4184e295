"""A group's dead-group evidence with its permission: the report ``kgroups delete``, the cleanup
operator, the hook's ``find_dead_groups`` and the Spark lag-history job share. ``deletable`` is
true only for a dead ``Empty`` group that the patterns allow.

The evidence is :mod:`..lag.deadgroups`' (findings, as values); the permission
:mod:`.permission`'s; the words :mod:`.evidence_text`'s, rendered when asked for.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..client.errors import Failure
from ..client.results import GroupDescription, GroupOffsets, GroupState, TopicExistence
from ..lag.deadfindings import Finding, GroupEvidence, GroupHealth
from ..lag.deadgroup_reads import read_dead_group_evidence
from ..lag.deadgroups import DeadGroupRules, judge_group, judge_groups
from ..lag.model import LagSnapshot
from ..lag.observation import GroupHistoryPoint, GroupObservation
from ..lag.snapshot import now_ms as _now_ms
from .evidence_text import cannot_tell_lines, evidence_lines
from .permission import Permission, permission

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = [
    "GroupHealthReport",
    "DeadGroupsResult",
    "classify",
    "classify_group",
    "classify_groups",
    "find_dead_groups",
]


@dataclass(frozen=True, slots=True)
class GroupHealthReport:
    found: GroupEvidence
    permission: Permission

    @property
    def group_id(self) -> str:
        return self.found.observation.group_id

    @property
    def health(self) -> GroupHealth:
        return self.found.health

    @property
    def state(self) -> GroupState:
        return self.found.observation.state

    @property
    def protocol_type(self) -> str:
        return self.found.observation.protocol_type

    @property
    def group_type(self) -> str:
        return self.found.observation.group_type

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.found.findings

    @property
    def permitted(self) -> bool:
        """The patterns alone allow deleting it (the permission line), whatever the evidence."""
        return self.permission.permitted

    @property
    def deletable(self) -> bool:
        return self.found.health is GroupHealth.DEAD and self.state is GroupState.EMPTY and self.permitted

    @property
    def dead_reasons(self) -> tuple[str, ...]:
        return tuple(r.value for r in self.found.dead_reasons)

    @property
    def evidence(self) -> tuple[str, ...]:
        """evidence[0]: the verdict line; evidence[-1]: the permission line."""
        return evidence_lines(self.found, self.permission)

    @property
    def cannot_tell(self) -> tuple[str, ...]:
        return cannot_tell_lines(self.found)

    @property
    def last_progress_ms(self) -> int | None:
        return self.found.last_progress_ms

    @property
    def idle_since_ms(self) -> int | None:
        return self.found.idle_since_ms

    @property
    def empty_since_ms(self) -> int | None:
        return self.found.empty_since_ms

    @property
    def expires_at_ms(self) -> int | None:
        return self.found.expires_at_ms

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "health": self.health.value,
            "evidence": list(self.evidence),
            "deletable": self.deletable,
            "permitted": self.permitted,
            "state": self.state.value,
            "protocol_type": self.protocol_type,
            "group_type": self.group_type,
            "dead_reasons": list(self.dead_reasons),
            "cannot_tell": list(self.cannot_tell),
            "last_progress_ms": self.last_progress_ms,
            "idle_since_ms": self.idle_since_ms,
            "empty_since_ms": self.empty_since_ms,
            "expires_at_ms": self.expires_at_ms,
            "findings": [f.to_dict() for f in self.findings],
            "permission": self.permission.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class DeadGroupsResult:
    reports: Mapping[str, GroupHealthReport]
    failures: Mapping[str, Failure] = field(default_factory=dict)  # groups that could not be read

    @property
    def deletable(self) -> list[str]:
        return [g for g, r in self.reports.items() if r.deletable]

    def to_dict(self) -> dict[str, Any]:
        return {
            "reports": {g: r.to_dict() for g, r in self.reports.items()},
            "failures": {g: f.to_dict() for g, f in self.failures.items()},
        }


def classify(
    obs: GroupObservation,
    history: Sequence[GroupHistoryPoint],
    rules: DeadGroupRules = DeadGroupRules(),
    *,
    topic_checks: Mapping[str, TopicExistence | Failure] | None = None,
    existing_topics: Collection[str] | None = None,
) -> GroupHealthReport:
    """The evidence of one observed group and its permission (``existing_topics``: the listing,
    for the Streams heuristic and, without ``topic_checks``, the topics rule's cannot-tell)."""
    found = judge_group(obs, history, rules, topic_checks=topic_checks, existing_topics=existing_topics)
    return GroupHealthReport(found, permission(obs.group_id, rules, existing_topics))


def classify_group(
    group_id: str,
    description: GroupDescription,
    offsets: GroupOffsets | None,
    existing_topics: Collection[str] | None,
    history: Sequence[GroupHistoryPoint],
    rules: DeadGroupRules = DeadGroupRules(),
    now_ms: int | None = None,
    *,
    topic_checks: Mapping[str, TopicExistence | Failure] | None = None,
) -> GroupHealthReport:
    """:func:`classify` from a description and committed offsets as the client returns them."""
    obs = GroupObservation.of(
        description, offsets, _now_ms() if now_ms is None else now_ms, group_id=group_id
    )
    return classify(obs, history, rules, topic_checks=topic_checks, existing_topics=existing_topics)


def classify_groups(
    descriptions: Mapping[str, GroupDescription],
    offsets: Mapping[str, GroupOffsets],
    existing_topics: Collection[str] | None,
    history: Iterable[LagSnapshot] = (),
    rules: DeadGroupRules = DeadGroupRules(),
    now_ms: int | None = None,
    failures: Mapping[str, Failure] | None = None,
    *,
    topic_checks: Mapping[str, TopicExistence | Failure] | None = None,
) -> DeadGroupsResult:
    """:func:`classify_group` for every described group; a group whose committed offsets could
    not be read is reported in ``failures``, not guessed at."""
    now = _now_ms() if now_ms is None else now_ms
    evidence, all_failures = judge_groups(
        descriptions,
        offsets,
        history,
        rules,
        now,
        failures=failures,
        topic_checks=topic_checks,
        existing_topics=existing_topics,
    )
    return DeadGroupsResult(
        {g: GroupHealthReport(e, permission(g, rules, existing_topics)) for g, e in evidence.items()},
        all_failures,
    )


async def find_dead_groups(
    client: AsyncGroupsClient,
    group_ids: Iterable[str] | None = None,
    *,
    history: Iterable[LagSnapshot] = (),
    rules: DeadGroupRules = DeadGroupRules(),
    now_ms: int | None = None,
    timeout_s: float | None = None,
) -> DeadGroupsResult:
    """Describe the groups (default: every group the cluster lists), read their committed
    offsets, check their committed topics by name, classify them (:mod:`..lag.deadgroup_reads`)
    and add each one's permission. Nothing is deleted."""
    reads = await read_dead_group_evidence(
        client, group_ids, history=history, rules=rules, now_ms=now_ms, timeout_s=timeout_s
    )
    return DeadGroupsResult(
        {
            g: GroupHealthReport(e, permission(g, rules, reads.listed_topics))
            for g, e in reads.evidence.items()
        },
        reads.failures,
    )
