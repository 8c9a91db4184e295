"""``kgroups lag``: committed against log-end offset per partition (a share group's share-partition
start offset, with the broker's exact lag), totals per group, and with
``--seconds`` the age of each group's oldest unread record. The table, ``--format jsonl`` (a
line per group) and ``--format json`` (one document; with ``--pretty`` built whole) are written
as each batch of groups completes. A topic a Stable group's members are no longer assigned, whose
commits stay behind (``topic_unassigned``: what the gate's ABANDONED verdict is made of), is
named on the group's TOTAL line."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .common import add_selection, selected_and_listed
from .lag_rows import (
    group_document,
    lag_headers,
    lag_ok,
    lag_rows_and_totals,
)
from .output import JsonDocumentStream, TableStream, json_encoder, write_out

if TYPE_CHECKING:
    from ..client import GroupsClient
    from ..client.results import GroupListing
    from ..lag.model import LagSnapshot
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
    lag.add_argument(
        "--risk",
        action="store_true",
        help="also each lagging partition's retention margin: at least how long until retention may "
        "delete its first unread record (the topics' retention settings and one Fetch round); "
        "AT_RISK when it is below --margin-floor or shorter than the catch-up time",
    )
    lag.add_argument(
        "--sample",
        type=sample_seconds,
        metavar="DURATION",
        help="two snapshots this far apart (e.g. 30s, 2m): the catch-up time of each lagging partition "
        "from its consume and produce rates ('never' when slower than the producers)",
    )
    lag.add_argument(
        "--margin-floor",
        type=sample_seconds,
        default=3600.0,
        metavar="DURATION",
        help="with --risk: a margin below this is AT_RISK whatever the catch-up time (default 1h)",
    )


def sample_seconds(text: str) -> float:
    """``30``, ``30s``, ``2m``, ``1h`` -> seconds (> 0), for argparse: a bad value fails before any request."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration > 0 such as 30s, 2m or 1h")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2) or "s"]


def streams(args) -> bool:
    """Whether the output is written batch by batch (:func:`stream_lag`): every format but
    ``--pretty`` JSON, which is built from one snapshot: its keys are sorted, so ``failures``
    comes before ``groups`` and is not known until every group is read."""
    return args.format != "json" or not getattr(args, "pretty", False)


def execute(client: GroupsClient, args, progress: Progress) -> tuple[Any, Any, bool]:
    from ..lag.model import UnknownLagPolicy

    ids, listings = selected_and_listed(client, args, progress)
    policy = UnknownLagPolicy(args.unknown_lag)
    if args.risk or args.sample:
        from .lag_risk import execute_risk  # the risk view: MARGIN and CATCH-UP columns

        return execute_risk(client, args, ids, policy, progress, listings)
    if streams(args):
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
    snapshot's). ``--format json``: the whole snapshot's document, a batch's groups at a time in
    the order of the groups (:class:`.output.JsonDocumentStream`: the same bytes as the document
    built whole; its ``taken_at_ms`` is the first batch's, when the first commits were read, as a
    whole snapshot's is; with ``--seconds`` each group's age is as of its own batch's time, as in
    jsonl). Memory stays at a few batches' worth, whatever the number of groups.

    A run that fails midway (an exception: no broker left, an interrupt)
    leaves a JSON document whole: its open objects are closed and a last field ``"error"`` names
    the exception, which then goes on to :func:`..run` (the same message and exit code as without
    streaming). A run that fails before its first batch is read writes nothing, as before."""
    progress(f"streaming the lag of {len(ids)} group(s)")
    table = TableStream(lag_headers(args.seconds), write_out) if args.format == "table" else None
    document = JsonDocumentStream(write_out, "groups", "failures") if args.format == "json" else None
    if table is not None:
        write_part = _table_writer(table)
    elif document is not None:
        write_part = _document_writer(document, args)
    else:
        write_part = _jsonl_writer(args)
    try:
        ok = client.run(_write_parts(client, args, ids, policy, listings, write_part))
    except BaseException as exc:
        if document is not None and document.started:
            try:
                document.close(exc)
            except OSError:  # stdout itself is gone: the error that ended the run is what matters
                pass
        raise
    if table is not None:
        table.close()
    if document is not None:
        if not document.started:  # no batch at all: the document of no group
            from ..lag.snapshot import now_ms

            document.start({"taken_at_ms": now_ms(), "policy": policy.value})
        document.close()
    return ok


async def _write_parts(
    client: GroupsClient,
    args,
    ids: list[str],
    policy,
    listings: Mapping[str, GroupListing],
    write_part: Callable[[LagSnapshot, Mapping[str, GroupLagSeconds] | None], bool],
) -> bool:
    """Each batch of groups read (with ``--seconds``, its ages too) and written as it completes;
    returns whether every group's lag was fine (:func:`.lag_rows.lag_ok`)."""
    from ..lag.snapshot import iter_snapshot

    ok = True
    async for part in iter_snapshot(
        client.aclient,
        ids,
        policy=policy,
        read_committed=args.read_committed,
        listings=listings,
        in_order=args.format != "jsonl",
    ):
        seconds = None
        if args.seconds:
            from ..lag.seconds import lag_seconds

            seconds = await lag_seconds(client.aclient, part, worst_n=1, read_committed=args.read_committed)
        totals_known = write_part(part, seconds)
        ok = ok and lag_ok(part, seconds, totals_known)
    return ok


def _table_writer(table: TableStream) -> Callable[[LagSnapshot, Mapping[str, GroupLagSeconds] | None], bool]:
    """A part as the table's rows (:class:`.output.TableStream`). Returns whether every group's
    total is known."""

    def write(part: LagSnapshot, seconds: Mapping[str, GroupLagSeconds] | None) -> bool:
        rows, known = lag_rows_and_totals(part, seconds)
        table.add(rows)
        return known

    return write


def _document_writer(
    document: JsonDocumentStream, args
) -> Callable[[LagSnapshot, Mapping[str, GroupLagSeconds] | None], bool]:
    """A part into the ``--format json`` document (:class:`.output.JsonDocumentStream`): the first
    part's time and policy open it, each group is encoded as soon as its entry is made, a group
    that failed waits for the ``failures`` object. Returns whether every group's total is known."""

    def write(part: LagSnapshot, seconds: Mapping[str, GroupLagSeconds] | None) -> bool:
        if not document.started:
            document.start({"taken_at_ms": part.taken_at_ms, "policy": part.policy.value})
        known = True
        entries = {}
        for gid, g in part.groups.items():
            entry = group_document(g, (seconds or {}).get(gid), args.seconds, for_msgspec=True)
            known = known and entry["total_lag"] is not None
            entries[gid] = entry
        document.add_all(entries)
        for gid, failure in part.failures.items():
            document.defer(gid, failure.to_dict())
        document.flush()
        return known

    return write


def _jsonl_writer(args) -> Callable[[LagSnapshot, Mapping[str, GroupLagSeconds] | None], bool]:
    """A part as ``--format jsonl`` lines: one per group, then one per group that failed. Returns
    whether every group's total is known (read from the documents: each total computed once)."""
    encode = json_encoder(args)
    for_msgspec = not getattr(args, "pretty", False)  # json_encoder's choice

    def write(part: LagSnapshot, seconds: Mapping[str, GroupLagSeconds] | None) -> bool:
        lines = []
        known = True
        for gid, g in part.groups.items():
            # each document encoded as soon as it is made: a part's documents are never all held
            document = {
                "taken_at_ms": part.taken_at_ms,
                **group_document(g, (seconds or {}).get(gid), args.seconds, for_msgspec=for_msgspec),
            }
            known = known and document["total_lag"] is not None
            lines.append(encode(document))
        lines += [encode({"group_id": gid, "failure": f.to_dict()}) for gid, f in part.failures.items()]
        if lines:
            write_out(b"\n".join(lines) + b"\n")
        return known

    return write
