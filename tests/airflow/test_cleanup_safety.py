"""The one safety path through ``DeadConsumerGroupCleanupOperator`` under real Airflow
(``dag.test()``) on the fake cluster, several groups' outcomes asserted per run.

Kafka semantics the fake cluster follows (named in its handlers): DescribeGroups answers Dead
for an unknown group (GroupCoordinatorService.describeGroups); DeleteGroups refuses a group
with members, NON_EMPTY_GROUP (GroupMetadataManager.validateDeleteGroup) and answers
GROUP_ID_NOT_FOUND for a group already gone, which after a lost response the client reads as
"confirmed gone" (KafkaAdminClient / DeleteConsumerGroupsHandler retries); OffsetCommit by an
admin into an Empty or absent group restores offsets (OffsetMetadataManager.commitOffset).
Kafka Connect answers follow ConnectorsResource (GET /connectors?expand=status&expand=info),
served over real HTTP by demo/connectserver.py.
"""

from __future__ import annotations

import json

import fsspec
import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient
from airflow_provider_kgroups.client.results import CommittedOffset
from airflow_provider_kgroups.history import backup as backup_module
from airflow_provider_kgroups.history.backup import OffsetsBackup, load_backup
from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from demo.connectserver import Connector, ConnectServer
from tests.support.builders import seed_history
from tests.support.fakekafka import FakeCluster, Member

SYSTEM = ["_confluent-ksql-default", "__confluent.support.metrics", "schema-registry"]
#: dead groups -> idle since (hours); the order under a cap is the longest idle first
IDLE = {
    "racy": 330,
    "joiner": 320,
    "lost": 310,
    "connect-legacy-sink": 305,
    "dead-1": 300,
    "dead-2": 280,
    "dead-3": 260,
    "dead-4": 240,
    "connect-orders-sink": 300,
    "connect-running-sink": 300,
    "connect-cluster": 300,
    **{g: 300 for g in SYSTEM},
}
LOST_NODE = 2


def audit(url: str) -> dict:
    with fsspec.open(url, "r") as f:
        return json.load(f)


def outcomes(out: dict) -> dict[str, str]:
    return {g: d["decision"] for g, d in out["decisions"].items()}


@pytest.fixture
def world(tmp_path, kgroups_conn, monkeypatch):
    with (
        FakeCluster.running_in_thread(brokers=3) as cluster,
        ConnectServer(
            [
                Connector("orders-sink", state="PAUSED", tasks=("PAUSED",)),
                Connector("running-sink"),
            ]
        ) as connect,
    ):
        cluster.add_topic("orders", partitions=1, end_offsets=[60])
        for group_id in IDLE:
            node = LOST_NODE if group_id == "lost" else (0 if group_id < "m" else 1)
            cluster.add_group(
                group_id,
                offsets={("orders", 0): 50},
                coordinator=node,
                protocol_type="connect" if group_id == "connect-cluster" else "consumer",
            )
        cluster.add_group("paused", offsets={("orders", 0): 50}, coordinator=0)
        cluster.add_group(
            "live",
            offsets={("orders", 0): 50},
            coordinator=1,
            members=[Member("m-1", assignment={"orders": [0]})],
        )
        history = str(tmp_path / "history")
        seed_history(
            history,
            {**{g: [(age, 50, 60)] for g, age in IDLE.items()}, "paused": [(240, 40, 60), (1, 50, 60)]},
        )
        kgroups_conn("kgroups_fake", host=cluster.bootstrap)
        kgroups_conn("kg_connect", conn_type="kgroups_connect", host=connect.url)
        yield cluster, connect, history


def test_dry_run_then_real_run_races_caps_connect_and_restore(run_dag, world, monkeypatch):
    cluster, _connect, history = world
    conf = {
        "history": history,
        "ids": ["ghost"],
        "patterns": ["*"],
        "conn": "kgroups_fake",
        "connect": ["kg_connect"],
        "max_deletions": 10,
        "max_deletions_percent": 75,
    }
    before = {g: cluster.committed(g) for g in IDLE}

    dry = run_dag("kg_cleanup_safety", {**conf, "dry_run": True})
    assert dry.state == "success", dry
    plan = dry.xcoms["cleanup"]
    # 8 candidates (7 dead by idleness, 1 whose connector is gone); cap = min(10, ceil(75 % of 8)) = 6
    assert plan["candidates"] == 8 and plan["cap"] == 6
    assert plan["would_delete"] == sorted(
        ["racy", "joiner", "lost", "connect-legacy-sink", "dead-1", "dead-2"]
    )
    assert (
        plan["skipped"] == ["dead-3", "dead-4"] and plan["not_found"] == ["ghost"] and plan["deleted"] == []
    )
    assert all(cluster.has_group(g) for g in IDLE) and cluster.count("DeleteGroups") == 0

    # the real run, with three races: a consumer re-joins before the second describe, another
    # joins between that describe and the delete (the broker refuses), a delete response is lost
    original_describe, original_delete = AsyncGroupsClient.describe_groups, AsyncGroupsClient.delete_groups

    async def racy_rejoins(self, group_ids, *args, **kwargs):
        if "paused" not in group_ids:  # the second describe names only the groups about to go
            cluster.set_members("racy", [Member("m-2", assignment={"orders": [0]})], state="Stable")
        return await original_describe(self, group_ids, *args, **kwargs)

    async def joiner_joins(self, group_ids, *args, **kwargs):
        cluster.set_members("joiner", [Member("m-3", assignment={"orders": [0]})], state="Stable")
        return await original_delete(self, group_ids, *args, **kwargs)

    monkeypatch.setattr(AsyncGroupsClient, "describe_groups", racy_rejoins)
    monkeypatch.setattr(AsyncGroupsClient, "delete_groups", joiner_joins)
    drop = cluster.drop_mid_response("DeleteGroups", node=LOST_NODE, times=1)
    real = run_dag("kg_cleanup_safety", {**conf, "dry_run": False})
    monkeypatch.setattr(AsyncGroupsClient, "describe_groups", original_describe)
    monkeypatch.setattr(AsyncGroupsClient, "delete_groups", original_delete)
    # the broker refused joiner's deletion: refused, not a skip, and the task fails saying so (issue 29)
    assert real.state == "failed" and real.tasks["cleanup"] == "failed", real
    out = real.xcoms["cleanup"]  # pushed before failing
    assert drop.hits == 1
    assert out["deleted"] == ["connect-legacy-sink", "dead-1", "dead-2", "lost"]
    assert (
        out["skipped"] == ["dead-3", "dead-4", "racy"]
        and out["refused"] == ["joiner"]
        and out["failed"] == []
    )
    decisions = out["decisions"]
    assert (
        decisions["racy"]["reason"] == "changed since it was judged: now Stable with 1 member(s); not deleted"
    )
    assert decisions["joiner"]["reason"] == (
        "the broker refused: the group has members again (NON_EMPTY_GROUP); not deleted"
    )
    assert decisions["lost"]["deletion"] == "deleted (confirmed gone after a lost response)"
    assert decisions["dead-1"]["deletion"] == "deleted"
    assert (
        "the default deny pattern 'connect-*' lifted by Kafka Connect evidence"
        in decisions["connect-legacy-sink"]["reason"]
    )
    assert decisions["connect-legacy-sink"]["connect"]["status"] == "connector_gone"
    for g in ("connect-legacy-sink", "dead-1", "dead-2", "lost", "ghost"):
        assert not cluster.has_group(g)
    assert all(
        cluster.has_group(g) for g in ("racy", "joiner", "dead-3", "dead-4", "paused", "live", *SYSTEM)
    )

    # every decision is in the audit; parity: what the dry run said, the real run did (races aside)
    full = audit(out["audit_url"])["decisions"]
    dry_full = audit(plan["audit_url"])["decisions"]
    assert set(full) == set(dry_full) == {*IDLE, "paused", "live", "ghost"}
    for g, d in dry_full.items():
        if g in ("racy", "joiner"):
            continue
        if d["decision"] == "would_delete":
            assert full[g]["decision"] == "deleted" and full[g]["reason"].startswith(d["reason"])
        else:
            assert (full[g]["decision"], full[g]["reason"]) == (d["decision"], d["reason"]), g
    assert full["paused"]["decision"] == "keep" and full["paused"]["reason"].startswith("paused:")
    assert full["live"]["reason"].startswith("active: state Stable with 1 member(s)")
    for g in SYSTEM:
        assert full[g]["decision"] == "keep" and "default deny pattern" in full[g]["reason"]
    assert full["connect-orders-sink"]["decision"] == "keep"
    assert (
        full["connect-orders-sink"]["reason"].startswith("Kafka Connect: ")
        and "PAUSED" in full["connect-orders-sink"]["reason"]
    )
    assert full["connect-running-sink"]["connect"]["status"] == "active"
    assert (
        full["connect-cluster"]["decision"] == "keep" and "worker group" in full["connect-cluster"]["reason"]
    )

    # the backup read back, and the restore brings the offsets back exactly
    backup = load_backup(out["backup_url"])
    deleted = ["connect-legacy-sink", "dead-1", "dead-2", "lost"]
    assert set(backup.groups) == {*deleted, "joiner"}  # backed up before the broker refused joiner
    hook = KafkaGroupsHook("kgroups_fake")
    try:
        restored = hook.restore_offsets(out["backup_url"], deleted)
    finally:
        hook.close()
    assert all(restored[g]["errors"] == {} for g in deleted)
    assert {g: cluster.committed(g) for g in deleted} == {g: before[g] for g in deleted}


def test_named_groups_override_by_name_absolute_cap_no_connect_and_backup_read_back(
    run_dag, world, monkeypatch
):
    cluster, _, history = world
    conf = {
        "history": history,
        "patterns": ["dead-*", "schema-*", "connect-*", "_*"],
        "named": ["paused"],
        "override_deny": ["schema-registry"],
        "conn": "kgroups_fake",
        "max_deletions": 3,
        "max_deletions_percent": 100,
    }
    run = run_dag("kg_cleanup_safety", {**conf, "dry_run": False})
    assert run.state == "success", run
    out = run.xcoms["cleanup"]
    # candidates: paused (named), schema-registry (deny overridden by name), dead-1..4; cap 3 (absolute):
    # the named group first, then the longest idle
    assert out["candidates"] == 6 and out["cap"] == 3
    assert out["deleted"] == ["dead-1", "paused", "schema-registry"]
    assert out["skipped"] == ["dead-2", "dead-3", "dead-4"]
    assert out["decisions"]["paused"]["reason"].startswith(
        "named explicitly: Empty with no members (the evidence says 'paused: Empty, but no evidence"
    )
    assert (
        "the default deny pattern 'schema-registry*' overridden by name (override_deny)"
        in out["decisions"]["schema-registry"]["reason"]
    )
    full = audit(out["audit_url"])["decisions"]
    for g in ("connect-orders-sink", "connect-legacy-sink", "connect-cluster"):  # no Connect configured
        assert full[g]["decision"] == "keep" and "default deny pattern 'connect-*'" in full[g]["reason"]
        assert cluster.has_group(g)
    assert full["_confluent-ksql-default"]["decision"] == "keep"

    # a backup that does not read back identical: nothing deleted, the task fails at the end
    real_load = backup_module.load_backup

    def corrupted(url, **kwargs):
        b = real_load(url, **kwargs)
        groups = {
            g: {tp: CommittedOffset(c.offset + 1) for tp, c in parts.items()} for g, parts in b.groups.items()
        }
        return OffsetsBackup(b.created_ms, groups, b.note, b.url)

    monkeypatch.setattr(backup_module, "load_backup", corrupted)
    deletes = cluster.count("DeleteGroups")
    failed = run_dag(
        "kg_cleanup_safety", {**conf, "named": [], "override_deny": [], "dry_run": False, "max_deletions": 1}
    )
    assert failed.state == "failed" and failed.tasks["cleanup"] == "failed", failed
    out = failed.xcoms["cleanup"]
    assert out["failed"] == ["dead-2"] and out["deleted"] == [] and out["backup_url"] is None
    assert out["decisions"]["dead-2"]["reason"].startswith(
        "the backup of its offsets failed (KafkaGroupsError: the backup written to "
    )
    assert cluster.count("DeleteGroups") == deletes and cluster.has_group("dead-2")


def test_unreadable_connect_holds_the_run_unless_the_operator_says_otherwise(run_dag, world, kgroups_conn):
    """Issue 18 item 7 through the operator: a second Kafka Connect connection whose REST API
    refuses the credentials (401, no retry) holds every deletion of the run, naming that cluster;
    ``delete_despite_unreadable_connect=True`` lets the run go on (connect-* groups stay kept
    as unavailable: the readable cluster cannot speak for the other one)."""
    cluster, _connect, history = world
    with ConnectServer([], auth=("svc", "right")) as locked:
        kgroups_conn(
            "kg_connect_locked",
            conn_type="kgroups_connect",
            host=locked.url,
            login="svc",
            password="wrong",
            extra=json.dumps({"retries": 0}),
        )
        conf = {
            "history": history,
            "patterns": ["dead-*", "connect-*"],
            "conn": "kgroups_fake",
            "connect": ["kg_connect", "kg_connect_locked"],
            "max_deletions": 10,
            "max_deletions_percent": 100,
            "dry_run": False,
        }
        held = run_dag("kg_cleanup_safety", conf)
        assert held.state == "success", held
        out = held.xcoms["cleanup"]
        assert out["deleted"] == [] and out["held"] == ["dead-1", "dead-2", "dead-3", "dead-4"]
        assert out["connect_unreadable"] == [locked.url] and cluster.count("DeleteGroups") == 0
        assert all(
            out["decisions"][g]["decision"] == "keep"
            and out["decisions"][g]["reason"].startswith(
                f"held: Kafka Connect could not be read ({locked.url}: "
            )
            for g in out["held"]
        )
        full = audit(out["audit_url"])
        assert full["rules"]["delete_despite_unreadable_connect"] is False
        assert (
            full["connect_failures"][0]["cluster_url"] == locked.url
            and "HTTP 401" in full["connect_failures"][0]["reason"]
        )
        assert full["decisions"]["connect-legacy-sink"]["decision"] == "keep"  # unavailable: fail closed

        anyway = run_dag("kg_cleanup_safety", {**conf, "despite_unreadable_connect": True})
        assert anyway.state == "success", anyway
        out = anyway.xcoms["cleanup"]
        assert out["deleted"] == ["dead-1", "dead-2", "dead-3", "dead-4"] and out["held"] == []
        assert "deleted anyway (delete_despite_unreadable_connect)" in out["decisions"]["dead-1"]["reason"]
        assert cluster.has_group("connect-legacy-sink") and cluster.has_group("connect-orders-sink")


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"override_deny": "schema-registry"}, "override_deny must be a list of strings"),
        ({"delete_group_ids": [""]}, "delete_group_ids contains ''"),
        ({"connect_conn_ids": "kg_connect"}, "connect_conn_ids must be a list of strings"),
        ({"max_deletions_percent": 150}, "max_deletions_percent must be between 0 and 100"),
        ({"assume_full_visibility": "yes"}, "assume_full_visibility must be True or False"),
        ({"backup_url": 5}, "backup_url must be a directory or an fsspec URL"),
        ({"deny": ["re:("]}, "not a valid regular expression"),
        (
            {"delete_despite_unreadable_connect": "maybe"},
            "delete_despite_unreadable_connect must be True or False",
        ),
    ],
)
def test_bad_cleanup_arguments_fail_when_the_dag_is_parsed(kwargs, fragment):
    from airflow_provider_kgroups.operators.cleanup import DeadConsumerGroupCleanupOperator

    with pytest.raises(ValueError) as info:
        DeadConsumerGroupCleanupOperator(task_id="clean", history_url="/tmp/h", **kwargs)
    assert str(info.value).startswith("clean: ") and fragment in str(info.value)
