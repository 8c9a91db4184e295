"""The snapshot and cleanup operators under real Airflow (dag.test on sqlite).

Cleanup on the real broker: a dry run deletes nothing, a real run deletes exactly the dead
group, keeps the paused, system and live ones, and its backup restores the offsets. Cleanup on
the fake cluster, for the Apache Kafka semantics Tansu lacks (NON_EMPTY_GROUP, Dead): a group
that gains a member right before the deletion is kept (skipped when the second describe sees
it, refused when the broker does: that fails the task), an unexpected error fails the task at
the end without stopping the other deletions.
"""

from __future__ import annotations

import json
import sys

import fsspec
import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient
from airflow_provider_kgroups.history.backup import load_backup
from airflow_provider_kgroups.history.store import HistoryStore
from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from tests.support.builders import seed_history
from tests.support.fakekafka import Err, FakeCluster, Member
from tests.support.live import group_state
from tests.support.wire import WireConnection


@pytest.mark.realbroker
def test_snapshot_operator_appends_to_the_history(run_dag, seed, broker, kgroups_conn, name_prefix, tmp_path):
    kgroups_conn("kgroups_test", host=broker.bootstrap)
    topic = f"{name_prefix}t"
    seed.create_topic(topic, partitions=2)
    seed.produce(topic, 0, 3)
    seed.commit(f"{name_prefix}a", {(topic, 0): 1, (topic, 1): 0})
    seed.commit(f"{name_prefix}b", {(topic, 0): 3})
    history = str(tmp_path / "history")
    result = run_dag("kg_snapshot", {"history": history, "pattern": f"{name_prefix}*"})
    assert result.state == "success", result
    summary = result.xcoms["snapshot"]
    assert summary["groups"] == 2 and summary["failures"] == {}
    assert summary["worst"][0] == {"group_id": f"{name_prefix}a", "total_lag": 2}
    rows = HistoryStore(history).read_rows()
    assert summary["rows"] == len(rows) and {r["snapshot_ms"] for r in rows} == {summary["taken_at_ms"]}
    assert {(r["group_id"], r["partition"], r["committed"], r["lag"]) for r in rows} == {
        (f"{name_prefix}a", 0, 1, 2),
        (f"{name_prefix}a", 1, 0, 0),
        (f"{name_prefix}b", 0, 3, 0),
    }


@pytest.mark.realbroker
def test_cleanup_dry_run_then_real_run_on_the_real_broker(
    run_dag, seed, broker, kgroups_conn, name_prefix, tmp_path, live_group
):
    kgroups_conn("kgroups_test", host=broker.bootstrap)
    p = name_prefix
    topic = f"{p}t"
    seed.create_topic(topic)
    seed.produce(topic, 0, 8)
    dead, paused, system = f"{p}dead", f"{p}paused", f"connect-{p}sink"
    for group_id, offset in ((dead, 5), (paused, 3), (system, 5)):
        seed.commit(group_id, {(topic, 0): offset})
    history = str(tmp_path / "history")
    seed_history(
        history, {dead: [(240, 5, 8)], system: [(240, 5, 8)], paused: [(240, 2, 8), (1, 3, 8)]}, topic=topic
    )
    conf = {
        "history": history,
        "ids": [live_group.group_id],
        "patterns": [f"{p}*", f"connect-{p}*"],
        "conn": "kgroups_test",
    }

    dry = run_dag("kg_cleanup", {**conf, "dry_run": True})
    assert dry.state == "success", dry
    out = dry.xcoms["cleanup"]
    assert out["dry_run"] is True and out["would_delete"] == [dead] and out["deleted"] == []
    assert out["examined"] == 4 and out["kept"] == {"active": 1, "paused": 1, "dead": 1}
    assert all(seed.committed(g) for g in (dead, paused, system)), "a dry run deletes nothing"

    real = run_dag("kg_cleanup", {**conf, "dry_run": False})
    assert real.state == "success", real
    out = real.xcoms["cleanup"]
    assert out["deleted"] == [dead] and out["failed"] == [] and out["skipped"] == []
    assert seed.committed(dead) == {}
    assert seed.committed(paused) and seed.committed(system)
    with WireConnection.to(seed.bootstrap) as wire:
        assert group_state(wire, live_group.group_id) == "Stable"
    assert "default deny pattern 'connect-*'" in json.dumps(_audit(out["audit_url"])["decisions"][system])
    backup = load_backup(out["backup_url"])
    assert {tp.topic: c.offset for tp, c in backup.groups[dead].items()} == {topic: 5}

    hook = KafkaGroupsHook("kgroups_test")  # the documented one-call restore
    try:
        restored = hook.restore_offsets(out["backup_url"])
    finally:
        hook.close()
    assert restored[dead]["errors"] == {}
    assert {tp.topic: o for tp, o in seed.committed(dead).items()} == {topic: 5}


def audit_reason(out: dict, group_id: str) -> str:
    return _audit(out["audit_url"])["decisions"][group_id]["reason"]


def _audit(url: str) -> dict:
    with fsspec.open(url, "r") as f:
        return json.load(f)


def _called_from(path_end: str) -> bool:
    """Whether a frame of the calling stack runs code of a file ending in ``path_end``."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.replace("\\", "/").endswith(path_end):
            return True
        frame = frame.f_back
    return False


def test_cleanup_keeps_groups_that_rejoin_and_fails_only_at_the_end(
    run_dag, kgroups_conn, tmp_path, monkeypatch
):
    with FakeCluster.running_in_thread(brokers=3) as cluster:
        cluster.add_topic("orders", partitions=1, end_offsets=[60])  # 10 records to read at offset 50
        groups = ["dead-1", "racy", "nonempty", "broken", "topicless"]
        for group_id in groups[:4]:
            cluster.add_group(group_id, offsets={("orders", 0): 50})
        cluster.add_group(
            "topicless", offsets={("deleted-topic", 0): 9}
        )  # its only topic is gone (checked by name)
        cluster.add_group(
            "live", offsets={("orders", 0): 50}, members=[Member("m-1", assignment={"orders": [0]})]
        )
        history = str(tmp_path / "history")
        seed_history(history, {g: [(240, 50, 60)] for g in groups[:4]})
        cluster.inject_error("DeleteGroups", Err.NON_EMPTY_GROUP, key="nonempty")
        cluster.inject_error("DeleteGroups", Err.GROUP_AUTHORIZATION_FAILED, key="broken")
        original = AsyncGroupsClient.describe_groups

        async def a_consumer_rejoins_first(
            self, group_ids, *args, **kwargs
        ):  # the race the second describe is for: right before the guard's describe, and only then
            if _called_from("cleanup/guard.py"):
                cluster.set_members("racy", [Member("m-2", assignment={"orders": [0]})], state="Stable")
            return await original(self, group_ids, *args, **kwargs)

        monkeypatch.setattr(AsyncGroupsClient, "describe_groups", a_consumer_rejoins_first)
        kgroups_conn("kgroups_fake", host=cluster.bootstrap)
        conf = {
            "history": history,
            "ids": [*groups, "live", "never-existed"],
            "patterns": [],
            "conn": "kgroups_fake",
        }
        capped = run_dag("kg_cleanup", {**conf, "dry_run": True, "max_deletions": 2})
        assert capped.state == "success", capped
        out = capped.xcoms["cleanup"]
        assert out["cap"] == 2 and len(out["would_delete"]) == 2 and len(out["skipped"]) == 3
        assert "over this run's cap of 2" in out["decisions"][out["skipped"][0]]["reason"]
        assert all(cluster.has_group(g) for g in groups), "a dry run deletes nothing"

        result = run_dag("kg_cleanup", {**conf, "dry_run": False})
        assert result.state == "failed" and result.tasks["cleanup"] == "failed", result
        out = result.xcoms["cleanup"]  # pushed before failing
        assert out["deleted"] == ["dead-1", "topicless"] and out["failed"] == ["broken"]
        assert out["skipped"] == ["racy"] and out["refused"] == ["nonempty"]
        assert "NON_EMPTY_GROUP" in out["decisions"]["nonempty"]["reason"]
        assert "now Stable with 1 member(s)" in out["decisions"]["racy"]["reason"]
        assert not cluster.has_group("dead-1") and not cluster.has_group("topicless")
        assert all(cluster.has_group(g) for g in ("racy", "nonempty", "broken", "live"))
        assert audit_reason(out, "topicless").startswith(
            "dead: every topic it committed to was deleted; matches no deny pattern"
        )
        audit = _audit(out["audit_url"])
        assert audit["decisions"]["never-existed"]["decision"] == "not_found"
        assert "Dead" in audit["decisions"]["never-existed"]["reason"]
        assert audit["summary"]["backup_url"] == out["backup_url"]
        assert set(load_backup(out["backup_url"]).groups) == {"dead-1", "topicless", "nonempty", "broken"}


def test_cleanup_fails_when_the_broker_refuses_a_stale_offsets_deletion(
    run_dag, kgroups_conn, tmp_path, monkeypatch
):
    """Issue 29: a stale-offsets deletion the broker refused on every partition (a member
    subscribed to the topic again, GROUP_SUBSCRIBED_TO_TOPIC) is refused, and the task says so."""
    with FakeCluster.running_in_thread(brokers=1) as cluster:
        cluster.add_topic("orders", partitions=1, end_offsets=[60])
        cluster.add_topic("old", partitions=2, end_offsets=[60, 60])
        cluster.add_group(
            "live",
            offsets={("orders", 0): 50, ("old", 0): 3, ("old", 1): 4},
            members=[Member("m-1", {"orders": [0]})],
        )
        original = AsyncGroupsClient.delete_committed_offsets

        async def a_member_subscribes_first(self, offsets, *args, **kwargs):
            cluster.set_members("live", [Member("m-1", {"orders": [0], "old": [0, 1]})], state="Stable")
            return await original(self, offsets, *args, **kwargs)

        monkeypatch.setattr(AsyncGroupsClient, "delete_committed_offsets", a_member_subscribes_first)
        kgroups_conn("kgroups_fake", host=cluster.bootstrap)
        conf = {
            "history": str(tmp_path / "history"),
            "ids": ["live"],
            "patterns": [],
            "conn": "kgroups_fake",
            "stale_offsets": True,
        }
        planned = run_dag("kg_cleanup", {**conf, "dry_run": True})
        assert planned.state == "success", planned
        assert planned.xcoms["cleanup"]["stale_offsets"]["would_do"] == 1

        result = run_dag("kg_cleanup", {**conf, "dry_run": False})
        assert result.state == "failed" and result.tasks["cleanup"] == "failed", result
        stale = result.xcoms["cleanup"]["stale_offsets"]  # pushed before failing
        assert (stale["done"], stale["refused"]) == (0, 1)
        live = stale["decisions"]["live"]
        assert live["decision"] == "refused" and live["refusal"] == "broker"
        assert sorted(live["kept"]) == ["old:0", "old:1"]
        assert cluster.committed("live") == {("orders", 0): 50, ("old", 0): 3, ("old", 1): 4}
