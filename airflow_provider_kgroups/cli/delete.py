"""``kgroups delete``: dead groups deleted through the cleanup's one safety path (dry run unless
``--yes``, evidence per group, deny patterns, caps, backup read back first, audit, the restore
command printed)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .common import DEFAULT_BACKUP_URL, add_selection, change_context, change_footer, restore_command
from .output import render_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..cleanup import CleanupPolicy
    from ..client import GroupsClient
    from .common import Progress


def add_arguments(delete: argparse.ArgumentParser) -> None:
    add_selection(delete)
    delete.add_argument("--yes", action="store_true", help="really delete; without it nothing is changed")
    delete.add_argument(
        "--history-url", help="the lag history store (kgroups_snapshot DAG): evidence of idleness"
    )
    delete.add_argument(
        "--idle-hours",
        type=float,
        default=7 * 24.0,
        help="idle (Empty, records to read, no commit progress) this long is evidence (default 168)",
    )
    delete.add_argument(
        "--assume-full-visibility",
        action="store_true",
        help="this principal may Describe every topic and group: 'no committed offset' is evidence",
    )
    delete.add_argument(
        "--allow", action="append", default=[], help="only groups matching may go (repeatable)"
    )
    delete.add_argument("--deny", action="append", default=[], help="groups matching never go (repeatable)")
    delete.add_argument(
        "--override-deny",
        action="append",
        default=[],
        metavar="GROUP",
        help="lift every deny for this exact group id (repeatable; never a pattern)",
    )
    delete.add_argument(
        "--max-deletions", type=int, default=10, help="at most this many deletions (default 10)"
    )
    delete.add_argument(
        "--max-deletions-percent",
        type=float,
        default=50.0,
        help="at most this %% of the candidates, rounded up (default 50)",
    )
    delete.add_argument(
        "--connect-url",
        action="append",
        default=[],
        help="Kafka Connect REST URL (repeatable); credentials: connect.* in --command-config",
    )
    delete.add_argument(
        "--delete-despite-unreadable-connect",
        action="store_true",
        help="delete even when a Kafka Connect cluster given cannot be read (by default such a run "
        "deletes nothing: a group named by a connector's consumer.override.group.id there "
        "cannot be recognised)",
    )
    delete.add_argument(
        "--backup-url",
        default=DEFAULT_BACKUP_URL,
        help=f"where offset backups and audit records go (default {DEFAULT_BACKUP_URL})",
    )


def delete_policy(args) -> CleanupPolicy:
    """The delete options as a policy: every check before any network call."""
    from ..cleanup import CleanupPolicy
    from ..client import GroupSelector
    from ..client.errors import ConfigurationError
    from ..lag.deadgroups import DeadGroupRules

    rules = DeadGroupRules(
        idle_hours=args.idle_hours,
        allow=tuple(args.allow),
        deny=tuple(args.deny),
        assume_full_visibility=args.assume_full_visibility,
    )
    selector = (
        GroupSelector(patterns=tuple(args.pattern), exclude=tuple(args.exclude)) if args.pattern else None
    )
    if args.exclude and not args.pattern:
        raise ConfigurationError(
            "--exclude applies to --pattern selections only; named groups are never excluded."
        )
    if not args.backup_url or not args.backup_url.strip():
        raise ConfigurationError("--backup-url is empty: give a directory or an fsspec URL.")
    return CleanupPolicy(
        rules=rules,
        selector=selector,
        named=tuple(args.groups),
        override_deny=tuple(args.override_deny),
        max_deletions=args.max_deletions,
        max_deletions_percent=args.max_deletions_percent,
        dry_run=not args.yes,
        delete_despite_unreadable_connect=args.delete_despite_unreadable_connect,
    )


def prepare(args) -> None:
    """The policy and the Kafka Connect clusters, checked before any network call (bad input: exit 2)."""
    from ..client.properties import read_properties_file
    from ..connect import connect_configs_from_properties

    properties = read_properties_file(args.command_config) if args.command_config else {}
    clusters = connect_configs_from_properties(properties, args.connect_url)
    args.prepared = (delete_policy(args), clusters)


def execute(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from ..cleanup import Outcome, run_cleanup

    policy, connect_clusters = args.prepared
    history = None
    if args.history_url:
        from ..history.store import HistoryStore

        store = HistoryStore(args.history_url)

        def history(ids, since_ms):
            return store.read_window(ids, since_ms=since_ms)

    progress(
        f"{'dry run: ' if policy.dry_run else ''}judging the selected groups"
        + (f"; asking {len(connect_clusters)} Kafka Connect cluster(s)" if connect_clusters else "")
    )
    result = client.run(
        run_cleanup(
            change_context(
                client, args, by="kgroups delete", dry_run=policy.dry_run, connect_clusters=connect_clusters
            ),
            policy,
            history=history,
        )
    )
    rows: list[Sequence[Any]] = [
        (g, d.deletion or d.outcome.label, d.reason) for g, d in result.decisions.items()
    ]
    lines = [render_table(("GROUP", "DECISION", "REASON"), rows) if rows else "no group selected"]
    s = result.summary()
    lines.append(
        f"\n{s['examined']} examined, {s['candidates']} candidate(s), cap {s['cap']}: "
        f"{len(s['deleted'])} deleted, {len(s['would_delete'])} would delete, {len(s['skipped'])} skipped, "
        f"{len(s['refused'])} refused, {len(s['not_found'])} not found, {len(s['failed'])} failed, "
        f"{sum(s['kept'].values())} kept"
        + (f" ({len(s['unjudged'])} could not be judged)" if s["unjudged"] else "")
        + (
            f"; {len(s['held'])} held: Kafka Connect unreadable ({', '.join(s['connect_unreadable'])})"
            if s["held"]
            else ""
        )
    )
    data = result.to_dict()
    # A rerun after a killed run undoes the groups that run deleted too (from the backup taken before
    # it deleted them): on Apache Kafka those groups are gone now, so this run deletes nothing of them.
    reconciled_undo = {g: url for r in result.reconciled for g, url in (r.get("undo") or {}).items()}
    if result.backup_url or reconciled_undo:
        undone = sorted(set(result.ids(Outcome.DELETED)) | set(reconciled_undo))
        data["restore_command"] = restore_command(
            args, result.backup_url or "", undone, {**reconciled_undo, **result.undo}
        )
    lines += change_footer(
        result,
        data.get("restore_command"),
        before="deleting",
        dry_run=("dry run: nothing deleted; pass --yes to do exactly the above." if policy.dry_run else None),
    )
    return data, "\n".join(lines), result.ok
