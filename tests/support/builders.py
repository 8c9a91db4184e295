"""Small builders for client results and snapshots, so pure tests read like the scenario, and a
history store seeded with a few Empty groups' points (``seed_history``)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from airflow_provider_kgroups.client.results import (
    CommittedOffset,
    GroupDescription,
    GroupOffsets,
    GroupState,
    MemberDescription,
    TopicPartition,
)
from airflow_provider_kgroups.lag.model import GroupLag, LagFlag, LagSnapshot, PartitionLag

MINUTE = 60_000
HOUR = 60 * MINUTE
T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def description(
    group_id: str,
    state: str = "Stable",
    members: Mapping[str, Iterable[TopicPartition]] | None = None,
    protocol_type: str = "consumer",
    group_type: str = "classic",
) -> GroupDescription:
    return GroupDescription(
        group_id=group_id,
        state=GroupState.parse(state),
        protocol_type=protocol_type,
        protocol="range",
        members=tuple(
            MemberDescription(m, None, "client", "/127.0.0.1", tuple(sorted(parts)))
            for m, parts in (members or {}).items()
        ),
        coordinator_id=0,
        group_type=group_type,
    )


def offsets(group_id: str, committed: Mapping[TopicPartition, int | None]) -> GroupOffsets:
    return GroupOffsets(group_id, {k: CommittedOffset(v) for k, v in committed.items()})


def partition(
    topic: str,
    p: int,
    committed: int | None,
    log_end: int | None,
    log_start: int | None = 0,
    flags: Iterable[LagFlag] = (),
) -> PartitionLag:
    flags = set(flags)
    if committed is None:
        lag = None
        flags.add(LagFlag.NO_COMMIT)
    elif log_end is None:
        lag = None
        flags.add(LagFlag.ERROR)
    else:
        lag = max(0, log_end - committed)
        if committed > log_end:
            flags.add(LagFlag.CLAMPED)
        if log_start is not None and committed < log_start:
            flags.add(LagFlag.LOST)
    return PartitionLag(topic, p, committed, log_start, log_end, lag, frozenset(flags))


def group(
    group_id: str,
    *partitions: PartitionLag,
    state: str = "Stable",
    members: int = 1,
    protocol_type: str = "consumer",
) -> GroupLag:
    return GroupLag(group_id, GroupState.parse(state), protocol_type, members, tuple(partitions))


def snapshot(at_ms: int, *groups: GroupLag) -> LagSnapshot:
    return LagSnapshot(at_ms, {g.group_id: g for g in groups})


def series(
    group_id: str,
    points: Iterable[tuple[int, int | None, int]],
    *,
    topic: str = "t",
    p: int = 0,
    log_start: int = 0,
    state: str = "Stable",
    members: int = 1,
) -> list[LagSnapshot]:
    """Snapshots of one group with one partition from (minute, committed, log_end) points."""
    return [
        snapshot(
            T0 + minute * MINUTE,
            group(group_id, partition(topic, p, committed, end, log_start), state=state, members=members),
        )
        for minute, committed, end in points
    ]


def seed_history(
    url: str, points: Mapping[str, Iterable[tuple[float, int, int]]], *, topic: str = "orders"
) -> None:
    """Per group, (age in hours, committed offset, log end offset) points of ``topic`` partition 0
    while Empty, aged from now, appended to the history store at ``url``. Idle time counts only
    while there was something to read (log end > committed)."""
    from airflow_provider_kgroups.history.store import HistoryStore

    now = int(time.time() * 1000)
    store = HistoryStore(url)
    for group_id, entries in points.items():
        for age_h, committed, log_end in entries:
            store.append(
                snapshot(
                    int(now - age_h * HOUR),
                    GroupLag(
                        group_id,
                        GroupState.EMPTY,
                        "consumer",
                        0,
                        (PartitionLag(topic, 0, committed, 0, log_end, max(0, log_end - committed)),),
                    ),
                )
            )
