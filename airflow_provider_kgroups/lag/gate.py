"""The lag gate: what :class:`ConsumerLagSensor` and :class:`ConsumerLagTrigger` decide at each
check, written once. No Airflow import; :class:`LagGate` does no I/O (it decides), and
:func:`check_gate` is the one check over a client (read, then decide) that the hook offers
as its ``check_gate`` / ``acheck_gate`` verbs.

A check gives the gate one lag snapshot (plus, in threshold mode with ``max_lag_seconds``,
the groups' lag in seconds) and gets back a :class:`Decision`: ``done`` (with the XCom
result), ``wait`` (with a one-line progress message) or ``fail`` (with the reason). The gate
fails fast, not at the timeout, when:

* a group is missing: Dead, GROUP_ID_NOT_FOUND, or Empty with no member and no committed
  offset (what a group that never existed looks like on brokers that answer Empty for it);
* a fail-fast verdict (default STOP, STALL, LOST; see :mod:`..lag.verdicts`) holds on a
  partition that still has to move, in ``verdict_checks`` consecutive checks;
* (barrier mode) the projected catch-up time, at the rate measured over the last few checks,
  exceeds the time left before the deadline, in ``verdict_checks`` consecutive checks.

The spec and the state that must survive a hand-over from the sensor to its trigger are plain
JSON (``to_dict``/``from_dict``); the window of snapshots for the verdicts is kept in memory
only (a trigger starts a new window).

About 400 lines: the spec, the state and the decision of one gate belong together (they
round-trip through the deferrable sensor's trigger kwargs as one unit).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..arguments import (
    LAG_MODES, parse_check_count, parse_names, parse_interval, parse_lag_mode, parse_offset_count,
    parse_offsets_map, parse_seconds, parse_str_list, parse_timestamp_ms,
)
from ..client.errors import ConfigurationError, ErrorCode
from ..client.results import GroupState, TopicPartition
from .barrier import BarrierCheckpoint, BarrierStatus, BarrierTarget, evaluate_barrier, fix_target
from .model import LagSnapshot, UnknownLagPolicy
from .offset_range import OffsetRange, nest_offsets as _nest, spark_offsets  # spark_offsets: re-exported
from .policy import parse_policy
from .seconds import GroupLagSeconds, lag_seconds
from .verdicts import Verdict, VerdictRules, group_verdicts

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

#: Decision kind of an error that retrying cannot fix (authentication, authorization, bad input).
NOT_RETRIABLE = "not_retriable"
DEFAULT_FAIL_ON = ("STOP", "STALL", "LOST")
#: Group-level failures that no amount of waiting fixes.
_FATAL_GROUP_ERRORS = {ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_AUTHORIZATION_FAILED}
#: How many past checkpoints the catch-up rate is measured over (smooths a slow first interval).
RATE_CHECKPOINTS = 5


# -- spec, state, decision ------------------------------------------------------------------------


@dataclass(frozen=True)
class GateSpec:
    """What to wait for; plain data, validated on construction."""

    group_ids: tuple[str, ...]
    lag_mode: str = "barrier"
    topics: tuple[str, ...] | None = None
    barrier_timestamp_ms: int | None = None
    unknown_lag: str = UnknownLagPolicy.FAIL.value
    read_committed: bool = False
    max_lag_per_partition: int | None = None
    max_total_lag: int | None = None
    max_lag_seconds: float | None = None
    fail_on_verdicts: tuple[str, ...] = DEFAULT_FAIL_ON
    verdict_checks: int = 2
    stuck_after_s: float = 600.0
    previous_barrier: Mapping[str, Mapping[str, int]] | None = None

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        set_("group_ids", parse_names("group_ids", self.group_ids))
        set_("lag_mode", parse_lag_mode("lag_mode", self.lag_mode))
        if self.topics is not None:
            set_("topics", parse_names("topics", self.topics))
        set_("unknown_lag", parse_policy(self.unknown_lag).value)
        set_("barrier_timestamp_ms", parse_timestamp_ms("barrier_timestamp", self.barrier_timestamp_ms))
        set_("max_lag_per_partition", parse_offset_count("max_lag_per_partition", self.max_lag_per_partition))
        set_("max_total_lag", parse_offset_count("max_total_lag", self.max_total_lag))
        set_("max_lag_seconds", parse_seconds("max_lag_seconds", self.max_lag_seconds))
        verdicts = parse_str_list("fail_on_verdicts", self.fail_on_verdicts)
        known = [v.value for v in Verdict]
        unknown = [v for v in verdicts if v.upper() not in known]
        if unknown:
            raise ConfigurationError(f"fail_on_verdicts has {unknown[0]!r}: use some of {', '.join(known)} (or []).")
        set_("fail_on_verdicts", tuple(v.upper() for v in verdicts))
        set_("verdict_checks", parse_check_count("verdict_checks", self.verdict_checks))
        set_("stuck_after_s", parse_interval("stuck_after", self.stuck_after_s))
        set_("previous_barrier", parse_offsets_map("previous_barrier", self.previous_barrier))
        thresholds = (self.max_lag_per_partition, self.max_total_lag, self.max_lag_seconds)
        if self.lag_mode == "threshold" and all(t is None for t in thresholds):
            raise ConfigurationError("lag_mode='threshold' needs at least one of max_lag_per_partition, "
                                     "max_total_lag, max_lag_seconds.")
        if self.lag_mode == "barrier" and any(t is not None for t in thresholds):
            raise ConfigurationError("max_lag_per_partition / max_total_lag / max_lag_seconds apply to "
                                     "lag_mode='threshold'; a barrier waits for committed >= target. "
                                     "Set lag_mode='threshold' or drop the thresholds.")
        if self.lag_mode == "threshold" and self.barrier_timestamp_ms is not None:
            raise ConfigurationError("barrier_timestamp applies to lag_mode='barrier': drop it or switch modes.")

    @property
    def policy(self) -> UnknownLagPolicy:
        return UnknownLagPolicy(self.unknown_lag)

    @property
    def rules(self) -> VerdictRules:
        stuck_ms = int(self.stuck_after_s * 1000)
        return VerdictRules(window_ms=3 * stuck_ms, stuck_after_ms=stuck_ms)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("group_ids", "topics", "fail_on_verdicts"):
            out[key] = list(out[key]) if out[key] is not None else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GateSpec":
        return cls(**data)


@dataclass
class GateState:
    """What survives from one check to the next, and from the sensor to its trigger."""

    started_ms: int
    target: dict[str, Any] | None = None  # BarrierTarget.to_dict()
    checks: int = 0
    checkpoints: list[dict[str, Any]] = field(default_factory=list)  # BarrierCheckpoint.to_dict(), oldest first
    streaks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GateState":
        return cls(**data)


@dataclass(frozen=True)
class Decision:
    status: str  # "done" | "wait" | "fail"
    message: str
    result: dict[str, Any] | None = None
    kind: str | None = None  # for "fail": "missing" | "verdict" | "projection"

    @property
    def finished(self) -> bool:
        return self.status != "wait"

    def to_event(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "result": self.result, "kind": self.kind}


# -- the gate ------------------------------------------------------------------------------------


class LagGate:
    """Decides, check after check. ``deadline_ms``: when the sensor times out (epoch ms)."""

    def __init__(self, spec: GateSpec, state: GateState, deadline_ms: int) -> None:
        self.spec = spec
        self.state = state
        self.deadline_ms = deadline_ms
        self.window: list[LagSnapshot] = []
        self.pending_groups: tuple[str, ...] | None = None  # the last check's, for the metrics
        self.seconds: Mapping[str, GroupLagSeconds] = {}  # measured only for max_lag_seconds

    @property
    def needs_target(self) -> bool:
        return self.spec.lag_mode == "barrier" and self.state.target is None

    @property
    def target(self) -> BarrierTarget | None:
        return BarrierTarget.from_dict(self.state.target) if self.state.target is not None else None

    def set_target(self, target: BarrierTarget) -> None:
        self.state.target = target.to_dict()

    def _streak(self, key: str, hit: bool) -> int:
        count = self.state.streaks.get(key, 0) + 1 if hit else 0
        self.state.streaks[key] = count
        return count

    # -- checks --------------------------------------------------------------------------------

    def evaluate(self, snapshot: LagSnapshot, seconds: Mapping[str, GroupLagSeconds] | None = None) -> Decision:
        """One check. ``seconds`` is needed (and only used) with ``max_lag_seconds``."""
        self.state.checks += 1
        self.window = [s for s in self.window if s.taken_at_ms >= snapshot.taken_at_ms - self.spec.rules.window_ms]
        self.window.append(snapshot)
        self.seconds, self.pending_groups = seconds or {}, None
        missing = self.missing(snapshot)
        if missing is not None:
            return missing
        if self.spec.lag_mode == "barrier":
            status, pending = self._barrier(snapshot)
            self.pending_groups = tuple(sorted({g for g, _ in pending}))
            if status.reached:
                return Decision("done", status.summary(), self._barrier_result(snapshot, status))
            progress = status.summary()
        else:
            pending, lines = self._threshold(snapshot, seconds or {})
            self.pending_groups = tuple(sorted({g for g, _ in pending}))
            if not pending:
                return Decision("done", "every group is within the thresholds",
                                self._threshold_result(snapshot, seconds or {}))
            progress = "; ".join(lines)
        verdict = self._verdicts(pending)
        if verdict is not None:
            return verdict
        if self.spec.lag_mode == "barrier":
            projection = self._projection(status, snapshot.taken_at_ms)
            if projection is not None:
                return projection
        return Decision("wait", f"check {self.state.checks}: {progress}")

    def missing(self, snapshot: LagSnapshot) -> Decision | None:
        for group_id in self.spec.group_ids:
            failure = snapshot.failures.get(group_id)
            if failure is not None:
                if failure.code in _FATAL_GROUP_ERRORS:
                    return Decision("fail", f"group {group_id!r} cannot be read: {failure}", kind="missing")
                continue  # a transient failure (timeout, coordinator moving): wait
            group = snapshot.groups.get(group_id)
            if group is None:
                continue
            if group.state is GroupState.DEAD:
                return Decision("fail", f"group {group_id!r} is Dead: it does not exist (or its offsets expired); "
                                        "check the group id, it can never catch up", kind="missing")
            if group.state is GroupState.EMPTY and group.members == 0 and \
                    all(p.committed is None for p in group.partitions):
                where = f" on topic(s) {', '.join(self.spec.topics)}" if self.spec.topics else ""
                return Decision("fail", f"group {group_id!r} does not exist: no members and no committed "
                                        f"offset{where}; check the group id", kind="missing")
        return None

    # barrier

    def _counted_target(self, snapshot: LagSnapshot) -> tuple[BarrierTarget, list[str]]:
        """The target without partitions that the unknown-lag policy says not to wait for
        (``ignore``, ``from_latest``: no commit there counts as nothing to read)."""
        target = self.target
        assert target is not None
        if self.spec.policy not in (UnknownLagPolicy.IGNORE, UnknownLagPolicy.FROM_LATEST):
            return target, []
        ignored, offsets = [], {}
        for group_id, targets in target.offsets.items():
            group = snapshot.groups.get(group_id)
            committed = {p.tp: p.committed for p in group.partitions} if group else {}
            kept = {}
            for tp, offset in targets.items():
                if group is not None and committed.get(tp) is None:
                    ignored.append(f"{group_id}:{tp}")
                else:
                    kept[tp] = offset
            offsets[group_id] = kept
        return BarrierTarget(offsets, target.kind, target.fixed_at_ms, target.timestamp_ms,
                             target.read_committed), ignored

    def _barrier(self, snapshot: LagSnapshot) -> tuple[BarrierStatus, set[tuple[str, TopicPartition]]]:
        target, _ = self._counted_target(snapshot)
        committed = {g: {p.tp: p.committed for p in lag.partitions} for g, lag in snapshot.groups.items()}
        log_starts = {p.tp: p.log_start for lag in snapshot.groups.values() for p in lag.partitions
                      if p.log_start is not None}
        previous = BarrierCheckpoint.from_dict(self.state.checkpoints[0]) if self.state.checkpoints else None
        status = evaluate_barrier(target, committed, snapshot.taken_at_ms, log_starts=log_starts, previous=previous)
        self.state.checkpoints = [*self.state.checkpoints, status.checkpoint().to_dict()][-RATE_CHECKPOINTS:]
        pending = {(p.group_id, TopicPartition(p.topic, p.partition)) for p in status.partitions if not p.reached}
        pending |= {(g, None) for g in status.failures}  # type: ignore[arg-type]
        return status, pending

    def _barrier_result(self, snapshot: LagSnapshot, status: BarrierStatus) -> dict[str, Any]:
        target = self.target
        assert target is not None
        _, ignored = self._counted_target(snapshot)
        ending: dict[TopicPartition, int] = {}
        for targets in target.offsets.values():
            for tp, offset in targets.items():
                ending[tp] = min(offset, ending.get(tp, offset))
        reached: dict[str, dict[TopicPartition, int]] = {}
        for p in status.partitions:
            if p.committed is not None:
                reached.setdefault(p.group_id, {})[TopicPartition(p.topic, p.partition)] = p.committed
        return self._result(snapshot, ending, reached, target=target.to_dict(), ignored=ignored)

    def _projection(self, status: BarrierStatus, now_ms: int) -> Decision | None:
        eta = status.eta_s()
        left_s = (self.deadline_ms - now_ms) / 1000.0
        too_slow = eta is not None and eta > left_s
        if self._streak("projection", too_slow) >= self.spec.verdict_checks:
            return Decision("fail", f"projected catch-up in {eta:.0f} s exceeds the {max(left_s, 0):.0f} s left "
                                    f"before the timeout ({status.summary()})", kind="projection")
        return None

    # threshold

    def _threshold(self, snapshot: LagSnapshot, seconds: Mapping[str, GroupLagSeconds]
                   ) -> tuple[set[tuple[str, TopicPartition | None]], list[str]]:
        spec = self.spec
        pending: set[tuple[str, TopicPartition | None]] = set()
        lines = []
        for group_id in spec.group_ids:
            group = snapshot.groups.get(group_id)
            if group is None:
                pending.add((group_id, None))
                lines.append(f"{group_id}: not read ({snapshot.failures.get(group_id)})")
                continue
            problems = []
            counted = [p for p in group.partitions if group.counts_in_totals(p)]
            unknown = [p for p in counted if p.lag is None]
            if unknown:
                pending |= {(group_id, p.tp) for p in unknown}
                names = ", ".join(str(p.tp) for p in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
                problems.append(f"{len(unknown)} partition(s) with unknown lag ({names}; unknown_lag="
                                f"{spec.unknown_lag}: a partition without a commit has no lag under it)")
            if spec.max_lag_per_partition is not None:
                over = [p for p in counted if p.lag is not None and p.lag > spec.max_lag_per_partition]
                if over:
                    pending |= {(group_id, p.tp) for p in over}
                    worst = max(over, key=lambda p: p.lag)
                    problems.append(f"{len(over)} partition(s) over {spec.max_lag_per_partition} "
                                    f"(worst {worst.tp} lag {worst.lag})")
            if spec.max_total_lag is not None and group.total_lag is not None \
                    and group.total_lag > spec.max_total_lag:
                pending |= {(group_id, p.tp) for p in counted if p.lag}
                problems.append(f"total lag {group.total_lag} over {spec.max_total_lag}")
            if spec.max_lag_seconds is not None:
                measured = seconds.get(group_id)
                worst_s = measured.max_seconds if measured is not None else None
                if worst_s is None or worst_s > spec.max_lag_seconds:
                    worst_p = measured.worst if measured is not None else None
                    pending |= {(group_id, p.tp) for p in counted if p.lag} or {(group_id, None)}
                    problems.append("lag in seconds unknown" if worst_s is None else
                                    f"lag {worst_s:.0f} s over {spec.max_lag_seconds:g} s"
                                    f"{' (estimate)' if worst_p is not None and worst_p.estimate else ''}")
            if problems:
                lines.append(f"{group_id}: {', '.join(problems)}")
        return pending, lines

    def _threshold_result(self, snapshot: LagSnapshot, seconds: Mapping[str, GroupLagSeconds]) -> dict[str, Any]:
        ending: dict[TopicPartition, int] = {}
        reached: dict[str, dict[TopicPartition, int]] = {}
        lags = {}
        for group_id in self.spec.group_ids:
            group = snapshot.groups[group_id]
            for p in group.partitions:
                if p.committed is not None:
                    reached.setdefault(group_id, {})[p.tp] = p.committed
                covered = p.committed if p.committed is not None else (p.log_start or 0)
                if p.log_end is not None:
                    covered = min(covered, p.log_end)
                ending[p.tp] = min(covered, ending.get(p.tp, covered))
            measured = seconds.get(group_id)
            lags[group_id] = {"total_lag": group.total_lag, "max_partition_lag": group.worst.lag if group.worst else 0,
                              "max_lag_seconds": measured.max_seconds if measured is not None else None}
        return self._result(snapshot, ending, reached, lag=lags)

    # verdicts

    def _verdicts(self, pending: set[tuple[str, TopicPartition | None]]) -> Decision | None:
        if not self.spec.fail_on_verdicts:
            return None
        fail_on = {Verdict(v) for v in self.spec.fail_on_verdicts}
        verdicts = group_verdicts(self.window, self.spec.rules, group_ids=self.spec.group_ids)
        for group_id, verdict in verdicts.items():
            bad = [p for p in verdict.partitions if p.verdict in fail_on
                   and (group_id, TopicPartition(p.topic, p.partition)) in pending]
            if self._streak(f"verdict:{group_id}", bool(bad)) >= self.spec.verdict_checks:
                worst = max(bad, key=lambda p: p.verdict.severity)
                where = f"{worst.topic}[{worst.partition}]"
                return Decision("fail", f"group {group_id!r} is {worst.verdict.value} on {where} for "
                                        f"{self.spec.verdict_checks} checks in a row: {worst.reason}", kind="verdict")
        return None

    # result

    def _result(self, snapshot: LagSnapshot, ending: Mapping[TopicPartition, int],
                reached: Mapping[str, Mapping[TopicPartition, int]], **extra: Any) -> dict[str, Any]:
        handed_on = OffsetRange.up_to(ending, self.spec.previous_barrier)
        return {
            "lag_mode": self.spec.lag_mode,
            "group_ids": list(self.spec.group_ids),
            "checks": self.state.checks,
            "waited_s": round((snapshot.taken_at_ms - self.state.started_ms) / 1000.0, 3),
            "reached": {g: _nest(offsets) for g, offsets in reached.items()},
            "offsets": _nest(ending),
            **handed_on.to_xcom(),  # startingOffsets, endingOffsets
            **extra,
        }


async def check_gate(client: "AsyncGroupsClient", gate: LagGate) -> Decision:
    """One check of ``gate``: a snapshot; on the first barrier check, the target (unless a group
    is already missing); lag in seconds only if ``max_lag_seconds`` asks for it; then the decision."""
    from .snapshot import take_snapshot  # the client stack loads on the first check, not with the sensor module

    spec = gate.spec
    snapshot = await take_snapshot(client, spec.group_ids, policy=spec.policy, topics=spec.topics,
                                   read_committed=spec.read_committed)
    if gate.needs_target:
        missing = gate.missing(snapshot)
        if missing is not None:
            return missing
        gate.set_target(await fix_target(client, spec.group_ids, topics=spec.topics,
                                         timestamp_ms=spec.barrier_timestamp_ms, read_committed=spec.read_committed))
    seconds = None
    if spec.max_lag_seconds is not None:
        seconds = await lag_seconds(client, snapshot, read_committed=spec.read_committed)
    return gate.evaluate(snapshot, seconds)


__all__ = ["GateSpec", "GateState", "LagGate", "Decision", "check_gate", "spark_offsets", "LAG_MODES",
           "DEFAULT_FAIL_ON", "NOT_RETRIABLE"]
