"""``kgroups delete-offsets``: remove a group's committed offsets for a topic or some of its
partitions (OffsetDelete, KIP-496; Kafka's ``--delete-offsets``), through the cleanup's safety
path: dry run unless ``--execute``, the broker's GROUP_SUBSCRIBED_TO_TOPIC rule predicted and
then reported per partition, a backup read back first, an audit record, the undo command."""

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
    from collections.abc import Sequence

    from ..client import GroupsClient
    from .common import Progress


def add_arguments(delete: argparse.ArgumentParser) -> None:
    add_selection(delete)
    delete.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,P]",
        help="a topic (every partition the group committed) or some partitions, 'orders:0,2' "
        "(repeatable, required)",
    )
    mode = delete.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="delete; without it nothing is changed")
    mode.add_argument("--dry-run", action="store_true", help="only show the plan (the default)")
    delete.add_argument(
        "--max-groups",
        type=int,
        metavar="N",
        help="at most N groups per run (required with --execute and --pattern)",
    )
    delete.add_argument(
        "--backup-url",
        default=DEFAULT_BACKUP_URL,
        help=f"where offset backups and audit records go (default {DEFAULT_BACKUP_URL})",
    )


def prepare(args) -> None:
    from ..cleanup.offset_deletion import DeletionOptions
    from ..client.errors import ConfigurationError
    from ..offsets.spec import parse_topic_scope

    topics = parse_topic_scope("--topic", args.topic)
    if not topics:
        raise ConfigurationError(
            "delete-offsets needs --topic TOPIC (or TOPIC:0,2): which offsets to delete."
        )
    check_change_options(args, cap_says="groups may lose offsets")
    args.prepared = (topics, DeletionOptions(dry_run=not args.execute, max_groups=args.max_groups))


def execute(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from ..cleanup.offset_deletion import run_offset_deletion
    from ..cleanup.offset_results import ChangeOutcome
    from ..offsets.deletion import plan_offset_deletion

    topics, options = args.prepared
    ids = selected_groups(client, args, progress)
    context = change_context(client, args, by="kgroups delete-offsets", dry_run=options.dry_run)
    progress(f"{'dry run: ' if options.dry_run else ''}planning the offset deletion of {len(ids)} group(s)")

    async def run():
        plans = await plan_offset_deletion(client.aclient, ids, topics)
        return await run_offset_deletion(
            context,
            plans,
            options,
            extra={"topics": {t: None if p is None else list(p) for t, p in topics.items()}},
        )

    result = client.run(run())
    data = result.to_dict()
    rows: list[Sequence[Any]] = []
    for g, d in result.decisions.items():
        failures = {(tp.topic, tp.partition): why for tp, why in {**d.kept, **d.failed}.items()}
        for r in d.rows:
            done = (r["topic"], r["partition"]) in {(tp.topic, tp.partition) for tp in d.changed}
            outcome = "deleted" if done else failures.get((r["topic"], r["partition"]), r["prediction"])
            rows.append((g, r["topic"], r["partition"], r["current"], outcome))
    lines = [render_table(("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "OUTCOME"), rows)] if rows else []
    lines.append(
        render_table(
            ("GROUP", "DECISION", "REASON"),
            [(g, d.outcome.label, d.reason) for g, d in result.decisions.items()],
        )
    )
    if result.backup_url:
        done = result.ids(ChangeOutcome.DONE) + result.ids(ChangeOutcome.PARTIAL)
        data["undo_command"] = restore_command(args, result.backup_url, done, result.undo)
    lines.append("")
    lines += change_footer(
        result,
        f"{data.get('undo_command')}  (Kafka takes the commit back only while the group is Empty)",
        before="deleting",
        dry_run="dry run: nothing deleted; pass --execute to delete exactly the above."
        if options.dry_run
        else None,
    )
    return data, "\n".join(lines), result.ok
