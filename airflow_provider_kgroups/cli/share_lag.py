"""``kgroups share-lag``: share groups' lag per share-partition (KIP-932): the broker's exact lag
where it gives one (DescribeShareGroupOffsets v1, KIP-1226, Kafka 4.2+), else the log end minus
the start offset, an upper bound; each row says which (``KIND``: exact, at most, unknown)."""

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
    progress(f"reading the start offsets and lag of {len(ids)} share group(s)")
    result = client.run(share_group_lag(client.aclient, ids))
    rows: list[Sequence[Any]] = []
    for g, partitions in result.groups.items():
        for p in partitions:
            kind = p.lag_kind
            rows.append(
                (
                    g,
                    p.tp.topic,
                    p.tp.partition,
                    p.start_offset,
                    p.log_end,
                    p.lag,
                    "unknown" if kind is None else kind.words,
                    p.note,
                )
            )
        if not partitions:
            rows.append((g, "-", "", "", "", "", "", "no share-partition initialized"))
    rows += [(g, "ERROR", "", "", "", "", "", str(f)) for g, f in result.failures.items()]
    table = render_table(
        ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG", "KIND", "NOTE"), rows
    )
    return result.to_dict(), table, result.ok
