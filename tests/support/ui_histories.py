"""Random histories for the parity tests: groups that come and go, change state and members,
commit, stall, rewind, gain and lose partitions, miss a log end or a commit now and then, and a
group without partitions; written to a store as one file per snapshot or several snapshots a file."""

from __future__ import annotations

import random

from airflow_provider_kgroups.history.store import HistoryStore
from airflow_provider_kgroups.lag.model import LagFlag, LagSnapshot
from tests.support.builders import MINUTE, T0, group, partition, snapshot

STATES = ("Stable", "Empty", "Empty", "PreparingRebalance", "Dead")


def random_history(
    seed: int, *, groups: int = 6, points: int = 40, step_ms: int = 5 * MINUTE
) -> list[LagSnapshot]:
    rng = random.Random(seed)
    ends = {(t, p): rng.randint(0, 50) for t in ("a", "b") for p in range(3)}
    committed: dict[str, dict[tuple[str, int], int | None]] = {f"g{i}": {} for i in range(groups)}
    state = {g: rng.choice(STATES) for g in committed}
    out = []
    for i in range(points):
        at = T0 + i * step_ms + rng.choice([0, 0, 17])
        for key in ends:  # topic b is quiet: a group that caught up on it often has nothing to read
            ends[key] += rng.choice([0, 0, 1, 5, 30] if key[0] == "a" else [0] * 9 + [3])
        members_of = {}
        lags = []
        for g, offsets in committed.items():
            if rng.random() < 0.1:
                state[g] = rng.choice(STATES)
            members_of[g] = 0 if state[g] in ("Empty", "Dead") else rng.randint(1, 3)
            if g == "g0":  # a group without partitions (Dead: not found; or Empty)
                continue
            if rng.random() < 0.15:  # a partition appears or disappears
                key = rng.choice(list(ends))
                if key in offsets and rng.random() < 0.5:
                    del offsets[key]
                else:
                    offsets[key] = rng.randint(0, ends[key])
            for key in offsets:
                if rng.random() < 0.3 and state[g] == "Stable":
                    offsets[key] = min(ends[key], (offsets[key] or 0) + rng.randint(0, 20))
                elif rng.random() < 0.05:
                    offsets[key] = ends[key]  # caught up (a commit while Empty: an offset reset)
                elif rng.random() < 0.03:
                    offsets[key] = max(0, (offsets[key] or 0) - 7)  # a rewind
                elif rng.random() < 0.04:
                    offsets[key] = None  # no commit (yet, or expired)
        for g, offsets in committed.items():
            if rng.random() < 0.08:
                continue  # not in this snapshot
            parts = [
                partition(t, p, c, None if rng.random() < 0.05 else ends[(t, p)])
                if rng.random() > 0.03
                else partition(t, p, None, ends[(t, p)], flags=[LagFlag.ERROR])
                for (t, p), c in sorted(offsets.items())
            ]  # now and then a commit read with an error
            lags.append(group(g, *parts, state=state[g], members=members_of[g]))
        out.append(snapshot(at, *lags))
    return out


def write(store: HistoryStore, snapshots: list[LagSnapshot], rng: random.Random) -> None:
    """One file per snapshot, or a few snapshots together (as a backfill would write them)."""
    import pyarrow as pa

    from airflow_provider_kgroups.history.store import snapshot_table

    i = 0
    while i < len(snapshots):
        n = rng.choice([1, 1, 1, 3])
        store.append_table(pa.concat_tables([snapshot_table(s) for s in snapshots[i : i + n]]))
        i += n


def idle_history(
    seed: int, *, groups: int = 6, points: int = 60, step_ms: int = 5 * MINUTE
) -> list[LagSnapshot]:
    """Mostly Empty groups (what the dead-group rules judge): long stretches without a commit,
    a member now and then, offsets reset to the log end, quiet partitions where a caught-up
    group has nothing to read until a record arrives, log ends not read now and then."""
    rng = random.Random(seed)
    ends = {("a", 0): 100, ("b", 0): 40, ("b", 1): 7}
    offsets = {
        f"e{i}": {
            key: rng.randint(0, end) if rng.random() < 0.8 else None  # None: never committed
            for key, end in ends.items()
            if rng.random() < 0.6
        }
        for i in range(groups)
    }
    active = {g: 0 for g in offsets}
    out = []
    for i in range(points):
        ends[("a", 0)] += rng.choice([0, 2, 9])
        for key in (("b", 0), ("b", 1)):
            ends[key] += 3 if rng.random() < 0.15 else 0
        lags = []
        for g, committed in offsets.items():
            if active[g]:
                active[g] -= 1
            elif rng.random() < 0.04:
                active[g] = rng.randint(1, 4)  # a consumer joins for a while
            if committed and rng.random() < (0.3 if active[g] else 0.03):
                key = rng.choice(list(committed))
                committed[key] = ends[key] if rng.random() < 0.5 else max(0, (committed[key] or 0) - 1)
            # a partition never committed reads as no commit, or now and then with an error (unreadable)
            parts = [
                partition(
                    t,
                    p,
                    c,
                    None if rng.random() < 0.08 else ends[(t, p)],
                    flags=[LagFlag.ERROR] if c is None and rng.random() < 0.3 else (),
                )
                for (t, p), c in sorted(committed.items())
            ]
            lags.append(
                group(g, *parts, state="Stable" if active[g] else "Empty", members=1 if active[g] else 0)
            )
        out.append(snapshot(T0 + i * step_ms, *lags))
    return out
