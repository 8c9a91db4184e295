"""What several verbs share: the client's configuration from the connection options, the group
selection (ids, patterns, excludes), progress lines on a terminal, and the undo command a
destructive verb prints. Only the standard library at import."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .parser import ENV_BOOTSTRAP

if TYPE_CHECKING:
    from ..cleanup.context import ChangeContext
    from ..client import ClientConfig, GroupsClient
    from ..client.results import GroupListing
    from ..connect import ConnectClusterConfig

DEFAULT_BACKUP_URL = "./kgroups-backups"


class Progress:
    """Phase lines on stderr, only when stderr is a terminal (never in pipes or CI logs)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, message: str) -> None:
        if self.enabled:
            print(f"... {message}", file=sys.stderr, flush=True)


def add_selection(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("groups", nargs="*", help="exact group ids")
    sub.add_argument(
        "--group",
        action="append",
        default=[],
        dest="group_options",
        metavar="GROUP",
        help="an exact group id, as kafka-consumer-groups.sh takes it (repeatable; same as a bare id)",
    )
    sub.add_argument(
        "--pattern", "-p", action="append", default=[], help="glob ('orders-*') or 're:<regex>', repeatable"
    )
    sub.add_argument(
        "--all-groups",
        action="store_true",
        help="every group (kafka-consumer-groups.sh's --all-groups: the pattern '*')",
    )
    sub.add_argument("--exclude", action="append", default=[], help="pattern to leave out, repeatable")


def merge_selection(args: argparse.Namespace) -> None:
    """Kafka's spellings into kgroups' own, before any check: ``--group G`` is the bare id G,
    ``--all-groups`` the pattern ``*`` (alone: with ids or patterns it would say two things)."""
    from ..client.errors import ConfigurationError

    if not hasattr(args, "group_options"):
        return
    args.groups = [*args.groups, *args.group_options]
    if args.all_groups:
        if args.groups or args.pattern:
            raise ConfigurationError(
                "--all-groups selects every group: give it without group ids, --group or --pattern."
            )
        args.pattern = ["*"]


def client_config(args: argparse.Namespace) -> ClientConfig:
    from ..client.deadline import check_seconds
    from ..client.errors import ConfigurationError
    from ..client.properties import config_from_kafka_properties, read_properties_file
    from ..connect import split_connect_properties

    if args.timeout is not None:
        check_seconds("--timeout", args.timeout)
    properties = read_properties_file(args.command_config) if args.command_config else {}
    properties, _ = split_connect_properties(properties)  # connect.* keys are for delete --connect-url
    if args.bootstrap_servers:
        properties["bootstrap.servers"] = args.bootstrap_servers
    if "bootstrap.servers" not in properties:
        raise ConfigurationError(
            f"no bootstrap servers: pass --bootstrap-servers host:port or set {ENV_BOOTSTRAP}."
        )
    return config_from_kafka_properties(properties, call_timeout_s=args.timeout, client_id="kgroups-cli")


def selected_groups(client: GroupsClient, args: argparse.Namespace, progress: Progress) -> list[str]:
    """The shared selection routine: a broker whose listing failed makes a pattern selection
    refuse (IncompleteListingError, exit 1, the brokers named) rather than drop its groups."""
    return selected_and_listed(client, args, progress)[0]


def selected_and_listed(
    client: GroupsClient, args: argparse.Namespace, progress: Progress
) -> tuple[list[str], dict[str, GroupListing]]:
    """:func:`selected_groups`, and what the listing (if patterns needed one) said of each group."""
    from ..client import GroupSelector
    from ..client.errors import ConfigurationError
    from ..client.selection import select_listed

    selector = GroupSelector(
        ids=tuple(args.groups), patterns=tuple(args.pattern), exclude=tuple(args.exclude)
    )
    if selector.needs_listing:
        progress("listing groups to match patterns")
    chosen, listings = client.run(select_listed(client.aclient, selector))
    if not chosen:
        raise ConfigurationError("no group matches the given ids and patterns.")
    return chosen, listings


def absolute_url(url: str) -> str:
    return url if "://" in url else os.path.abspath(url)


def change_context(
    client: GroupsClient,
    args: argparse.Namespace,
    *,
    by: str,
    dry_run: bool,
    connect_clusters: Sequence[ConnectClusterConfig] = (),
) -> ChangeContext:
    """The context of a changing verb's run: the backup in ``--backup-url``, the audit record next to
    it (none for a dry run), who ran it (``by``, e.g. "kgroups delete"), the Kafka Connect clusters."""
    from ..cleanup.context import ChangeContext

    backup_base = absolute_url(args.backup_url.strip())
    return ChangeContext(
        client.aclient,
        backup_base,
        audit_base_url=None if dry_run else backup_base,
        who={"by": by},
        connect_clusters=tuple(connect_clusters),
        connect_timeout_s=args.timeout or 30.0,
    )


def restore_command(
    args, backup_url: str, groups: Sequence[str] = (), undo: Mapping[str, str] | None = None
) -> str:
    """The command that undoes a change, with this run's connection options (never a secret:
    only the properties file's path). ``undo``: group -> the backup that undoes it when not
    ``backup_url`` (an interrupted earlier run changed it first): one command per backup, joined."""
    parts = ["kgroups"]
    if args.bootstrap_servers:
        parts += ["-b", args.bootstrap_servers]
    if args.command_config:
        parts += ["--command-config", os.path.abspath(args.command_config)]
    by_backup: dict[str, list[str]] = {}
    for g in groups:
        by_backup.setdefault((undo or {}).get(g, backup_url), []).append(g)
    if not by_backup:
        by_backup[backup_url] = []
    return " && ".join(
        " ".join(shlex.quote(p) for p in [*parts, "restore", url, *gs])
        for url, gs in sorted(by_backup.items())
    )


def interrupted_lines(result) -> list[str]:
    """One line per interrupted run this run found and reconciled (its outcome written now)."""
    lines = []
    for r in getattr(result, "reconciled", ()):
        groups = r.get("groups") or {}
        said = ", ".join(f"{v.replace('_', ' ')}: {', '.join(gs)}" for v, gs in groups.items() if gs)
        lines.append(
            f"interrupted run {r.get('run_id', '?')[:12]} ({r.get('action')}) reconciled: {said}; "
            f"outcome {r.get('audit')}"
        )
        for url in sorted(set((r.get("undo") or {}).values())):
            lines.append(
                f"  its undo: kgroups restore {url} "
                f"{' '.join(sorted(g for g, u in r['undo'].items() if u == url))}"
            )
    return lines


def check_change_options(args, *, cap_says: str) -> None:
    """What every offset-changing verb checks of its run options before any network call: an
    ``--exclude`` only with a pattern, a ``--max-groups`` cap when a pattern executes, a backup
    place. ``cap_says``: what the cap limits, for the message."""
    from ..client.errors import ConfigurationError

    if args.exclude and not args.pattern:
        raise ConfigurationError(
            "--exclude applies to --pattern selections only; named groups are never excluded."
        )
    if args.execute and args.pattern and args.max_groups is None:
        raise ConfigurationError(
            f"--execute with --pattern needs --max-groups N: a pattern may match more groups "
            f"than you think; the cap says how many {cap_says} in this run."
        )
    if not args.backup_url or not args.backup_url.strip():
        raise ConfigurationError("--backup-url is empty: give a directory or an fsspec URL.")


def change_footer(result, undo: str | None, *, before: str, dry_run: str | None) -> list[str]:
    """The lines every offset-changing verb ends with: the backup (read back before ``before``),
    the undo command, the audit record (or why it is missing), and the dry run's sentence."""
    lines = interrupted_lines(result)
    if result.backup_url:
        lines.append(f"backup   {result.backup_url} (read back before {before})")
        lines.append(f"undo     {undo}")
    if result.audit_url:
        lines.append(f"audit    {result.audit_url}")
    if result.audit_error:
        lines.append(f"audit    NOT WRITTEN: {result.audit_error}")
    if dry_run:
        lines.append(dry_run)
    return lines
