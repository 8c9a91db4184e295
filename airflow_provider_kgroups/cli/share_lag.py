"""``kgroups share-lag``: share groups' start offsets (KIP-932, DescribeShareGroupOffsets) against
the log end, per share-partition: an upper bound of what is left to deliver."""

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
    from ..offsets.share import share_group_lag

    ids = selected_groups(client, args, progress)
    progress(f"reading the start offsets of {len(ids)} share group(s)")
    result = client.run(share_group_lag(client.aclient, ids))
    rows: list[Sequence[Any]] = []
    for g, partitions in result.groups.items():
        for p in partitions:
            note = (
                str(p.error) if p.error else ("never initialized: unknown" if p.start_offset is None else "")
            )
            rows.append((g, p.tp.topic, p.tp.partition, p.start_offset, p.log_end, p.lag_at_most, note))
        if not partitions:
            rows.append((g, "-", "", "", "", "", "no share-partition initialized"))
    rows += [(g, "ERROR", "", "", "", "", str(f)) for g, f in result.failures.items()]
    table = render_table(
        ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG-AT-MOST", "NOTE"), rows
    )
    return result.to_dict(), table, result.ok
