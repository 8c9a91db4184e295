"""``kgroups lag``: committed against log-end offset per partition (a share group's share-partition
start offset, with the broker's exact lag), totals per group, and with
``--seconds`` the age of each group's oldest unread record; ``--format jsonl`` streams a line
per group as its batch completes. A topic a Stable group's members are no longer assigned, whose
commits stay behind (``topic_unassigned``: what the gate's ABANDONED verdict is made of), is
named on the group's TOTAL line."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .common import add_selection, selected_and_listed
from .output import TableStream, json_encoder, write_out

if TYPE_CHECKING:
    from ..client import GroupsClient
    from ..client.results import GroupListing
    from ..lag.model import GroupLag, LagSnapshot
    from ..lag.seconds import GroupLagSeconds
    from .common import Progress


def add_arguments(lag: argparse.ArgumentParser) -> None:
    add_selection(lag)
    lag.add_argument(
        "--unknown-lag",
        choices=("fail", "ignore", "from_earliest", "from_latest"),
        default="fail",
        help="how to count partitions without a commit (default: fail = unknown)",
    )
    lag.add_argument("--read-committed", action="store_true", help="end offsets for transactional topics")
    lag.add_argument(
        "--seconds",
        action="store_true",
        help="also the lag in seconds of each group's worst partition (age of the oldest unread "
        "record: one extra Fetch round per partition leader)",
    )


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


def lag_headers(with_seconds: bool) -> tuple[str, ...]:
    return (
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        *(("LAG-SECONDS",) if with_seconds else ()),
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


def group_document(group: GroupLag, seconds: GroupLagSeconds | None, with_seconds: bool) -> dict[str, Any]:
    data = group.to_dict()
    if with_seconds:
        data["lag_seconds"] = seconds.to_dict() if seconds is not None else None
    return data


def execute(client: GroupsClient, args, progress: Progress) -> tuple[Any, Any, bool]:
    from ..lag.model import UnknownLagPolicy

    ids, listings = selected_and_listed(client, args, progress)
    policy = UnknownLagPolicy(args.unknown_lag)
    if args.format in ("jsonl", "table"):
        return None, None, stream_lag(client, args, ids, policy, progress, listings)
    from ..lag.snapshot import take_snapshot

    progress(f"reading committed and log-end offsets of {len(ids)} group(s)")
    snapshot = client.run(
        take_snapshot(
            client.aclient, ids, policy=policy, read_committed=args.read_committed, listings=listings
        )
    )
    seconds = None
    if args.seconds:
        from ..lag.seconds import lag_seconds

        progress("reading the oldest unread record of each group's worst partition")
        seconds = client.run(
            lag_seconds(client.aclient, snapshot, worst_n=1, read_committed=args.read_committed)
        )

    def document() -> dict[str, Any]:
        data = snapshot.to_dict()
        if seconds is not None:
            for gid, group in data["groups"].items():
                measured = seconds.get(gid)
                group["lag_seconds"] = measured.to_dict() if measured is not None else None
        return data

    return document, None, lag_ok(snapshot, seconds)


def stream_lag(
    client: GroupsClient,
    args,
    ids: list[str],
    policy,
    progress: Progress,
    listings: Mapping[str, GroupListing],
) -> bool:
    """``--format jsonl``: one line per group, written as soon as the batch holding it is read
    (:func:`...lag.snapshot.iter_snapshot`), then one line of failures if any group could not be
    read. ``--format table``: the table, a batch's rows at a time, in the order of the groups
    (:class:`.output.TableStream`; up to a batch of groups, one table exactly as a whole
    snapshot's). Memory stays at a few batches' worth, whatever the number of groups."""
    from ..lag.snapshot import iter_snapshot

    progress(f"streaming the lag of {len(ids)} group(s)")
    table = TableStream(lag_headers(args.seconds), write_out) if args.format == "table" else None
    write_part = _table_writer(table) if table is not None else _jsonl_writer(args)
    ok = True

    async def run() -> None:
        nonlocal ok
        async for part in iter_snapshot(
            client.aclient,
            ids,
            policy=policy,
            read_committed=args.read_committed,
            listings=listings,
            in_order=table is not None,
        ):
            seconds = None
            if args.seconds:
                from ..lag.seconds import lag_seconds

                seconds = await lag_seconds(
                    client.aclient, part, worst_n=1, read_committed=args.read_committed
                )
            totals_known = write_part(part, seconds)
            ok = ok and lag_ok(part, seconds, totals_known)

    client.run(run())
    if table is not None:
        table.close()
    return ok


def _table_writer(table: TableStream) -> Callable[[LagSnapshot, Mapping[str, GroupLagSeconds] | None], bool]:
    """A part as the table's rows (:class:`.output.TableStream`). Returns whether every group's
    total is known."""

    def write(part: LagSnapshot, seconds: Mapping[str, GroupLagSeconds] | None) -> bool:
        rows, known = lag_rows_and_totals(part, seconds)
        table.add(rows)
        return known

    return write


def _jsonl_writer(args) -> Callable[[LagSnapshot, Mapping[str, GroupLagSeconds] | None], bool]:
    """A part as ``--format jsonl`` lines: one per group, then one per group that failed. Returns
    whether every group's total is known (read from the documents: each total computed once)."""
    encode = json_encoder(args)

    def write(part: LagSnapshot, seconds: Mapping[str, GroupLagSeconds] | None) -> bool:
        lines = []
        known = True
        for gid, g in part.groups.items():
            # each document encoded as soon as it is made: a part's documents are never all held
            document = {
                "taken_at_ms": part.taken_at_ms,
                **group_document(g, (seconds or {}).get(gid), args.seconds),
            }
            known = known and document["total_lag"] is not None
            lines.append(encode(document))
        lines += [encode({"group_id": gid, "failure": f.to_dict()}) for gid, f in part.failures.items()]
        if lines:
            write_out(b"\n".join(lines) + b"\n")
        return known

    return write
