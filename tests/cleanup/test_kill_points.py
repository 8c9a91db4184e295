"""Nothing lost when the process dies mid-change (issue 29): ``kgroups delete``,
``kgroups reset-offsets`` and ``ConsumerGroupOffsetResetOperator`` run as child processes on a
real broker, killed with SIGKILL at each step boundary (before the backup, after it, after the
intent, after the change request is written, after its answer, before the outcome record) and
after a seeded random number of boundaries; then run again to completion. After each:

* no intent is left open and no lease held;
* a run killed before its intent changed nothing in Kafka and left no record; one killed after
  has its outcome written by the rerun, "interrupted: changed / not changed" per group exactly as
  Kafka says;
* every undo any record names for a group leads to a backup holding the offsets the group had
  before the first change, and the rerun's printed undo command brings every group back to them.

The broker comes from one fixture (``bootstrap``): Apache Kafka, the session's ``broker``. (On Tansu,
which answers Empty for a group that is gone and succeeds deleting a missing group, the deletion
verdicts rest on the committed offsets alone; on Apache Kafka they agree with the group's state.)
"""

from __future__ import annotations

import json
import os
import random
import shlex
import sys

import pytest

from airflow_provider_kgroups.cli import EXIT_OK, main
from airflow_provider_kgroups.history.audit import list_audits, load_audit
from airflow_provider_kgroups.history.backup import load_backup
from airflow_provider_kgroups.history.journal import Journal
from tests.support.killpoints import SteppedChild, cli_argv

STEPS = ("before_backup", "after_backup", "after_intent", "change_sent", "change_answered", "before_outcome")
BEFORE_INTENT = {None, "before_backup", "after_backup"}
GROUPS = 8
#: the random kill points' seed, printed; KGROUPS_KILL_SEED=<n> replays a run's choices
SEED = int(os.environ.get("KGROUPS_KILL_SEED") or random.randrange(1 << 30))


@pytest.fixture(scope="module")
def bootstrap(broker) -> str:
    """The one place the kill tests take their broker from (the same one ``seed`` writes to)."""
    return broker.bootstrap


def committed(seed, groups) -> dict[str, dict[tuple[str, int], int]]:
    return {g: {(tp[0], tp[1]): o for tp, o in seed.committed(g).items()} for g in groups}


def make_groups(seed, prefix: str) -> tuple[str, list[str], dict]:
    topic = prefix + "t"
    seed.create_topic(topic, partitions=2)
    for p in range(2):
        seed.produce(topic, p, 6)
    groups = [f"{prefix}g{i}" for i in range(1, GROUPS + 1)]
    for i, g in enumerate(groups):
        seed.commit(g, {(topic, 0): 2 + i % 4, (topic, 1): 1 + i % 5})
    return topic, groups, committed(seed, groups)


def offsets_in(backup_url: str, group: str) -> dict[tuple[str, int], int]:
    backup = load_backup(backup_url)
    return {(tp.topic, tp.partition): c.offset for tp, c in backup.groups[group].items()}


def check_trail(
    store: str,
    groups: list[str],
    before: dict,
    after_kill: dict,
    killed: SteppedChild,
    rerun: dict,
    changed_in_kafka,
) -> dict:
    """The checks every kill point must pass; returns what the kill left (for the note)."""
    journal = Journal(store)
    assert journal.open_intents() == [] and journal.leases() == []
    records = [load_audit(u) for u in list_audits(store)]
    interrupted = [r for r in records if r.get("interrupted")]
    changed = {g for g in groups if changed_in_kafka(before[g], after_kill[g])}
    if killed.killed_at in BEFORE_INTENT:
        # no intent on record: nothing may have changed, and the killed run left no record
        assert changed == set(), (killed.killed_at, changed)
        assert interrupted == []
    else:
        assert len(interrupted) == 1, [r.get("run_id") for r in records]
        verdicts = {g: d["interrupted"] for g, d in interrupted[0]["decisions"].items()}
        assert verdicts == {g: "changed" if g in changed else "not_changed" for g in groups}, killed.steps
        assert rerun["reconciled"] and rerun["reconciled"][0]["run_id"] == interrupted[0]["run_id"]
    # every undo on record leads to the offsets from before the first change
    named = 0
    for record in records:
        for g, url in (record.get("undo") or {}).items():
            assert offsets_in(url, g) == before[g], (record.get("action"), g, url)
            named += 1
        for g, d in (record.get("decisions") or {}).items():
            if d.get("undo_backup") and d.get("interrupted") != "not_changed":
                assert offsets_in(d["undo_backup"], g) == before[g]
    # every group has a record naming its undo
    assert {g for r in records for g in (r.get("undo") or {})} == set(groups)
    backups = journal.fs.ls(f"{journal.root}/_backups", detail=False)
    return {
        "killed_at": killed.killed_at,
        "boundaries_passed": len(killed.steps) - 1,
        "changed_in_kafka": len(changed),
        "killed_run_intent": killed.killed_at not in BEFORE_INTENT,
        "backups": len(backups),
        "records": len(records),
        "interrupted": {v: len(gs) for v, gs in (interrupted[0]["groups"] if interrupted else {}).items()},
        "undo_named": named,
    }


def undo_all(rerun: dict, key: str, bootstrap: str, capsys) -> None:
    for command in rerun[key].split(" && "):
        argv = shlex.split(command)
        assert argv[0] == "kgroups"
        code = main(["--format", "json", *argv[1:]])
        capsys.readouterr()
        assert code == EXIT_OK, command


def gone(before, now) -> bool:
    return not now


def moved(before, now) -> bool:
    return now != before


# -- the CLI ------------------------------------------------------------------------------

KILLS_DELETE = [("at", s) for s in STEPS] + [("random", 0)]
KILLS_RESET = [("at", s) for s in STEPS] + [("at", "change_sent#4"), ("random", 0)]
LEFT: list[dict] = []  # what each kill point left, printed at the end (-s) for the note


@pytest.fixture(scope="module", autouse=True)
def report_what_each_kill_left():
    yield
    print(f"\nkill seed {SEED}; what each kill point left (after the kill, then the rerun):")
    for row in LEFT:
        print(json.dumps(row))


def rerun_cli(capsys, argv: list[str]) -> dict:
    """Run the same command again, to completion, in this process (the kill needs a child; the
    rerun does not, and this saves a second interpreter start per kill point)."""
    capsys.readouterr()
    code = main(argv[3:])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    return json.loads(out)


def kill(child: SteppedChild, how: str, what, boundaries: int, rng: random.Random) -> SteppedChild:
    if how == "at":
        step, _, nth = str(what).partition("#")
        return child.kill_at(step, int(nth or 1))
    return child.kill_after(rng.randrange(boundaries))


@pytest.mark.parametrize("how,what", KILLS_DELETE, ids=[f"{h}-{w}" for h, w in KILLS_DELETE])
def test_delete_killed_then_rerun(bootstrap, seed, name_prefix, tmp_path, capsys, how, what):
    rng = random.Random(f"{SEED}-{how}-{what}")
    print(f"kill seed {SEED}")
    _topic, groups, before = make_groups(seed, name_prefix)
    store = str(tmp_path / "store")
    argv = cli_argv(
        bootstrap, "delete", *groups, "--yes", "--max-deletions-percent", "100", "--backup-url", store
    )
    killed = kill(SteppedChild(argv), how, what, 6, rng)
    assert killed.killed_at is not None, killed.stderr
    after_kill = committed(seed, groups)
    rerun = rerun_cli(capsys, argv)
    assert committed(seed, groups) == {g: {} for g in groups}  # every group gone
    left = check_trail(store, groups, before, after_kill, killed, rerun, gone)
    LEFT.append({"verb": "delete", **left})
    undo_all(rerun, "restore_command", bootstrap, capsys)
    assert committed(seed, groups) == before
    # the restore is a change like the others: written ahead, its own backup, its outcome
    restores = [r for r in (load_audit(u) for u in list_audits(store)) if r.get("action") == "restore"]
    assert restores and all(r["backup_url"] and r["intent"] for r in restores)
    assert sorted(g for r in restores for g in r["undo"]) == sorted(groups)
    assert Journal(store).open_intents() == [] and Journal(store).leases() == []


@pytest.mark.parametrize("how,what", KILLS_RESET, ids=[f"{h}-{w}" for h, w in KILLS_RESET])
def test_reset_killed_then_rerun(bootstrap, seed, name_prefix, tmp_path, capsys, how, what):
    rng = random.Random(f"{SEED}-{how}-{what}")
    print(f"kill seed {SEED}")
    topic, groups, before = make_groups(seed, name_prefix)
    store = str(tmp_path / "store")
    argv = cli_argv(
        bootstrap,
        "reset-offsets",
        *groups,
        "--topic",
        topic,
        "--to-earliest",
        "--execute",
        "--backup-url",
        store,
    )
    killed = kill(SteppedChild(argv), how, what, 5 + GROUPS, rng)
    assert killed.killed_at is not None, killed.stderr
    after_kill = committed(seed, groups)
    rerun = rerun_cli(capsys, argv)
    earliest = {(topic, 0): 0, (topic, 1): 0}
    assert committed(seed, groups) == {g: earliest for g in groups}
    left = check_trail(store, groups, before, after_kill, killed, rerun, moved)
    LEFT.append({"verb": "reset-offsets", **left})
    undo_all(rerun, "undo_command", bootstrap, capsys)
    assert committed(seed, groups) == before


# -- an Airflow task, then the CLI -----------------------------------------------------------


def test_operator_task_killed_half_way_then_the_cli_reruns(bootstrap, seed, name_prefix, tmp_path, capsys):
    """The issue's worst case: a DAG's reset task OOM-killed after 3 of its 8 OffsetCommits were
    written; the rerun (here the CLI on the same store) reconciles it and names its backup as the
    undo of the groups it had changed."""
    topic, groups, before = make_groups(seed, name_prefix)
    store = str(tmp_path / "store")
    env = {
        "AIRFLOW_CONN_KG_KILL": json.dumps({"conn_type": "kgroups", "host": bootstrap}),
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    task = SteppedChild(
        [sys.executable, "-m", "tests.support.operator_child", store, topic, *groups], env=env, deadline_s=120
    ).kill_at("change_sent", 3)
    after_kill = committed(seed, groups)
    assert 2 <= sum(after_kill[g] != before[g] for g in groups) <= 3  # written, maybe not yet applied
    argv = cli_argv(
        bootstrap,
        "reset-offsets",
        *groups,
        "--topic",
        topic,
        "--to-earliest",
        "--execute",
        "--backup-url",
        store,
    )
    rerun = rerun_cli(capsys, argv)
    left = check_trail(store, groups, before, after_kill, task, rerun, moved)
    interrupted = next(load_audit(u) for u in list_audits(store) if load_audit(u).get("interrupted"))
    assert interrupted["who"]["dag_id"] == "kill_test" and interrupted["action"] == "reset-offsets"
    LEFT.append({"verb": "operator reset", **left})
    undo_all(rerun, "undo_command", bootstrap, capsys)
    assert committed(seed, groups) == before


# -- two runs at once ---------------------------------------------------------------------------


def test_two_runs_at_once_never_change_the_same_group(bootstrap, seed, name_prefix, tmp_path, capsys):
    """Run A (a child) holds g1..g5 at its change's answer; run B on g4..g8 meanwhile keeps g4 and
    g5 (A's leases) and does not take A's open intent for a dead run's; A is then killed and run C
    reconciles it. Every group's trail names one change and one undo, the right one."""
    topic, groups, before = make_groups(seed, name_prefix)
    store = str(tmp_path / "store")

    def reset(*ids):
        return cli_argv(
            bootstrap,
            "reset-offsets",
            *ids,
            "--topic",
            topic,
            "--to-earliest",
            "--execute",
            "--backup-url",
            store,
        )

    a = SteppedChild(reset(*groups[:5]))
    while a.next_step() != "change_answered":
        a.go()
    capsys.readouterr()
    code = main(reset(*groups[3:])[3:])
    b = json.loads(capsys.readouterr().out)
    assert code != EXIT_OK  # two groups not reset by B: it says so
    assert {g: d["decision"] for g, d in b["decisions"].items()} == {
        **{g: "skipped" for g in groups[3:5]},
        **{g: "done" for g in groups[5:]},
    }
    for g in groups[3:5]:
        assert "another run is changing it" in b["decisions"][g]["reason"]
    assert b["reconciled"] == [] and len(Journal(store).open_intents()) == 1  # A is alive: not B's to close
    a.kill()
    after_kill = committed(seed, groups)
    c = rerun_cli(capsys, reset(*groups))
    assert [r["groups"]["changed"] for r in c["reconciled"]] == [groups[:5]]
    records = [load_audit(u) for u in list_audits(store)]
    assert Journal(store).open_intents() == [] and Journal(store).leases() == []
    b_record = next(r for r in records if r.get("run_id") == load_audit(b["audit_url"])["run_id"])
    for g in groups:  # every undo on record leads to the offsets from before the change it undoes
        for r in records:
            if g in (r.get("undo") or {}):
                # C found g6..g8 reset by B, a run that finished: C's undo is the state it found
                undone = (
                    {(topic, 0): 0, (topic, 1): 0} if g in groups[5:] and r is not b_record else before[g]
                )
                assert offsets_in(r["undo"][g], g) == undone, (g, r.get("run_id"))
    assert [g for g in groups if g in b_record["undo"]] == groups[5:]
    assert after_kill == {g: {(topic, 0): 0, (topic, 1): 0} for g in groups}
    undo_all(c, "undo_command", bootstrap, capsys)  # undoes C, and A's half of the work
    undo_all(b, "undo_command", bootstrap, capsys)  # then B's, newest first, as a trail is undone
    assert committed(seed, groups) == before


def test_the_undo_survives_a_reconciliation_by_another_run(bootstrap, seed, name_prefix, tmp_path, capsys):
    """Run R dies after resetting g1..g4; run X, on other groups of the same store, reconciles it;
    R's rerun then finds nothing open, yet names R's backup as the undo of g1..g4 (they are still
    as R left them), not its own backup of the already-reset offsets."""
    topic, groups, before = make_groups(seed, name_prefix)
    store = str(tmp_path / "store")

    def reset(*ids):
        return cli_argv(
            bootstrap,
            "reset-offsets",
            *ids,
            "--topic",
            topic,
            "--to-earliest",
            "--execute",
            "--backup-url",
            store,
        )

    SteppedChild(reset(*groups[:4])).kill_at("change_answered")
    x = rerun_cli(capsys, reset(*groups[4:]))
    assert [r["groups"]["changed"] for r in x["reconciled"]] == [groups[:4]]
    rerun = rerun_cli(capsys, reset(*groups[:4]))
    assert rerun["reconciled"] == [] and sorted(rerun["undo"]) == groups[:4]
    assert all(offsets_in(url, g) == before[g] for g, url in rerun["undo"].items())
    assert rerun["undo"][groups[0]] != rerun["backup_url"]
    journal = Journal(store)
    assert not journal.fs.exists(f"{journal.root}/_undo") or journal.fs.ls(f"{journal.root}/_undo") == []
    undo_all(rerun, "undo_command", bootstrap, capsys)
    undo_all(x, "undo_command", bootstrap, capsys)
    assert committed(seed, groups) == before
