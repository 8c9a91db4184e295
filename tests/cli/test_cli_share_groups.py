"""Share groups (KIP-932) against the fake cluster's model of Kafka's group coordinator:
their lag from DescribeShareGroupOffsets, a reset of their start offsets through
AlterShareGroupOffsets on the same safety path (members refused, backup, undo), and a broker
without those APIs refusing them by name."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL, main
from tests.support.fakekafka import FakeCluster, Member


@pytest.fixture
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("jobs", 2, end_offsets=100, start_offsets=10)
        c.add_group("workers", group_type="share")
        c.set_share_offsets("workers", {("jobs", 0): 40, ("jobs", 1): 90})
        c.add_group("busy", group_type="share", members=[Member("s-1", {"jobs": [0, 1]})], state="Stable")
        c.set_share_offsets("busy", {("jobs", 0): 5})
        c.add_group("classic", offsets={("jobs", 0): 1})
        yield c


def run(capsys, cluster, *argv):
    code = main(["-b", cluster.bootstrap, "--format", "json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def test_share_lag_is_the_log_end_minus_the_start_offset_an_upper_bound(cluster, capsys):
    code, doc = run(capsys, cluster, "share-lag", "workers", "classic")
    assert code == EXIT_PARTIAL  # classic is not a share group: a failure, never "no lag"
    rows = {
        p["partition"]: (p["start_offset"], p["log_end"], p["lag_at_most"])
        for p in doc["groups"]["workers"]["partitions"]
    }
    assert rows == {0: (40, 100, 60), 1: (90, 100, 10)}
    assert doc["groups"]["workers"]["total_lag_at_most"] == 70
    assert doc["failures"]["classic"]["error"] == "GROUP_ID_NOT_FOUND"


def test_an_empty_share_group_is_reset_through_alter_share_group_offsets_and_undone(
    cluster, capsys, tmp_path
):
    code, dry = run(capsys, cluster, "reset-offsets", "workers", "--topic", "jobs", "--to-earliest")
    assert code == EXIT_OK
    assert {r["partition"]: (r["current"], r["new"]) for r in dry["decisions"]["workers"]["partitions"]} == {
        0: (40, 10),
        1: (90, 10),
    }
    code, real = run(
        capsys,
        cluster,
        "reset-offsets",
        "workers",
        "--topic",
        "jobs",
        "--to-earliest",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_OK and real["decisions"]["workers"]["decision"] == "done"
    assert cluster.share_offsets("workers") == {("jobs", 0): 10, ("jobs", 1): 10}
    assert cluster.committed("workers") == {}  # nothing went through OffsetCommit
    assert main(["-b", cluster.bootstrap, "restore", real["backup_url"], "workers"]) == EXIT_OK
    assert cluster.share_offsets("workers") == {("jobs", 0): 40, ("jobs", 1): 90}
    capsys.readouterr()


def test_a_share_group_with_members_is_refused(cluster, capsys, tmp_path):
    code, doc = run(
        capsys,
        cluster,
        "reset-offsets",
        "busy",
        "--topic",
        "jobs",
        "--to-latest",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_PARTIAL and doc["decisions"]["busy"]["refusal"] == "has_members"
    assert cluster.share_offsets("busy") == {("jobs", 0): 5}


def test_a_broker_without_the_share_offset_apis_refuses_by_name(cluster, capsys, tmp_path):
    cluster.set_api_versions({"DescribeShareGroupOffsets": None, "AlterShareGroupOffsets": None})
    code, doc = run(capsys, cluster, "share-lag", "workers")
    assert code == EXIT_PARTIAL
    assert "does not support DescribeShareGroupOffsets" in doc["failures"]["workers"]["message"]
    code, doc = run(
        capsys,
        cluster,
        "reset-offsets",
        "workers",
        "--topic",
        "jobs",
        "--to-earliest",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_PARTIAL and doc["decisions"]["workers"]["refusal"] == "share_group"
    assert "does not support DescribeShareGroupOffsets" in doc["decisions"]["workers"]["reason"]
    assert cluster.share_offsets("workers") == {("jobs", 0): 40, ("jobs", 1): 90}
