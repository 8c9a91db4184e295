"""``kgroups delete-offsets`` against the fake cluster (OffsetDelete as Kafka's group coordinator
answers it): a live group keeps its subscribed topics (GROUP_SUBSCRIBED_TO_TOPIC, predicted in
the dry run and reported per partition), the plan of the dry run is the real run's, the
offsets are backed up first and the undo puts them back."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL, main
from tests.support.fakekafka import FakeCluster, Member


@pytest.fixture
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 2, end_offsets=100)
        c.add_topic("old", 2, end_offsets=100)
        c.add_group(
            "live",
            offsets={("orders", 0): 50, ("old", 0): 3, ("old", 1): 4},
            members=[Member("m-1", {"orders": [0, 1]})],
        )
        c.add_group("idle", offsets={("old", 0): 7, ("orders", 1): 9})
        yield c


def run(capsys, cluster, *argv):
    code = main(["-b", cluster.bootstrap, "--format", "json", "delete-offsets", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def outcomes(doc, gid):
    return {(r["topic"], r["partition"]): r["prediction"] for r in doc["decisions"][gid]["partitions"]}


def test_dry_run_predicts_the_brokers_rule_and_changes_nothing(cluster, capsys):
    code, doc, _ = run(capsys, cluster, "live", "idle", "--topic", "old", "--topic", "orders")
    assert code == EXIT_OK and doc["dry_run"] is True and doc["would_do"] == 2
    assert outcomes(doc, "live") == {("old", 0): "delete", ("old", 1): "delete", ("orders", 0): "subscribed"}
    assert outcomes(doc, "idle") == {("old", 0): "delete", ("orders", 1): "delete"}
    assert "1 kept: a member subscribes to the topic" in doc["decisions"]["live"]["reason"]
    assert cluster.committed("live") == {("orders", 0): 50, ("old", 0): 3, ("old", 1): 4}


def test_execute_deletes_what_the_plan_said_backs_it_up_and_undo_restores_it(cluster, capsys, tmp_path):
    code, doc, _ = run(
        capsys, cluster, "live", "--topic", "old:1", "--execute", "--backup-url", str(tmp_path)
    )
    assert code == EXIT_OK and doc["done"] == 1 and doc["partial"] == doc["refused"] == 0
    assert doc["decisions"]["live"]["changed"] == {"old:1": None}
    assert cluster.committed("live") == {("orders", 0): 50, ("old", 0): 3}
    assert "restore" in doc["undo_command"]
    cluster.set_members(
        "live", [], state="Empty"
    )  # Kafka takes the commit back only while the group is Empty
    assert main(["-b", cluster.bootstrap, "restore", doc["backup_url"], "live"]) == EXIT_OK
    assert cluster.committed("live") == {
        ("orders", 0): 50,
        ("old", 0): 3,
        ("old", 1): 4,
    }  # only old:1 came back
    capsys.readouterr()


def test_a_topic_a_member_subscribes_to_makes_the_deletion_partial_and_the_exit_code_says_so(
    cluster, capsys, tmp_path
):
    """Issue 29: offsets asked for and left in place (predicted: never sent) are not "done"."""
    code, doc, _ = run(
        capsys,
        cluster,
        "live",
        "--topic",
        "old:1",
        "--topic",
        "orders",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    d = doc["decisions"]["live"]
    assert code == EXIT_PARTIAL and (doc["done"], doc["partial"], doc["refused"]) == (0, 1, 0)
    assert d["decision"] == "partial" and d["changed"] == {"old:1": None}
    assert list(d["kept"]) == ["orders:0"] and "GROUP_SUBSCRIBED_TO_TOPIC" in d["kept"]["orders:0"]
    assert cluster.committed("live") == {("orders", 0): 50, ("old", 0): 3}


def test_a_topic_every_member_subscribes_to_is_refused_by_the_plan(cluster, capsys, tmp_path):
    for argv in ((), ("--execute", "--backup-url", str(tmp_path))):
        code, doc, _ = run(capsys, cluster, "live", "--topic", "orders", *argv)
        d = doc["decisions"]["live"]
        assert code == EXIT_PARTIAL and (doc["done"], doc["would_do"], doc["refused"]) == (0, 0, 1), argv
        assert d["decision"] == "refused" and "GROUP_SUBSCRIBED_TO_TOPIC" in d["reason"]
        assert doc["backup_url"] is None
    assert cluster.committed("live") == {("orders", 0): 50, ("old", 0): 3, ("old", 1): 4}


def test_a_deletion_the_broker_refuses_on_every_partition_is_refused(cluster, capsys, tmp_path):
    """Issue 29's case (``rs-live``): the describe did not show the subscription, the broker refused
    all three partitions with GROUP_SUBSCRIBED_TO_TOPIC; the summary said done 1 and exit 0."""
    cluster.add_topic("rs.a", 3, end_offsets=100)
    cluster.add_group(
        "rs-live",
        offsets={("rs.a", p): 10 + p for p in range(3)},
        state="PreparingRebalance",
        members=[Member("m-1", {"rs.a": [0, 1, 2]})],
    )
    code, doc, _err = run(
        capsys, cluster, "rs-live", "--topic", "rs.a", "--execute", "--backup-url", str(tmp_path)
    )
    d = doc["decisions"]["rs-live"]
    assert code == EXIT_PARTIAL
    assert (doc["done"], doc["partial"], doc["refused"], doc["failed"]) == (0, 0, 1, 0)
    assert d["decision"] == "refused" and d["refusal"] == "broker" and d["changed"] == {}
    assert sorted(d["kept"]) == ["rs.a:0", "rs.a:1", "rs.a:2"]
    assert all("GROUP_SUBSCRIBED_TO_TOPIC" in why for why in d["kept"].values())
    assert "refused every partition" in d["reason"]
    assert cluster.committed("rs-live") == {("rs.a", p): 10 + p for p in range(3)}


def test_a_subscription_the_describe_did_not_show_is_kept_by_the_broker_and_reported(
    cluster, capsys, tmp_path
):
    """Members outside Stable carry no metadata (Kafka's describe): the broker decides, and its
    GROUP_SUBSCRIBED_TO_TOPIC is reported per partition as kept: the deletion is partial."""
    cluster.add_group(
        "rebalancing",
        offsets={("orders", 0): 5, ("old", 0): 6},
        state="PreparingRebalance",
        members=[Member("m-1", {"orders": [0]})],
    )
    code, doc, _ = run(
        capsys,
        cluster,
        "rebalancing",
        "--topic",
        "orders",
        "--topic",
        "old",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    d = doc["decisions"]["rebalancing"]
    assert set(outcomes(doc, "rebalancing").values()) == {"broker_decides"}
    assert code == EXIT_PARTIAL and d["decision"] == "partial" and doc["partial"] == 1 and doc["done"] == 0
    assert list(d["kept"]) == ["orders:0"] and "GROUP_SUBSCRIBED_TO_TOPIC" in d["kept"]["orders:0"]
    assert d["changed"] == {"old:0": None} and cluster.committed("rebalancing") == {("orders", 0): 5}


def test_groups_the_broker_refuses_as_a_whole_are_named(cluster, capsys, tmp_path):
    cluster.add_group(
        "connect-cluster",
        protocol_type="connect",
        offsets={("old", 0): 1},
        members=[Member("w-1", metadata_bytes=b"x", assignment_bytes=b"y")],
    )
    cluster.add_group("shared", group_type="share", members=[Member("s-1", {"old": [0]})], state="Stable")
    code, doc, _ = run(
        capsys,
        cluster,
        "connect-cluster",
        "shared",
        "missing",
        "--topic",
        "old",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_PARTIAL
    d = doc["decisions"]
    assert "NON_EMPTY_GROUP" in d["connect-cluster"]["reason"] and "share group" in d["shared"]["reason"]
    assert d["missing"]["reason"] == "no such group"
    assert cluster.committed("connect-cluster") == {("old", 0): 1}


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (("g",), "needs --topic"),
        (("g", "--topic", "old:x"), "partition 'x'"),
        (("-p", "g*", "--topic", "old", "--execute"), "needs --max-groups"),
        (("g", "--exclude", "x", "--topic", "old"), "--exclude applies to --pattern"),
    ],
)
def test_bad_input_exits_2_before_any_network_call(capsys, argv, fragment):
    assert main(["-b", "127.0.0.1:1", "delete-offsets", *argv]) == EXIT_BAD_INPUT
    assert fragment in capsys.readouterr().err


def test_a_broker_without_offset_delete_is_named(cluster, capsys, tmp_path):
    cluster.set_api_versions({"OffsetDelete": None})
    code, doc, _ = run(capsys, cluster, "idle", "--topic", "old", "--execute", "--backup-url", str(tmp_path))
    assert code == EXIT_PARTIAL
    assert "does not support OffsetDelete" in doc["decisions"]["idle"]["reason"]
    assert cluster.committed("idle") == {("old", 0): 7, ("orders", 1): 9}


def test_a_restore_the_broker_refuses_in_part_or_whole_says_so_and_exits_1(cluster, capsys, tmp_path):
    """Issue 29: ``restore`` names each group's outcome (restored / partial / failed) and exits 1
    unless every partition came back."""
    from tests.support.fakekafka import Err

    code, doc, _ = run(
        capsys,
        cluster,
        "idle",
        "--topic",
        "old",
        "--topic",
        "orders",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_OK and cluster.committed("idle") == {}
    refusal = cluster.inject_error("OffsetCommit", Err.TOPIC_AUTHORIZATION_FAILED, key=("idle", "old", 0))
    try:
        code = main(["-b", cluster.bootstrap, "--format", "json", "restore", doc["backup_url"], "idle"])
        restored = json.loads(capsys.readouterr().out)
        assert code == EXIT_PARTIAL and restored["idle"]["outcome"] == "partial"
        assert cluster.committed("idle") == {("orders", 1): 9}
        code = main(["-b", cluster.bootstrap, "restore", doc["backup_url"], "idle"])
        assert (
            code == EXIT_PARTIAL and "1 group(s): 0 restored, 1 partial, 0 failed" in capsys.readouterr().out
        )
    finally:
        refusal.cancel()
    cluster.set_members(
        "idle", [Member("m-1", {"orders": [1]})], state="Stable"
    )  # Kafka: only into Empty groups
    code = main(["-b", cluster.bootstrap, "--format", "json", "restore", doc["backup_url"], "idle"])
    restored = json.loads(capsys.readouterr().out)
    assert (
        code == EXIT_PARTIAL and restored["idle"]["outcome"] == "failed" and restored["idle"]["results"] == {}
    )
