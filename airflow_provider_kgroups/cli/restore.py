"""``kgroups restore``: commit the offsets of a backup (taken by delete, reset-offsets, ...), written
ahead like every change (:mod:`..cleanup.restore`): the offsets it overwrites are backed up first,
and its audit record goes to the backup's store."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .common import interrupted_lines
from .output import render_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..client import GroupsClient
    from .common import Progress


def add_arguments(restore: argparse.ArgumentParser) -> None:
    restore.add_argument("backup_url", help="the backup's URL (printed by delete)")
    restore.add_argument("groups", nargs="*", help="only these groups (default: every group in the backup)")


def prepare(args) -> None:
    """The backup read and the named groups checked in it, before any network call."""
    from ..client.errors import ConfigurationError
    from ..history.backup import load_backup

    backup = load_backup(args.backup_url)
    missing = [g for g in args.groups if g not in backup.groups]
    if missing:
        raise ConfigurationError(
            f"group(s) {', '.join(map(repr, missing))} are not in the backup "
            f"{args.backup_url} (it has {', '.join(sorted(backup.groups)) or 'none'})."
        )
    args.prepared = backup


def execute(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from ..cleanup.restore import restore_context, run_restore
    from ..history.backup import restore_outcome

    backup = args.prepared
    progress(
        f"committing the offsets of {len(args.groups) or len(backup.groups)} group(s) from {args.backup_url}"
    )
    results, run = client.run(
        run_restore(
            restore_context(client.aclient, args.backup_url, who={"by": "kgroups restore"}),
            backup,
            args.groups or None,
        )
    )
    rows: list[Sequence[Any]] = []
    for g, outcome in results.items():
        rows += [(g, str(tp), offset, "restored") for tp, offset in sorted(outcome.values.items())]
        rows += [(g, str(tp), "-", str(f)) for tp, f in sorted(outcome.failures.items())]
    table = render_table(("GROUP", "PARTITION", "OFFSET", "OUTCOME"), rows) if rows else "nothing to restore"
    outcomes = {g: restore_outcome(r) for g, r in results.items()}
    counts = {word: sum(o == word for o in outcomes.values()) for word in ("restored", "partial", "failed")}
    if results:
        table += f"\n\n{len(results)} group(s): " + ", ".join(f"{n} {word}" for word, n in counts.items())
    lines = [table, *interrupted_lines(run)]
    if run.backup_url:  # the offsets the restore overwrote: a restore can be undone too
        lines.append(f"backup   {run.backup_url} (the offsets before this restore, read back first)")
    lines.append(f"audit    {run.audit_url}" if run.audit_url else f"audit    NOT WRITTEN: {run.audit_error}")
    data = {g: {**r.to_dict(), "outcome": outcomes[g]} for g, r in results.items()}
    return data, "\n".join(lines), all(r.ok for r in results.values()) and run.audit_error is None
