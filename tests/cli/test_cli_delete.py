"""``kgroups delete`` and ``kgroups restore`` on the fake cluster: the one safety path
(airflow_provider_kgroups.cleanup) from the command line.

Kafka semantics followed by the fake cluster: DescribeGroups answers Dead for a group that
does not exist (GroupMetadataManager / GroupCoordinatorService.describeGroups), DeleteGroups
deletes only Empty groups, NON_EMPTY_GROUP otherwise (GroupCoordinatorService.deleteGroups,
GroupMetadataManager.validateDeleteGroup), OffsetCommit by an admin (generation -1) into an
Empty or absent group (KafkaApis.handleOffsetCommitRequest, OffsetMetadataManager.commitOffset).
"""

from __future__ import annotations

import json
import shlex
import time

import pytest

from airflow_provider_kgroups.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL, main
from airflow_provider_kgroups.history.audit import load_audit
from airflow_provider_kgroups.history.backup import load_backup
from tests.support.builders import seed_history
from tests.support.fakekafka import FakeCluster, Member

SYSTEM = ["connect-cluster", "_confluent-ksql-default", "__confluent.support.metrics", "schema-registry"]
DEAD = {"tmp-a": 300, "tmp-b": 280, "tmp-c": 260, "tmp-d": 240}  # idle since this many hours


@pytest.fixture
def cluster(tmp_path):
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 2, end_offsets=[100, 100])
        for g in SYSTEM:  # all idle for 300 h like the dead ones: only the deny patterns keep them
            c.add_group(
                g,
                offsets={("orders", 0): 50},
                protocol_type="connect" if g == "connect-cluster" else "consumer",
            )
        for g in DEAD:
            c.add_group(g, offsets={("orders", 0): 50})
        c.add_group("weekly", offsets={("orders", 0): 60})  # progress 2 h ago: paused
        c.add_group("orders-live", offsets={("orders", 0): 100}, members=[Member("m-1", {"orders": [0, 1]})])
        history = str(tmp_path / "history")
        seed_history(
            history,
            {
                **{g: [(age, 50, 100)] for g, age in DEAD.items()},
                **{g: [(300, 50, 100)] for g in SYSTEM},
                "weekly": [(300, 40, 100), (2, 60, 100)],
            },
        )
        c.history = history
        yield c


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def decisions(out: str) -> dict[str, tuple[str, str]]:
    return {g: (d["decision"], d["reason"]) for g, d in json.loads(out)["decisions"].items()}


def test_delete_everything_keeps_system_groups_honours_the_cap_and_the_backup_restores(
    cluster, capsys, tmp_path
):
    backups = tmp_path / "backups"
    before = {g: cluster.committed(g) for g in DEAD}
    cluster.reset_counts()
    code, out, err = run(
        capsys,
        "-b",
        cluster.bootstrap,
        "--format",
        "json",
        "delete",
        "-p",
        "*",
        "--yes",
        "--history-url",
        cluster.history,
        "--backup-url",
        backups,
        "--max-deletions",
        3,
    )
    assert code == EXIT_OK, err
    result = json.loads(out)
    # 4 dead candidates; cap = min(3, ceil(50 % of 4)) = 2: the two idle longest go, the others wait
    assert result["candidates"] == 4 and result["cap"] == 2
    assert result["deleted"] == ["tmp-a", "tmp-b"] and result["skipped"] == ["tmp-c", "tmp-d"]
    got = decisions(out)
    for g in ("tmp-c", "tmp-d"):
        assert got[g][1].startswith(
            "deletable, but over this run's cap of 2 deletion(s) (max_deletions=3, "
            "max_deletions_percent=50 of 4 candidate(s)): next run"
        )
    for g in SYSTEM:
        assert got[g][0] == "keep" and cluster.has_group(g)
    assert "default deny pattern 'connect-*'" in got["connect-cluster"][1]
    assert "default deny pattern '_confluent*'" in got["_confluent-ksql-default"][1]
    assert "default deny pattern '__*'" in got["__confluent.support.metrics"][1]
    assert "default deny pattern 'schema-registry*'" in got["schema-registry"][1]
    assert got["weekly"][0] == "keep" and got["weekly"][1].startswith("paused:")
    assert got["orders-live"][0] == "keep" and got["orders-live"][1].startswith(
        "active: state Stable with 1 member"
    )
    assert not cluster.has_group("tmp-a") and not cluster.has_group("tmp-b")
    assert all(cluster.has_group(g) for g in ("tmp-c", "tmp-d", "weekly", "orders-live"))
    # requests: the listing (one per broker, which names each group's coordinator: no
    # FindCoordinator); the evidence (DescribeGroups and OffsetFetch per coordinator, Metadata: bootstrap, the committed topics
    # by name, the listing for the Streams heuristic); then the second describe and the backup's
    # offset read per coordinator of the chosen groups, and one DeleteGroups per such coordinator;
    # before the cap, the AT_RISK hold's snapshot of the candidates (describe and offsets per their
    # coordinator, log start and end, a Metadata refresh) and their margins (one DescribeConfigs
    # for the topic, one Fetch for the first unread records)
    everyone = {cluster.coordinator_of(g) for g in cluster.group_ids() + ["tmp-a", "tmp-b"]}
    chosen = {cluster.coordinator_of(g) for g in ("tmp-a", "tmp-b")}
    candidates = {cluster.coordinator_of(g) for g in ("tmp-a", "tmp-b", "tmp-c", "tmp-d")}
    assert {api: n for api, n in cluster.requests_by_api().items() if api != "ApiVersions"} == {
        "ListGroups": 3,
        "Metadata": 4,
        "DescribeGroups": len(everyone) + len(candidates) + len(chosen),
        "OffsetFetch": len(everyone) + len(candidates) + len(chosen),
        "ListOffsets": 2,
        "DescribeConfigs": 1,
        "Fetch": 1,
        "DeleteGroups": len(chosen),
    }
    assert sorted(g for r in cluster.requests("DeleteGroups") for g in r.request.groups_names) == [
        "tmp-a",
        "tmp-b",
    ]
    assert sorted(
        g for r in cluster.requests("DescribeGroups")[-len(chosen) :] for g in r.request.groups
    ) == ["tmp-a", "tmp-b"]  # the second describe names only the groups about to go
    # the backup was written and reads back exactly the deleted groups' offsets
    backup = load_backup(result["backup_url"])
    assert {
        g: {(tp.topic, tp.partition): c.offset for tp, c in parts.items()}
        for g, parts in backup.groups.items()
    } == {g: before[g] for g in ("tmp-a", "tmp-b")}
    audit = load_audit(result["audit_url"])
    assert audit["decisions"]["tmp-a"]["decision"] == "deleted" and audit["summary"]["deleted"] == [
        "tmp-a",
        "tmp-b",
    ]
    # the printed restore command works, and the offsets come back exactly
    command = result["restore_command"]
    argv = shlex.split(command)
    assert argv[0] == "kgroups" and argv[-3:] == [result["backup_url"], "tmp-a", "tmp-b"]
    code, out, _ = run(capsys, *argv[1:])
    assert code == EXIT_OK and "restored" in out
    assert {g: cluster.committed(g) for g in ("tmp-a", "tmp-b")} == {g: before[g] for g in ("tmp-a", "tmp-b")}


def test_table_output_prints_the_backup_and_the_restore_command(cluster, capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "-b",
        cluster.bootstrap,
        "delete",
        "tmp-a",
        "--yes",
        "--history-url",
        cluster.history,
        "--backup-url",
        tmp_path / "b",
    )
    assert code == EXIT_OK
    assert "tmp-a" in out and "deleted" in out and "backup   " in out and "undo     kgroups -b" in out


def test_the_dry_run_decides_exactly_what_the_real_run_does(cluster, capsys, tmp_path):
    argv = [
        "-b",
        cluster.bootstrap,
        "--format",
        "json",
        "delete",
        "-p",
        "*",
        "weekly",
        "ghost",
        "--history-url",
        cluster.history,
        "--backup-url",
        tmp_path / "b",
        "--max-deletions-percent",
        60,
    ]
    code, dry_out, _ = run(capsys, *argv)
    assert code == EXIT_OK and cluster.count("DeleteGroups") == 0
    assert not (tmp_path / "b").exists(), "a dry run writes nothing"
    code, real_out, _ = run(capsys, *argv, "--yes")
    assert code == EXIT_OK
    dry, real = decisions(dry_out), decisions(real_out)
    assert set(dry) == set(real)
    # named "weekly" (paused, Empty) goes first; then the longest idle: cap = ceil(60 % of 5) = 3
    assert {g for g, (d, _) in dry.items() if d == "would_delete"} == {"weekly", "tmp-a", "tmp-b"}
    for g, (decision, reason) in dry.items():
        if decision == "would_delete":
            assert real[g][0] == "deleted" and real[g][1].startswith(reason + "; offsets backed up to ")
        else:
            assert real[g] == (decision, reason), g
    assert dry["ghost"][0] == "not_found"
    assert dry["weekly"][1].startswith("named explicitly: Empty with no members (the evidence says 'paused:")


def test_a_group_that_does_not_exist_is_not_found(cluster, capsys, tmp_path):
    code, out, _ = run(capsys, "-b", cluster.bootstrap, "delete", "ghost", "--backup-url", tmp_path / "b")
    assert code == EXIT_OK
    row = next(line for line in out.splitlines() if line.startswith("ghost"))
    assert row.split()[1:3] == ["not", "found"] and "would delete" not in row
    code, out, _ = run(
        capsys,
        "-b",
        cluster.bootstrap,
        "--format",
        "json",
        "delete",
        "ghost",
        "--yes",
        "--backup-url",
        tmp_path / "b",
    )
    assert (
        code == EXIT_OK
        and json.loads(out)["not_found"] == ["ghost"]
        and json.loads(out)["backup_url"] is None
    )
    assert cluster.count("DeleteGroups") == 0


def test_named_system_groups_need_an_override_by_name(cluster, capsys, tmp_path):
    argv = [
        "-b",
        cluster.bootstrap,
        "--format",
        "json",
        "delete",
        "schema-registry",
        "tmp-a",
        "--yes",
        "--backup-url",
        tmp_path / "b",
        "--max-deletions-percent",
        100,
    ]
    code, out, _ = run(capsys, *argv)
    got = decisions(out)
    assert code == EXIT_OK and got["schema-registry"][0] == "keep" and got["tmp-a"][0] == "deleted"
    assert "default deny pattern 'schema-registry*'" in got["schema-registry"][1]
    code, out, _ = run(
        capsys, *argv[:-4], "--override-deny", "schema-registry", "--backup-url", tmp_path / "b"
    )
    got = decisions(out)
    assert code == EXIT_OK and got["schema-registry"][0] == "deleted"
    assert (
        "the default deny pattern 'schema-registry*' overridden by name (override_deny)"
        in got["schema-registry"][1]
    )
    assert not cluster.has_group("schema-registry")
    assert got["tmp-a"][0] == "not_found"  # deleted by the first run


def test_a_group_that_cannot_be_read_exits_1(cluster, capsys, tmp_path):
    from tests.support.fakekafka import Err

    cluster.inject_error("OffsetFetch", Err.GROUP_AUTHORIZATION_FAILED, key="tmp-a")
    code, out, _ = run(
        capsys,
        "-b",
        cluster.bootstrap,
        "--format",
        "json",
        "delete",
        "tmp-a",
        "tmp-b",
        "--backup-url",
        tmp_path / "b",
    )
    assert code == EXIT_PARTIAL
    result = json.loads(out)
    assert result["unjudged"] == ["tmp-a"] and result["would_delete"] == ["tmp-b"]


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (("delete", "tmp-a", "--max-deletions", "-1"), "max_deletions must be a whole number >= 0"),
        (
            ("delete", "tmp-a", "--max-deletions-percent", "150"),
            "max_deletions_percent must be between 0 and 100",
        ),
        (("delete", "tmp-a", "--idle-hours", "0"), "idle_hours must be a positive number"),
        (("delete", "--exclude", "x"), "--exclude applies to --pattern selections only"),
        (("delete",), "nothing selected"),
        (("delete", "-p", "re:("), "not a valid regular expression"),
        (("delete", "tmp-a", "--deny", "re:("), "not a valid regular expression"),
        (("delete", "tmp-a", "--backup-url", " "), "--backup-url is empty"),
        (("restore", "/nonexistent/backup.json"), "no offsets backup at /nonexistent/backup.json"),
    ],
)
def test_bad_delete_options_exit_2_before_any_network_call(capsys, argv, fragment):
    started = time.monotonic()
    code, _, err = run(capsys, "-b", "127.0.0.1:1", "--timeout", "30", *argv)
    assert code == EXIT_BAD_INPUT, err
    assert fragment in err
    assert time.monotonic() - started < 5, "no connection attempt (it would wait for the unreachable broker)"


def test_connect_evidence_keeps_a_paused_connectors_group_and_lets_a_gone_ones_go(cluster, capsys, tmp_path):
    """--connect-url with credentials from the properties file (connect.basic.auth.*), over real
    HTTP (demo/connectserver.py answers as Kafka Connect's ConnectorsResource)."""
    from demo.connectserver import Connector, ConnectServer

    for g in ("connect-orders-sink", "connect-legacy-sink"):
        cluster.add_group(g, offsets={("orders", 0): 50})
    props = tmp_path / "client.properties"
    with ConnectServer(
        [Connector("orders-sink", state="PAUSED", tasks=("PAUSED",))], auth=("ops", "s3cret")
    ) as server:
        props.write_text(
            f"bootstrap.servers={cluster.bootstrap}\nconnect.basic.auth.user=ops\n"
            "connect.basic.auth.password=s3cret\n"
        )
        argv = [
            "--command-config",
            props,
            "--format",
            "json",
            "delete",
            "connect-orders-sink",
            "connect-legacy-sink",
            "--connect-url",
            server.url,
            "--backup-url",
            tmp_path / "b",
            "--max-deletions-percent",
            100,
        ]
        code, out, err = run(capsys, *argv)
        assert code == EXIT_OK, err
        got = decisions(out)
        assert (
            got["connect-orders-sink"][0] == "keep"
            and got["connect-orders-sink"][1].startswith("Kafka Connect: sink connector 'orders-sink' on ")
            and "is PAUSED" in got["connect-orders-sink"][1]
        )
        assert got["connect-legacy-sink"][0] == "would_delete"
        assert (
            "the default deny pattern 'connect-*' lifted by Kafka Connect evidence"
            in got["connect-legacy-sink"][1]
        )
        assert "s3cret" not in out + err
        assert all(r.authorization and r.authorization.startswith("Basic ") for r in server.requests)
        # without Connect, both stay behind the default deny
        code, out, _ = run(
            capsys,
            "-b",
            cluster.bootstrap,
            "--format",
            "json",
            "delete",
            "connect-orders-sink",
            "connect-legacy-sink",
            "--backup-url",
            tmp_path / "b",
        )
        assert {g: d for g, (d, _) in decisions(out).items()} == {
            "connect-orders-sink": "keep",
            "connect-legacy-sink": "keep",
        }
        # Connect unreachable: fail closed, every connect-* group kept with why
        code, out, _ = run(
            capsys,
            "--command-config",
            props,
            "--format",
            "json",
            "delete",
            "connect-orders-sink",
            "connect-legacy-sink",
            "--connect-url",
            "http://127.0.0.1:1",
            "--backup-url",
            tmp_path / "b",
        )
        got = decisions(out)
        assert all(d == "keep" and r.startswith("Kafka Connect: ") for d, r in got.values()), got
        assert cluster.count("DeleteGroups") == 0


def test_bad_connect_options_exit_2_before_any_network_call(capsys, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("connect.basic.auth.user=ops\nconnect.bogus=1\n")
    code, _, err = run(
        capsys,
        "-b",
        "127.0.0.1:1",
        "--command-config",
        props,
        "delete",
        "x",
        "--connect-url",
        "http://c:8083",
    )
    assert code == EXIT_BAD_INPUT and "connect.bogus" in err
    code, _, err = run(capsys, "-b", "127.0.0.1:1", "delete", "x", "--connect-url", "ftp://c")
    assert code == EXIT_BAD_INPUT and "--connect-url" in err


def test_a_lost_delete_response_is_shown_as_confirmed_gone(cluster, capsys, tmp_path):
    """The DeleteGroups response is cut mid-frame; the retry answers GROUP_ID_NOT_FOUND: the
    client reports CONFIRMED_GONE_AFTER_LOST_RESPONSE (KafkaAdminClient's DeleteConsumerGroups
    retries), and the CLI shows it as such."""
    drop = cluster.drop_mid_response("DeleteGroups", node=cluster.coordinator_of("tmp-a"), times=1)
    code, out, err = run(
        capsys, "-b", cluster.bootstrap, "delete", "tmp-a", "--yes", "--backup-url", tmp_path / "b"
    )
    assert code == EXIT_OK, err
    assert drop.hits == 1 and not cluster.has_group("tmp-a")
    row = next(line for line in out.splitlines() if line.startswith("tmp-a"))
    assert "deleted (confirmed gone after a lost response)" in row
    assert "confirmed gone after a lost response (the retry answered GROUP_ID_NOT_FOUND)" in row


def test_a_deletion_the_broker_refuses_is_refused_and_exits_1(cluster, capsys, tmp_path):
    """Issue 29: a member joining between the last check and DeleteGroups (NON_EMPTY_GROUP) is a
    refusal, not a skip; the summary and the exit code say so."""
    from tests.support.fakekafka import Err

    cluster.inject_error("DeleteGroups", Err.NON_EMPTY_GROUP, key="tmp-b")
    code, out, _ = run(
        capsys,
        "-b",
        cluster.bootstrap,
        "--format",
        "json",
        "delete",
        "tmp-a",
        "tmp-b",
        "--yes",
        "--max-deletions-percent",
        100,
        "--history-url",
        cluster.history,
        "--backup-url",
        tmp_path / "b",
    )
    doc = json.loads(out)
    assert code == EXIT_PARTIAL
    assert doc["deleted"] == ["tmp-a"] and doc["refused"] == ["tmp-b"] and doc["skipped"] == []
    assert decisions(out)["tmp-b"] == (
        "refused",
        "the broker refused: the group has members again (NON_EMPTY_GROUP); not deleted",
    )
    assert cluster.has_group("tmp-b") and not cluster.has_group("tmp-a")
    code, out, _ = run(
        capsys,
        "-b",
        cluster.bootstrap,
        "delete",
        "tmp-b",
        "--yes",
        "--history-url",
        cluster.history,
        "--backup-url",
        tmp_path / "b",
    )
    assert code == EXIT_PARTIAL and "0 deleted" in out and "1 refused" in out
