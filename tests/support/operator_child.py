"""An Airflow task in a child process for the kill tests: ``ConsumerGroupOffsetResetOperator``
resetting the groups given to the earliest offset of a topic, executed as a worker executes it
(``execute(context)``), its result printed as JSON. The connection comes from
``AIRFLOW_CONN_KG_KILL`` (set by the test).

    python -m tests.support.operator_child <backup_url> <topic> <group> [<group> ...]
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace


def main(argv: list[str]) -> int:
    from airflow_provider_kgroups.operators.reset import ConsumerGroupOffsetResetOperator

    backup_url, topic, *groups = argv
    pushed: dict = {}
    ti = SimpleNamespace(
        dag_id="kill_test",
        run_id="manual__kill",
        task_id="reset",
        try_number=1,
        xcom_push=lambda key, value: pushed.update({key: value}),
    )
    operator = ConsumerGroupOffsetResetOperator(
        task_id="reset",
        group_ids=groups,
        strategy="to_earliest",
        topics=[topic],
        dry_run=False,
        backup_url=backup_url,
        kafka_groups_conn_id="kg_kill",
    )
    try:
        out = operator.execute({"ti": ti})
    except Exception as exc:  # the task failed: what it pushed, and why
        print(json.dumps({"failed": f"{type(exc).__name__}: {exc}", **pushed.get("return_value", {})}))
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
