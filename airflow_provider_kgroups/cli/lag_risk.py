"""``kgroups lag --risk`` / ``--sample``: the lag table with each lagging partition's retention
margin (MARGIN: at least how long until retention may delete its first unread record) and
catch-up time (CATCH-UP, from two snapshots ``--sample`` apart), AT_RISK in the note where the
margin is below ``--margin-floor`` or shorter than the catch-up time; the TOTAL row carries the
group's shortest margin and longest catch-up. The rules are :mod:`..lag.retention`'s. Read as one
snapshot (or two), not streamed: a margin needs every lagging partition's oldest record."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..client.numbers import is_int
from .lag_rows import lag_headers, lag_ok, lag_rows_and_totals
from .output import TableStream, write_out

if TYPE_CHECKING:
    from ..client import GroupsClient
    from ..lag.model import LagSnapshot
    from ..lag.retention import PartitionRisk
    from .common import Progress

Risks = Mapping[str, Mapping[tuple[str, int], "PartitionRisk"]]


def execute_risk(client: GroupsClient, args, ids: list[str], policy, progress: Progress, listings) -> tuple:
    from ..lag.retention_reads import partition_risks, retention_margins
    from ..lag.seconds import lag_seconds
    from ..lag.snapshot import take_snapshot

    async def snapshot() -> LagSnapshot:
        return await take_snapshot(
            client.aclient, ids, policy=policy, read_committed=args.read_committed, listings=listings
        )

    progress(f"reading committed and log-end offsets of {len(ids)} group(s)")
    earlier = None
    if args.sample:
        earlier = client.run(snapshot())
        progress(f"sampling for {args.sample:g} s: the second snapshot gives the consume and produce rates")
        client.run(asyncio.sleep(args.sample))
    latest = client.run(snapshot())
    seconds = margins = None
    if args.risk:
        progress("reading the oldest unread record of every lagging partition and the topics' retention")
        seconds = client.run(
            lag_seconds(client.aclient, latest, worst_n=None, read_committed=args.read_committed)
        )
        margins = client.run(retention_margins(client.aclient, latest, seconds=seconds))
    risks = partition_risks(latest, margins, earlier, args.margin_floor)
    shown_seconds = seconds if args.seconds else None
    ok = lag_ok(latest, shown_seconds)
    if args.format == "table":
        rows, _ = lag_rows_and_totals(latest, shown_seconds)
        table = TableStream(lag_headers(args.seconds, bool(args.risk), bool(args.sample)), write_out)
        table.add(risk_rows(rows, risks, bool(args.risk), bool(args.sample)))
        table.close()
        return None, None, ok

    def document() -> dict[str, Any]:
        data = latest.to_dict()
        for gid, group in data["groups"].items():
            group["risk"] = group_risk(risks.get(gid, {}))
            if shown_seconds is not None:
                measured = shown_seconds.get(gid)
                group["lag_seconds"] = measured.to_dict() if measured is not None else None
        return data

    if args.format == "jsonl":
        from .output import json_encoder

        encode = json_encoder(args)
        built = document()
        lines = [encode({"taken_at_ms": built["taken_at_ms"], **g}) for g in built["groups"].values()]
        write_out(b"\n".join(lines) + b"\n" if lines else b"")
        return None, None, ok
    return document, None, ok


def group_risk(per: Mapping[tuple[str, int], PartitionRisk]) -> dict[str, Any]:
    """A group's risk as JSON: each lagging partition's, the shortest margin, the longest catch-up.

    ``margin_seconds`` is the shortest *known* margin, and a lower bound (``margin_at_least``) as
    each partition's is; ``margin_unknown_partitions`` counts the lagging partitions whose margin
    retention may bound but could not be measured (the group's shortest may be among them), so a
    reader never takes the known minimum for the whole group's."""
    from ..lag.retention import MarginBasis

    margins = [
        r.margin.seconds for r in per.values() if r.margin is not None and r.margin.seconds is not None
    ]
    unknown = sum(1 for r in per.values() if r.margin is not None and r.margin.basis is MarginBasis.UNKNOWN)
    etas = [r.catch_up for r in per.values()]
    shortest = min(margins, default=None)
    return {
        "at_risk": any(r.at_risk for r in per.values()),
        "margin_seconds": shortest,
        "margin_at_least": shortest is not None,
        "margin_unknown_partitions": unknown,
        "catch_up_seconds": None
        if any(e.never or e.seconds is None for e in etas)
        else max((e.seconds or 0.0 for e in etas), default=0.0),
        "never_catches_up": any(e.never for e in etas),
        "partitions": [
            {"topic": t, "partition": p, **risk.to_dict()} for (t, p), risk in sorted(per.items())
        ],
    }


def risk_rows(rows: list[Sequence[Any]], risks: Risks, margin: bool, catch_up: bool) -> list[Sequence[Any]]:
    """The lag table's rows with MARGIN and CATCH-UP before NOTE, AT_RISK in the note."""
    from ..lag.retention import catch_up_text, margin_text

    out: list[Sequence[Any]] = []
    for row in rows:
        gid, topic, partition = row[0], row[1], row[2]
        per = risks.get(gid, {})
        risk = per.get((topic, partition)) if is_int(partition) else None
        if risk is not None:
            cells = ((margin_text(risk.margin),) if margin else ()) + (
                (catch_up_text(risk.catch_up),) if catch_up else ()
            )
            note = "AT_RISK" + (f"; {row[-1]}" if row[-1] else "") if risk.at_risk else row[-1]
        elif topic == "TOTAL" and per:
            cells, note = _total_cells(per, margin, catch_up), row[-1]
            if any(r.at_risk for r in per.values()):
                note = f"AT_RISK ({sum(r.at_risk for r in per.values())} partition(s)); {note}"
        else:
            cells, note = ("",) * (margin + catch_up), row[-1]
        out.append((*row[:-1], *cells, note))
    return out


def _total_cells(
    per: Mapping[tuple[str, int], PartitionRisk], margin: bool, catch_up: bool
) -> tuple[str, ...]:
    from ..lag.retention import catch_up_text, duration

    cells: tuple[str, ...] = ()
    if margin:
        known = [
            r.margin.seconds for r in per.values() if r.margin is not None and r.margin.seconds is not None
        ]
        cells += (f">={duration(max(min(known), 0.0))}" if known else "-",)
    if catch_up:
        etas = [r.catch_up for r in per.values()]
        if any(e.never for e in etas):
            cells += ("never",)
        elif any(e.seconds is None for e in etas):
            cells += ("-",)  # one partition's catch-up unknown: the group's is too
        else:
            cells += (catch_up_text(max(etas, key=lambda e: e.seconds or 0.0)),)
    return cells
