"""``kgroups describe``: state, members and assignments of the selected groups."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .common import add_selection as add_arguments
from .common import selected_groups
from .output import render_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..client import GroupsClient
    from .common import Progress

__all__ = ["add_arguments", "execute"]


def execute(client: GroupsClient, args, progress: Progress) -> tuple[Any, str, bool]:
    from ..client import GroupState

    ids = selected_groups(client, args, progress)
    progress(f"describing {len(ids)} group(s)")
    result = client.describe_groups(ids)
    rows: list[Sequence[Any]] = []
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
