"""The user story of issue 18 under real Airflow (dag.test on sqlite), poke and deferrable: a
threshold gate (``max_lag_seconds=60``) on a topic whose records the client cannot decode, for a
group 3.6 h behind. The age is unknown, so the sensor waits, says why, and times out: it never
opens. A young group on a readable topic opens the same gate (the control). On the fake cluster:
an lz4 topic on the real broker needs the records stream's codecs (see tests/support/undecodable.py)."""

from __future__ import annotations

import time

import pytest

from tests.support.fakekafka import FakeCluster
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
def test_an_undecodable_topic_keeps_the_gate_closed_until_the_timeout(dag_id, cluster, run_dag, kgroups_conn, capfd,
                                                                       monkeypatch):
    kgroups_conn("kgroups_test", host=cluster.bootstrap)
    undecodable_batches(monkeypatch)
    result = run_dag(dag_id, {"group": "behind", "topic": "landed"})
    assert result.state == "failed" and result.tasks["gate"] == "failed", result
    out = capfd.readouterr()
    text = out.out + out.err
    assert "lag in seconds unknown" in text and "cannot decode records" in text
    assert "within the thresholds" not in text and "Gate opened" not in text


@pytest.mark.parametrize("dag_id", ["kg_sensor_seconds_poke", "kg_sensor_seconds_deferrable"])
def test_a_group_with_young_unread_records_opens_the_same_gate(dag_id, cluster, run_dag, kgroups_conn):
    kgroups_conn("kgroups_test", host=cluster.bootstrap)
    result = run_dag(dag_id, {"group": "young", "topic": "landed"})
    assert result.state == "success", result
    assert result.xcoms["gate"]["lag"]["young"]["max_lag_seconds"] < 60
