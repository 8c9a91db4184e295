"""``kgroups reset-offsets``: Kafka's ``kafka-consumer-groups.sh --reset-offsets`` (KIP-122),
option by option, through the cleanup's safety path: dry run unless ``--execute``, only groups
without members, several groups or a pattern in one batched call, offsets clamped to
[log start, log end] and the clamp reported, a backup read back before the commit, an audit
record and the undo command."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .common import (
    DEFAULT_BACKUP_URL,
    add_selection,
    change_context,
    change_footer,
    check_change_options,
    restore_command,
    selected_groups,
)
from .output import render_table

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ..cleanup.offset_results import OffsetChangeResult
    from ..client import GroupsClient
    from .common import Progress

STRATEGIES = (
    "to_earliest",
    "to_latest",
    "to_current",
    "to_offset",
    "shift_by",
    "to_datetime",
    "by_duration",
    "from_file",
)


def add_arguments(reset: argparse.ArgumentParser) -> None:
    add_selection(reset)
    scope = reset.add_argument_group("scope (one of; --from-file brings its own partitions)")
    scope.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,P]",
        help="a topic (every partition) or some of its partitions, 'orders:0,2' (repeatable)",
    )
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has committed")
    how = reset.add_argument_group("strategy (exactly one)").add_mutually_exclusive_group(required=True)
    how.add_argument("--to-earliest", action="store_true", help="the log start offset")
    how.add_argument("--to-latest", action="store_true", help="the log end offset")
    how.add_argument("--to-current", action="store_true", help="the committed offset (none: the log end)")
    how.add_argument("--to-offset", metavar="N", help="offset N (clamped to [log start, log end])")
    how.add_argument(
        "--shift-by", metavar="N", help="the committed offset plus N, N may be negative (clamped)"
    )
    how.add_argument(
        "--to-datetime",
        metavar="ISO",
        help="the first offset at or after this time, e.g. 2024-05-01T00:00:00.000 (no zone: UTC)",
    )
    how.add_argument(
        "--by-duration", metavar="PnDTnHnM", help="as --to-datetime, that long ago (ISO-8601, 'PT6H')"
    )
    how.add_argument("--from-file", metavar="CSV", help="the offsets of a file in the --export format")
    run = reset.add_argument_group("run")
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit; without it nothing is changed")
    mode.add_argument("--dry-run", action="store_true", help="only show the plan (the default)")
    run.add_argument(
        "--export",
        action="store_true",
        help="print the plan as Kafka's reset CSV (what --from-file reads) instead of the table",
    )
    run.add_argument(
        "--max-groups",
        type=int,
        metavar="N",
        help="at most N groups per run (required with --execute and --pattern)",
    )
    run.add_argument(
        "--backup-url",
        default=DEFAULT_BACKUP_URL,
        help=f"where offset backups and audit records go (default {DEFAULT_BACKUP_URL})",
    )
    run.add_argument(
        "--connect-url",
        action="append",
        default=[],
        help="Kafka Connect REST URL (repeatable): a sink connector's group is never committed to directly",
    )
    run.add_argument(
        "--via-connect",
        action="store_true",
        help="reset a STOPPED sink connector's group through Connect (PATCH .../offsets, KIP-875)",
    )


def prepare(args) -> None:
    """The spec, the file, the options and the Connect clusters, checked before any network call."""
    from ..cleanup.reset import ResetOptions
    from ..client.errors import ConfigurationError
    from ..client.properties import read_properties_file
    from ..connect import connect_configs_from_properties
    from ..offsets.csvfile import parse_reset_csv
    from ..offsets.spec import reset_spec

    chosen = next(s for s in STRATEGIES if getattr(args, s) not in (None, False))
    value = getattr(args, chosen)
    file_offsets = None
    if chosen == "from_file":
        try:
            with open(value, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise ConfigurationError(
                f"--from-file {value!r} cannot be read ({exc.strerror or exc})."
            ) from None
        file_offsets = parse_reset_csv(
            text, None if args.pattern else list(args.groups), source=f"--from-file {value}"
        )
        value = None
    spec = reset_spec(
        chosen,
        None if value is True else value,
        topics=args.topic,
        all_topics=args.all_topics,
        file_offsets=file_offsets,
    )
    check_change_options(args, cap_says="may be reset")
    options = ResetOptions(dry_run=not args.execute, max_groups=args.max_groups, via_connect=args.via_connect)
    properties = read_properties_file(args.command_config) if args.command_config else {}
    args.prepared = (spec, options, connect_configs_from_properties(properties, args.connect_url))


def _rows(result) -> list[Sequence[Any]]:
    rows: list[Sequence[Any]] = []
    for g, d in result.decisions.items():
        failures = {(tp.topic, tp.partition): why for tp, why in d.failed.items()}
        for r in d.rows:
            note = r["finding"] or ""
            if note.startswith("clamped"):
                note = f"{note} (asked {r['requested']})"
            failed = failures.get((r["topic"], r["partition"]))
            rows.append(
                (
                    g,
                    r["topic"],
                    r["partition"],
                    r["current"],
                    r["new"],
                    r["log_start"],
                    r["log_end"],
                    f"{note}; {failed}" if failed and note else failed or note,
                )
            )
    return rows


def execute(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from ..cleanup.reset import run_reset

    spec, options, clusters = args.prepared
    ids = selected_groups(client, args, progress)
    context = change_context(
        client, args, by="kgroups reset-offsets", dry_run=options.dry_run, connect_clusters=clusters
    )
    progress(f"{'dry run: ' if options.dry_run else ''}planning the reset of {len(ids)} group(s)")
    result = client.run(run_reset(context, spec, ids, options))
    data = result.to_dict()
    if result.backup_url:
        data["undo_command"] = restore_command(args, result.backup_url, result.changed_groups(), result.undo)
    if args.export:
        return data, _export(result, single_group=len(ids) == 1 and not args.pattern), result.ok
    return data, "\n".join(_report(result, data)), result.ok


def _export(result: OffsetChangeResult, *, single_group: bool) -> str:
    """``--export``: the offsets a run committed (a dry run: would commit) as a reset CSV."""
    from ..cleanup.offset_results import ChangeOutcome
    from ..offsets.csvfile import export_csv

    dry = result.dry_run
    ready = (ChangeOutcome.WOULD_DO,) if dry else (ChangeOutcome.DONE, ChangeOutcome.PARTIAL)
    offsets = {
        g: {tp: v for tp, v in d.changed.items()} if not dry else {_tp(r): r["new"] for r in d.rows}
        for g, d in result.decisions.items()
        if d.outcome in ready
    }
    return export_csv(offsets, single_group=single_group).rstrip("\n")


def _report(result: OffsetChangeResult, data: Mapping[str, Any]) -> list[str]:
    """The partitions' table, the decisions' table, the strategy, the counts and the footer."""
    columns = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "LOG-START", "LOG-END", "NOTE")
    lines = [render_table(columns, _rows(result))] if any(d.rows for d in result.decisions.values()) else []
    lines.append(
        render_table(
            ("GROUP", "DECISION", "REASON"),
            [(g, d.outcome.label, d.reason) for g, d in result.decisions.items()],
        )
    )
    s = result.summary()
    lines.append(f"\nstrategy {data['plan']['strategy']}")
    lines.append(
        f"{s['groups']} group(s): {s['done']} reset, {s['would_do']} would reset, {s['partial']} partial, "
        f"{s['refused']} refused, {s['skipped']} skipped, {s['failed']} failed"
    )
    lines += change_footer(
        result,
        data.get("undo_command"),
        before="committing",
        dry_run=(
            "dry run: nothing committed; pass --execute to commit exactly the above."
            if result.dry_run
            else None
        ),
    )
    return lines


def _tp(row):
    from ..client.results import TopicPartition

    return TopicPartition(row["topic"], row["partition"])
