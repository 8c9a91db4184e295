"""Resetting committed offsets through the cleanup's safety path: plan -> Kafka Connect -> cap ->
(dry run: stop) -> describe again, check the offsets did not move, back up (read back), commit,
read back -> audit.

* The plan (:func:`..offsets.plan.plan_reset`) refuses a group with members, a share or streams
  group, and anything it could not read; a dry run prints exactly the plan a real run commits.
* Kafka Connect: a sink connector's group is never committed to directly (the worker owns it
  and would overwrite, or be confused by, an outside commit). With Connect evidence the plan
  names the sanctioned way, ``PATCH /connectors/{name}/offsets`` on a STOPPED connector
  (KIP-875), and ``via_connect=True`` uses it. A ``connect-*`` group that Kafka Connect cannot
  vouch for (no cluster configured, or unreadable) is refused: it may be one.
* The commit is OffsetCommit as an administrator (generation/member epoch -1, empty member id:
  ``AlterConsumerGroupOffsetsHandler``), one request per group, all groups at once; each
  partition's answer is kept, and what a group got is read back.
* The audit record says exactly what was committed, partition by partition, and the undo:
  ``kgroups restore <backup>`` (which also removes offsets the group did not have before).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..client import stepmarks
from ..client.errors import ConfigurationError
from ..client.numbers import check_int
from ..client.results import GroupOffsets, KeyedResults, TopicPartition
from ..offsets.plan import GroupReset, Refusal, ResetPlan, plan_reset
from ..offsets.spec import ResetSpec
from .context import ChangeContext
from .guard import Step, StepDetail, StepResult, Words, read_offsets
from .intent import Intent
from .offset_results import ChangeOutcome, GroupChangeDecision, OffsetChangeResult
from .offsets_audit import change_record
from .workflow import Guarded, run_workflow

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient
    from ..client.offset_verbs import PartitionOutcomes
    from ..connect import ConnectClusterConfig, ConnectEvidence, ConnectorRecord

__all__ = ["ResetOptions", "run_reset"]

CONNECT_PREFIX = "connect-"


@dataclass(frozen=True, slots=True)
class ResetOptions:
    """:param dry_run: plan and report, change nothing (the default).
    :param max_groups: at most this many groups reset per run (None: no cap; a pattern selection
        that executes must set one).
    :param via_connect: reset a Kafka Connect sink connector's group through Connect's REST API
        (KIP-875) when its connector is STOPPED, instead of refusing it.
    :param forward_only: refuse a group whose plan moves a committed offset back (a progress
        commit after a rerun of an older range)."""

    dry_run: bool = True
    max_groups: int | None = None
    via_connect: bool = False
    forward_only: bool = False

    def __post_init__(self) -> None:
        if not all(isinstance(v, bool) for v in (self.dry_run, self.via_connect, self.forward_only)):
            raise ConfigurationError("dry_run, via_connect and forward_only must be True or False.")
        if self.max_groups is not None:
            check_int("max_groups", self.max_groups, at_least=1, must_be="a whole number >= 1")


def _sink_records(evidence: ConnectEvidence, group_id: str) -> list[ConnectorRecord]:
    return [r for r in evidence.connectors if r.type != "source" and r.group_id == group_id]


def _connect_check(
    plan: ResetPlan, evidence: ConnectEvidence | None, via_connect: bool
) -> tuple[dict[str, GroupReset], dict[str, ConnectorRecord]]:
    """The plan's groups with Connect's refusals added, and the groups to reset via Connect
    (group -> (connector record))."""
    groups, via = dict(plan.groups), {}
    for g, group in plan.groups.items():
        sinks = _sink_records(evidence, g) if evidence is not None else []
        # A running or PAUSED connector's tasks are the group's members (a paused sink task keeps its
        # consumer in the group): "has members" is true but says less than how Connect resets it.
        if not group.ok and not (
            group.refusal is Refusal.HAS_MEMBERS and any(r.state != "STOPPED" for r in sinks)
        ):
            continue
        if evidence is None:
            if g.startswith(CONNECT_PREFIX):
                groups[g] = group.refused(
                    Refusal.CONNECT_UNKNOWN,
                    "no Kafka Connect cluster is configured to tell (give --connect-url / connect_conn_ids)",
                )
            continue
        if sinks:
            record = sinks[0]
            target = f"{record.cluster_url}/connectors/{record.name}"
            if via_connect and record.state == "STOPPED" and len(sinks) == 1 and group.ok:
                via[g] = record
                continue
            how = (
                "and reset-offsets was not asked to go through Connect (--via-connect)"
                if not via_connect
                else f"its connector is {record.state}, not STOPPED: stop it first (PUT {target}/stop)"
            )
            groups[g] = group.refused(
                Refusal.CONNECT_SINK,
                (
                    f"connector {record.name!r} on {record.cluster_url} owns it ({record.state}); commit through Kafka "
                    f"Connect instead: PATCH {target}/offsets while the connector is STOPPED (KIP-875, Kafka 3.6+), "
                    f"{how}"
                ),
            )
            continue
        verdict = evidence.for_group(g, protocol_type=group.protocol_type or None)
        if verdict is not None and getattr(verdict.status, "value", verdict.status) == "unavailable":
            groups[g] = group.refused(Refusal.CONNECT_UNKNOWN, verdict.reason)
    return groups, via


class ResetChange:
    """Committing a plan's offsets, through :func:`.guard.guarded`."""

    words = Words("reset", "resetting", "reset")
    absent_ok = True  # Kafka creates the group (Empty) on an administrator's first commit
    needs_empty = True  # the broker refuses an administrator's commit into a group with members

    def __init__(
        self,
        groups: Mapping[str, GroupReset],
        via: Mapping[str, ConnectorRecord],
        clusters: Sequence[ConnectClusterConfig],
        connect_timeout_s: float,
    ) -> None:
        self._groups, self._via, self._clusters, self._timeout = groups, via, clusters, connect_timeout_s
        self.share_groups = frozenset(g for g, r in groups.items() if r.is_share)

    async def read_offsets(
        self, aclient: AsyncGroupsClient, group_ids: list[str]
    ) -> KeyedResults[str, GroupOffsets]:
        """Committed offsets, and a share group's start offsets (DescribeShareGroupOffsets)."""
        return await read_offsets(aclient, group_ids, self.share_groups)

    def backup_scope(self, group_id: str) -> frozenset[TopicPartition]:
        return frozenset(p.tp for p in self._groups[group_id].partitions)

    def moved(self, group_id: str, offsets: GroupOffsets) -> str | None:
        planned = self._groups[group_id].current
        now = offsets.committed()
        scope = {p.tp for p in self._groups[group_id].partitions}
        diff = [
            f"{tp}: {planned.get(tp)} -> {now.get(tp)}"
            for tp in sorted(scope)
            if planned.get(tp) != now.get(tp)
        ]
        return f"its committed offsets moved since the plan ({', '.join(diff)})" if diff else None

    def intent(self, group_id: str) -> Intent:
        via = "connect" if group_id in self._via else "share" if group_id in self.share_groups else "kafka"
        return Intent.commit(self._groups[group_id].targets(), via=via)

    async def apply(
        self, aclient: AsyncGroupsClient, group_ids: list[str], backup_url: str | None
    ) -> dict[str, Step]:
        direct = [g for g in group_ids if g not in self._via and g not in self.share_groups]
        shares = [g for g in group_ids if g in self.share_groups]
        steps: dict[str, Step] = {}
        if direct:
            results = await aclient.commit_group_offsets({g: self._groups[g].targets() for g in direct})
            stepmarks.reached("change_answered")
            read_back = await aclient.fetch_committed_offsets(direct)
            for g in direct:
                steps[g] = _step(g, self._groups[g].targets(), results, read_back)
        if shares:  # a share group's start offsets (AlterShareGroupOffsets, KIP-932)
            results = await aclient.alter_share_group_offsets({g: self._groups[g].targets() for g in shares})
            shares_back = await read_offsets(aclient, shares, shares)
            for g in shares:
                steps[g] = _step(g, self._groups[g].targets(), results, shares_back)
        via = [g for g in group_ids if g in self._via]
        for g in via:
            steps[g] = await asyncio.to_thread(self._through_connect, g)
        altered = [g for g in via if steps[g].result is StepResult.DONE]
        if altered:  # Connect's word is second-hand: the group's own offsets say what was committed
            read_back = await aclient.fetch_committed_offsets(altered)
            for g in altered:
                steps[g] = _connect_read_back(steps[g], self._groups[g].targets(), read_back)
        return steps

    def _through_connect(self, group_id: str) -> Step:
        from ..connect.offsets import ConnectWriteError, alter_sink_offsets

        record = self._via[group_id]
        cluster = next(c for c in self._clusters if c.url == record.cluster_url)
        targets = self._groups[group_id].targets()
        try:
            message = alter_sink_offsets(cluster, record.name, targets, self._timeout)
        except ConnectWriteError as exc:
            return Step(
                group_id,
                StepResult.FAILED,
                f"Kafka Connect did not alter the offsets: {exc}",
                StepDetail(failed={tp: str(exc) for tp in targets}),
            )
        return Step(
            group_id,
            StepResult.DONE,
            f"reset through Kafka Connect (connector {record.name!r}): {message}",
            StepDetail(changed=targets),
        )


def _step(
    group_id: str,
    targets: Mapping[TopicPartition, int],
    results: KeyedResults[str, PartitionOutcomes],
    read_back: KeyedResults[str, GroupOffsets],
) -> Step:
    if group_id in results.failures:
        failure = results.failures[group_id]
        return Step(
            group_id,
            StepResult.FAILED,
            f"the commit failed: {failure}",
            StepDetail(failed={tp: str(failure) for tp in targets}),
        )
    answers = results.values[group_id]
    failed = {tp: str(f) for tp, f in answers.items() if f is not None}
    changed = {tp: targets[tp] for tp, f in answers.items() if f is None}
    if not failed:
        seen = _read(group_id, read_back)
        mismatch = (
            []
            if seen is None
            else [f"{tp} reads {seen.get(tp)}" for tp in sorted(changed) if seen.get(tp) != changed[tp]]
        )
        check = (
            f"; read back: {', '.join(mismatch)} (changed again since the commit)"
            if mismatch
            else "; read back"
            if seen is not None
            else "; could not be read back"
        )
        return Step(
            group_id,
            StepResult.DONE,
            f"committed {len(changed)} partition(s){check}",
            StepDetail(changed=changed),
        )
    if not changed:
        return Step(
            group_id,
            StepResult.FAILED,
            f"every partition's commit failed ({next(iter(failed.values()))})",
            StepDetail(failed=failed),
        )
    listed = ", ".join(f"{tp} {why}" for tp, why in sorted(failed.items()))
    return Step(
        group_id,
        StepResult.PARTIAL,
        f"committed {len(changed)} partition(s), {len(failed)} failed: {listed}",
        StepDetail(changed=changed, failed=failed),
    )


def _read(group_id: str, read_back: KeyedResults[str, GroupOffsets]) -> dict[TopicPartition, int] | None:
    return read_back.values[group_id].committed() if group_id in read_back.values else None


def _connect_read_back(
    step: Step, targets: Mapping[TopicPartition, int], read_back: KeyedResults[str, GroupOffsets]
) -> Step:
    """A Connect reset as the group reads after it. Connect answers the PATCH once the admin client's
    alterConsumerGroupOffsets has completed (``Worker.alterSinkConnectorOffsets``) and the connector
    is STOPPED, so a partition that reads otherwise was not committed: the audit says so."""
    seen = _read(step.group_id, read_back)
    if seen is None:
        failure = read_back.failures.get(step.group_id)
        return Step(
            step.group_id, step.result, f"{step.reason}; could not be read back ({failure})", step.detail
        )
    changed = {tp: o for tp, o in targets.items() if seen.get(tp) == o}
    failed = {
        tp: f"Kafka Connect answered success but the group reads {seen.get(tp)}, not {o}"
        for tp, o in targets.items()
        if seen.get(tp) != o
    }
    if not failed:
        return Step(step.group_id, StepResult.DONE, f"{step.reason}; read back", StepDetail(changed=changed))
    listed = ", ".join(f"{tp}: {why}" for tp, why in sorted(failed.items()))
    result = StepResult.PARTIAL if changed else StepResult.FAILED
    return Step(
        step.group_id,
        result,
        f"{step.reason}; read back: {listed}",
        StepDetail(changed=changed, failed=failed),
    )


_OUTCOME = {
    StepResult.DONE: ChangeOutcome.DONE,
    StepResult.PARTIAL: ChangeOutcome.PARTIAL,
    StepResult.CHANGED: ChangeOutcome.SKIPPED,
    StepResult.GONE: ChangeOutcome.SKIPPED,
    StepResult.FAILED: ChangeOutcome.FAILED,
}


@dataclass(frozen=True, slots=True)
class ReadyReset:
    """The reset's plan once Kafka Connect, the rewind rule and the cap have had their say: every
    group's reset (refused or not), the groups to reset through Connect (group -> connector
    record), those a real run resets, in order."""

    groups: Mapping[str, GroupReset]
    via: Mapping[str, ConnectorRecord]
    ready: tuple[str, ...]
    planned_at_ms: int


@dataclass(frozen=True, slots=True)
class ResetWorkflow:
    """Resetting ``group_ids`` to ``spec``'s offsets, as a change workflow (:mod:`.workflow`)."""

    spec: ResetSpec
    group_ids: tuple[str, ...]
    options: ResetOptions
    action: str = "reset-offsets"

    @property
    def dry_run(self) -> bool:
        return self.options.dry_run

    async def plan(self, context: ChangeContext, started_ms: int) -> ReadyReset:
        evidence = await context.connect_evidence()
        plan = await plan_reset(context.client, self.spec, list(self.group_ids), now_ms=started_ms)
        groups, via = _connect_check(plan, evidence, self.options.via_connect)
        if self.options.forward_only:
            _refuse_rewinds(groups)
        ready = _capped(groups, self.options.max_groups)
        return ReadyReset(groups, via, ready, started_ms)

    def guarded(self, context: ChangeContext, plan: ReadyReset) -> Guarded:
        groups = plan.groups
        change = ResetChange(groups, plan.via, context.connect_clusters, context.connect_timeout_s)
        absent = {
            g: [p.tp for p in groups[g].partitions if p.tp not in groups[g].current]
            for g in plan.ready
            if not groups[g].is_share
        }  # a share-partition's start offset cannot be taken back
        return Guarded(change, plan.ready, absent)

    def result(
        self, plan: ReadyReset, steps: Mapping[str, Step], backup_url: str | None
    ) -> OffsetChangeResult:
        decisions = {g: _planned(r, g in plan.via) for g, r in plan.groups.items()}
        for g, step in steps.items():
            decisions[g] = decisions[g].becomes(_OUTCOME[step.result], step.reason, **step.detail.changes())
        plan_doc = {
            "strategy": self.spec.describe(plan.planned_at_ms),
            "spec": self.spec.to_dict(),
            "planned_at_ms": plan.planned_at_ms,
        }
        return OffsetChangeResult(self.action, self.dry_run, decisions, plan_doc, backup_url)

    def changed(self, result: OffsetChangeResult) -> list[str]:
        return result.changed_groups()

    def record(
        self,
        context: ChangeContext,
        plan: ReadyReset,
        result: OffsetChangeResult,
        started_ms: int,
        run_fields: Mapping[str, Any],
    ) -> dict[str, Any]:
        options = self.options
        return change_record(
            context,
            result,
            started_ms,
            run_fields,
            extra={
                "connect_clusters": [c.url for c in context.connect_clusters],
                "options": {
                    "max_groups": options.max_groups,
                    "via_connect": options.via_connect,
                    "forward_only": options.forward_only,
                },
            },
        )


def _refuse_rewinds(groups: dict[str, GroupReset]) -> None:
    """Refuse the groups whose plan moves a committed offset back (``forward_only``)."""
    for g, r in groups.items():
        back = [
            f"{p.tp} from {p.current} to {p.target}"
            for p in r.partitions
            if p.current is not None and p.target < p.current
        ]
        if r.ok and back:
            groups[g] = r.refused(Refusal.REWIND, ", ".join(back))


def _capped(groups: dict[str, GroupReset], max_groups: int | None) -> tuple[str, ...]:
    """The groups ready to reset within the cap; those over it are refused OVER_CAP (next run)."""
    ready = [g for g, r in groups.items() if r.ok]
    if max_groups is not None and len(ready) > max_groups:
        for g in ready[max_groups:]:
            groups[g] = groups[g].refused(
                Refusal.OVER_CAP,
                f"at most {max_groups} group(s) per run (max_groups); {len(ready)} were ready: next run",
            )
        ready = ready[:max_groups]
    return tuple(ready)


async def run_reset(
    context: ChangeContext,
    spec: ResetSpec,
    group_ids: Sequence[str],
    options: ResetOptions = ResetOptions(),
    *,
    now_ms: int | None = None,
    action: str | None = None,
) -> OffsetChangeResult:
    """Plan the reset of ``group_ids``; unless ``options.dry_run``, carry it out through the safety
    path; write an audit record under ``context.audit_base_url`` (None: none), with the write-ahead
    intent before the change (:mod:`.writeahead`). ``action``: the audit's name of it (default
    reset-offsets)."""
    workflow = ResetWorkflow(spec, tuple(group_ids), options, action or "reset-offsets")
    return await run_workflow(context, workflow, now_ms=now_ms)


def _planned(group: GroupReset, via_connect: bool) -> GroupChangeDecision:
    rows = tuple(p.to_dict() for p in group.partitions)
    if group.refusal is not None:  # not group.ok
        skipped = group.refusal is Refusal.OVER_CAP
        return GroupChangeDecision(
            group.group_id,
            ChangeOutcome.SKIPPED if skipped else ChangeOutcome.REFUSED,
            group.reason(),
            group.refusal.value,
            rows,
        )
    how = " through Kafka Connect (KIP-875)" if via_connect else ""
    new = "" if group.exists else " (a new group: the commit creates it, Empty)"
    reason = f"{len(group.partitions)} partition(s){how}{new}"
    return GroupChangeDecision(
        group.group_id, ChangeOutcome.WOULD_DO, reason, None, rows, via="connect" if via_connect else "kafka"
    )
