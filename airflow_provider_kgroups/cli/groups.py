"""``kgroups groups``: every group on every broker, with its state (described where the listing
gives none)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .output import render_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..client import GroupsClient
    from .common import Progress


def add_arguments(groups: argparse.ArgumentParser) -> None:
    groups.add_argument("--state", action="append", default=[], help="only groups in this state (repeatable)")
    groups.add_argument(
        "--type",
        action="append",
        default=[],
        help="only groups of this type: classic, consumer, share, streams (repeatable)",
    )


def execute(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from ..client import GroupState

    progress("listing groups on every broker")
    result = client.list_groups(states=args.state, types=args.type)
    states = {g.group_id: g.state for g in result.groups}
    unknown = [g for g, state in states.items() if state is GroupState.UNKNOWN]
    if unknown:
        # Brokers below ListGroups v4 (or that do not track it) give no state: describe those.
        progress(f"describing {len(unknown)} group(s) whose state the listing did not give")
        described = client.describe_groups(unknown)
        states.update({g: d.state for g, d in described.values.items()})
    rows: list[Sequence[Any]] = [
        (g.group_id, states[g.group_id].value, g.protocol_type or "-", g.group_type or "-", g.coordinator_id)
        for g in result.groups
        if not args.state or states[g.group_id].value in args.state
    ]
    table = render_table(("GROUP", "STATE", "PROTOCOL-TYPE", "TYPE", "COORDINATOR"), rows)
    table += "".join(f"\nbroker {b} failed: {f}" for b, f in result.broker_failures.items())
    return result.to_dict(), table, not result.broker_failures
