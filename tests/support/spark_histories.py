"""Histories for the Spark job's tests: history-store rows built the way the snapshot operator
writes them (``LagSnapshot.rows()`` for hand-made cases; the same row shape for the random one)."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa

from airflow_provider_kgroups.history.store import HISTORY_SCHEMA

MINUTE = 60_000
HOUR = 60 * MINUTE
#: 2024-05-01 00:00 UTC: windows of 60 minutes start on the hour.
T0 = 1_714_521_600_000


def row(
    at: int,
    group: str,
    topic: str | None = None,
    partition: int | None = None,
    *,
    committed: int | None = None,
    log_end: int | None = None,
    log_start: int | None = 0,
    state: str = "Stable",
    members: int = 1,
    protocol_type: str = "consumer",
    error: bool = False,
) -> dict[str, Any]:
    """One history row; lag and flags as the lag engine computes them (unknown-lag policy FAIL)."""
    flags: set[str] = set()
    lag = None
    if topic is None:
        log_start = None
    elif error:
        flags.add("error")
        log_end = None
        if committed is None:
            flags.add("no_commit")
    elif committed is None:
        flags.add("no_commit")
    else:
        assert log_end is not None
        lag = max(0, log_end - committed)
        if committed > log_end:
            flags.add("clamped")
        if log_start is not None and committed < log_start:
            flags.add("lost")
    return {
        "snapshot_ms": at,
        "group_id": group,
        "group_state": state,
        "protocol_type": protocol_type,
        "members": members,
        "topic": topic,
        "partition": partition,
        "committed": committed,
        "log_start": log_start,
        "log_end": log_end,
        "lag": lag,
        "flags": ",".join(sorted(flags)),
    }


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=HISTORY_SCHEMA)


def random_history(
    seed: int = 7, *, groups: int = 14, snapshots: int = 40, step_ms: int = 5 * MINUTE, start_ms: int = T0
) -> list[dict[str, Any]]:
    """A history in which every verdict happens: per partition, a little process that switches
    between keeping up, falling behind, stopping, rewinding, losing data to retention (its log start
    now and then not read), never committing and failing to be read; producers that go idle; groups
    that go Empty, drop a topic, miss snapshots (app-01 misses the latest) or have no partition.
    Snapshot times jitter by up to 20 s."""
    rnd = random.Random(seed)
    modes = ("keep_up", "keep_up", "slow", "stopped", "rewind", "lost", "idle_producer", "no_commit", "error")
    series = []
    for g in range(groups):
        group_id = f"app-{g:02d}" if g % 5 else f"connect-sink-{g:02d}" if g == 5 else f"batch-{g:02d}"
        for t_i, topic in enumerate(("orders", "payments")[: 1 + g % 2]):
            for p in range(2):
                end = rnd.randint(0, 50)
                committed = None if rnd.random() < 0.2 else rnd.randint(0, end)
                series.append(
                    {
                        "group": group_id,
                        "topic": topic,
                        "partition": p,
                        "log_start": 0,
                        "log_end": end,
                        "committed": committed,
                        "mode": rnd.choice(modes),
                        "rate": rnd.randint(0, 12),
                        "dropped_after": rnd.randint(snapshots // 2, snapshots * 2) if t_i == 1 else None,
                    }
                )
    group_state = {s["group"]: {"state": "Stable", "members": 2} for s in series}
    group_state["empty-no-partitions"] = {"state": "Empty", "members": 0}
    rows: list[dict[str, Any]] = []
    for i in range(snapshots):
        at = start_ms + i * step_ms + rnd.randint(-20_000, 20_000)
        for gs in group_state.values():
            if rnd.random() < 0.1:
                gs["state"], gs["members"] = (
                    ("Empty", 0) if gs["state"] == "Stable" else ("Stable", rnd.randint(1, 3))
                )
        missing = {gid for gid in group_state if rnd.random() < 0.04}
        if i == snapshots - 1:
            missing.add("app-01")  # not read in the latest snapshot
        for s in series:
            if rnd.random() < 0.15:
                s["mode"] = rnd.choice(modes)
            mode = s["mode"]
            s["log_end"] += 0 if mode == "idle_producer" else rnd.randint(0, s["rate"])
            c = s["committed"]
            if mode == "keep_up" and c is not None:
                s["committed"] = (
                    s["log_end"] if rnd.random() < 0.7 else min(s["log_end"], c + rnd.randint(0, 8))
                )
            elif mode == "slow" and c is not None:
                s["committed"] = min(s["log_end"], c + rnd.randint(0, 2))
            elif mode == "rewind" and c is not None and rnd.random() < 0.3:
                s["committed"] = max(0, c - rnd.randint(1, 30))
            elif mode == "lost":
                s["log_start"] = min(s["log_end"], s["log_start"] + rnd.randint(0, 15))
            elif mode == "no_commit" and rnd.random() < 0.1:
                s["committed"] = None
            elif mode in ("keep_up", "slow") and c is None and rnd.random() < 0.3:
                s["committed"] = rnd.randint(0, s["log_end"])
        for gid, gs in group_state.items():
            if gid in missing:
                continue
            mine = [
                s
                for s in series
                if s["group"] == gid and (s["dropped_after"] is None or i < s["dropped_after"])
            ]
            if not mine:
                rows.append(row(at, gid, state=gs["state"], members=gs["members"]))
            for s in mine:
                # now and then a partition losing data to retention whose log start was not read (LOST open)
                start_unread = s["mode"] == "lost" and i % 3 == 2
                rows.append(
                    row(
                        at,
                        gid,
                        s["topic"],
                        s["partition"],
                        committed=s["committed"],
                        log_end=s["log_end"],
                        log_start=None if start_unread else s["log_start"],
                        state=gs["state"],
                        members=gs["members"],
                        protocol_type="connect" if gid.startswith("connect-") else "consumer",
                        error=s["mode"] == "error" and rnd.random() < 0.5,
                    )
                )
    return rows


def hand_made_history() -> list[dict[str, Any]]:
    """Twelve snapshots, 00:00 to 00:55 (one 60-minute window), one scenario per group:

    caught        keeps up                                         OK
    pct           2 partitions, lag 5*(i+1) each: topic lag 10..120 WARN
    stopper       commits stop at 00:20 at 40 while the log grows  STOP
    staller       commit 20, log end 50, neither moves             STALL
    rewinder      commit 100+i, back to 40 at 00:55                REWIND
    loser         log start jumps past the commit at 00:55         LOST
    blind         orders[1] unreadable at 00:55                    UNKNOWN
    old-batch     Empty, caught up on a quiet topic, never moves   paused (nothing to read: never idle)
    abandoned     Empty, 4 records to read, commit never moves     STALL; dead (idle), deletable
    weekly        Empty, committed at 00:40                        paused
    connect-sink  Empty, never moves, protocol "connect"           paused (not a plain consumer group)
    orphan        Empty, its only topic unreadable since 00:40     paused (cannot tell: not checked by name)
    ghost         Empty, no partition at all                       paused (cannot tell: no visible commit)
    """
    rows: list[dict[str, Any]] = []
    for i in range(12):
        at = T0 + i * 5 * MINUTE
        rows.append(row(at, "caught", "orders", 0, committed=10 * i, log_end=10 * i))
        for p in (0, 1):
            rows.append(row(at, "pct", "orders", p, committed=95 + 5 * i, log_end=100 + 10 * i, members=2))
        rows.append(row(at, "stopper", "orders", 0, committed=10 * min(i, 4), log_end=10 * i))
        rows.append(row(at, "staller", "orders", 0, committed=20, log_end=50))
        rows.append(row(at, "rewinder", "orders", 0, committed=40 if i == 11 else 100 + i, log_end=200 + i))
        rows.append(
            row(at, "loser", "orders", 0, committed=300 + i, log_end=600, log_start=500 if i == 11 else 0)
        )
        rows.append(row(at, "blind", "orders", 0, committed=7, log_end=7))
        rows.append(row(at, "blind", "orders", 1, committed=3, log_end=3, error=i == 11))
        empty = {"state": "Empty", "members": 0}
        rows.append(row(at, "old-batch", "orders", 0, committed=5, log_end=5, **empty))
        rows.append(row(at, "abandoned", "orders", 0, committed=5, log_end=9, **empty))
        rows.append(row(at, "weekly", "orders", 0, committed=20 if i >= 8 else 10, log_end=20, **empty))
        rows.append(
            row(at, "connect-sink", "orders", 0, committed=5, log_end=5, protocol_type="connect", **empty)
        )
        rows.append(
            row(at, "orphan", "old-topic", 0, committed=9 if i >= 10 else 8, log_end=9, error=i >= 8, **empty)
        )
        rows.append(row(at, "ghost", **empty))
    return rows
