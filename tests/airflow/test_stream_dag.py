"""``dags/kgroups_spark_stream.py`` under real Airflow (``dag.test()``) on Apache Kafka (the session
broker) with real Spark: the gate's range is read by an AvailableNow ``kgroups`` stream into a
Parquet sink, the job's group reaches the range's end, the gate on that group passes, and a
second run reads only what is new."""

from __future__ import annotations

import sys

import pyarrow.dataset
import pytest

from airflow_provider_kgroups.client.config import ClientConfig
from airflow_provider_kgroups.client.sync import GroupsClient
from tests.support.airflow_env import EXAMPLE_DAGS

pytest.importorskip("pyspark")


@pytest.fixture
def stream_env(tmp_path, monkeypatch, kgroups_conn, broker, seed, name_prefix):
    topic, landing, stream_group = f"{name_prefix}orders", f"{name_prefix}landing", f"{name_prefix}spark"
    kgroups_conn("kg_stream", host=broker.bootstrap)
    examples = "AIRFLOW__KGROUPS_EXAMPLES__"
    for key, value in {
        f"{examples}CONN_ID": "kg_stream",
        f"{examples}LANDING_GROUPS": landing,
        f"{examples}LANDING_TOPICS": topic,
        f"{examples}STREAM_GROUP": stream_group,
        f"{examples}STREAM_ROOT": str(tmp_path / "stream"),
        f"{examples}MAX_OFFSETS_PER_TRIGGER": "15",
        f"{examples}GATE_POKE_SECONDS": "1",
        f"{examples}SPARK_CONF": '{"spark.ui.enabled": "false", "spark.driver.memory": "1g"}',
        f"{examples}SPARK_MASTER": "local[2]",
        "PYSPARK_PYTHON": sys.executable,
    }.items():
        monkeypatch.setenv(key, value)
    seed.create_topic(topic, 2)
    return topic, landing, stream_group, tmp_path / "stream" / "orders"


def committed(bootstrap: str, group: str) -> dict[int, int]:
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        found = client.fetch_committed_offsets([group]).values[group]
    return {tp.partition: c.offset for tp, c in found.partitions.items() if c.offset is not None}


def test_the_stream_dag_reads_the_gated_range_once_and_its_group_follows(run_dag, broker, seed, stream_env):
    topic, landing, stream_group, sink = stream_env
    for p in (0, 1):
        seed.produce(topic, p, 20)
    seed.commit(landing, {(topic, 0): 20, (topic, 1): 20})

    first = run_dag("kgroups_spark_stream", conf={"barrier": "log_end"}, folder=EXAMPLE_DAGS)
    assert first.state == "success", first
    assert first.xcoms["stream_range"]["records"] == 40
    assert first.xcoms["stream_range"]["batches"] == 3  # 15 offsets a batch: 8 + 7, twice, then the rest
    assert committed(broker.bootstrap, stream_group) == {0: 20, 1: 20}

    for p in (0, 1):
        seed.produce(topic, p, 4)
    seed.commit(landing, {(topic, 0): 24, (topic, 1): 24})
    second = run_dag("kgroups_spark_stream", conf={"barrier": "log_end"}, folder=EXAMPLE_DAGS)
    assert second.state == "success", second
    assert second.xcoms["stream_range"]["records"] == 8  # only what is new
    assert committed(broker.bootstrap, stream_group) == {0: 24, 1: 24}
    table = pyarrow.dataset.dataset(str(sink), format="parquet").to_table(columns=["partition", "offset"])
    written = sorted(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))
    assert written == [(p, o) for p in (0, 1) for o in range(24)]  # every record once
