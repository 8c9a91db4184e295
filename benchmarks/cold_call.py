"""One cold call in a fresh process: a new client connects, reads metadata, looks up the
coordinators and fetches the committed offsets of ``N`` groups (``acc-g000000``..), then the
log-end offsets of what they committed. Prints the seconds and the CPU seconds of the call
(imports excluded), for bench_cli's ``cold`` scenario, which sets them beside the round trips
the brokers saw and the floor (``benchmarks/floor.py``: ``cold_call_floor``).

    python benchmarks/cold_call.py BOOTSTRAP N [--floor]
"""

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from airflow_provider_kgroups.client import client as _loaded  # noqa: F401  (imports before the clock)


async def main(bootstrap: str, n: int) -> None:
    ids = [f"acc-g{g:06d}" for g in range(n)]
    started, cpu = time.perf_counter(), time.process_time()
    async with AsyncGroupsClient(ClientConfig.create(bootstrap)) as client:
        offsets = await client.fetch_committed_offsets(ids)
        committed = time.perf_counter() - started
        tps = {tp for value in offsets.values.values() for tp in value.committed()}
        ends = await client.log_end_offsets(tps)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_s": cpu,
                "committed_seconds": committed,
                "groups_ok": len(offsets.values),
                "ends": len(ends.values),
            }
        )
    )


if __name__ == "__main__":
    if sys.argv[3:] == ["--floor"]:  # the floor's steps, driverless (benchmarks/floor.py)
        from benchmarks.floor import run_cold_floor

        print(json.dumps(run_cold_floor(sys.argv[1], [f"acc-g{g:06d}" for g in range(int(sys.argv[2]))])))
    else:
        asyncio.run(main(sys.argv[1], int(sys.argv[2])))
