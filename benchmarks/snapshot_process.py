"""``take_snapshot`` of every group matching a pattern, as a program would call it, in a
process of its own (for bench_cli's big scenario): prints the group count, the failures, the
sum of the groups' total lags and the seconds of the call (imports excluded).

    python benchmarks/snapshot_process.py BOOTSTRAP 'acc-g*'
"""

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, GroupSelector
from airflow_provider_kgroups.client.selection import select_groups
from airflow_provider_kgroups.lag.snapshot import take_snapshot


async def main(bootstrap: str, pattern: str) -> None:
    started = time.perf_counter()
    async with AsyncGroupsClient(ClientConfig.create(bootstrap)) as client:
        ids = await select_groups(client, GroupSelector(patterns=(pattern,)))
        snapshot = await take_snapshot(client, ids)
    print(
        json.dumps(
            {
                "groups": len(snapshot.groups),
                "failures": len(snapshot.failures),
                "unknown_totals": sum(g.total_lag is None for g in snapshot.groups.values()),
                "total_lag": sum(g.total_lag or 0 for g in snapshot.groups.values()),
                "seconds": time.perf_counter() - started,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
