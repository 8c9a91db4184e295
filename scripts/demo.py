"""The main job, end to end, on a fresh machine: start an embedded Tansu broker, leave
a realistic mix of consumer groups on it, and show what the provider sees and decides.

Everything it starts is stopped on exit, on failure and on Ctrl-C.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.seed import LiveConsumer, Seeder  # noqa: E402
from tests.support.tansu import TansuBroker  # noqa: E402


def kgroups(bootstrap: str, *args: str) -> None:
    command = [sys.executable, "-m", "airflow_provider_kgroups", "-b", bootstrap, *args]
    print(f"\n$ kgroups {' '.join(args)}", flush=True)
    result = subprocess.run(command, cwd=ROOT)
    print(f"(exit code {result.returncode})", flush=True)


def main() -> int:
    with TansuBroker() as broker, Seeder(broker.bootstrap) as seed:
        print(f"embedded broker (Tansu) on {broker.bootstrap}, started in {broker.started_in:.2f}s")
        seed.create_topics({"orders": 3, "audit": 1})
        for partition in range(3):
            seed.produce("orders", partition, 10)
        seed.produce("audit", 0, 4)
        seed.commit("orders-landing", {("orders", 0): 10, ("orders", 1): 6, ("orders", 2): 2})
        seed.commit("tmp-backfill-2024", {("orders", 0): 10})
        seed.commit("tmp-backfill-2025", {("audit", 0): 4})
        seed.commit("connect-orders-sink", {("orders", 0): 10})
        with LiveConsumer(broker.bootstrap, "orders-live", ["audit"]) as live:
            live.wait_assigned()
            live.wait_committed({("audit", 0): 4})
            kgroups(broker.bootstrap, "groups")
            kgroups(broker.bootstrap, "describe", "orders-live", "orders-landing")
            kgroups(broker.bootstrap, "lag", "--pattern", "orders-*", "--unknown-lag", "from_earliest")
            kgroups(broker.bootstrap, "delete", "--pattern", "tmp-*")
    print("\nbroker stopped; demo done.")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: everything started was stopped.", file=sys.stderr)
        sys.exit(130)
