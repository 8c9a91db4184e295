"""``kgroups``: the ops engineer's view of consumer groups (list, describe, lag, delete).

Exit codes: 0 all fine, 1 some groups (or brokers) failed, 2 bad input, 3 no broker reachable.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any, Callable, Sequence

from .client import ClientConfig, ConfigurationError, GroupSelector, GroupsClient, GroupState, NoBrokerAvailable
from .client.config import config_from_kafka_properties, read_properties_file
from .client.errors import AuthenticationError, KafkaGroupsError

EXIT_OK, EXIT_PARTIAL, EXIT_BAD_INPUT, EXIT_UNREACHABLE = 0, 1, 2, 3
ENV_BOOTSTRAP = "KGROUPS_BOOTSTRAP_SERVERS"
ENV_COMMAND_CONFIG = "KGROUPS_COMMAND_CONFIG"


class Progress:
    """Phase lines on stderr, only when stderr is a terminal (never in pipes or CI logs)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, message: str) -> None:
        if self.enabled:
            print(f"... {message}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgroups", description=__doc__.split("\n\n")[0])
    conn = parser.add_argument_group("connection")
    conn.add_argument("--bootstrap-servers", "-b", default=os.environ.get(ENV_BOOTSTRAP),
                      help=f"host:port[,host:port] (env {ENV_BOOTSTRAP})")
    conn.add_argument("--command-config", default=os.environ.get(ENV_COMMAND_CONFIG),
                      help=f"Java-style client.properties: security.protocol, sasl.*, ssl.* (env {ENV_COMMAND_CONFIG})")
    conn.add_argument("--timeout", type=float, default=None, help="seconds for each call (default 60)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--verbose", "-v", action="store_true", help="log every request (API, version, broker, time)")
    commands = parser.add_subparsers(dest="command", required=True)

    def selection(sub: argparse.ArgumentParser, required: bool = True) -> None:
        sub.add_argument("groups", nargs="*", help="exact group ids")
        sub.add_argument("--pattern", "-p", action="append", default=[],
                         help="glob ('orders-*') or 're:<regex>', repeatable")
        sub.add_argument("--exclude", action="append", default=[], help="pattern to leave out, repeatable")

    groups = commands.add_parser("groups", help="list groups with their states")
    groups.add_argument("--state", action="append", default=[], help="only groups in this state (repeatable)")
    groups.add_argument("--type", action="append", default=[], help="only groups of this type: classic, consumer")
    selection(commands.add_parser("describe", help="state, members and assignments"))
    lag = commands.add_parser("lag", help="committed vs log-end offset per partition, totals per group and topic")
    selection(lag)
    lag.add_argument("--unknown-lag", choices=("fail", "ignore", "from_earliest", "from_latest"), default="fail",
                     help="how to count partitions without a commit (default: fail = unknown)")
    lag.add_argument("--read-committed", action="store_true", help="end offsets for transactional topics")
    delete = commands.add_parser("delete", help="delete groups (dry run unless --yes)")
    selection(delete)
    delete.add_argument("--yes", action="store_true", help="really delete; without it nothing is changed")
    return parser


def client_config(args: argparse.Namespace) -> ClientConfig:
    properties = read_properties_file(args.command_config) if args.command_config else {}
    if args.bootstrap_servers:
        properties["bootstrap.servers"] = args.bootstrap_servers
    if "bootstrap.servers" not in properties:
        raise ConfigurationError(f"no bootstrap servers: pass --bootstrap-servers host:port or set {ENV_BOOTSTRAP}.")
    return config_from_kafka_properties(properties, call_timeout_s=args.timeout, client_id="kgroups-cli")


def selected_groups(client: GroupsClient, args: argparse.Namespace, progress: Progress) -> list[str]:
    selector = GroupSelector(ids=tuple(args.groups), patterns=tuple(args.pattern), exclude=tuple(args.exclude))
    if not selector.needs_listing:
        return list(selector.ids)
    progress("listing groups to match patterns")
    listed = client.list_groups()
    chosen = selector.select(g.group_id for g in listed.groups)
    if not chosen:
        raise ConfigurationError("no group matches the given ids and patterns.")
    return chosen


def render_table(headers: Sequence[str], rows: list[Sequence[Any]]) -> str:
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def cmd_groups(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
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
    ids = selected_groups(client, args, progress)
    progress(f"describing {len(ids)} group(s)")
    result = client.describe_groups(ids)
    rows = []
    for gid in ids:
        if gid in result.failures:
            rows.append((gid, "ERROR", "-", "-", "-", str(result.failures[gid])))
            continue
        d = result.values[gid]
        if not d.members:
            rows.append((gid, d.state.value, d.protocol_type or "-", d.coordinator_id, "-", "-"))
        for m in d.members:
            assigned = ",".join(str(tp) for tp in m.assignment) or "-"
            member = f"{m.client_id}@{m.client_host}" if m.client_id else m.member_id
            rows.append((gid, d.state.value, d.protocol_type or "-", d.coordinator_id, member, assigned))
    table = render_table(("GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR", "MEMBER", "ASSIGNMENT"), rows)
    return result.to_dict(), table, result.ok


def cmd_lag(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from .lag.model import UnknownLagPolicy
    from .lag.snapshot import take_snapshot

    ids = selected_groups(client, args, progress)
    progress(f"reading committed and log-end offsets of {len(ids)} group(s)")
    snapshot = client.run(take_snapshot(client.aclient, ids, policy=UnknownLagPolicy(args.unknown_lag),
                                        read_committed=args.read_committed))
    rows = []
    for gid, group in snapshot.groups.items():
        for p in group.partitions:
            note = ",".join(sorted(f.value for f in p.flags))
            rows.append((gid, p.topic, p.partition, p.committed, p.log_end, p.lag, note or ""))
        rows.append((gid, "TOTAL", "", "", "", group.total_lag, f"{group.state.value}, {group.members} member(s)"))
    for gid, failure in snapshot.failures.items():
        rows.append((gid, "ERROR", "", "", "", "", str(failure)))
    table = render_table(("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "NOTE"), rows)
    return snapshot.to_dict(), table, not snapshot.failures


def cmd_delete(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    ids = selected_groups(client, args, progress)
    if not args.yes:
        progress(f"dry run: describing {len(ids)} group(s)")
        described = client.describe_groups(ids)
        rows = [(g, described.values[g].state.value if g in described.values else str(described.failures[g]),
                 "would delete" if g in described.values and not described.values[g].members
                 else "broker would refuse (has members)" if g in described.values else "cannot tell")
                for g in ids]
        table = render_table(("GROUP", "STATE", "DRY RUN"), rows) + "\nnothing deleted: pass --yes to delete."
        return {"dry_run": True, "groups": {g: r[2] for g, r in zip(ids, rows)}}, table, described.ok
    progress(f"deleting {len(ids)} group(s)")
    result = client.delete_groups(ids)
    rows = [(g, result.values[g].value if g in result.values else f"not deleted: {result.failures[g]}") for g in ids]
    return {"dry_run": False, **result.to_dict()}, render_table(("GROUP", "OUTCOME"), rows), result.ok


COMMANDS: dict[str, Callable] = {"groups": cmd_groups, "describe": cmd_describe, "lag": cmd_lag, "delete": cmd_delete}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    if args.verbose:
        logging.getLogger("airflow_provider_kgroups.client.requests").setLevel(logging.DEBUG)
    progress = Progress(sys.stderr.isatty())
    try:
        config = client_config(args)
        with GroupsClient(config) as client:
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
    print(json.dumps(data, indent=2, sort_keys=True) if args.format == "json" else table)
    return EXIT_OK if ok else EXIT_PARTIAL


if __name__ == "__main__":
    sys.exit(main())
