"""The ``kgroups lag`` table and its exit code, shared by the plain verb (:mod:`.lag`) and the
risk view (:mod:`.lag_risk`): the rows of a snapshot (TOTAL per group, notes), the headers, and
whether every number is known (unknown is never fine)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..lag.model import GroupLag, LagSnapshot
    from ..lag.seconds import GroupLagSeconds


def _seconds_text(measured: GroupLagSeconds | None) -> str:
    if measured is None:
        return ""
    worst = measured.worst
    if measured.max_seconds is None:
        unknown = next((p for p in measured.partitions if p.seconds is None), None)
        return f"unknown ({unknown.reason})" if unknown is not None else "unknown"
    prefix = ">=" if measured.at_least else "~" if worst is not None and worst.estimate else ""
    return f"{prefix}{measured.max_seconds:.3f}"


def lag_rows(snapshot: LagSnapshot, seconds: Mapping[str, GroupLagSeconds] | None) -> list[Sequence[Any]]:
    return lag_rows_and_totals(snapshot, seconds)[0]


def lag_rows_and_totals(
    snapshot: LagSnapshot, seconds: Mapping[str, GroupLagSeconds] | None
) -> tuple[list[Sequence[Any]], bool]:
    """The table's rows, and whether every group's total is known (what :func:`lag_ok` asks of
    the groups, found in the same pass: each total is computed once)."""
    from ..lag.model import LagFlag

    rows: list[Sequence[Any]] = []  # tuples; typed as TableStream.add takes them (a list is invariant)
    append = rows.append
    known = True
    for gid, group in snapshot.groups.items():
        extra = (_seconds_text(seconds.get(gid)),) if seconds is not None else ()
        if group.not_found:
            append(
                (gid, "NOT FOUND", "", "", "", None, *extra, "no such group: no member, no committed offset")
            )
            known = False
            continue
        left: set[str] = set()  # unassigned_topics(group), found in the same pass
        for p in group.partitions:
            note = ""
            if p.flags:
                note = ",".join(sorted(f.value for f in p.flags))
                if LagFlag.TOPIC_UNASSIGNED in p.flags:
                    left.add(p.topic)
                if LagFlag.LAG_AT_MOST in p.flags and p.log_end is not None and p.committed is not None:
                    note += f" {p.log_end - p.committed} ({AT_MOST_WHY})"
            if p.error is not None:
                note = f"{note}: {p.error}" if note else str(p.error)
            if extra:
                append((gid, p.topic, p.partition, p.committed, p.log_end, p.lag, "", note))
            else:
                append((gid, p.topic, p.partition, p.committed, p.log_end, p.lag, note))
        summary = f"{group.state.value}, {group.members} member(s)"
        if group.is_share:
            summary += (
                ", share group: CURRENT-OFFSET is the share-partition start offset"
                if group.partitions
                else ", share group with no share-partition initialized: nothing to measure yet"
            )
        if left:
            summary += f", no member assigned {', '.join(sorted(left))} (its commits there stay behind)"
        total = group.total_lag
        if total is None:
            summary += ", total unknown"
            known = False
        rows.append((gid, "TOTAL", "", "", "", total, *extra, summary))
    for gid, failure in snapshot.failures.items():
        rows.append((gid, "ERROR", "", "", "", "", *(("",) if seconds is not None else ()), str(failure)))
    return rows, known


#: why a share-partition's lag is only a bound (the table's note)
AT_MOST_WHY = (
    "log end - start offset, an upper bound: the broker gives no exact lag (DescribeShareGroupOffsets v0, "
    "Kafka 4.1, or -1), so the lag is unknown; kgroups share-lag shows the bound"
)


def unassigned_topics(group: GroupLag) -> list[str]:
    """The topics the group committed on that none of its members is assigned (the snapshot's
    ``topic_unassigned`` flag), sorted."""
    from ..lag.model import LagFlag

    return sorted({p.topic for p in group.partitions if LagFlag.TOPIC_UNASSIGNED in p.flags})


def lag_headers(
    with_seconds: bool, with_margin: bool = False, with_catch_up: bool = False
) -> tuple[str, ...]:
    return (
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        *(("LAG-SECONDS",) if with_seconds else ()),
        *(("MARGIN",) if with_margin else ()),
        *(("CATCH-UP",) if with_catch_up else ()),
        "NOTE",
    )


def lag_ok(
    snapshot: LagSnapshot,
    seconds: Mapping[str, GroupLagSeconds] | None,
    totals_known: bool | None = None,
) -> bool:
    """Unknown is never fine: a group not read, not found, with an unknown total or (with
    --seconds) an age that is unknown or only a lower bound (a bound is not a value) is exit 1.
    ``totals_known``: whether every group's total is known, when the caller found it already
    (None: computed here; a group not found has no total)."""
    return (
        not snapshot.failures
        and (
            all(g.total_lag is not None for g in snapshot.groups.values())
            if totals_known is None
            else totals_known
        )
        and (seconds is None or all(s.max_seconds is not None and not s.at_least for s in seconds.values()))
    )


def group_document(
    group: GroupLag, seconds: GroupLagSeconds | None, with_seconds: bool, *, for_msgspec: bool = False
) -> dict[str, Any]:
    """The group's JSON object. ``for_msgspec``: for msgspec's encoder only (the compact
    writers), the same bytes once encoded, without a dict per partition
    (:func:`encodable_partitions`)."""
    data = group.document(encodable_partitions(group)) if for_msgspec else group.to_dict()
    if with_seconds:
        data["lag_seconds"] = seconds.to_dict() if seconds is not None else None
    return data


def encodable_partitions(group: GroupLag) -> list[Any]:
    """The group's partitions for msgspec: one without a flag or an error as itself (msgspec
    writes a dataclass's fields in order, which are the keys and values of its ``to_dict``:
    ``"flags":[]``, ``"error":null``), any other as its ``to_dict`` (sorted flags, the
    error's object)."""
    return [p if not p.flags and p.error is None else p.to_dict() for p in group.partitions]
