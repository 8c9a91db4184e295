"""Threshold mode: the groups are there when every one of them is *provably* within
``max_lag_per_partition``, ``max_total_lag`` and ``max_lag_seconds``.

Provably (:mod:`.bounds`): a lag known only from below (a total with unknown partitions, an age
that is "at least" so much), an estimate whose interval reaches over the threshold, a lagging
partition whose age was not measured and a group with no partition at all prove nothing under a
maximum; each keeps the gate waiting and the progress line says which and why. A lower bound
above a threshold does prove the group is over it, and says so. The unknown-lag policy decides
only what a partition without a commit counts as (``ignore`` leaves it out by choice).

A record batch that cannot be decoded leaves its partition's age unknown: the gate waits (the
group committing past the batch, or reaching the log end, opens it with no record read), and
:func:`undecodable_warnings` says once per gate which partition, codec and library keep it
closed and what the user can do.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..client.errors import UndecodableFailure
from ..client.results import TopicPartition
from .bounds import Against, Interval
from .gate_modes import Gate, GateMode, Judgement
from .gate_spec import GateSpec, LagMode, ThresholdParams
from .model import GroupLag, LagFlag, LagSnapshot, PartitionLag
from .seconds import GroupLagSeconds

__all__ = ["ThresholdMode", "undecodable_warnings"]

#: the codecs a library decodes here (client/compression.py: cramjam); gzip is Python's own
_CRAMJAM_CODECS = ("snappy", "lz4", "zstd")


class ThresholdMode(GateMode):
    lag_mode = LagMode.THRESHOLD

    def wants_seconds(self, spec: GateSpec) -> bool:
        return spec.params(ThresholdParams).max_lag_seconds is not None

    def judge(self, gate: Gate, snapshot: LagSnapshot, seconds: Mapping[str, GroupLagSeconds]) -> Judgement:
        spec = gate.spec
        pending: set[tuple[str, TopicPartition | None]] = set()
        lines = []
        for group_id in spec.group_ids:
            group = snapshot.groups.get(group_id)
            if group is None:
                pending.add((group_id, None))
                lines.append(f"{group_id}: not read ({snapshot.failures.get(group_id)})")
                continue
            problems, waiting = _problems(spec, group, seconds.get(group_id))
            if problems:
                pending |= {(group_id, tp) for tp in waiting} or {(group_id, None)}
                lines.append(f"{group_id}: {', '.join(problems)}")
        if pending:
            waiting_groups = {g for g, _ in pending}
            return Judgement(
                "; ".join(lines),
                frozenset(pending),
                warnings=undecodable_warnings(
                    {g: m for g, m in seconds.items() if g in waiting_groups},
                    spec.params(ThresholdParams).max_lag_seconds,
                ),
            )
        return _within(spec, snapshot, seconds)


def _problems(
    spec: GateSpec, group: GroupLag, measured: GroupLagSeconds | None
) -> tuple[list[str], set[TopicPartition]]:
    """Why ``group`` is not provably within the thresholds, and the partitions that must move."""
    problems: list[str] = []
    waiting: set[TopicPartition] = set()
    limits = spec.params(ThresholdParams)
    if not group.partitions:
        problems.append(
            "no partition to judge (no committed offset, no assigned partition): nothing proves it "
            "within the thresholds; name the topics to wait for"
        )
        return problems, waiting
    counted = [p for p in group.partitions if group.counts_in_totals(p)]
    lagging = {p.tp for p in counted if p.lag}
    unknown = [p for p in counted if p.lag is None]
    bounded = [p for p in unknown if LagFlag.LAG_AT_MOST in p.flags]
    unknown = [p for p in unknown if LagFlag.LAG_AT_MOST not in p.flags]
    if unknown:
        waiting |= {p.tp for p in unknown}
        problems.append(
            f"{len(unknown)} partition(s) with unknown lag ({_names(unknown)}; unknown_lag={spec.unknown_lag.value}: "
            "a partition without a commit has no lag under it)"
        )
    if bounded:
        waiting |= {p.tp for p in bounded}
        problems.append(
            f"{len(bounded)} share-partition(s) whose lag is only an upper bound ({_names(bounded)}): the "
            "broker gives no exact lag (DescribeShareGroupOffsets v0, Kafka 4.1, or -1), and a bound is not "
            "a value: the gate opens once their start offset reaches the log end (lag exactly 0), or on a "
            "Kafka 4.2+ broker; lag_mode='barrier' needs only the start offsets"
        )
    if limits.max_lag_per_partition is not None:
        over = [p for p in counted if p.lag is not None and p.lag > limits.max_lag_per_partition]
        if over:
            waiting |= {p.tp for p in over}
            worst = max(over, key=lambda p: p.lag)  # type: ignore[arg-type, return-value]  # over: lag is known
            problems.append(
                f"{len(over)} partition(s) over {limits.max_lag_per_partition} "
                f"(worst {worst.tp} lag {worst.lag})"
            )
    if limits.max_total_lag is not None:
        total = Interval.total(_offsets(p) for p in counted)
        if total.against(limits.max_total_lag) is Against.OVER:
            waiting |= lagging
            known = "" if total.known else "at least "
            problems.append(f"total lag {known}{total.low:.0f} over {limits.max_total_lag}")
    if limits.max_lag_seconds is not None:
        age = _age_problem(measured, limits.max_lag_seconds)
        if age is not None:
            waiting |= lagging
            problems.append(age)
    return problems, waiting


def _names(partitions: list[PartitionLag]) -> str:
    return ", ".join(str(p.tp) for p in partitions[:5]) + (", ..." if len(partitions) > 5 else "")


def _offsets(p: PartitionLag) -> Interval:
    return Interval.exact(p.lag) if p.lag is not None else Interval()


def _age_problem(measured: GroupLagSeconds | None, maximum: float) -> str | None:
    """Why the age of the group's oldest unread record is not provably <= ``maximum`` (None: it is)."""
    if measured is None:
        return "lag in seconds unknown (not measured)"
    age = measured.interval
    verdict = age.against(maximum)
    if verdict is Against.WITHIN:
        return None
    if verdict is Against.OVER:
        if age.high == age.low:
            return f"lag {age.low:.0f} s over {maximum:g} s"
        if age.high is None:
            return f"lag at least {age.low:.0f} s over {maximum:g} s"
        return f"lag between {age.low:.0f} and {age.high:.0f} s (estimate) over {maximum:g} s"
    undated = next((p for p in measured.partitions if p.seconds is None), None)
    if undated is not None:
        return f"lag in seconds unknown ({undated.tp}: {undated.reason})"
    if measured.unmeasured:
        return (
            f"lag in seconds unknown: {measured.unmeasured} lagging partition(s) not measured, and any of them "
            "may be older than the ones that were"
        )
    bound = next((p for p in measured.partitions if p.at_least), None)
    if bound is not None:
        return (
            f"lag at least {age.low:.0f} s: cannot tell whether it is within {maximum:g} s ({bound.tp} is only "
            f"known from below: {bound.reason})"
        )
    wide = max(measured.partitions, key=lambda p: p.interval.high or 0.0)
    return (
        f"lag about {wide.seconds:.0f} s, between {wide.interval.low:.0f} and {wide.interval.high:.0f} s "
        f"(estimate): cannot tell whether it is within {maximum:g} s ({wide.tp}: {wide.reason})"
    )


def undecodable_warnings(seconds: Mapping[str, GroupLagSeconds], maximum: float | None) -> dict[str, str]:
    """Per partition whose record batch could not be decoded (``CLIENT_UNDECODABLE``), the line that
    says what keeps the gate closed and what the user can do; keyed by the partition, so that a gate
    says it once however many checks and groups meet it."""
    out: dict[str, str] = {}
    limit = f"max_lag_seconds={maximum:g}" if maximum is not None else "a threshold"
    for group_id, measured in seconds.items():
        for p in measured.partitions:
            failure = p.failure
            if not isinstance(failure, UndecodableFailure) or f"undecodable:{p.tp}" in out:
                continue
            fix = (
                f"install or upgrade {failure.library}, which decodes {failure.codec} here, where this check runs "
                f"(pip install --upgrade {failure.library}: a dependency of airflow-provider-kgroups; the "
                "triggerer's environment too with deferrable=True)"
                if failure.codec in _CRAMJAM_CODECS
                else "no library upgrade reads it (a corrupt batch, or a codec or message format this client does "
                "not read)"
            )
            out[f"undecodable:{p.tp}"] = (
                f"group {group_id}, {failure.message}: the age of its record at offset {p.committed} is unknown, so "
                f"the gate stays closed (an unknown age never passes {limit}) until every lagging partition can be "
                "dated: the group commits past that batch or reaches the log end. To fix it: "
                f"{fix}; or gate on offsets (max_lag_per_partition, max_total_lag or lag_mode='barrier'), which read "
                "no record. unknown_lag does not change it: it only says what a partition without a commit counts as."
            )
    return out


def _within(spec: GateSpec, snapshot: LagSnapshot, seconds: Mapping[str, GroupLagSeconds]) -> Judgement:
    """Every group provably within the thresholds: the range each partition is covered to."""
    ending: dict[TopicPartition, int] = {}
    reached: dict[str, dict[TopicPartition, int]] = {}
    lags = {}
    for group_id in spec.group_ids:
        group = snapshot.groups[group_id]
        for p in group.partitions:
            if p.committed is not None:
                reached.setdefault(group_id, {})[p.tp] = p.committed
            covered = p.committed if p.committed is not None else (p.log_start or 0)
            if p.log_end is not None:
                covered = min(covered, p.log_end)
            ending[p.tp] = min(covered, ending.get(p.tp, covered))
        measured = seconds.get(group_id)
        lags[group_id] = {
            "total_lag": group.total_lag,
            "max_partition_lag": group.worst.lag if group.worst else 0,
            "max_lag_seconds": measured.max_seconds if measured is not None else None,
        }
    return Judgement(
        "every group is within the thresholds", ending=ending, reached=reached, extra={"lag": lags}
    )
