"""``kgroups reset-offsets`` against the fake cluster (Apache Kafka's group coordinator rules):
every strategy and scope, classic and consumer (KIP-848) groups, clamps reported, the dry run's
plan equal to what the real run commits, the safety refusals, bad input as exit 2 before any
network call, the --export CSV that --from-file reads, and the undo."""

from __future__ import annotations

import json
import time

import pytest

from airflow_provider_kgroups.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL, main
from airflow_provider_kgroups.history.audit import load_audit
from tests.support.fakekafka import FakeCluster, Member

MINUTE = 60_000
T0 = int(time.time() * 1000) - 120 * MINUTE  # record k of each partition is at T0 + k minutes
START, END = 10, 100


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("events", 3)
        c.add_topic("other", 1, end_offsets=7)
        for p in range(3):
            c.append("events", p, END, timestamp_ms=lambda offset: T0 + offset * MINUTE)
            c.set_offsets("events", p, start=START)
        yield c


_names = iter(range(1_000_000))


def group(cluster, group_type="classic", offsets=None, members=None) -> str:
    name = f"{group_type}-{next(_names)}"
    cluster.add_group(
        name,
        group_type=group_type,
        members=members,
        offsets={("events", 0): 50, ("events", 1): 60} if offsets is None else offsets,
    )
    return name


def run(capsys, cluster, *argv, backup=None):
    extra = ["--backup-url", str(backup)] if backup is not None else []
    code = main(["-b", cluster.bootstrap, "--format", "json", "reset-offsets", *argv, *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def new_offsets(doc, gid) -> dict[int, int]:
    return {r["partition"]: r["new"] for r in doc["decisions"][gid]["partitions"]}


def findings(doc, gid) -> dict[int, str | None]:
    return {r["partition"]: r["finding"] for r in doc["decisions"][gid]["partitions"]}


STRATEGIES = [
    (("--to-earliest",), {0: 10, 1: 10, 2: 10}, {}),
    (("--to-latest",), {0: 100, 1: 100, 2: 100}, {}),
    (("--to-current",), {0: 50, 1: 60, 2: 100}, {2: "no_commit"}),
    (("--to-offset", "30"), {0: 30, 1: 30, 2: 30}, {}),
    (("--to-offset", "500"), {0: 100, 1: 100, 2: 100}, dict.fromkeys(range(3), "clamped_to_log_end")),
    (("--to-offset", "3"), {0: 10, 1: 10, 2: 10}, dict.fromkeys(range(3), "clamped_to_log_start")),
    (("--to-datetime", "@40"), {0: 40, 1: 40, 2: 40}, {}),
    (
        ("--to-datetime", "2999-01-01T00:00:00Z"),
        {0: 100, 1: 100, 2: 100},
        dict.fromkeys(range(3), "no_record_at_time"),
    ),
    (
        ("--by-duration", "@30.5"),
        {0: 31, 1: 31, 2: 31},
        {},
    ),  # now minus a duration that reaches T0 + 30.5 min
]


def _argv(args):
    if args[0] == "--to-datetime" and args[1].startswith("@"):  # T0 + n minutes, written without a zone (UTC)
        at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + int(args[1][1:]) * MINUTE) / 1000))
        return (args[0], f"{at}.{(T0 % 1000):03d}")
    if (
        args[0] == "--by-duration"
    ):  # the duration from now back to T0 + n minutes (30 s from a record either way)
        seconds = (time.time() * 1000 - (T0 + float(args[1][1:]) * MINUTE)) / 1000
        return (args[0], f"PT{int(seconds)}S")
    return args


@pytest.mark.parametrize("group_type", ["classic", "consumer"])
@pytest.mark.parametrize("args, expected, notes", STRATEGIES, ids=[" ".join(s[0]) for s in STRATEGIES])
def test_every_strategy_dry_run_then_execute_commits_exactly_the_plan(
    cluster, capsys, tmp_path, group_type, args, expected, notes
):
    gid = group(cluster, group_type)
    code, dry, _ = run(capsys, cluster, gid, "--topic", "events", *_argv(args))
    assert code == EXIT_OK and dry["dry_run"] is True and dry["would_do"] == 1
    assert new_offsets(dry, gid) == expected
    assert {p: f for p, f in findings(dry, gid).items() if f} == notes
    assert cluster.committed(gid) == {("events", 0): 50, ("events", 1): 60}  # a dry run changes nothing
    code, real, _ = run(capsys, cluster, gid, "--topic", "events", *_argv(args), "--execute", backup=tmp_path)
    assert code == EXIT_OK and real["done"] == 1, real["decisions"][gid]
    assert new_offsets(real, gid) == expected  # the real run's plan is the dry run's
    assert cluster.committed(gid) == {("events", p): o for p, o in expected.items()}
    assert real["decisions"][gid]["changed"] == {f"events:{p}": o for p, o in expected.items()}


def test_scopes_topic_partitions_and_all_topics(cluster, capsys):
    gid = group(cluster, offsets={("events", 0): 50, ("events", 2): 20, ("other", 0): 5})
    _, doc, _ = run(capsys, cluster, gid, "--topic", "events:0,1", "--to-latest")
    assert new_offsets(doc, gid) == {0: 100, 1: 100}
    _, doc, _ = run(capsys, cluster, gid, "--all-topics", "--to-earliest")
    rows = {(r["topic"], r["partition"]): r["new"] for r in doc["decisions"][gid]["partitions"]}
    assert rows == {("events", 0): 10, ("events", 2): 10, ("other", 0): 0}  # only what it committed


def test_shift_by_clamps_and_refuses_a_partition_without_a_commit(cluster, capsys):
    gid = group(cluster)
    _, doc, _ = run(capsys, cluster, gid, "--all-topics", "--shift-by", "-45")
    assert new_offsets(doc, gid) == {0: 10, 1: 15} and findings(doc, gid)[0] == "clamped_to_log_start"
    assert [r["requested"] for r in doc["decisions"][gid]["partitions"]] == [5, 15]
    code, doc, _ = run(capsys, cluster, gid, "--topic", "events", "--shift-by", "+5")
    assert code == EXIT_PARTIAL and doc["decisions"][gid]["refusal"] == "no_commit_to_shift"
    assert "events[2]" in doc["decisions"][gid]["reason"]


def test_groups_with_members_share_and_streams_groups_are_refused_by_name(cluster, capsys, tmp_path):
    live = group(cluster, members=[Member("m-1", {"events": [0, 1, 2]})])
    kip848 = group(cluster, "consumer", members=[Member("m-1", {"events": [0]}, member_epoch=4)])
    cluster.add_group("share-g", group_type="share", members=[Member("s-1", {"events": [0]})], state="Stable")
    cluster.add_group("streams-g", group_type="streams", topology={"0": ["events"]})
    idle = group(cluster)
    code, doc, _ = run(
        capsys,
        cluster,
        live,
        kip848,
        "share-g",
        "streams-g",
        idle,
        "--topic",
        "events",
        "--to-earliest",
        "--execute",
        backup=tmp_path,
    )
    assert code == EXIT_PARTIAL  # some groups were not reset: never reported as fine
    d = doc["decisions"]
    assert d[live]["refusal"] == "has_members"
    assert d[live]["reason"] == (
        f"Assignments can only be reset if the group '{live}' is inactive, but the current state is Stable."
    )  # Kafka's own sentence
    assert d[kip848]["refusal"] == "has_members"
    assert d["share-g"]["refusal"] == "has_members"  # Kafka: NON_EMPTY_GROUP for AlterShareGroupOffsets
    assert d["streams-g"]["refusal"] == "streams_group"
    assert d[idle]["decision"] == "done"
    assert cluster.committed(live) == {("events", 0): 50, ("events", 1): 60}


def test_a_new_group_is_created_empty_and_undo_removes_its_offsets_again(cluster, capsys, tmp_path):
    code, dry, _ = run(capsys, cluster, "brand-new", "--topic", "events:0", "--to-offset", "42")
    assert (
        code == EXIT_OK
        and "a new group: the commit creates it, Empty" in dry["decisions"]["brand-new"]["reason"]
    )
    code, doc, _ = run(
        capsys, cluster, "brand-new", "--topic", "events:0", "--to-offset", "42", "--execute", backup=tmp_path
    )
    assert code == EXIT_OK
    assert cluster.committed("brand-new") == {("events", 0): 42}
    undo = doc["undo_command"].split()
    assert undo[undo.index("restore") + 1] == doc["backup_url"]
    assert main(["-b", cluster.bootstrap, "restore", doc["backup_url"], "brand-new"]) == EXIT_OK
    assert cluster.committed("brand-new") == {}  # no offset before the reset: none after the undo
    capsys.readouterr()


def test_undo_puts_back_exactly_the_partitions_the_reset_touched(cluster, capsys, tmp_path):
    gid = group(cluster, offsets={("events", 0): 50, ("events", 1): 60, ("other", 0): 5})
    _, doc, _ = run(capsys, cluster, gid, "--topic", "events", "--to-latest", "--execute", backup=tmp_path)
    assert cluster.committed(gid) == {
        ("events", 0): 100,
        ("events", 1): 100,
        ("events", 2): 100,
        ("other", 0): 5,
    }
    cluster.add_group(
        gid, offsets={**{("events", p): 100 for p in range(3)}, ("other", 0): 6}
    )  # it moved on there
    assert main(["-b", cluster.bootstrap, "restore", doc["backup_url"], gid]) == EXIT_OK
    assert cluster.committed(gid) == {("events", 0): 50, ("events", 1): 60, ("other", 0): 6}
    capsys.readouterr()


def test_the_audit_record_says_exactly_what_was_committed(cluster, capsys, tmp_path):
    gid = group(cluster)
    _, doc, _ = run(
        capsys, cluster, gid, "--topic", "events", "--to-offset", "70", "--execute", backup=tmp_path
    )
    record = load_audit(doc["audit_url"])
    assert record["action"] == "reset-offsets" and record["dry_run"] is False
    assert record["who"] == {"by": "kgroups reset-offsets"} and record["backup_url"] == doc["backup_url"]
    assert record["decisions"][gid]["changed"] == {"events:0": 70, "events:1": 70, "events:2": 70}
    assert record["plan"]["spec"]["strategy"] == "to_offset" and record["plan"]["spec"]["offset"] == 70


def test_export_writes_kafkas_csv_and_from_file_reads_it_back(cluster, capsys, tmp_path):
    a, b = group(cluster), group(cluster)
    code = main(
        [
            "-b",
            cluster.bootstrap,
            "reset-offsets",
            a,
            b,
            "--topic",
            "events:0",
            "--to-offset",
            "33",
            "--export",
        ]
    )
    text = capsys.readouterr().out
    assert code == EXIT_OK and text.splitlines() == [f"{a},events,0,33", f"{b},events,0,33"]
    plan = tmp_path / "plan.csv"
    plan.write_text(text.replace(",33", ",44"))
    code, _doc, _ = run(capsys, cluster, a, b, "--from-file", str(plan), "--execute", backup=tmp_path)
    assert (
        code == EXIT_OK and cluster.committed(a)[("events", 0)] == cluster.committed(b)[("events", 0)] == 44
    )
    assert (
        main(
            [
                "-b",
                cluster.bootstrap,
                "reset-offsets",
                a,
                "--topic",
                "events:1",
                "--to-offset",
                "9",
                "--export",
            ]
        )
        == EXIT_OK
    )
    assert capsys.readouterr().out == "events,1,10\n"  # one group: three columns; 9 clamped to the log start


def test_a_pattern_selects_several_groups_and_executes_only_under_a_cap(cluster, capsys, tmp_path):
    for i in range(3):
        cluster.add_group(f"batch-{i}", offsets={("events", 0): 50})
    code, doc, _ = run(
        capsys,
        cluster,
        "-p",
        "batch-*",
        "--topic",
        "events:0",
        "--to-latest",
        "--execute",
        "--max-groups",
        "2",
        backup=tmp_path,
    )
    assert doc["done"] == 2 and doc["skipped"] == 1 and code == EXIT_PARTIAL
    skipped = [g for g, d in doc["decisions"].items() if d["decision"] == "skipped"]
    assert doc["decisions"][skipped[0]]["refusal"] == "over_cap"
    assert cluster.committed(skipped[0]) == {("events", 0): 50}


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (("g", "--topic", "events"), "one of the arguments --to-earliest"),  # no strategy
        (("g", "--topic", "events", "--to-earliest", "--to-latest"), "not allowed with argument"),
        (("g", "--topic", "events", "--to-earliest", "--execute", "--dry-run"), "not allowed with argument"),
        (("g", "--to-earliest"), "needs a scope"),
        (("g", "--topic", "events", "--to-offset", "-3"), "negative"),
        (("g", "--topic", "events", "--to-datetime", "last tuesday"), "not an ISO-8601 date-time"),
        (("g", "--topic", "events", "--by-duration", "6 hours"), "not an ISO-8601 duration"),
        (("g", "--topic", "events:x", "--to-earliest"), "partition 'x'"),
        (("-p", "g*", "--topic", "events", "--to-earliest", "--execute"), "needs --max-groups"),
        (("g", "--from-file", "/nonexistent/plan.csv"), "cannot be read"),
    ],
)
def test_bad_input_exits_2_before_any_network_call(capsys, argv, fragment):
    try:
        code = main(["-b", "127.0.0.1:1", "reset-offsets", *argv])  # nothing listens on port 1
    except SystemExit as done:  # argparse's own checks (a missing or a second strategy)
        code = done.code
    assert code == EXIT_BAD_INPUT
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize(
    "csv_text, fragment",
    [("g,events,x,5\n", "partition 'x'"), ("zz,events,0,5\nyy,events,0,1\n", "names group 'zz'")],
)
def test_a_bad_csv_exits_2_before_any_network_call(capsys, tmp_path, csv_text, fragment):
    plan = tmp_path / "plan.csv"
    plan.write_text(csv_text)
    assert main(["-b", "127.0.0.1:1", "reset-offsets", "g", "h", "--from-file", str(plan)]) == EXIT_BAD_INPUT
    assert fragment in capsys.readouterr().err


def test_unknown_topics_and_partitions_are_bad_input_named_from_metadata(cluster, capsys, tmp_path):
    gid = group(cluster)
    code, _, err = run(capsys, cluster, gid, "--topic", "nope", "--to-earliest", "--execute", backup=tmp_path)
    assert code == EXIT_BAD_INPUT and "topic 'nope' does not exist" in err
    code, _, err = run(
        capsys, cluster, gid, "--topic", "events:0,5", "--to-earliest", "--execute", backup=tmp_path
    )
    assert code == EXIT_BAD_INPUT and "partition(s) 5 do not exist" in err
    plan = tmp_path / "plan.csv"
    plan.write_text("gone,0,5\n")
    code, _, err = run(capsys, cluster, gid, "--from-file", str(plan), "--execute", backup=tmp_path)
    assert code == EXIT_BAD_INPUT and "topic 'gone' does not exist" in err
    assert cluster.committed(gid) == {("events", 0): 50, ("events", 1): 60}


def test_a_commit_the_broker_refuses_on_some_or_every_partition_is_partial_or_failed(
    cluster, capsys, tmp_path
):
    """Issue 29: an outcome says what happened, and the exit code with it."""
    from tests.support.fakekafka import Err

    some, every = group(cluster), group(cluster, offsets={("events", 0): 50})
    refusals = [
        cluster.inject_error("OffsetCommit", Err.TOPIC_AUTHORIZATION_FAILED, key=(g, "events", 0))
        for g in (some, every)
    ]
    try:
        code, doc, _ = run(
            capsys, cluster, some, "--topic", "events", "--to-offset", "30", "--execute", backup=tmp_path
        )
        d = doc["decisions"][some]
        assert code == EXIT_PARTIAL and (doc["done"], doc["partial"], doc["failed"]) == (0, 1, 0)
        assert d["decision"] == "partial" and d["changed"] == {"events:1": 30, "events:2": 30}
        assert "TOPIC_AUTHORIZATION_FAILED" in d["failed"]["events:0"]

        code, doc, _ = run(
            capsys, cluster, every, "--topic", "events:0", "--to-offset", "30", "--execute", backup=tmp_path
        )
        d = doc["decisions"][every]
        assert code == EXIT_PARTIAL and (doc["done"], doc["partial"], doc["failed"]) == (0, 0, 1)
        assert (
            d["decision"] == "failed"
            and d["changed"] == {}
            and "every partition's commit failed" in d["reason"]
        )
    finally:
        for refusal in refusals:
            refusal.cancel()
    assert cluster.committed(some)[("events", 0)] == 50 and cluster.committed(every) == {("events", 0): 50}
