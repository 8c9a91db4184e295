"""Share groups (KIP-932) against the fake cluster's model of Kafka's group coordinator:
their lag from DescribeShareGroupOffsets (v1, Kafka 4.2+: the broker's exact lag; v0, Kafka 4.1:
the log end minus the start offset, an upper bound, said as such), a reset of their start offsets through
AlterShareGroupOffsets on the same safety path (members refused, backup, undo), and a broker
without those APIs refusing them by name."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL, main
from airflow_provider_kgroups.client import ClientConfig, GroupsClient, TopicPartition
from airflow_provider_kgroups.client.errors import ErrorCode
from tests.support.fakekafka import FakeCluster, Member


@pytest.fixture
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("jobs", 2, end_offsets=100, start_offsets=10)
        c.add_group("workers", group_type="share")
        # 15 records above partition 0's start offset were already acknowledged (KIP-1226)
        c.set_share_offsets(
            "workers", {("jobs", 0): 40, ("jobs", 1): 90}, delivery_complete={("jobs", 0): 15}
        )
        c.add_group("busy", group_type="share", members=[Member("s-1", {"jobs": [0, 1]})], state="Stable")
        c.set_share_offsets("busy", {("jobs", 0): 5})
        c.add_group("classic", offsets={("jobs", 0): 1})
        yield c


def run(capsys, cluster, *argv):
    code = main(["-b", cluster.bootstrap, "--format", "json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def lag_rows(doc, group):
    return {
        p["partition"]: (p["start_offset"], p["log_end"], p["lag"], p["lag_kind"], p["lag_at_most"])
        for p in doc["groups"][group]["partitions"]
    }


def totals(doc, group):
    g = doc["groups"][group]
    return g["total_lag"], g["total_lag_kind"], g["total_lag_at_most"]


def test_share_lag_is_the_brokers_exact_lag_beside_the_upper_bound(cluster, capsys):
    code, doc = run(capsys, cluster, "share-lag", "workers", "classic")
    assert code == EXIT_PARTIAL  # classic is not a share group: a failure, never "no lag"
    # the exact lag: 100 - 40 - 15 acknowledged above the start offset; the bound counts them
    assert lag_rows(doc, "workers") == {0: (40, 100, 45, "exact", 60), 1: (90, 100, 10, "exact", 10)}
    assert totals(doc, "workers") == (55, "exact", 70)
    assert doc["failures"]["classic"]["error"] == "GROUP_ID_NOT_FOUND"
    [request] = cluster.requests("DescribeShareGroupOffsets")
    assert request.api_version == 1


def test_a_kafka_41_broker_gives_only_the_upper_bound_said_as_such(cluster, capsys):
    """DescribeShareGroupOffsets v0 (Kafka 4.1) has no Lag: the log end minus the start offset,
    reported as "at most" in JSON and in the table, never as the records left to deliver."""
    cluster.set_api_versions({"DescribeShareGroupOffsets": 0})
    cluster.add_group("drained", group_type="share")
    cluster.set_share_offsets("drained", {("jobs", 0): 100})
    code, doc = run(capsys, cluster, "share-lag", "workers", "drained")
    assert code == EXIT_OK
    assert lag_rows(doc, "workers") == {0: (40, 100, 60, "at_most", 60), 1: (90, 100, 10, "at_most", 10)}
    assert totals(doc, "workers") == (70, "at_most", 70)
    # a start offset at the log end has nothing above it: exactly 0 on any broker, as `kgroups lag` says
    assert lag_rows(doc, "drained") == {0: (100, 100, 0, "exact", 0)}
    assert totals(doc, "drained") == (0, "exact", 0)
    cluster.delete_group("drained")
    assert {r.api_version for r in cluster.requests("DescribeShareGroupOffsets")} == {0}
    assert main(["-b", cluster.bootstrap, "--format", "table", "share-lag", "workers"]) == EXIT_OK
    table = capsys.readouterr().out
    header, *rows = table.splitlines()
    assert "KIND" in header and len(rows) == 2
    assert all("  at most  the broker has no exact lag (DescribeShareGroupOffsets v0" in r for r in rows), (
        table
    )


def test_an_unknown_lag_is_never_zero(cluster, capsys):
    """A share-partition never initialized (start offset -1) is unknown: exit 1, no total. One
    whose share coordinator keeps no delivery-complete count answers Lag -1 on v1: not 0, but
    the bound, said "at most"."""
    cluster.add_group("odd", group_type="share")
    cluster.set_share_offsets(
        "odd", {("jobs", 0): -1, ("jobs", 1): 30}, delivery_complete={("jobs", 0): -1, ("jobs", 1): -1}
    )
    code, doc = run(capsys, cluster, "share-lag", "odd")
    assert code == EXIT_PARTIAL
    assert lag_rows(doc, "odd") == {0: (None, 100, None, None, None), 1: (30, 100, 70, "at_most", 70)}
    assert totals(doc, "odd") == (None, None, None)
    assert main(["-b", cluster.bootstrap, "--format", "table", "share-lag", "odd"]) == EXIT_PARTIAL
    table = capsys.readouterr().out
    assert "never initialized: unknown" in table and "the broker did not know the exact lag (-1)" in table


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


def test_alter_share_group_offsets_creates_an_unknown_group_as_kafka_does(cluster, capsys):
    """Kafka 4.4 accepts AlterShareGroupOffsets for a group id it does not know and creates an
    Empty share group holding the start offsets (tests/apachekafka/test_group_types.py shows it
    on the real broker); another type's group id is still GROUP_ID_NOT_FOUND."""
    tp0, tp1 = TopicPartition("jobs", 0), TopicPartition("jobs", 1)
    with GroupsClient(ClientConfig.create(cluster.bootstrap)) as client:
        altered = client.alter_share_group_offsets({"fresh": {tp0: 20, tp1: 30}})
        refused = client.alter_share_group_offsets({"classic": {tp0: 0}})
    assert altered.failures == {}
    assert {g: f.code for g, f in refused.failures.items()} == {"classic": ErrorCode.GROUP_ID_NOT_FOUND}
    assert cluster.share_offsets("fresh") == {("jobs", 0): 20, ("jobs", 1): 30}
    code, doc = run(capsys, cluster, "share-lag", "fresh")
    assert code == EXIT_OK
    # set by AlterShareGroupOffsets: nothing delivered yet, so the exact lag is log end - start
    assert lag_rows(doc, "fresh") == {0: (20, 100, 80, "exact", 80), 1: (30, 100, 70, "exact", 70)}


def lag_of(doc, group):
    """``kgroups lag``'s partitions of ``group``: (committed = start offset, log end, lag, flags)."""
    return {
        p["partition"]: (p["committed"], p["log_end"], p["lag"], p["flags"])
        for p in doc["groups"][group]["partitions"]
    }


def test_lag_of_a_share_group_is_its_exact_share_lag_never_0(cluster, capsys):
    """``kgroups lag`` of a share group: Kafka answers OffsetFetch for it empty, which read as
    commits was "no partition, total 0". Its partitions are its share-partitions, CURRENT-OFFSET
    the start offset, the lag the broker's exact lag: what ``share-lag`` says."""
    code, doc = run(capsys, cluster, "lag", "workers", "classic")
    assert code == EXIT_OK
    assert lag_of(doc, "workers") == {0: (40, 100, 45, []), 1: (90, 100, 10, [])}
    assert doc["groups"]["workers"]["total_lag"] == 55
    assert doc["groups"]["workers"]["protocol_type"] == "share"
    assert lag_of(doc, "classic") == {0: (1, 100, 99, ["lost"])}  # a consumer group as before (log start 10)
    # one DescribeShareGroupOffsets, for the share group only (described as one)
    [request] = cluster.requests("DescribeShareGroupOffsets")
    assert request.api_version == 1
    code, share = run(capsys, cluster, "share-lag", "workers")
    assert code == EXIT_OK
    assert {p: row[2] for p, row in lag_rows(share, "workers").items()} == {
        p: lag for p, (_, _, lag, _) in lag_of(doc, "workers").items()
    }
    assert main(["-b", cluster.bootstrap, "--format", "table", "lag", "workers"]) == EXIT_OK
    table = capsys.readouterr().out
    assert "share group: CURRENT-OFFSET is the share-partition start offset" in table, table


def test_lag_of_a_share_group_on_kafka_41_is_unknown_not_the_bound(cluster, capsys):
    """On a v0 broker only log end - start offset is known, an upper bound: ``kgroups lag`` gives
    no lag (flag lag_at_most, the bound in the note) and exits 1. A share-partition whose start
    offset is at the log end has nothing above it: its lag is exactly 0 on any broker."""
    cluster.set_api_versions({"DescribeShareGroupOffsets": 0})
    cluster.add_group("drained", group_type="share")
    cluster.set_share_offsets("drained", {("jobs", 0): 100, ("jobs", 1): 100})
    code, doc = run(capsys, cluster, "lag", "workers", "drained")
    assert code == EXIT_PARTIAL
    assert lag_of(doc, "workers") == {
        0: (40, 100, None, ["lag_at_most"]),
        1: (90, 100, None, ["lag_at_most"]),
    }
    assert doc["groups"]["workers"]["total_lag"] is None
    assert lag_of(doc, "drained") == {0: (100, 100, 0, []), 1: (100, 100, 0, [])}
    assert doc["groups"]["drained"]["total_lag"] == 0
    assert main(["-b", cluster.bootstrap, "--format", "table", "lag", "workers"]) == EXIT_PARTIAL
    table = capsys.readouterr().out
    assert "lag_at_most 60 (log end - start offset, an upper bound" in table, table
    assert "total unknown" in table


def test_lag_of_a_share_group_never_initialized_is_unknown(cluster, capsys):
    """A share-partition with no start offset is NO_COMMIT (unknown under the default policy); a
    share group with no share-partition at all has no position anywhere: unknown, not 0. A
    broker without DescribeShareGroupOffsets fails the group by name."""
    cluster.add_group("odd", group_type="share")
    cluster.set_share_offsets("odd", {("jobs", 0): -1, ("jobs", 1): 30})
    cluster.add_group("fresh", group_type="share")
    code, doc = run(capsys, cluster, "lag", "odd", "fresh")
    assert code == EXIT_PARTIAL
    assert lag_of(doc, "odd") == {0: (None, 100, None, ["no_commit"]), 1: (30, 100, 70, [])}
    assert doc["groups"]["odd"]["total_lag"] is None
    assert doc["groups"]["fresh"]["partitions"] == [] and doc["groups"]["fresh"]["total_lag"] is None
    code, doc = run(capsys, cluster, "--format", "json", "lag", "--unknown-lag", "from_latest", "odd")
    assert code == EXIT_OK and lag_of(doc, "odd")[0] == (None, 100, 0, ["no_commit"])
    cluster.set_api_versions({"DescribeShareGroupOffsets": None})
    code, doc = run(capsys, cluster, "lag", "workers")
    assert code == EXIT_PARTIAL and doc["groups"] == {}
    assert "does not support DescribeShareGroupOffsets" in doc["failures"]["workers"]["message"]


def test_a_share_group_with_no_share_partition_has_no_total_in_share_lag_either(cluster, capsys):
    """share-lag and lag agree: no share-partition initialized is no position anywhere, not 0."""
    cluster.add_group("fresh", group_type="share")
    code, doc = run(capsys, cluster, "share-lag", "fresh")
    assert code == EXIT_PARTIAL
    assert doc["groups"]["fresh"]["partitions"] == [] and totals(doc, "fresh") == (None, None, None)
