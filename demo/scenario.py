"""What the demo sets up: where it works, the topic and its rates, the groups left around (with
the history the snapshot DAG would have stored for them), the Kafka Connect cluster's
connectors, and the settings the flagship DAG runs with."""

from __future__ import annotations

from pathlib import Path

from demo.connectserver import Connector

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".demo"
DAG_ID = "kgroups_gate_clean_spark"
TOPIC, PARTITIONS = "orders", 3
LANDING_GROUP = "orders-landing"
BACKLOG, PRODUCE_PER_S, LAND_PER_S = 1200, 30, 60
#: per partition, where the landing group holds until the gate's first check: below the barrier (a
#: third of each partition's backlog before the data interval's end; on Tansu the log end), so the
#: gate meets it behind however long Airflow takes to start, and watches it catch up
LANDING_HOLD = BACKLOG * 2 // 3 // PARTITIONS // 3
#: the hold ends at the gate's first check, or this long after `airflow dags test` started
#: (a first check that did not fix the barrier pushes no XCom to see)
HOLD_TIMEOUT_S = 180
RUN_CONF = {"cleanup_dry_run": False}  # + the barrier: "timestamp" on Apache Kafka, "log_end" on Tansu
DAGS_TEST_TIMEOUT_S = 600
#: group -> (what it is, committed offset per partition of "orders", history points (age hours, records behind))
GROUPS = {
    "adhoc-notebook-jane": ("dead: idle 12 days", 40, [(330, 6), (288, 0), (1, 0)]),
    "tmp-backfill-2024": ("dead: idle 10 days", 120, [(300, 9), (240, 0), (1, 0)]),
    "orders-etl-v1": ("dead: idle 9 days", 200, [(260, 3), (216, 0), (1, 0)]),
    "weekly-report": ("paused: last progress 2 days ago", 150, [(240, 30), (48, 0)]),
    "connect-orders-sink": (
        "Kafka Connect sink group, idle 10 days; its connector is PAUSED",
        300,
        [(300, 4), (250, 0), (1, 0)],
    ),
    "connect-legacy-sink": (
        "Kafka Connect sink group, idle 11 days; its connector was removed",
        250,
        [(320, 4), (270, 0), (1, 0)],
    ),
}
#: what the stand-in Kafka Connect cluster runs (no connector legacy-sink: it was removed)
CONNECTORS = [Connector("orders-sink", state="PAUSED", tasks=("PAUSED",), config={"topics": TOPIC})]
CONNECT_CONN_ID = "kgroups_connect_demo"
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    # a short-lived local driver: C1 JIT and the serial GC start faster
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}
