"""``kgroups``: the ops engineer's view of consumer groups (list, describe, lag, delete, restore).

Exit codes: 0 all fine, 1 some groups (or brokers) failed, 2 bad input, 3 no broker reachable.

Over 400 lines because it is the whole command line and kept in one module so that ``--help``
imports nothing else: the parser (each verb's arguments added only when that verb is used), one
short function per verb, each a thin layer over the client, the lag engine and the cleanup
package, and the output (the table, compact or pretty JSON).
"""

# Only the standard library at import: the arguments are parsed (and ``--help`` answered)
# before the client, the lag engine or kafka-python's codec are loaded (~300 ms); even the
# client's errors (dataclasses, kafka.errors: ~10 ms) load only once a verb runs.

from __future__ import annotations

import argparse
import os
import shlex
import sys
from itertools import repeat
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:
    from .cleanup import CleanupPolicy
    from .client import ClientConfig, GroupsClient
    from .lag.model import GroupLag, LagSnapshot
    from .lag.seconds import GroupLagSeconds

EXIT_OK, EXIT_PARTIAL, EXIT_BAD_INPUT, EXIT_UNREACHABLE = 0, 1, 2, 3
ENV_BOOTSTRAP = "KGROUPS_BOOTSTRAP_SERVERS"
ENV_COMMAND_CONFIG = "KGROUPS_COMMAND_CONFIG"
DEFAULT_BACKUP_URL = "./kgroups-backups"


class Progress:
    """Phase lines on stderr, only when stderr is a terminal (never in pipes or CI logs)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, message: str) -> None:
        if self.enabled:
            print(f"... {message}", file=sys.stderr, flush=True)


def add_common_options(parser: argparse.ArgumentParser, *, in_verb: bool) -> None:
    """Connection and output options. They are accepted before the verb and after it
    (``kgroups -b h:9092 lag ...`` and ``kgroups lag -b h:9092 ...``, as kafka-consumer-groups.sh
    users type them): after the verb their default is SUPPRESS, so a value given before the
    verb is kept unless the same option is given again after it (then the later one wins)."""
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if in_verb else value

    conn = parser.add_argument_group("connection")
    conn.add_argument("--bootstrap-servers", "-b", default=default(os.environ.get(ENV_BOOTSTRAP)),
                      help=f"host:port[,host:port] (env {ENV_BOOTSTRAP})")
    conn.add_argument("--command-config", default=default(os.environ.get(ENV_COMMAND_CONFIG)),
                      help=f"Java-style client.properties: security.protocol, sasl.*, ssl.* (env {ENV_COMMAND_CONFIG})")
    conn.add_argument("--timeout", type=float, default=default(None),
                      help="seconds for the whole command, every request included (default 60)")
    out = parser.add_argument_group("output")
    out.add_argument("--format", choices=("table", "json", "jsonl"), default=default("table"),
                     help="table (default); json: one compact document; jsonl: lag streams one JSON object per "
                          "group as its results complete (other verbs: the document on one line)")
    out.add_argument("--pretty", action="store_true", default=default(False),
                     help="json: indented, keys sorted")
    out.add_argument("--verbose", "-v", action="store_true", default=default(False),
                     help="log every request (API, version, broker, time)")


def _terminal_columns() -> int:
    """shutil.get_terminal_size's answer without importing shutil (and bz2, lzma with it)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         width if width is not None else _terminal_columns() - 2)


class _VerbParser(argparse.ArgumentParser):
    """A verb's parser whose arguments are added when it is first used (parsed, or its help or
    usage shown): ``kgroups lag ...`` builds the lag verb's arguments only and ``kgroups --help``
    none (argparse spends about a millisecond per verb's arguments)."""

    def __init__(self, *args: Any, fill: Callable[[argparse.ArgumentParser], None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fill = fill

    def _filled(self) -> None:
        fill, self._fill = self._fill, None
        if fill is not None:
            add_common_options(self, in_verb=True)  # every verb also takes the common options
            fill(self)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._filled()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._filled()
        return super().format_usage()

    def format_help(self) -> str:
        self._filled()
        return super().format_help()


def _selection(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("groups", nargs="*", help="exact group ids")
    sub.add_argument("--pattern", "-p", action="append", default=[],
                     help="glob ('orders-*') or 're:<regex>', repeatable")
    sub.add_argument("--exclude", action="append", default=[], help="pattern to leave out, repeatable")


def _groups_arguments(groups: argparse.ArgumentParser) -> None:
    groups.add_argument("--state", action="append", default=[], help="only groups in this state (repeatable)")
    groups.add_argument("--type", action="append", default=[], help="only groups of this type: classic, consumer")


def _lag_arguments(lag: argparse.ArgumentParser) -> None:
    _selection(lag)
    lag.add_argument("--unknown-lag", choices=("fail", "ignore", "from_earliest", "from_latest"), default="fail",
                     help="how to count partitions without a commit (default: fail = unknown)")
    lag.add_argument("--read-committed", action="store_true", help="end offsets for transactional topics")
    lag.add_argument("--seconds", action="store_true",
                     help="also the lag in seconds of each group's worst partition (age of the oldest unread "
                          "record: one extra Fetch round per partition leader)")


def _delete_arguments(delete: argparse.ArgumentParser) -> None:
    _selection(delete)
    delete.add_argument("--yes", action="store_true", help="really delete; without it nothing is changed")
    delete.add_argument("--history-url", help="the lag history store (kgroups_snapshot DAG): evidence of idleness")
    delete.add_argument("--idle-hours", type=float, default=7 * 24.0,
                        help="idle (Empty, records to read, no commit progress) this long is evidence (default 168)")
    delete.add_argument("--assume-full-visibility", action="store_true",
                        help="this principal may Describe every topic and group: 'no committed offset' is evidence")
    delete.add_argument("--allow", action="append", default=[], help="only groups matching may go (repeatable)")
    delete.add_argument("--deny", action="append", default=[], help="groups matching never go (repeatable)")
    delete.add_argument("--override-deny", action="append", default=[], metavar="GROUP",
                        help="lift every deny for this exact group id (repeatable; never a pattern)")
    delete.add_argument("--max-deletions", type=int, default=10, help="at most this many deletions (default 10)")
    delete.add_argument("--max-deletions-percent", type=float, default=50.0,
                        help="at most this %% of the candidates, rounded up (default 50)")
    delete.add_argument("--connect-url", action="append", default=[],
                        help="Kafka Connect REST URL (repeatable); credentials: connect.* in --command-config")
    delete.add_argument("--backup-url", default=DEFAULT_BACKUP_URL,
                        help=f"where offset backups and audit records go (default {DEFAULT_BACKUP_URL})")


def _restore_arguments(restore: argparse.ArgumentParser) -> None:
    restore.add_argument("backup_url", help="the backup's URL (printed by delete)")
    restore.add_argument("groups", nargs="*", help="only these groups (default: every group in the backup)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgroups", description=__doc__.split("\n\n")[0], formatter_class=_Formatter)
    add_common_options(parser, in_verb=False)
    verbs = parser.add_subparsers(dest="command", required=True, parser_class=_VerbParser)
    verbs.add_parser("groups", help="list groups with their states", formatter_class=_Formatter,
                     fill=_groups_arguments)
    verbs.add_parser("describe", help="state, members and assignments", formatter_class=_Formatter, fill=_selection)
    verbs.add_parser("lag", help="committed vs log-end offset per partition, totals per group and topic",
                     formatter_class=_Formatter, fill=_lag_arguments)
    verbs.add_parser(
        "delete", help="delete groups safely (dry run unless --yes)", formatter_class=_Formatter,
        description="Named groups are deleted when Empty (the evidence is reported); a pattern selects only groups "
                    "the evidence calls dead. Deny patterns protect system groups. Offsets are backed up (and read "
                    "back) before any delete; the restore command is printed.", fill=_delete_arguments)
    verbs.add_parser("restore", help="commit the offsets of a backup taken by delete", formatter_class=_Formatter,
                     fill=_restore_arguments)
    return parser


def client_config(args: argparse.Namespace) -> ClientConfig:
    from .client.deadline import check_seconds
    from .client.errors import ConfigurationError
    from .client.properties import config_from_kafka_properties, read_properties_file
    from .connect import split_connect_properties

    if args.timeout is not None:
        check_seconds("--timeout", args.timeout)
    properties = read_properties_file(args.command_config) if args.command_config else {}
    properties, _ = split_connect_properties(properties)  # connect.* keys are for delete --connect-url
    if args.bootstrap_servers:
        properties["bootstrap.servers"] = args.bootstrap_servers
    if "bootstrap.servers" not in properties:
        raise ConfigurationError(f"no bootstrap servers: pass --bootstrap-servers host:port or set {ENV_BOOTSTRAP}.")
    return config_from_kafka_properties(properties, call_timeout_s=args.timeout, client_id="kgroups-cli")


def selected_groups(client: GroupsClient, args: argparse.Namespace, progress: Progress) -> list[str]:
    """The shared selection routine: a broker whose listing failed makes a pattern selection
    refuse (IncompleteListingError, exit 1, the brokers named) rather than drop its groups."""
    from .client import GroupSelector
    from .client.errors import ConfigurationError
    from .client.selection import select_groups

    selector = GroupSelector(ids=tuple(args.groups), patterns=tuple(args.pattern), exclude=tuple(args.exclude))
    if selector.needs_listing:
        progress("listing groups to match patterns")
    chosen = client.run(select_groups(client.aclient, selector))
    if not chosen:
        raise ConfigurationError("no group matches the given ids and patterns.")
    return chosen


#: rows rendered at a time: only one block's cell strings live at once (100,000 groups are
#: 500,000 lines; built whole, their cells took ~400 MB, the command peaking at 687 MB)
TABLE_BLOCK = 20_000


def _cell_columns(block: Sequence[Sequence[Any]]) -> list[list[str]]:
    return [list(map(str, column)) if None not in column else ["-" if v is None else str(v) for v in column]
            for column in zip(*block)]


def render_table(headers: Sequence[str], rows: list[Sequence[Any]]) -> str:
    """Left-aligned columns two spaces apart, None as "-". Column by column, with the loops in C
    (map, zip, join): 39,000 lines for 3,000 groups in a third of the time cell by cell takes.
    In blocks of :data:`TABLE_BLOCK` rows, twice: the column widths, then the lines."""
    headers = list(headers)[:min(map(len, rows))] if rows else list(headers)
    blocks = [rows[i:i + TABLE_BLOCK] for i in range(0, len(rows), TABLE_BLOCK)]
    widths = [len(h) for h in headers]
    for block in blocks:
        widths = [max(width, max(map(len, column), default=0)) for width, column in zip(widths, _cell_columns(block))]
    parts = ["  ".join(map(str.ljust, headers, widths))]
    for block in blocks:
        padded = [list(map(str.ljust, column, repeat(width))) for column, width in zip(_cell_columns(block), widths)]
        parts.append("\n".join(map("  ".join, zip(*padded))))
    return "\n".join(parts)


def cmd_groups(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from .client import GroupState

    progress("listing groups on every broker")
    result = client.list_groups(states=args.state, types=args.type)
    states = {g.group_id: g.state for g in result.groups}
    unknown = [g for g, state in states.items() if state is GroupState.UNKNOWN]
    if unknown:
        # Brokers below ListGroups v4 (or that do not track it) give no state: describe those.
        progress(f"describing {len(unknown)} group(s) whose state the listing did not give")
        described = client.describe_groups(unknown)
        states.update({g: d.state for g, d in described.values.items()})
    rows = [(g.group_id, states[g.group_id].value, g.protocol_type or "-", g.group_type or "-", g.coordinator_id)
            for g in result.groups if not args.state or states[g.group_id].value in args.state]
    table = render_table(("GROUP", "STATE", "PROTOCOL-TYPE", "TYPE", "COORDINATOR"), rows)
    table += "".join(f"\nbroker {b} failed: {f}" for b, f in result.broker_failures.items())
    return result.to_dict(), table, not result.broker_failures


def cmd_describe(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from .client import GroupState

    ids = selected_groups(client, args, progress)
    progress(f"describing {len(ids)} group(s)")
    result = client.describe_groups(ids)
    rows = []
    for gid in ids:
        if gid in result.failures:
            rows.append((gid, "ERROR", "-", "-", "-", str(result.failures[gid])))
            continue
        d = result.values[gid]
        if d.state is GroupState.DEAD and not d.members:  # Kafka's answer for a group that does not exist
            rows.append((gid, "NOT FOUND", "-", d.coordinator_id, "-", "-"))
            continue
        if not d.members:
            rows.append((gid, d.state.value, d.protocol_type or "-", d.coordinator_id, "-", "-"))
        for m in d.members:
            assigned = ",".join(str(tp) for tp in m.assignment) or "-"
            member = f"{m.client_id}@{m.client_host}" if m.client_id else m.member_id
            rows.append((gid, d.state.value, d.protocol_type or "-", d.coordinator_id, member, assigned))
    table = render_table(("GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR", "MEMBER", "ASSIGNMENT"), rows)
    not_found = [g for g, d in result.values.items() if d.state is GroupState.DEAD and not d.members]
    return {**result.to_dict(), "not_found": not_found}, table, result.ok and not not_found


def _seconds_text(measured: "GroupLagSeconds | None") -> str:
    if measured is None:
        return ""
    worst = measured.worst
    if measured.max_seconds is None:
        unknown = next((p for p in measured.partitions if p.seconds is None), None)
        return f"unknown ({unknown.reason})" if unknown is not None else "unknown"
    prefix = ">=" if worst is not None and worst.at_least else "~" if worst is not None and worst.estimate else ""
    return f"{prefix}{measured.max_seconds:.3f}"


def lag_rows(snapshot: "LagSnapshot", seconds: Mapping[str, "GroupLagSeconds"] | None) -> list[tuple]:
    rows = []
    for gid, group in snapshot.groups.items():
        extra = (_seconds_text(seconds.get(gid)),) if seconds is not None else ()
        if group.not_found:
            rows.append((gid, "NOT FOUND", "", "", "", None, *extra, "no such group: no member, no committed offset"))
            continue
        for p in group.partitions:
            note = ",".join(sorted(f.value for f in p.flags)) if p.flags else ""
            if p.error is not None:
                note = f"{note}: {p.error}" if note else str(p.error)
            rows.append((gid, p.topic, p.partition, p.committed, p.log_end, p.lag, *("" for _ in extra), note or ""))
        summary = f"{group.state.value}, {group.members} member(s)"
        if group.total_lag is None:
            summary += ", total unknown"
        rows.append((gid, "TOTAL", "", "", "", group.total_lag, *extra, summary))
    for gid, failure in snapshot.failures.items():
        rows.append((gid, "ERROR", "", "", "", "", *(("",) if seconds is not None else ()), str(failure)))
    return rows


def lag_headers(with_seconds: bool) -> tuple[str, ...]:
    return ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
            *(("LAG-SECONDS",) if with_seconds else ()), "NOTE")


def lag_ok(snapshot: "LagSnapshot", seconds: Mapping[str, "GroupLagSeconds"] | None) -> bool:
    """Unknown is never fine: a group not read, not found, with an unknown total or (with
    --seconds) an unknown age is exit 1."""
    return (not snapshot.failures and all(g.total_lag is not None for g in snapshot.groups.values())
            and (seconds is None or all(s.max_seconds is not None for s in seconds.values())))


def group_document(group: "GroupLag", seconds: "GroupLagSeconds | None", with_seconds: bool) -> dict[str, Any]:
    data = group.to_dict()
    if with_seconds:
        data["lag_seconds"] = seconds.to_dict() if seconds is not None else None
    return data


def cmd_lag(client: GroupsClient, args, progress: Progress) -> tuple[Any, Any, bool]:
    from .lag.model import UnknownLagPolicy

    ids = selected_groups(client, args, progress)
    policy = UnknownLagPolicy(args.unknown_lag)
    if args.format == "jsonl":
        return None, None, stream_lag(client, args, ids, policy, progress)
    from .lag.snapshot import take_snapshot

    progress(f"reading committed and log-end offsets of {len(ids)} group(s)")
    snapshot = client.run(take_snapshot(client.aclient, ids, policy=policy, read_committed=args.read_committed))
    seconds = None
    if args.seconds:
        from .lag.seconds import lag_seconds

        progress("reading the oldest unread record of each group's worst partition")
        seconds = client.run(lag_seconds(client.aclient, snapshot, worst_n=1, read_committed=args.read_committed))

    def document() -> dict[str, Any]:
        data = snapshot.to_dict()
        if seconds is not None:
            for gid, group in data["groups"].items():
                measured = seconds.get(gid)
                group["lag_seconds"] = measured.to_dict() if measured is not None else None
        return data

    def table() -> str:
        return render_table(lag_headers(seconds is not None), lag_rows(snapshot, seconds))

    return document, table, lag_ok(snapshot, seconds)


def stream_lag(client: GroupsClient, args, ids: list[str], policy, progress: Progress) -> bool:
    """``--format jsonl``: one line per group, written as soon as the batch holding it is read
    (:func:`..lag.snapshot.iter_snapshot`), then one line of failures if any group could not be
    read. Memory stays at a batch's worth, whatever the number of groups."""
    from .lag.snapshot import iter_snapshot

    progress(f"streaming the lag of {len(ids)} group(s)")
    encode = json_encoder(args)
    ok = True

    async def run() -> None:
        nonlocal ok
        async for part in iter_snapshot(client.aclient, ids, policy=policy, read_committed=args.read_committed):
            seconds = None
            if args.seconds:
                from .lag.seconds import lag_seconds

                seconds = await lag_seconds(client.aclient, part, worst_n=1, read_committed=args.read_committed)
            ok = ok and lag_ok(part, seconds)
            lines = [encode({"taken_at_ms": part.taken_at_ms, **group_document(g, (seconds or {}).get(gid),
                                                                               args.seconds)})
                     for gid, g in part.groups.items()]
            lines += [encode({"group_id": gid, "failure": f.to_dict()}) for gid, f in part.failures.items()]
            if lines:
                write_out(b"\n".join(lines) + b"\n")

    client.run(run())
    return ok


def delete_policy(args) -> "CleanupPolicy":
    """The delete options as a policy: every check before any network call."""
    from .cleanup import CleanupPolicy
    from .client import GroupSelector
    from .client.errors import ConfigurationError
    from .lag.deadgroups import DeadGroupRules

    rules = DeadGroupRules(idle_hours=args.idle_hours, allow=tuple(args.allow), deny=tuple(args.deny),
                           assume_full_visibility=args.assume_full_visibility)
    selector = GroupSelector(patterns=tuple(args.pattern), exclude=tuple(args.exclude)) if args.pattern else None
    if args.exclude and not args.pattern:
        raise ConfigurationError("--exclude applies to --pattern selections only; named groups are never excluded.")
    if not args.backup_url or not args.backup_url.strip():
        raise ConfigurationError("--backup-url is empty: give a directory or an fsspec URL.")
    return CleanupPolicy(rules=rules, selector=selector, named=tuple(args.groups),
                         override_deny=tuple(args.override_deny), max_deletions=args.max_deletions,
                         max_deletions_percent=args.max_deletions_percent, dry_run=not args.yes)


def _absolute(url: str) -> str:
    return url if "://" in url else os.path.abspath(url)


def restore_command(args, backup_url: str, groups: Sequence[str] = ()) -> str:
    """The command that undoes a deletion, with this run's connection options (never a secret:
    only the properties file's path)."""
    parts = ["kgroups"]
    if args.bootstrap_servers:
        parts += ["-b", args.bootstrap_servers]
    if args.command_config:
        parts += ["--command-config", os.path.abspath(args.command_config)]
    parts += ["restore", backup_url, *groups]
    return " ".join(shlex.quote(p) for p in parts)


def cmd_delete(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from .cleanup import Outcome, run_cleanup

    policy, connect_clusters = args.prepared
    backup_base = _absolute(args.backup_url.strip())
    history = None
    if args.history_url:
        from .history.store import HistoryStore

        store = HistoryStore(args.history_url)

        def history(ids, since_ms):
            return store.read_window(ids, since_ms=since_ms)
    progress(f"{'dry run: ' if policy.dry_run else ''}judging the selected groups"
             + (f"; asking {len(connect_clusters)} Kafka Connect cluster(s)" if connect_clusters else ""))
    result = client.run(run_cleanup(
        client.aclient, policy, backup_base_url=backup_base, history=history, connect_clusters=connect_clusters,
        connect_timeout_s=args.timeout or 30.0, audit_base_url=None if policy.dry_run else backup_base,
        who={"by": "kgroups delete"}))
    rows = [(g, d.deletion or d.outcome.label, d.reason) for g, d in result.decisions.items()]
    lines = [render_table(("GROUP", "DECISION", "REASON"), rows) if rows else "no group selected"]
    s = result.summary()
    lines.append(f"\n{s['examined']} examined, {s['candidates']} candidate(s), cap {s['cap']}: "
                 f"{len(s['deleted'])} deleted, {len(s['would_delete'])} would delete, {len(s['skipped'])} skipped, "
                 f"{len(s['not_found'])} not found, {len(s['failed'])} failed, {sum(s['kept'].values())} kept"
                 + (f" ({len(s['unjudged'])} could not be judged)" if s["unjudged"] else ""))
    data = result.to_dict()
    if result.backup_url:
        deleted = result.ids(Outcome.DELETED)
        data["restore_command"] = restore_command(args, result.backup_url, deleted)
        lines.append(f"backup   {result.backup_url} (read back before deleting)")
        lines.append(f"undo     {data['restore_command']}")
    if result.audit_url:
        lines.append(f"audit    {result.audit_url}")
    if result.audit_error:
        lines.append(f"audit    NOT WRITTEN: {result.audit_error}")
    if policy.dry_run:
        lines.append("dry run: nothing deleted; pass --yes to do exactly the above.")
    return data, "\n".join(lines), result.ok


def cmd_restore(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from .history.backup import restore_offsets

    backup = args.prepared
    progress(f"committing the offsets of {len(args.groups) or len(backup.groups)} group(s) from {args.backup_url}")
    results = client.run(restore_offsets(client.aclient, backup, args.groups or None))
    rows = []
    for g, outcome in results.items():
        rows += [(g, str(tp), offset, "restored") for tp, offset in sorted(outcome.values.items())]
        rows += [(g, str(tp), "-", str(f)) for tp, f in sorted(outcome.failures.items())]
    table = render_table(("GROUP", "PARTITION", "OFFSET", "OUTCOME"), rows) if rows else "nothing to restore"
    return {g: r.to_dict() for g, r in results.items()}, table, all(r.ok for r in results.values())


def prepare(args) -> None:
    """Checks a command's options before any network call (bad input: exit 2)."""
    if args.command == "delete":
        from .client.properties import read_properties_file
        from .connect import connect_configs_from_properties

        properties = read_properties_file(args.command_config) if args.command_config else {}
        clusters = connect_configs_from_properties(properties, args.connect_url)
        args.prepared = (delete_policy(args), clusters)
    elif args.command == "restore":
        from .client.errors import ConfigurationError
        from .history.backup import load_backup

        backup = load_backup(args.backup_url)
        missing = [g for g in args.groups if g not in backup.groups]
        if missing:
            raise ConfigurationError(f"group(s) {', '.join(map(repr, missing))} are not in the backup "
                                     f"{args.backup_url} (it has {', '.join(sorted(backup.groups)) or 'none'}).")
        args.prepared = backup


COMMANDS: dict[str, Callable] = {"groups": cmd_groups, "describe": cmd_describe, "lag": cmd_lag, "delete": cmd_delete,
                                 "restore": cmd_restore}


def json_encoder(args) -> Callable[[Any], bytes]:
    """Compact by default (what scripts read): msgspec, as UTF-8 bytes; ``--pretty``: the
    standard library, indented, keys sorted (what people read).

    The measurement that decided it (benchmarks/RESULTS-json.txt, 3,000 groups, median ms):
    json compact 60-84, msgspec 7-21, and importing msgspec.json once the lag path's modules are
    loaded costs 8-11 ms more (a loss only below a few hundred groups). msgspec is already
    installed with Airflow (apache-airflow-core requires it). Two differences in the bytes,
    none in the values: non-ASCII text is written as UTF-8 instead of ``\\uXXXX`` escapes
    (RFC 8259 requires UTF-8 between systems; the bytes go to stdout's buffer, so the locale
    cannot break them), and floats outside 1e-4..1e16 are written as ``1e16``, not ``1e+16``."""
    if getattr(args, "pretty", False):
        import json

        return lambda data: json.dumps(data, indent=2, sort_keys=True).encode()
    import msgspec.json

    return msgspec.json.Encoder().encode


def write_out(data: bytes) -> None:
    """Bytes to stdout, after whatever text was printed before them."""
    out = sys.stdout
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is None:  # a text-only stand-in for stdout (io.StringIO)
        out.write(data.decode())
        out.flush()
        return
    buffer.write(data)
    buffer.flush()


def emit(args, data: Any, table: Any) -> None:
    """Only what was asked for is built: the table for ``table``, the document for json."""
    if args.format == "table":
        print(table() if callable(table) else table)
    elif data is not None:
        write_out(json_encoder(args)(data() if callable(data) else data) + b"\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .client.gcpause import fewer_collections

    # A verb's results live until the output is written, hundreds of thousands of objects: with
    # CPython's default thresholds the collector rescans them ~390 times for lag over 3,000 groups
    # (~15 % of its CPU). The output is written inside, so it is built with the same few passes.
    with fewer_collections():
        return run(args)


def run(args: argparse.Namespace) -> int:
    import logging

    from .client import AuthenticationError, ConfigurationError, GroupsClient, KafkaGroupsError, NoBrokerAvailable

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    if args.verbose:
        logging.getLogger("airflow_provider_kgroups.client.requests").setLevel(logging.DEBUG)
    progress = Progress(sys.stderr.isatty())
    try:
        config = client_config(args)
        prepare(args)
        with GroupsClient(config) as client, client.deadline(config.call_timeout_s):
            data, table, ok = COMMANDS[args.command](client, args, progress)
    except ConfigurationError as exc:
        print(f"kgroups: bad input: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (NoBrokerAvailable, AuthenticationError) as exc:
        print(f"kgroups: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except KafkaGroupsError as exc:
        print(f"kgroups: {exc}", file=sys.stderr)
        return EXIT_PARTIAL
    emit(args, data, table)
    return EXIT_OK if ok else EXIT_PARTIAL


if __name__ == "__main__":
    sys.exit(main())
