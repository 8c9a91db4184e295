"""The offset-changing example DAGs under real Airflow (``dag.test()``), against the fake cluster:

* ``kgroups_backfill_reset`` rewinds the landing groups to the offsets at the run's rendered
  ``{{ data_interval_start }}``;
* ``kgroups_spark_progress`` gates, reads the range from Kafka with Spark (local mode, the
  ``kgroups`` data source), commits its ending offsets to a progress group, and the next run
  starts where that group says.

Also the operators' arguments are checked when the DAG is parsed."""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timezone

import pytest

from airflow_provider_kgroups.history.audit import load_audit
from airflow_provider_kgroups.operators.progress import ConsumerGroupProgressOperator
from airflow_provider_kgroups.operators.reset import ConsumerGroupOffsetResetOperator
from tests.support.airflow_env import EXAMPLE_DAGS
from tests.support.fakekafka import FakeCluster, Member

HOUR = 3_600_000
T0 = int(datetime(2024, 5, 1, tzinfo=UTC).timestamp() * 1000)


@pytest.fixture
def env(tmp_path, monkeypatch, kgroups_conn):
    with FakeCluster.running_in_thread(brokers=3) as cluster:
        kgroups_conn("kg_offsets", host=cluster.bootstrap)
        examples = "AIRFLOW__KGROUPS_EXAMPLES__"
        for key, value in {
            f"{examples}CONN_ID": "kg_offsets",
            f"{examples}LANDING_GROUPS": "orders-landing*",
            f"{examples}LANDING_TOPICS": "orders",
            "AIRFLOW__KGROUPS__HISTORY_URL": str(tmp_path / "h"),
            f"{examples}GATE_POKE_SECONDS": "1",
            f"{examples}PROGRESS_GROUP": "orders-spark-progress",
            f"{examples}SPARK_CONF": '{"spark.ui.enabled": "false"}',
            "PYSPARK_PYTHON": sys.executable,
        }.items():  # Spark's Python workers: this venv
            monkeypatch.setenv(key, value)
        yield cluster


def test_backfill_dag_resets_the_landing_groups_to_the_rendered_interval_start(run_dag, env):
    cluster = env
    cluster.add_topic("orders", 2)
    for p in range(2):
        cluster.append("orders", p, 72, timestamp_ms=lambda offset: T0 + offset * HOUR)  # one record an hour
    cluster.add_group("orders-landing", offsets={("orders", 0): 72, ("orders", 1): 72})
    cluster.add_group("orders-landing-eu", offsets={("orders", 0): 70})
    # a manual run's interval starts at its logical date on Airflow 3, at the last whole day before it on
    # Airflow 2 (2024-05-02 00:00): after T0 either way, so the reset is to a record in the middle
    logical = datetime(2024, 5, 3, 6, tzinfo=UTC)
    result = run_dag(
        "kgroups_backfill_reset", conf={"dry_run": False}, folder=EXAMPLE_DAGS, logical_date=logical
    )
    assert result.state == "success", result
    out = result.xcoms["rewind_landing_groups"]
    rendered = out["plan"]["spec"]["datetime"]  # what {{ data_interval_start }} rendered to
    at_ms = int(datetime.fromisoformat(rendered).timestamp() * 1000)
    assert T0 < at_ms <= int(logical.timestamp() * 1000)
    expected = -(-(at_ms - T0) // HOUR)  # the first record at or after it (records are one an hour from T0)
    assert cluster.committed("orders-landing") == {("orders", 0): expected, ("orders", 1): expected}
    assert cluster.committed("orders-landing-eu") == {("orders", 0): expected, ("orders", 1): expected}
    assert out["done"] == 2 and out["restore"].startswith("KafkaGroupsHook('kg_offsets').restore_offsets(")
    record = load_audit(out["audit_url"])
    assert record["who"]["dag_id"] == "kgroups_backfill_reset" and record["dry_run"] is False


def test_backfill_dag_fails_the_task_when_a_landing_group_still_has_members(run_dag, env):
    cluster = env
    cluster.add_topic("orders", 1)
    cluster.append("orders", 0, 10, timestamp_ms=lambda offset: T0 + offset * HOUR)
    cluster.add_group("orders-landing", offsets={("orders", 0): 10}, members=[Member("m-1", {"orders": [0]})])
    result = run_dag(
        "kgroups_backfill_reset",
        conf={"dry_run": False},
        folder=EXAMPLE_DAGS,
        logical_date=datetime(2024, 5, 1, 5, tzinfo=UTC),
    )
    assert result.state == "failed" and result.tasks["rewind_landing_groups"] == "failed"
    assert cluster.committed("orders-landing") == {("orders", 0): 10}


def test_gate_then_spark_dag_commits_its_processed_range_and_the_next_run_starts_there(run_dag, env):
    cluster = env
    cluster.add_topic("orders", 2)
    for p in range(2):
        cluster.append("orders", p, 20, value=lambda offset: b'{"qty": 1}')
    cluster.add_group("orders-landing", offsets={("orders", 0): 20, ("orders", 1): 20})

    first = run_dag("kgroups_spark_progress", folder=EXAMPLE_DAGS)
    assert first.state == "success", first
    assert first.xcoms["progress_start"] is None  # no progress yet: the range starts at earliest
    assert first.xcoms["count_from_kafka"]["records"] == {"orders": {"0": 20, "1": 20}}
    assert cluster.committed("orders-spark-progress") == {("orders", 0): 20, ("orders", 1): 20}
    assert cluster.group("orders-spark-progress").members == {}  # created Empty, a group of no consumer

    for p in range(2):
        cluster.append("orders", p, 5, value=lambda offset: b'{"qty": 1}')
    cluster.add_group("orders-landing", offsets={("orders", 0): 25, ("orders", 1): 25})
    second = run_dag("kgroups_spark_progress", folder=EXAMPLE_DAGS)
    assert second.state == "success", second
    assert second.xcoms["progress_start"] == {"orders": {"0": 20, "1": 20}}
    assert json.loads(second.xcoms["count_from_kafka"]["startingOffsets"]) == {"orders": {"0": 20, "1": 20}}
    assert second.xcoms["count_from_kafka"]["records"] == {"orders": {"0": 5, "1": 5}}  # only what is new
    assert cluster.committed("orders-spark-progress") == {("orders", 0): 25, ("orders", 1): 25}


@pytest.mark.parametrize(
    "make, named",
    [
        (
            lambda: ConsumerGroupOffsetResetOperator(
                task_id="r",
                group_ids=["g"],
                strategy="to_datetime",
                value="yesterday",
                topics=["t"],
                backup_url="b",
            ),
            "not an ISO-8601 date-time",
        ),
        (
            lambda: ConsumerGroupOffsetResetOperator(
                task_id="r", group_ids=["g"], strategy="sideways", topics=["t"], backup_url="b"
            ),
            "not a reset strategy",
        ),
        (
            lambda: ConsumerGroupOffsetResetOperator(
                task_id="r", group_ids=["g"], strategy="to_earliest", backup_url="b"
            ),
            "needs a scope",
        ),
        (
            lambda: ConsumerGroupOffsetResetOperator(
                task_id="r", group_ids=["g"], strategy="to_offset", value=-1, topics=["t"], backup_url="b"
            ),
            "negative",
        ),
        (
            lambda: ConsumerGroupOffsetResetOperator(
                task_id="r", group_ids=["g"], strategy="by_duration", value="6h", topics=["t"], backup_url="b"
            ),
            "not an ISO-8601 duration",
        ),
        (
            lambda: ConsumerGroupOffsetResetOperator(
                task_id="r",
                group_patterns=["g*"],
                strategy="to_earliest",
                topics=["t"],
                dry_run=False,
                backup_url="b",
            ),
            "needs max_groups",
        ),
        (
            lambda: ConsumerGroupOffsetResetOperator(
                task_id="r", group_ids=["g"], strategy="to_earliest", topics=["t:x"], backup_url="b"
            ),
            "partition 'x'",
        ),
        (
            lambda: ConsumerGroupProgressOperator(
                task_id="p", progress_group_id="g*", ending_offsets={"t": {"0": 1}}, backup_url="b"
            ),
            "one exact group id",
        ),
        (
            lambda: ConsumerGroupProgressOperator(
                task_id="p", progress_group_id="g", ending_offsets={"t": {"0": -1}}, backup_url="b"
            ),
            "is -1 (latest); offsets are >= 0",
        ),
        (
            lambda: ConsumerGroupProgressOperator(
                task_id="p", progress_group_id="g", ending_offsets={}, backup_url="b"
            ),
            "ending_offsets is empty",
        ),
    ],
)
def test_bad_arguments_fail_at_parse_time_naming_the_argument(make, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        make()


def test_templated_arguments_are_checked_after_rendering_only():
    op = ConsumerGroupOffsetResetOperator(
        task_id="r",
        group_ids=["g"],
        strategy="{{ params.strategy }}",
        value="{{ data_interval_start }}",
        topics=["t"],
        backup_url="b",
    )
    assert "hook" not in op.__dict__  # nothing built, nothing sent at parse time
    ConsumerGroupOffsetResetOperator(
        task_id="r2",
        group_ids=["g"],
        strategy="to_datetime",
        value="{{ data_interval_start }}",
        topics=["t"],
        backup_url="b",
    )
