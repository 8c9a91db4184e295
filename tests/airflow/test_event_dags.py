"""The event-driven example pair (dags/kgroups_lag_events.py) under dag.test against the real
broker: the gate DAG's sensor emits the range as the extra of an asset event (its outlet), the
very shape the watcher's events have, and the processing DAG reads exactly that range from
Kafka with the kgroups source."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.triggers.events import range_from_events
from tests.support.airflow_env import EXAMPLE_DAGS, events_of

pytestmark = pytest.mark.realbroker


@pytest.fixture
def landed(monkeypatch, seed, broker, kgroups_conn, name_prefix, tmp_path):
    """A topic of 2 partitions, fully consumed by a landing group, and the example's settings."""
    topic, group = f"{name_prefix}orders", f"{name_prefix}landing"
    seed.create_topic(topic, 2)
    seed.produce(topic, 0, 4, value=lambda i: b'{"qty": %d}' % i, key=b"sku-1")
    seed.produce(topic, 1, 3, value=lambda i: b'{"qty": %d}' % i, key=b"sku-2")
    seed.commit(group, {(topic, 0): 4, (topic, 1): 3})
    kgroups_conn("kgroups_events_e2e", host=broker.bootstrap)
    for name, value in {
        "AIRFLOW__KGROUPS_EXAMPLES__CONN_ID": "kgroups_events_e2e",
        "AIRFLOW__KGROUPS_EXAMPLES__BOOTSTRAP_SERVERS": broker.bootstrap,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_GROUPS": group,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_TOPICS": topic,
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_POLL_SECONDS": "0.3",
        "AIRFLOW__KGROUPS_EXAMPLES__EVENT_OUTPUT": str(tmp_path / "out"),
        "AIRFLOW__KGROUPS_EXAMPLES__SPARK_CONF": json.dumps(
            {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}
        ),
    }.items():
        monkeypatch.setenv(name, value)
    return topic, group


def asset_events(name: str) -> list[dict]:
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = (
            session.query(AssetEvent)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .filter(AssetModel.name == name)
            .order_by(AssetEvent.id)
            .all()
        )
        return [{"extra": dict(r.extra or {})} for r in rows]


def test_the_gate_dag_emits_the_range_as_an_asset_event(run_dag, landed, broker):
    topic, group = landed
    before = len(asset_events("kgroups_orders_range"))
    result = run_dag("kgroups_orders_gate", folder=EXAMPLE_DAGS)
    assert result.state == "success", result
    events = asset_events("kgroups_orders_range")[before:]
    assert len(events) == 1
    extra = events[0]["extra"]
    assert json.loads(extra["endingOffsets"]) == {topic: {"0": 4, "1": 3}}
    assert json.loads(extra["startingOffsets"]) == {topic: {"0": -2, "1": -2}}
    assert extra["group_ids"] == [group] and extra["mode"] == "barrier"
    assert range_from_events(events) == {
        "startingOffsets": extra["startingOffsets"],
        "endingOffsets": extra["endingOffsets"],
    }
    # OpenLineage: the gated topic, with the range it handed on
    (dataset,) = events_of("kgroups_orders_gate", result.run_id, "wait_for_landing")["inputs"]
    assert (dataset["namespace"], dataset["name"]) == (f"kafka://{broker.bootstrap}", topic)
    assert dataset["inputFacets"]["kgroups_offsetRange"]["partitions"]["0"] == {
        "startingOffset": -2,
        "endingOffset": 4,
    }
