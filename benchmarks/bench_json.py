"""What writing ``kgroups lag``'s JSON costs, per encoder, on a 3,000-group snapshot (12
partitions each, the bench_cli scenario): building the document (``to_dict``) and encoding it.
Decides which encoder the CLI uses; prints a table, asserts nothing. Also what importing
msgspec.json costs in a process that already loaded the lag path's modules (what a
``kgroups lag`` pays for it), in fresh interpreters.

    python benchmarks/bench_json.py [--groups 3000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_provider_kgroups.client.results import (
    CommittedOffset,
    GroupOffsets,
    KeyedResults,
    ListedOffset,
    TopicPartition,
)
from airflow_provider_kgroups.lag.snapshot import compute_lag


def snapshot(groups: int, topics: int = 30, partitions: int = 12):
    offsets, tps = {}, set()
    for g in range(groups):
        topic = f"acc-topic-{g % topics:03d}"
        parts = {TopicPartition(topic, p): CommittedOffset(9_000 + g % 1000) for p in range(partitions)}
        tps |= set(parts)
        offsets[f"acc-g{g:06d}"] = GroupOffsets(f"acc-g{g:06d}", parts)
    ends = KeyedResults({tp: ListedOffset(10_000 + tp.partition, -1) for tp in tps}, {})
    starts = KeyedResults({tp: ListedOffset(0, -1) for tp in tps}, {})
    return compute_lag({}, KeyedResults(offsets, {}), starts, ends, "fail", 0)


def encoders() -> dict:
    out = {
        "json indent=2 sort_keys (--pretty)": lambda d: json.dumps(d, indent=2, sort_keys=True),
        "json compact (the default before)": json.JSONEncoder(
            separators=(",", ":"), check_circular=False
        ).encode,
    }
    try:
        import msgspec

        enc = msgspec.json.Encoder()
        out["msgspec.json (the default now)"] = enc.encode
    except ImportError:
        pass
    try:
        import orjson

        out["orjson"] = orjson.dumps
    except ImportError:
        pass
    return out


MARGINAL_IMPORT = """
import sys, time
sys.path.insert(0, {root!r})
import asyncio, json, logging
import airflow_provider_kgroups.cli, airflow_provider_kgroups.client.client, airflow_provider_kgroups.lag.snapshot
started = time.process_time()
import msgspec.json
print((time.process_time() - started) * 1000)
"""


def msgspec_import_ms(repeat: int) -> float:
    """Median CPU ms of ``import msgspec.json`` after the lag path's imports, fresh interpreters."""
    code = MARGINAL_IMPORT.format(root=str(Path(__file__).resolve().parents[1]))
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(repeat)
    ]
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    snap = snapshot(args.groups)
    build = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        doc = snap.to_dict()
        build.append(time.perf_counter() - t)
    runs = {name: [] for name in encoders()}
    sizes = {}
    for _ in range(args.repeat):
        for name, encode in encoders().items():  # interleaved
            t = time.perf_counter()
            text = encode(doc)
            runs[name].append(time.perf_counter() - t)
            sizes[name] = len(text)
    print(
        f"# {args.groups} groups x 12 partitions; median of {args.repeat} interleaved runs (shared 2-core machine)"
    )
    print(f"{'step':38s}  {'median ms':>9s}  {'output KB':>9s}")
    print(f"{'to_dict (building the document)':38s}  {statistics.median(build) * 1000:9.1f}  {'-':>9s}")
    for name, times in runs.items():
        print(f"{name:38s}  {statistics.median(times) * 1000:9.1f}  {sizes[name] / 1024:9.0f}")
    print(f"{'import msgspec.json after the lag path':38s}  {msgspec_import_ms(args.repeat):9.1f}  {'-':>9s}")


if __name__ == "__main__":
    main()
