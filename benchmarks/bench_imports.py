"""Import time of the modules the triggerer, the workers and the CLI load, each in a fresh
process with Airflow's own modules already imported (what a triggerer or worker has).
Median of ``--repeat`` runs; prints which heavy modules came along. Asserts nothing.

    python benchmarks/bench_imports.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = (
    "airflow_provider_kgroups.triggers.lag",
    "airflow_provider_kgroups.triggers.events",
    "airflow_provider_kgroups.hooks.groups",
    "airflow_provider_kgroups.sensors.lag",
    "airflow_provider_kgroups.client",
    "airflow_provider_kgroups.cli",
)
HEAVY = (
    "kafka.protocol.admin",
    "airflow_provider_kgroups.client.client",
    "airflow_provider_kgroups.client.driver",
    "airflow_provider_kgroups.lag.snapshot",
    "pyarrow",
    "pandas",
    "pyarrow.dataset",
)
PROBE = """
import json, sys, time
needs_airflow = {airflow}
if needs_airflow:
    import airflow.sdk, airflow.triggers.base, airflow.sensors.base  # what the triggerer/worker already has
before = set(sys.modules)
t = time.perf_counter()
import {module}
ms = (time.perf_counter() - t) * 1000
print(json.dumps({{"ms": ms, "heavy": [m for m in {heavy!r} if m in sys.modules and m not in before]}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--root",
        type=Path,
        default=ROOT,
        help="the tree whose package is imported (e.g. an older version, byte-compiled)",
    )
    args = parser.parse_args()
    samples: dict[str, list[dict]] = {m: [] for m in MODULES}
    for _ in range(args.repeat):
        for module in MODULES:  # interleaved
            code = PROBE.format(module=module, heavy=HEAVY, airflow=not module.endswith((".client", ".cli")))
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, cwd=args.root, check=True
            )
            if out.stdout.strip().startswith("SKIP"):
                continue
            samples[module].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'module':45s}  {'median ms':>9s}  {'min ms':>7s}  heavy modules loaded")
    for module, runs in samples.items():
        if not runs:
            continue
        ms = [r["ms"] for r in runs]
        print(
            f"{module:45s}  {statistics.median(ms):9.1f}  {min(ms):7.1f}  {', '.join(runs[-1]['heavy']) or '-'}"
        )


if __name__ == "__main__":
    main()
