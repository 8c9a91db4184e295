"""The rules of :mod:`..lag` applied to one group's stored rows: what the lag-history job runs
on its executors (``groupBy("group_id").applyInArrow``, one call per group: :func:`judge_group`).
Pure: a pyarrow table of history rows (:data:`..lag.model.HISTORY_COLUMNS`) in, a pyarrow table
out.

The rows become snapshots as the history store reads them back
(:func:`..history.store.table_snapshots`), and the verdicts and the dead-group evidence are
those of :func:`..lag.verdicts.group_verdicts` and :func:`..cleanup.report.classify` (the rules of
:mod:`..lag.deadgroups` over the group's latest row as a
:class:`~..lag.observation.GroupObservation`, with its permission) themselves: no rule lives
here, only which snapshots each call sees and how its answer is laid out in the job's outputs.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..cleanup.evidence_text import format_time
from ..cleanup.report import classify
from ..client.results import GroupState
from ..history.store import table_snapshots
from ..lag.deadgroups import DeadGroupRules
from ..lag.model import GroupLag, LagSnapshot, PartitionLag
from ..lag.observation import GroupHistoryPoint, GroupObservation, history_points, last_progress
from ..lag.retention import RetentionMargin
from ..lag.retention_history import history_margin
from ..lag.verdicts import GroupVerdict, VerdictRules, group_verdicts

__all__ = [
    "PARTITION_VERDICTS",
    "GROUP_STATUS",
    "JUDGED",
    "judge_group",
    "partition_verdicts",
    "group_status",
]

_TEXTS = pa.list_(pa.string())

#: ``<output>/partition_verdicts``: one row per group, topic, partition and evaluation time.
PARTITION_VERDICTS = pa.schema(
    [
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("window_start_ms", pa.int64()),
        ("window_end_ms", pa.int64()),
        ("at_ms", pa.int64()),
        ("verdict", pa.string()),
        ("reason", pa.string()),
        ("lag", pa.int64()),
        ("committed", pa.int64()),
        ("log_end", pa.int64()),
        ("points", pa.int32()),
        ("severity", pa.int32()),
        ("last_progress_ms", pa.int64()),
        ("since_progress_ms", pa.int64()),
        ("history_from_ms", pa.int64()),
        ("retention_margin_s", pa.float64()),
        ("margin_basis", pa.string()),
    ]
)

#: ``<output>/group_status``: one row per group.
GROUP_STATUS = pa.schema(
    [
        ("group_id", pa.string()),
        ("as_of_ms", pa.int64()),
        ("last_seen_ms", pa.int64()),
        ("first_seen_ms", pa.int64()),
        ("in_latest_snapshot", pa.bool_()),
        ("state", pa.string()),
        ("protocol_type", pa.string()),
        ("members", pa.int32()),
        ("total_lag", pa.int64()),
        ("partitions", pa.int32()),
        ("committed_topics", _TEXTS),
        ("gone_topics", _TEXTS),
        ("verdict", pa.string()),
        ("reason", pa.string()),
        ("last_progress_ms", pa.int64()),
        ("since_progress_ms", pa.int64()),
        ("empty_since_ms", pa.int64()),
        ("expires_at_ms", pa.int64()),
        ("idle_since_ms", pa.int64()),
        ("health", pa.string()),
        ("deletable", pa.bool_()),
        ("evidence", _TEXTS),
        ("dead_reasons", _TEXTS),
        ("cannot_tell", _TEXTS),
        ("retention_margin_s", pa.float64()),
    ]
)

#: :func:`judge_group`'s answer: both outputs of one group in one table (one shuffle of the
#: history, one hand-over to Python, one read of the rows), a row holding either a partition
#: verdict or the group's status, the other column null.
JUDGED = pa.schema(
    [("verdict", pa.struct(list(PARTITION_VERDICTS))), ("status", pa.struct(list(GROUP_STATUS)))]
)


def _group(rows: pa.Table) -> tuple[str, list[LagSnapshot]] | None:
    snapshots = table_snapshots(rows)  # oldest first; every snapshot holds this one group
    return (next(iter(snapshots[0].groups)), snapshots) if snapshots else None


def _table(columns: Mapping[str, Sequence[Any]], schema: pa.Schema) -> pa.Table:
    return pa.table(
        {name: pa.array(columns[name], schema.field(name).type) for name in schema.names}, schema=schema
    )


def partition_verdicts(
    group_id: str,
    snapshots: list[LagSnapshot],
    evaluations: Collection[int],
    window_ms: int,
    rules: VerdictRules,
    retention_ms: Mapping[str, int] | None = None,
) -> pa.Table:
    """The group's partition verdicts at each evaluation time (the latest snapshot of each
    tumbling window of ``window_ms``) at which the group has a snapshot: ``group_verdicts``
    over its snapshots in the look-back up to that time. ``last_progress_ms``: the last point
    whose committed offset differs from the partition's previous point (the first is never
    progress); ``history_from_ms``: the partition's first point. With ``retention_ms`` (per
    topic, :func:`..lag.retention_history.deletion_retention_ms`), each lagging partition's
    retention margin at that time from the log-end history before it
    (:func:`..lag.retention_history.history_margin`), which the verdicts judge AT_RISK by."""
    rows: list[tuple] = []
    times = [s.taken_at_ms for s in snapshots]
    first: dict = {}
    previous: dict = {}
    progress: dict = {}
    log_ends: _LogEnds = {}  # only with retention_ms
    for i, snapshot in enumerate(snapshots):
        at = snapshot.taken_at_ms
        group = snapshot.groups[group_id]
        for p in group.partitions:
            key = (
                p.topic,
                p.partition,
            )  # not p.tp: a TopicPartition built per point costs a third of this loop
            if key not in first:
                first[key], progress[key] = at, None
            elif p.committed != previous[key]:
                progress[key] = at
            previous[key] = p.committed
            if retention_ms is not None and p.log_end is not None:
                log_ends.setdefault(key, []).append((at, p.log_end))
        if at not in evaluations:
            continue
        look_back = snapshots[bisect_left(times, at - rules.window_ms) : i + 1]
        latest = {(p.topic, p.partition): p for p in group.partitions}
        margins = _margins_at(group, log_ends, retention_ms, at)
        verdict = group_verdicts(look_back, rules, margins={group_id: margins})[group_id]
        rows.extend(_verdict_rows(verdict, at, window_ms, latest, margins, (first, progress)))
    columns: list[Sequence[Any]] = list(zip(*rows)) or [[] for _ in PARTITION_VERDICTS.names]
    return _table(dict(zip(PARTITION_VERDICTS.names, columns)), PARTITION_VERDICTS)


def _verdict_rows(
    verdict: GroupVerdict,
    at: int,
    window_ms: int,
    latest: Mapping[tuple[str, int], PartitionLag],
    margins: Mapping[tuple[str, int], RetentionMargin],
    seen: tuple[Mapping[tuple[str, int], int], Mapping[tuple[str, int], int | None]],
) -> list[tuple]:
    """The group's :data:`PARTITION_VERDICTS` rows at evaluation time ``at``; ``seen``: each
    partition's first point and last progress."""
    first, progress = seen
    start = at // window_ms * window_ms
    rows = []
    for v in verdict.partitions:
        key = (v.topic, v.partition)
        p = latest[key]
        margin, progressed = margins.get(key), progress[key]
        rows.append(
            (
                verdict.group_id,
                v.topic,
                v.partition,
                start,
                start + window_ms,
                at,
                v.verdict.value,
                v.reason,
                v.lag,
                p.committed,
                p.log_end,
                v.points,
                v.verdict.severity,
                progressed,
                None if progressed is None else at - progressed,
                first[key],
                None if margin is None else margin.seconds,
                None if margin is None else margin.basis.value,
            )
        )
    return rows


#: (topic, partition) -> the partition's (time, log end) samples, oldest first
_LogEnds = dict[tuple[str, int], list[tuple[int, int]]]


def _log_ends(snapshots: Sequence[LagSnapshot], group_id: str) -> _LogEnds:
    samples: _LogEnds = {}
    for snapshot in snapshots:
        for p in snapshot.groups[group_id].partitions:
            if p.log_end is not None:
                samples.setdefault((p.topic, p.partition), []).append((snapshot.taken_at_ms, p.log_end))
    return samples


def _margins_at(
    group: GroupLag, log_ends: _LogEnds, retention_ms: Mapping[str, int] | None, at_ms: int
) -> dict[tuple[str, int], RetentionMargin]:
    """Each of the group's partitions' retention margin at ``at_ms``, from the samples up to it
    (``{}`` without ``retention_ms``: no margin, as before the job took retention settings)."""
    if retention_ms is None:
        return {}
    return {
        (p.topic, p.partition): history_margin(
            log_ends.get((p.topic, p.partition), ()),
            p.committed,
            retention_ms.get(p.topic),
            at_ms,
            lagging=bool(p.lag),
        )
        for p in group.partitions
    }


def group_status(
    group_id: str,
    snapshots: list[LagSnapshot],
    as_of_ms: int,
    existing_topics: Collection[str],
    rules: VerdictRules,
    dead_rules: DeadGroupRules,
    retention_ms: Mapping[str, int] | None = None,
) -> pa.Table:
    """One row: the group as of ``as_of_ms`` (the latest snapshot). Its verdict is
    ``group_verdicts``' (with its partitions' retention margins given ``retention_ms``, and the
    shortest known one in ``retention_margin_s``); its health is ``classify``'s with its row at ``as_of_ms`` as the
    observation (``GroupObservation.of_snapshot``), its earlier rows as the stored history, and
    ``existing_topics`` as the topic list (no topic checked by name: "every committed topic
    was deleted" is never evidence here). A group missing from the latest snapshot is not
    classified."""
    first_seen, last_seen = snapshots[0].taken_at_ms, snapshots[-1].taken_at_ms
    points = history_points(snapshots, group_id)
    progressed = last_progress(points)
    row: dict[str, Any] = {name: None for name in GROUP_STATUS.names}
    row.update(
        group_id=group_id,
        as_of_ms=as_of_ms,
        last_seen_ms=last_seen,
        first_seen_ms=first_seen,
        in_latest_snapshot=last_seen == as_of_ms,
        last_progress_ms=progressed,
        since_progress_ms=None if progressed is None else as_of_ms - progressed,
        deletable=False,
    )
    if last_seen != as_of_ms:
        row.update(_unclassified(group_id, as_of_ms, last_seen, rules))
    else:
        row.update(_classified(group_id, snapshots, points, as_of_ms, existing_topics, rules, dead_rules))
        row.update(_verdict(group_id, snapshots, as_of_ms, rules, retention_ms))
    return _table({name: [value] for name, value in row.items()}, GROUP_STATUS)


def _unclassified(group_id: str, as_of_ms: int, last_seen: int, rules: VerdictRules) -> dict[str, Any]:
    """The status fields of a group missing from the latest snapshot: its verdict as of then."""
    verdict = group_verdicts([LagSnapshot(as_of_ms, {})], rules, group_ids=[group_id])[group_id]
    return {
        "verdict": verdict.verdict.value,
        "reason": verdict.reason,
        "evidence": [f"not in the latest snapshot (last seen {format_time(last_seen)}): not classified"],
    }


def _classified(
    group_id: str,
    snapshots: list[LagSnapshot],
    points: list[GroupHistoryPoint],
    as_of_ms: int,
    existing_topics: Collection[str],
    rules: VerdictRules,
    dead_rules: DeadGroupRules,
) -> dict[str, Any]:
    """The status fields of a group in the latest snapshot: its row there and its health."""
    latest = snapshots[-1].groups[group_id]
    report = classify(
        GroupObservation.of_snapshot(latest, as_of_ms),
        points[:-1],
        dead_rules,
        existing_topics=existing_topics,
    )
    committed = sorted({p.topic for p in latest.partitions if p.committed is not None})
    lags = [p.lag for p in latest.partitions]
    known_lags = [lag for lag in lags if lag is not None]
    empty = latest.state is GroupState.EMPTY and not latest.members
    return {
        "state": latest.state.value,
        "protocol_type": latest.protocol_type,
        "members": latest.members,
        "total_lag": sum(known_lags) if len(known_lags) == len(lags) else None,
        "partitions": len(lags),
        "committed_topics": committed,
        "gone_topics": [t for t in committed if t not in existing_topics] if empty else None,
        "empty_since_ms": report.empty_since_ms,
        "expires_at_ms": report.expires_at_ms,
        "idle_since_ms": report.idle_since_ms,
        "health": report.health.value,
        "deletable": report.deletable,
        "evidence": list(report.evidence),
        "dead_reasons": list(report.dead_reasons),
        "cannot_tell": list(report.cannot_tell),
    }


def _verdict(
    group_id: str,
    snapshots: list[LagSnapshot],
    as_of_ms: int,
    rules: VerdictRules,
    retention_ms: Mapping[str, int] | None,
) -> dict[str, Any]:
    """The verdict fields of a group in the latest snapshot, over the rules' look-back."""
    times = [s.taken_at_ms for s in snapshots]
    latest = snapshots[-1].groups[group_id]
    margins = _margins_at(
        latest, _log_ends(snapshots, group_id) if retention_ms else {}, retention_ms, as_of_ms
    )
    look_back = snapshots[bisect_left(times, as_of_ms - rules.window_ms) :]
    verdict = group_verdicts(look_back, rules, margins={group_id: margins})[group_id]
    known = [m.seconds for m in margins.values() if m.seconds is not None]
    return {
        "verdict": verdict.verdict.value,
        "reason": verdict.reason,
        "retention_margin_s": min(known, default=None),
    }


def judge_group(
    rows: pa.Table,
    evaluations: Collection[int],
    window_ms: int,
    as_of_ms: int,
    existing_topics: Collection[str],
    rules: VerdictRules,
    dead_rules: DeadGroupRules,
    retention_ms: Mapping[str, int] | None = None,
) -> pa.Table:
    """:func:`partition_verdicts` and :func:`group_status` of the one group in ``rows``
    (history rows, read into snapshots once), as :data:`JUDGED`: the verdict rows first
    (``status`` null), then the status row (``verdict`` null)."""
    found = _group(rows)
    if found is None:
        return JUDGED.empty_table()
    verdicts = partition_verdicts(*found, evaluations, window_ms, rules, retention_ms)
    status = group_status(*found, as_of_ms, existing_topics, rules, dead_rules, retention_ms)
    verdict_type, status_type = JUDGED.field("verdict").type, JUDGED.field("status").type
    return pa.table(
        {
            "verdict": pa.concat_arrays(
                [_structs(verdicts, verdict_type), pa.nulls(status.num_rows, verdict_type)]
            ),
            "status": pa.concat_arrays(
                [pa.nulls(verdicts.num_rows, status_type), _structs(status, status_type)]
            ),
        },
        schema=JUDGED,
    )


def _structs(table: pa.Table, type_: pa.StructType) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        [column.combine_chunks() for column in table.columns], fields=list(type_)
    )
