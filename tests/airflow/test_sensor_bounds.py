"""The user story of issue 18 under real Airflow (dag.test on sqlite), poke and deferrable: a
threshold gate (``max_lag_seconds=60``) on a topic whose records the client cannot decode, for a
group 3.6 h behind. The age is unknown, so the sensor waits, says why, and times out: it never
opens. A young group on a readable topic opens the same gate (the control). On the fake cluster, a
topic whose batches no decoder can read (tests/support/undecodable.py); on the embedded broker,
lz4, zstd and snappy topics written by librdkafka 3.6 h ago, which are read: the age is known,
and over the threshold."""

from __future__ import annotations

import re
import time

import pytest

from tests.support.fakekafka import FakeCluster
from tests.support.production import BEHIND_MS, append_young
from tests.support.undecodable import undecodable_batches

HOUR_MS = 3_600_000


@pytest.fixture
def cluster():
    now = int(time.time() * 1000)
    with FakeCluster.running_in_thread(brokers=1) as c:
        c.add_topic("landed", 1)
        c.append("landed", 0, 50, timestamp_ms=now - int(3.6 * HOUR_MS))
        c.append("landed", 0, 5, timestamp_ms=now)
        c.add_group("behind", offsets={("landed", 0): 10})  # 3.6 h behind
        c.add_group("young", offsets={("landed", 0): 50})  # the 5 records written now
        yield c


@pytest.mark.parametrize("dag_id", ["kg_sensor_seconds_poke", "kg_sensor_seconds_deferrable"])
def test_an_undecodable_topic_keeps_the_gate_closed_until_the_timeout(
    dag_id, cluster, run_dag, kgroups_conn, capfd, monkeypatch
):
    kgroups_conn("kgroups_test", host=cluster.bootstrap)
    undecodable_batches(monkeypatch)
    result = run_dag(dag_id, {"group": "behind", "topic": "landed"})
    assert result.state == "failed" and result.tasks["gate"] == "failed", result
    out = capfd.readouterr()
    text = out.out + out.err
    assert "lag in seconds unknown" in text and "cannot decode records" in text
    assert "within the thresholds" not in text and "Gate opened" not in text
    # said once (the worker's first check, not again by the trigger or later pokes), as a warning
    # naming the partition, the codec, the library and what the user can do
    told = [line for line in text.splitlines() if "the gate stays closed" in line]
    assert len(told) == 1 and "WARNING" in told[0].upper(), told
    for words in (
        "group behind, landed[0]: cannot decode records from offset 10: lz4 record batch could not be "
        "decoded with cramjam",
        "the age of its record at offset 10 is unknown",
        "pip install --upgrade cramjam",
        "the group commits past that batch or reaches the log end",
        "max_lag_per_partition",
        "unknown_lag does not change it",
    ):
        assert words in told[0], words
    assert (
        len(re.findall(r"check \d+: behind: lag in seconds unknown", text)) >= 3
    )  # later checks (the trigger's too)


@pytest.mark.parametrize("dag_id", ["kg_sensor_seconds_poke", "kg_sensor_seconds_deferrable"])
def test_a_group_with_young_unread_records_opens_the_same_gate(dag_id, cluster, run_dag, kgroups_conn):
    kgroups_conn("kgroups_test", host=cluster.bootstrap)
    result = run_dag(dag_id, {"group": "young", "topic": "landed"})
    assert result.state == "success", result
    assert result.xcoms["gate"]["lag"]["young"]["max_lag_seconds"] < 60


# -- the same story on the embedded broker, with the codecs (tests/realbroker/test_behind.py for every codec) --

#: (DAG, codec): poke and deferrable over the three codecs of the issue, without running all six pairs
ON_TANSU = [
    ("kg_sensor_seconds_poke", "lz4"),
    ("kg_sensor_seconds_deferrable", "lz4"),
    ("kg_sensor_seconds_poke", "zstd"),
    ("kg_sensor_seconds_deferrable", "snappy"),
]


@pytest.mark.parametrize("dag_id, codec", ON_TANSU)
def test_on_the_real_broker_a_group_hours_behind_never_opens_the_gate(
    dag_id, codec, broker, seed, behind, name_prefix, run_dag, kgroups_conn, capfd
):
    seeded = behind[codec]
    group = f"{name_prefix}behind"
    seed.commit(group, {(seeded.topic, 0): seeded.behind.offset})  # inside a compressed 100-record batch
    kgroups_conn("kgroups_test", host=broker.bootstrap)
    result = run_dag(dag_id, {"group": group, "topic": seeded.topic})
    assert result.state == "failed" and result.tasks["gate"] == "failed", result
    out = capfd.readouterr()
    text = out.out + out.err
    over = re.search(rf"{re.escape(group)}: lag (\d+) s over 60 s", text)
    assert over is not None and int(over.group(1)) >= BEHIND_MS / 1000, text[-3000:]
    assert "within the thresholds" not in text and "Gate opened" not in text


@pytest.mark.parametrize("dag_id, codec", ON_TANSU[:2])
def test_on_the_real_broker_a_young_group_on_the_same_topic_opens_it(
    dag_id, codec, broker, seed, behind, name_prefix, run_dag, kgroups_conn
):
    seeded = behind[codec]
    young = append_young(broker.bootstrap, seeded, int(time.time() * 1000) - 5_000)  # written 5 s ago
    group = f"{name_prefix}young"
    seed.commit(group, {(seeded.topic, 0): young[len(young) // 2].offset})
    kgroups_conn("kgroups_test", host=broker.bootstrap)
    result = run_dag(dag_id, {"group": group, "topic": seeded.topic})
    assert result.state == "success", result
    assert 4.9 < result.xcoms["gate"]["lag"][group]["max_lag_seconds"] < 60
