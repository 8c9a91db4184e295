"""The demo's streaming part: ``dags/kgroups_spark_stream.py`` run twice with ``airflow dags test``
after the flagship. Each run gates the landing group at its data interval's end, streams exactly
that range from Kafka into Parquet with an AvailableNow ``kgroups`` query committing its progress
to a consumer group, then gates on that group. The demo prints the group's lag before and after
each run, checks that the sink holds every record the producer wrote below the range's end
exactly once, and that the second run read only the new range."""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from datetime import UTC, datetime

from airflow_provider_kgroups.client.config import ClientConfig
from airflow_provider_kgroups.client.results import TopicPartition
from airflow_provider_kgroups.client.sync import GroupsClient
from demo.child import Child, airflow_command
from demo.landing import OrderProducer
from demo.report import rel, say
from demo.scenario import DAGS_TEST_TIMEOUT_S, PARTITIONS, TOPIC, WORK

DAG = "kgroups_spark_stream"
STREAM_GROUP = "orders-spark-stream"


def group_lag(bootstrap: str) -> tuple[dict[int, int], int]:
    """The stream group's committed offsets and its total lag on the orders topic."""
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        fetched = client.fetch_committed_offsets([STREAM_GROUP]).values.get(STREAM_GROUP)
        ends = client.log_end_offsets(tps).values
    committed = {tp.partition: o for tp, o in (fetched.committed() if fetched else {}).items()}
    return committed, sum(ends[tp].offset - committed.get(tp.partition, 0) for tp in tps)


def stream_result() -> dict | None:
    """The last run's ``stream_range`` XCom (the runs are one after the other)."""
    with sqlite3.connect(WORK / "airflow" / "airflow.db") as db:
        rows = db.execute(
            "select value from xcom where dag_id = ? and task_id = 'stream_range' and key = 'return_value' "
            "order by timestamp desc limit 1",
            (DAG,),
        ).fetchall()
    return json.loads(rows[0][0]) if rows else None


def sink_rows() -> Counter:
    import pyarrow.dataset

    sink = WORK / "stream" / "orders"
    table = pyarrow.dataset.dataset(str(sink), format="parquet").to_table(columns=["partition", "offset"])
    return Counter(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))


def run_stream_dag(env: dict[str, str], bootstrap: str, producer: OrderProducer) -> bool:
    say(
        f"\nStreaming ({DAG}): gate, an AvailableNow kgroups stream with commitToGroup={STREAM_GROUP} "
        "into Parquet, then a gate on that group; run twice"
    )
    env = {
        **env,
        "AIRFLOW__KGROUPS_EXAMPLES__STREAM_GROUP": STREAM_GROUP,
        "AIRFLOW__KGROUPS_EXAMPLES__STREAM_ROOT": str(WORK / "stream"),
        "AIRFLOW__KGROUPS_EXAMPLES__MAX_OFFSETS_PER_TRIGGER": "1000",
        "AIRFLOW__KGROUPS_EXAMPLES__SPARK_MASTER": "local[2]",
    }
    ok, previous = True, 0
    for run in (1, 2):
        logical = datetime.now(UTC).replace(microsecond=0)
        before, lag_before = group_lag(bootstrap)
        log = WORK / "logs" / f"airflow-dags-test-stream-{run}.log"
        started = time.monotonic()
        command = airflow_command(
            "dags", "test", DAG, logical.isoformat(), "--conf", json.dumps({"barrier": "timestamp"})
        )
        with Child(command, env, log) as child:
            code = child.wait(DAGS_TEST_TIMEOUT_S)
        after, lag_after = group_lag(bootstrap)
        result = stream_result()
        if code != 0 or result is None:
            say(f"  run {run}  FAILED (exit code {code}); the end of {rel(log)}:\n" + child.tail())
            return False
        ends = {int(p): o for p, o in (result["endOffsets"] or {}).get(TOPIC, {}).items()}
        produced = sum(1 for r in producer.snapshot() if r.offset < ends.get(r.partition, 0))
        rows = sink_rows()
        exactly_once = len(rows) == produced and max(rows.values(), default=1) == 1
        new_only = result["records"] == produced - previous
        say(
            f"  run {run}  {time.monotonic() - started:.0f} s: {result['batches']} micro-batch(es), "
            f"{result['records']} records read, ended at "
            + "  ".join(f"{TOPIC}[{p}]={o}" for p, o in sorted(ends.items()))
        )
        say(
            f"           group {STREAM_GROUP}: lag {lag_before if before else 'n/a (no commits yet)'} -> "
            f"{lag_after} (committed {sum(after.values())}); the sink holds {len(rows)} records, the producer "
            f"wrote {produced} below that end: {'each exactly once' if exactly_once else 'NOT EQUAL'}"
            + ("" if run == 1 else f"; this run read only the new range: {'yes' if new_only else 'NO'}")
        )
        ok = ok and exactly_once and new_only and after == ends
        previous = produced
    return ok
