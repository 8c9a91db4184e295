"""The plan: select -> the evidence (one read of every group) -> Connect -> permission -> the
Connect hold -> caps -> one decision per group. Nothing is changed; a dry run prints exactly this.

Selection semantics:

* a pattern (or the operator's ``group_ids`` scope) selects only groups the evidence calls
  dead (and the patterns allow);
* a group **named** explicitly is deleted when it is Empty without members, whatever the
  evidence says (the evidence is reported: the name is the user's decision), still behind the
  deny lists unless ``override_deny`` names it too;
* a group Kafka describes as Dead does not exist: **not found**, never "would delete";
* with Kafka Connect evidence: a connector that is running, paused, stopped, failed or
  unassigned keeps its group, and so does Connect being unreadable (fail closed); a connector
  that no longer exists in any configured Connect cluster is evidence of death and lifts the
  default ``connect-*`` deny for that group only. Without Connect, ``connect-*`` groups stay
  protected by the default deny.
* a configured Connect cluster that cannot be read **holds the run**: a group named by one of
  its connectors' ``consumer.override.group.id`` cannot be recognised, so every group that
  would go is kept, naming the cluster, unless ``delete_despite_unreadable_connect`` says
  otherwise.
* caps: at most ``max_deletions`` and ``max_deletions_percent`` % of the candidates (rounded
  up) per run: named groups first, then the longest idle; the rest wait ("skip", next run).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..client.selection import select_groups
from ..lag.deadfindings import GroupHealth
from ..lag.deadgroup_reads import DeadGroupReads, read_dead_group_evidence
from ..lag.deadgroups import NOT_JUDGED_GROUP_TYPES, DeadGroupRules
from ..lag.model import LagSnapshot
from ..lag.snapshot import now_ms as _now_ms
from .decisions import GroupDecision, Outcome
from .permission import PermissionReason, denied_by, first_match, permission
from .policy import CONNECT_DENY_PATTERN, CleanupPolicy
from .report import GroupHealthReport
from .risk_hold import keep_at_risk

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient
    from ..connect import ConnectEvidence, ConnectVerdict

__all__ = ["CleanupPlan", "plan_cleanup", "HistorySource"]

#: ``(group ids, since epoch ms) -> snapshots``: the stored history (e.g. ``HistoryStore.read_window``).
HistorySource = Callable[[list[str], int], Iterable[LagSnapshot]]

_KEEPING_CONNECT = ("ACTIVE", "KEEP", "UNAVAILABLE")
_CONNECTOR_GONE = "CONNECTOR_GONE"
_DEFAULT, _OVERRIDDEN, _CONNECT_GONE = "default", "override_deny", "connector_gone"


@dataclass(frozen=True, slots=True)
class CleanupPlan:
    policy: CleanupPolicy
    decisions: Mapping[str, GroupDecision]  # every examined group, in selection order
    chosen: tuple[str, ...]  # the groups to delete, in order (their decision: would_delete)
    cap: int
    candidates: int
    reports: Mapping[str, GroupHealthReport]
    #: groups kept only because a configured Kafka Connect cluster could not be read
    held: tuple[str, ...] = ()
    connect_unreadable: tuple[str, ...] = ()  # those clusters' URLs


def _status(verdict: Any) -> str:
    status = verdict.status
    return str(getattr(status, "name", status)).upper()


def _connect_dict(verdict: Any) -> dict[str, Any]:
    status = verdict.status
    return {
        "status": str(getattr(status, "value", status)),
        "reason": verdict.reason,
        "connector": verdict.connector,
        "cluster_url": verdict.cluster_url,
    }


def _reason(report: GroupHealthReport) -> str:
    """The verdict line and the permission line of the evidence."""
    text = "; ".join(dict.fromkeys([report.evidence[0], report.evidence[-1]]))
    health = report.health.value
    return text if text.startswith(f"{health}:") else f"{health}: {text}"


def _denied_by(policy: CleanupPolicy, group_id: str) -> str:
    denied = denied_by(group_id, policy.rules)
    if denied is None:
        return "any deny (none matched it)"
    kind = "deny" if denied.reason is PermissionReason.DENY else "default deny"
    return f"the {kind} pattern {denied.pattern!r}"


async def plan_cleanup(
    aclient: AsyncGroupsClient,
    policy: CleanupPolicy,
    *,
    history: HistorySource | None = None,
    connect: ConnectEvidence | None = None,
    now_ms: int | None = None,
) -> CleanupPlan:
    """Decide, for every selected group, what a run does with it. ``connect``: a
    ``ConnectEvidence`` (``for_group(id)``), or None when no Connect cluster is configured."""
    now = _now_ms() if now_ms is None else now_ms
    ids = await _selected(aclient, policy)
    if not ids:
        return CleanupPlan(policy, {}, (), policy.cap(0), 0, {})
    snapshots: list[LagSnapshot] = []
    if history is not None:
        since = max(0, now - int(2 * policy.rules.idle_hours * 3_600_000))
        snapshots = list(await asyncio.to_thread(history, ids, since))
    reads = await read_dead_group_evidence(aclient, ids, history=snapshots, rules=policy.rules, now_ms=now)
    rules_of = {
        _DEFAULT: policy.rules,
        _OVERRIDDEN: policy.rules_overridden(),
        _CONNECT_GONE: policy.rules_connector_gone(),
    }
    named = set(policy.named)
    decisions: dict[str, GroupDecision] = {}
    reports: dict[str, GroupHealthReport] = {}
    for g in ids:
        by = "name" if g in named else "pattern"
        decisions[g], report = _judged(g, by, policy, rules_of, reads, connect)
        if report is not None:
            reports[g] = report
    candidates = [d for d in decisions.values() if d.outcome is Outcome.WOULD_DELETE]
    candidates, held = _connect_hold(candidates, decisions, connect, policy)
    candidates, at_risk = await keep_at_risk(aclient, candidates, snapshots)
    decisions.update((d.group_id, d) for d in at_risk)
    chosen, cap = _capped(candidates, decisions, policy)
    unreadable = tuple(f.cluster_url for f in (connect.failures if connect is not None else ()))
    return CleanupPlan(policy, decisions, chosen, cap, len(candidates), reports, held, unreadable)


async def _selected(aclient: AsyncGroupsClient, policy: CleanupPolicy) -> list[str]:
    """The groups named, then those the selector selects (each once)."""
    judged: list[str] = []
    if policy.selector is not None:
        judged = await select_groups(aclient, policy.selector)
    return list(dict.fromkeys([*policy.named, *judged]))


def _judged(
    g: str,
    by: str,
    policy: CleanupPolicy,
    rules_of: Mapping[str, DeadGroupRules],
    reads: DeadGroupReads,
    connect: ConnectEvidence | None,
) -> tuple[GroupDecision, GroupHealthReport | None]:
    """The group's decision (``by``: "name" or "pattern") from its evidence, Kafka Connect's word
    and the rules its permission is judged by (``rules_of`` its variant), and its report (None: it
    could not be read)."""
    found = reads.evidence.get(g)
    # with the protocol type when known: a Connect worker group (protocol "connect") is kept
    verdict = (
        None
        if connect is None
        else connect.for_group(
            g, **({} if found is None else {"protocol_type": found.observation.protocol_type})
        )
    )
    connect_info = _connect_dict(verdict) if verdict is not None else None
    if found is None:
        why = reads.failures.get(g, "not described")
        return GroupDecision(
            g, Outcome.KEEP, f"could not be read, so not judged: {why}", None, by, connect=connect_info
        ), None
    if g in policy.override_deny:
        variant = _OVERRIDDEN
    elif verdict is not None and _status(verdict) == _CONNECTOR_GONE:
        variant = _CONNECT_GONE
    else:
        variant = _DEFAULT
    report = GroupHealthReport(found, permission(g, rules_of[variant], reads.listed_topics))
    base = dict(
        health=report.health.value,
        selected_by=by,
        evidence=report.evidence,
        cannot_tell=report.cannot_tell,
        dead_reasons=report.dead_reasons,
        connect=connect_info,
        findings=report.findings,
    )
    return _decide(g, report, policy, variant, verdict, by, base), report


def _connect_hold(
    candidates: list[GroupDecision],
    decisions: dict[str, GroupDecision],
    connect: ConnectEvidence | None,
    policy: CleanupPolicy,
) -> tuple[list[GroupDecision], tuple[str, ...]]:
    """With a Kafka Connect cluster unreadable, the candidates are held (kept), unless the policy
    deletes despite it: (the candidates left, the groups held)."""
    failures = connect.failures if connect is not None else ()
    if not failures or not candidates:
        return candidates, ()
    why = "; ".join(f"{f.cluster_url}: {f.reason}" for f in failures)
    if policy.delete_despite_unreadable_connect:
        candidates = [
            d.becomes(
                d.outcome,
                f"{d.reason}; Kafka Connect could not be read ({why}): deleted "
                "anyway (delete_despite_unreadable_connect)",
            )
            for d in candidates
        ]
        decisions.update((d.group_id, d) for d in candidates)
        return candidates, ()
    for d in candidates:
        decisions[d.group_id] = d.becomes(
            Outcome.KEEP,
            (
                f"held: Kafka Connect could not be read ({why}), so a group named by a connector's "
                "consumer.override.group.id there cannot be recognised and nothing is deleted in this run "
                "(delete_despite_unreadable_connect / --delete-despite-unreadable-connect deletes anyway); "
                f"without the hold: {d.reason}"
            ),
        )
    return [], tuple(d.group_id for d in candidates)


def _capped(
    candidates: list[GroupDecision], decisions: dict[str, GroupDecision], policy: CleanupPolicy
) -> tuple[tuple[str, ...], int]:
    """(the candidates chosen within the run's cap, first first; the cap); the others are skipped."""
    cap = policy.cap(len(candidates))
    candidates.sort(key=lambda d: d.order_key)
    for d in candidates[cap:]:
        decisions[d.group_id] = d.becomes(
            Outcome.SKIP,
            (
                f"deletable, but over this run's cap of {cap} deletion(s) (max_deletions={policy.max_deletions}, "
                f"max_deletions_percent={policy.max_deletions_percent:g} of {len(candidates)} candidate(s)): next run; "
                f"{d.reason}"
            ),
        )
    return tuple(d.group_id for d in candidates[:cap]), cap


def _decide(
    g: str,
    report: GroupHealthReport,
    policy: CleanupPolicy,
    variant: str,
    verdict: ConnectVerdict | None,
    by: str,
    base: dict[str, Any],
) -> GroupDecision:
    def keep(reason: str) -> GroupDecision:
        return GroupDecision(g, Outcome.KEEP, reason, **base)

    if report.state.value == "Dead":
        return GroupDecision(
            g,
            Outcome.NOT_FOUND,
            "not found: Kafka describes it as Dead (no such group, or its "
            "offsets already expired): nothing to delete",
            **base,
        )
    if verdict is not None and _status(verdict) in _KEEPING_CONNECT:
        return keep(f"Kafka Connect: {verdict.reason}")
    if report.health is GroupHealth.ACTIVE:
        return keep(_reason(report))
    if report.group_type in NOT_JUDGED_GROUP_TYPES:
        return keep(_reason(report))
    if not report.permitted:
        return keep(_reason(report))
    return _deletable(g, report, policy, variant, verdict, by, base) or keep(_reason(report))


def _deletable(
    g: str,
    report: GroupHealthReport,
    policy: CleanupPolicy,
    variant: str,
    verdict: ConnectVerdict | None,
    by: str,
    base: dict[str, Any],
) -> GroupDecision | None:
    """A permitted group's would-delete decision: named, dead by the evidence, or its connector gone
    (None: nothing says it is abandoned)."""
    gone = verdict if verdict is not None and _status(verdict) == _CONNECTOR_GONE else None
    lifted = ""
    if variant == _OVERRIDDEN:
        lifted = f"; {_denied_by(policy, g)} overridden by name (override_deny)"
    elif variant == _CONNECT_GONE and first_match(policy.rules.default_deny, g) == CONNECT_DENY_PATTERN:
        lifted = f"; the default deny pattern {CONNECT_DENY_PATTERN!r} lifted by Kafka Connect evidence"
    idle_key = report.idle_since_ms if report.idle_since_ms is not None else (report.last_progress_ms or 0)
    if by == "name":
        return GroupDecision(
            g,
            Outcome.WOULD_DELETE,
            (
                f"named explicitly: Empty with no members (the evidence says {report.evidence[0]!r}); "
                f"{report.evidence[-1]}{lifted}"
            ),
            order_key=(0, policy.named.index(g)),
            **base,
        )
    if report.health is GroupHealth.DEAD:
        extra = f"; Kafka Connect: {gone.reason}" if gone is not None else ""
        return GroupDecision(
            g, Outcome.WOULD_DELETE, f"{_reason(report)}{extra}{lifted}", order_key=(1, idle_key, g), **base
        )
    if gone is not None:
        base = {
            **base,
            "health": GroupHealth.DEAD.value,
            "dead_reasons": (*report.dead_reasons, "connector_gone"),
        }
        return GroupDecision(
            g,
            Outcome.WOULD_DELETE,
            (f"dead: Kafka Connect: {gone.reason}; {report.evidence[-1]}{lifted}"),
            order_key=(1, idle_key, g),
            **base,
        )
    return None
