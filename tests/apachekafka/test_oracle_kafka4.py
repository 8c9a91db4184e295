"""Kafka's own kafka-consumer-groups.sh (4.4.0) as the oracle for ``kgroups``, on one real cluster state.

The state (built once for the module, on the session's ``kafka`` broker):

* ``orders`` (3 partitions: 10 records, 5 records, none), ``audit`` (1 partition, 4 records, the
  first one deleted so its log starts at 1), ``recent`` (records 3 h, 2 h, 30 min and 10 min old).
  Records carry explicit timestamps; the topics keep them forever (``retention.ms=-1``: the
  Seeder's default timestamps are from 2023, which the default 7-day retention deletes at its
  first check, 5 minutes in).
* ``empty-a`` (commits on orders 0 and 1, audit, recent: partitions without commits on orders 2),
  ``empty-b`` (orders 0 only), ``classic-live`` (a classic member, confluent-kafka, commits on
  orders 0 and 1) and ``consumer-live`` (a KIP-848 member, commits on orders 0). The members never
  commit, so committed offsets stay what was seeded.

Every difference between the two tools is either asserted equal here or a deliberate choice
listed in docs/cli.rst ("kgroups vs kafka-consumer-groups.sh"), asserted as that difference.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

import pytest
from kafka.admin import NewTopic
from kafka.structs import TopicPartition as KTP

from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL
from airflow_provider_kgroups.cli import main as kgroups_main
from demo.seed import BASE_TIMESTAMP_MS, Seeder, wait_until
from tests.support.consumer_groups_tool import (
    ConsumerGroupsTool,
    LiveMember,
    ToolRun,
    kgroups_members_view,
    kgroups_offsets_view,
    kgroups_state_view,
    tool_members_view,
    tool_offsets_view,
    tool_state_view,
    wait_for_leaders,
)

HOUR_MS = 3_600_000


@dataclass
class State:
    p: str
    tool: ConsumerGroupsTool
    seed: Seeder
    now_ms: int

    def __getattr__(self, name: str) -> str:  # state.orders -> "<prefix>orders"
        if name.startswith("_"):
            raise AttributeError(name)
        return self.p + name.replace("_", "-")


def _create_kept_topics(seed: Seeder, topics: dict[str, int]) -> None:
    result = seed.admin.create_topics(
        [NewTopic(name, n, 1, topic_configs={"retention.ms": "-1"}) for name, n in topics.items()],
        raise_errors=False,
    )
    failed = {t["name"]: t["error_code"] for t in result["topics"] if t["error_code"] != 0}
    assert not failed, failed
    seed.admin.wait_for_topics(list(topics), timeout_ms=30_000)
    wait_for_leaders(seed, topics)


@pytest.fixture(scope="module")
def state(kafka, kafka_seed):
    p = f"oracle-{uuid.uuid4().hex[:6]}-"
    seed = kafka_seed
    orders, audit, recent = p + "orders", p + "audit", p + "recent"
    _create_kept_topics(seed, {orders: 3, audit: 1, recent: 1})
    seed.produce(orders, 0, 10, first_timestamp_ms=BASE_TIMESTAMP_MS)
    seed.produce(orders, 1, 5, first_timestamp_ms=BASE_TIMESTAMP_MS)
    seed.produce(audit, 0, 4, first_timestamp_ms=BASE_TIMESTAMP_MS)
    seed.admin.delete_records({KTP(audit, 0): 1})
    now_ms = int(time.time() * 1000)
    seed.produce_records(
        recent,
        0,
        [
            (b"r%d" % i, now_ms - age)
            for i, age in enumerate((3 * HOUR_MS, 2 * HOUR_MS, HOUR_MS // 2, HOUR_MS // 6))
        ],
    )
    seed.commit_many(
        {
            p + "empty-a": {(orders, 0): 4, (orders, 1): 5, (audit, 0): 2, (recent, 0): 1},
            p + "empty-b": {(orders, 0): 10},
            p + "classic-live": {(orders, 0): 7, (orders, 1): 2},
            p + "consumer-live": {(orders, 0): 3},
            **{
                p + twin: {(orders, 0): 1, (audit, 0): 3}
                for twin in ("offs-tool", "offs-kg", "del-tool", "del-kg")
            },
        }
    )
    members = [
        LiveMember(kafka.bootstrap, p + "classic-live", [orders], client_id="oracle-classic"),
        LiveMember(
            kafka.bootstrap, p + "consumer-live", [orders], client_id="oracle-848", protocol="consumer"
        ),
    ]
    try:
        for member in members:
            member.wait_assigned(3)
        yield State(p, ConsumerGroupsTool(kafka), seed, now_ms)
    finally:
        for member in members:
            member.stop()


def kgroups(capsys, bootstrap: str, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = kgroups_main(["-b", bootstrap, "--format", "json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out)


# -- --list -------------------------------------------------------------------------------------


def test_list_with_state_and_type_filters(kafka, state, capsys):
    mine = {
        state.empty_a: ("Empty", "classic"),
        state.empty_b: ("Empty", "classic"),
        state.classic_live: ("Stable", "classic"),
        state.consumer_live: ("Stable", "consumer"),
    }
    tool = state.tool
    ids = tool.list_groups()
    by_state = {r["GROUP"]: r["STATE"] for r in tool.list_groups("--state")}
    by_type = {r["GROUP"]: r["TYPE"] for r in tool.list_groups("--type")}
    empty_classic = {
        r["GROUP"]: (r["STATE"], r["TYPE"]) for r in tool.list_groups("--state", "Empty", "--type", "classic")
    }

    code, ours = kgroups(capsys, kafka.bootstrap, "groups")
    assert code == EXIT_OK
    # Deliberate: kgroups lists every group (Kafka Connect's, share groups); the tool only consumer groups.
    listed = {
        g["group_id"]: g
        for g in ours["groups"]
        if g.get("protocol_type") in ("consumer", "", None)
        and g.get("group_type") not in ("share", "streams")
    }
    assert set(listed) == ids, (sorted(set(listed) - ids), sorted(ids - set(listed)))
    for group, (group_state, group_type) in mine.items():
        assert by_state[group] == listed[group]["state"] == group_state
        # Deliberate: kgroups prints the type as the protocol names it (lower case); the tool capitalises.
        assert by_type[group] == group_type.capitalize() and listed[group]["group_type"] == group_type

    code, ours = kgroups(capsys, kafka.bootstrap, "groups", "--state", "Empty", "--type", "classic")
    assert code == EXIT_OK
    ours_empty_classic = {g["group_id"] for g in ours["groups"] if g["group_id"].startswith(state.p)}
    theirs_empty_classic = {g for g in empty_classic if g.startswith(state.p)}
    assert (
        ours_empty_classic
        == theirs_empty_classic
        == {state.empty_a, state.empty_b, state.offs_tool, state.offs_kg, state.del_tool, state.del_kg}
    )
    assert {v for g, v in empty_classic.items() if g.startswith(state.p)} == {("Empty", "Classic")}

    code, ours = kgroups(capsys, kafka.bootstrap, "groups", "--state", "Stable")
    assert code == EXIT_OK
    assert (
        {g["group_id"] for g in ours["groups"] if g["group_id"].startswith(state.p)}
        == {g for g, s in by_state.items() if s == "Stable" and g.startswith(state.p)}
        == {state.classic_live, state.consumer_live}
    )


def test_lag_by_pattern_takes_empty_groups_from_the_listing_as_kafka_describes_them(
    kafka, state, capsys, caplog
):
    """``lag --pattern`` does not describe the groups its listing showed Empty (issue 31: describe
    only what the output shows): Kafka itself must describe them exactly as the listing reads
    (state, protocol type, no members), so the documents with and without the listing are equal
    but for the moment they were taken; the live groups are still described (members, owners)."""
    import logging

    groups = [state.empty_a, state.empty_b, state.classic_live, state.consumer_live]
    code, described = kgroups(capsys, kafka.bootstrap, "lag", *groups)
    assert code == EXIT_PARTIAL
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="airflow_provider_kgroups.client.requests"):
        code, listed = kgroups(
            capsys,
            kafka.bootstrap,
            "-v",
            "lag",
            "--pattern",
            state.p + "empty-*",
            "--pattern",
            state.p + "c*-live",
        )
    assert code == EXIT_PARTIAL
    sent = [r.getMessage() for r in caplog.records if r.name == "airflow_provider_kgroups.client.requests"]
    assert any(m.startswith("ListGroups") for m in sent), sent
    assert any(m.startswith(("DescribeGroups", "ConsumerGroupDescribe")) for m in sent), sent  # the live ones
    described.pop("taken_at_ms"), listed.pop("taken_at_ms")
    assert listed == described
    assert {g: (v["state"], v["members"]) for g, v in listed["groups"].items()} == {
        state.empty_a: ("Empty", 0),
        state.empty_b: ("Empty", 0),
        state.classic_live: ("Stable", 1),
        state.consumer_live: ("Stable", 1),
    }


# -- --describe ---------------------------------------------------------------------------------


def test_describe_offsets_members_and_state(kafka, state, capsys):
    groups = [state.empty_a, state.empty_b, state.classic_live, state.consumer_live]
    selection = [arg for g in groups for arg in ("--group", g)]
    offsets = state.tool.run("--describe", *selection).check()
    members = state.tool.run("--describe", *selection, "--members", "--verbose").check()
    states = state.tool.run("--describe", *selection, "--state").check()

    code, lag = kgroups(capsys, kafka.bootstrap, "lag", *groups)
    assert code == EXIT_PARTIAL  # the live groups have partitions without a commit: their totals are unknown
    code, described = kgroups(capsys, kafka.bootstrap, "describe", *groups)
    assert code == EXIT_OK
    described = described["results"]

    # --offsets: one row per committed or assigned partition, its owner's id, host and client id.
    theirs = tool_offsets_view(offsets.rows)
    assert kgroups_offsets_view(lag, described) == theirs
    assert theirs[(state.empty_a, state.audit, 0)] == ("2", "4", "2", "-", "-", "-")
    assert theirs[(state.consumer_live, state.orders, 2)][:3] == ("-", "0", "-")
    # --members --verbose: id, host, client id, partition count and assignment of each member.
    theirs = tool_members_view(members.rows)
    assert kgroups_members_view(described) == theirs and len(theirs) == 2
    # --state: coordinator, assignment strategy, state, member count.
    theirs = tool_state_view(states.rows)
    assert kgroups_state_view(described) == theirs
    assert theirs[state.consumer_live][1:] == ("uniform", "Stable", "1")


def test_describe_a_group_that_does_not_exist(kafka, state, capsys):
    """Deliberate difference: the tool stops at the first missing group ("Error: ... Group X not
    found.", no table, exit 0); kgroups describes the others and reports the missing one, exit 1."""
    ghost = state.p + "ghost"
    run = state.tool.run("--describe", "--group", ghost, "--group", state.empty_b)
    assert run.returncode == 0 and run.rows == []
    assert f"Group {ghost} not found." in run.stdout
    code, ours = kgroups(capsys, kafka.bootstrap, "describe", ghost, state.empty_b)
    assert code == EXIT_PARTIAL
    assert ours["not_found"] == [ghost] and ours["results"][state.empty_b]["state"] == "Empty"


# -- --reset-offsets --dry-run ------------------------------------------------------------------


def _tool_plan(run: ToolRun) -> dict[tuple[str, str, int], int]:
    return {(r["GROUP"], r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in run.check().rows}


def _our_plan(data: dict) -> dict[tuple[str, str, int], int]:
    return {
        (g, p["topic"], p["partition"]): p["new"]
        for g, d in data["decisions"].items()
        if d["decision"] == "would_do"
        for p in d["partitions"]
    }


def _compare_reset(
    kafka, state, capsys, tmp_path, groups: list[str], scope: list[str], strategy: list[str]
) -> dict[tuple[str, str, int], int]:
    """The same selection, scope and strategy arguments to both tools (kgroups takes Kafka's
    ``--group``), their plans compared row by row."""
    selection = [a for g in groups for a in ("--group", g)]
    theirs = _tool_plan(state.tool.run("--reset-offsets", "--dry-run", *selection, *scope, *strategy))
    code, data = kgroups(
        capsys, kafka.bootstrap, "reset-offsets", *selection, *scope, *strategy, "--backup-url", str(tmp_path)
    )
    assert code == EXIT_OK and _our_plan(data) == theirs, (strategy, scope)
    return theirs


STRATEGY_CASES = [
    # (groups, scope, strategy, a few rows both must give)
    (
        ["empty-a", "empty-b"],
        ["--all-topics"],
        ["--to-latest"],
        {("empty-a", "audit", 0): 4, ("empty-a", "recent", 0): 4, ("empty-b", "orders", 0): 10},
    ),
    (
        ["empty-a"],
        ["--all-topics"],
        ["--to-current"],
        {("empty-a", "orders", 0): 4, ("empty-a", "audit", 0): 2},
    ),
    # orders 1 and 2 have no commit in empty-b: both tools take the log end
    (
        ["empty-b"],
        ["--topic", "{orders}"],
        ["--to-current"],
        {("empty-b", "orders", 0): 10, ("empty-b", "orders", 1): 5, ("empty-b", "orders", 2): 0},
    ),
    (
        ["empty-a"],
        ["--topic", "{orders}:0,2"],
        ["--to-offset", "8"],
        {("empty-a", "orders", 0): 8, ("empty-a", "orders", 2): 0},
    ),
    (["empty-a"], ["--topic", "{audit}"], ["--to-offset", "0"], {("empty-a", "audit", 0): 1}),
    (
        ["empty-a"],
        ["--all-topics"],
        ["--shift-by", "-2"],
        {("empty-a", "orders", 0): 2, ("empty-a", "orders", 1): 3, ("empty-a", "audit", 0): 1},
    ),
    (
        ["empty-a", "empty-b"],
        ["--topic", "{orders}:0"],
        ["--shift-by", "3"],
        {("empty-a", "orders", 0): 7, ("empty-b", "orders", 0): 10},
    ),
    (
        ["empty-a"],
        ["--topic", "{orders}:0", "--topic", "{audit}"],
        ["--shift-by", "3"],
        {("empty-a", "orders", 0): 7, ("empty-a", "audit", 0): 4},
    ),
    (
        ["empty-a"],
        ["--all-topics"],
        ["--to-datetime", "2023-11-14T22:13:23.000"],
        {("empty-a", "orders", 0): 3, ("empty-a", "orders", 1): 3, ("empty-a", "recent", 0): 0},
    ),
    (
        ["empty-a"],
        ["--topic", "{orders}", "--topic", "{audit}"],
        ["--to-datetime", "2023-11-14T23:13:22.000+01:00"],
        {("empty-a", "orders", 0): 2, ("empty-a", "orders", 2): 0, ("empty-a", "audit", 0): 2},
    ),
    (["empty-a"], ["--topic", "{recent}"], ["--by-duration", "PT1H"], {("empty-a", "recent", 0): 2}),
    (["empty-a"], ["--topic", "{recent}"], ["--by-duration", "P1DT0H0M"], {("empty-a", "recent", 0): 0}),
]


@pytest.mark.parametrize(
    "groups, scope, strategy, expected",
    STRATEGY_CASES,
    ids=[" ".join(c[1] + c[2]).replace("{", "").replace("}", "") for c in STRATEGY_CASES],
)
def test_reset_offsets_dry_run_plans_what_the_tool_plans(
    kafka, state, capsys, tmp_path, groups, scope, strategy, expected
):
    names = {"orders": state.orders, "audit": state.audit, "recent": state.recent}
    scope = [s.format(**names) for s in scope]
    plan = _compare_reset(kafka, state, capsys, tmp_path, [state.p + g for g in groups], scope, strategy)
    assert {k: plan.get(k) for k in ((state.p + g, names[t], n) for g, t, n in expected)} == {
        (state.p + g, names[t], n): v for (g, t, n), v in expected.items()
    }


def test_reset_offsets_all_groups_refuses_live_groups_as_the_tool_does(kafka, state, capsys, tmp_path):
    """--all-groups --to-earliest: the Empty groups are planned alike (audit's
    log starts at 1); both refuse the live groups with Kafka's sentence."""
    run = state.tool.run(
        "--reset-offsets", "--dry-run", "--all-groups", "--all-topics", "--to-earliest"
    ).check()
    theirs = {k: v for k, v in _tool_plan(run).items() if k[0].startswith(state.p)}
    code, data = kgroups(
        capsys,
        kafka.bootstrap,
        "reset-offsets",
        "--all-groups",
        "--all-topics",
        "--to-earliest",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_PARTIAL  # groups were refused (the tool exits 0)
    # The cluster holds other tests' groups too: this module's are compared.
    assert {k: v for k, v in _our_plan(data).items() if k[0].startswith(state.p)} == theirs
    assert theirs[(state.empty_a, state.audit, 0)] == 1 and theirs[(state.empty_a, state.orders, 0)] == 0
    for live in (state.classic_live, state.consumer_live):
        sentence = f"Assignments can only be reset if the group '{live}' is inactive, but the current state is Stable."
        assert sentence in run.stdout
        assert (
            data["decisions"][live]["decision"] == "refused" and data["decisions"][live]["reason"] == sentence
        )


def test_to_datetime_without_a_zone_is_utc_in_both_whatever_the_local_zone(
    kafka, state, capsys, tmp_path, monkeypatch
):
    """Kafka's Utils.getDateTime appends "Z" to a time without a zone: the JVM's zone (TZ) is not
    used. kgroups reads it as UTC too (and says so in its plan)."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    plan = _compare_reset(
        kafka,
        state,
        capsys,
        tmp_path,
        [state.empty_a],
        ["--topic", state.orders],
        ["--to-datetime", "2023-11-14T22:13:25.000"],
    )
    assert plan[(state.empty_a, state.orders, 0)] == 5


def test_shift_by_on_a_partition_without_a_commit(kafka, state, capsys, tmp_path):
    """Both refuse to shift a partition that has no committed offset. Deliberate difference: the
    tool refuses the whole run (exit 1, its usage text), every group with it; kgroups refuses that
    group alone, naming the partition, and plans the others."""
    run = state.tool.run(
        "--reset-offsets",
        "--dry-run",
        "--group",
        state.empty_a,
        "--group",
        state.empty_b,
        "--topic",
        state.audit,
        "--shift-by",
        "1",
    )
    assert run.returncode == 1 and run.rows == []
    assert (
        f"Cannot shift offset for partition {state.audit}-0 since there is no current committed offset"
        in run.stdout + run.stderr
    )
    code, data = kgroups(
        capsys,
        kafka.bootstrap,
        "reset-offsets",
        state.empty_a,
        state.empty_b,
        "--topic",
        state.audit,
        "--shift-by",
        "1",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_PARTIAL
    assert _our_plan(data) == {(state.empty_a, state.audit, 0): 3}
    refused = data["decisions"][state.empty_b]
    assert refused["decision"] == "refused"
    assert f"cannot shift {state.audit}[0]: it has no committed offset" in refused["reason"]


def test_from_file_round_trip_between_the_tools(kafka, state, capsys, tmp_path):
    """--export from one tool is --from-file for the other, and their CSVs are the same lines."""
    groups = [state.empty_a, state.empty_b]
    tool_export = state.tool.run(
        "--reset-offsets",
        "--dry-run",
        "--group",
        groups[0],
        "--group",
        groups[1],
        "--all-topics",
        "--shift-by",
        "-1",
        "--export",
    ).check()
    theirs = sorted(line for line in tool_export.stdout.splitlines() if line.strip())
    capsys.readouterr()
    assert (
        kgroups_main(
            [
                "-b",
                kafka.bootstrap,
                "reset-offsets",
                *groups,
                "--all-topics",
                "--shift-by",
                "-1",
                "--export",
                "--backup-url",
                str(tmp_path),
            ]
        )
        == EXIT_OK
    )
    ours = sorted(line for line in capsys.readouterr().out.splitlines() if line.strip())
    assert ours == theirs and len(ours) == 5

    their_file = tmp_path / "theirs.csv"
    their_file.write_text("\n".join(theirs) + "\n")
    code, data = kgroups(
        capsys,
        kafka.bootstrap,
        "reset-offsets",
        *groups,
        "--from-file",
        str(their_file),
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_OK
    our_file = tmp_path / "ours.csv"
    our_file.write_text("\n".join(ours) + "\n")
    run = state.tool.run(
        "--reset-offsets",
        "--dry-run",
        "--group",
        groups[0],
        "--group",
        groups[1],
        "--from-file",
        str(our_file),
    )
    assert _our_plan(data) == _tool_plan(run)
    assert _tool_plan(run)[(state.empty_a, state.orders, 0)] == 3

    # One group: the CSV has no group column, in both (the lines are equal: kgroups reading the
    # tool's file closes the round trip).
    tool_export = state.tool.run(
        "--reset-offsets",
        "--dry-run",
        "--group",
        state.empty_a,
        "--topic",
        state.orders,
        "--to-latest",
        "--export",
    ).check()
    theirs = sorted(line for line in tool_export.stdout.splitlines() if line.strip())
    capsys.readouterr()
    assert (
        kgroups_main(
            [
                "-b",
                kafka.bootstrap,
                "reset-offsets",
                "--group",
                state.empty_a,
                "--topic",
                state.orders,
                "--to-latest",
                "--export",
                "--backup-url",
                str(tmp_path),
            ]
        )
        == EXIT_OK
    )
    ours = sorted(line for line in capsys.readouterr().out.splitlines() if line.strip())
    assert ours == theirs == [f"{state.orders},0,10", f"{state.orders},1,5", f"{state.orders},2,0"]
    their_file.write_text("\n".join(theirs) + "\n")
    code, data = kgroups(
        capsys,
        kafka.bootstrap,
        "reset-offsets",
        "--group",
        state.empty_a,
        "--from-file",
        str(their_file),
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_OK
    assert _our_plan(data) == {(state.empty_a, state.orders, n): v for n, v in ((0, 10), (1, 5), (2, 0))}


# -- --delete-offsets, --delete (executed: each tool on its own twin group) ----------------------


def test_delete_offsets_matches_the_tool_on_twin_groups_and_on_a_live_subscribed_topic(
    kafka, state, capsys, tmp_path
):
    run = state.tool.run("--delete-offsets", "--group", state.offs_tool, "--topic", state.audit).check()
    assert [(r["TOPIC"], r["PARTITION"], r["STATUS"]) for r in run.rows] == [(state.audit, "0", "Successful")]
    code, data = kgroups(
        capsys,
        kafka.bootstrap,
        "delete-offsets",
        state.offs_kg,
        "--topic",
        state.audit,
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_OK and data["decisions"][state.offs_kg]["decision"] == "done"
    left = {
        g: {(t.topic, t.partition): o for t, o in state.seed.committed(g).items()}
        for g in (state.offs_tool, state.offs_kg)
    }
    assert left[state.offs_tool] == left[state.offs_kg] == {(state.orders, 0): 1}

    # A live member subscribes to orders: the broker refuses both (GROUP_SUBSCRIBED_TO_TOPIC).
    run = state.tool.run("--delete-offsets", "--group", state.classic_live, "--topic", state.orders)
    statuses = {(r["TOPIC"], r["PARTITION"]): r["STATUS"] for r in run.rows}
    # Deliberate: the tool names every partition of the topic; kgroups those the group committed.
    assert set(statuses) == {(state.orders, "0"), (state.orders, "1"), (state.orders, "2")}
    assert all("GroupSubscribedToTopicException" in s for s in statuses.values()), statuses
    code, data = kgroups(
        capsys,
        kafka.bootstrap,
        "delete-offsets",
        state.classic_live,
        "--topic",
        state.orders,
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    decision = data["decisions"][state.classic_live]
    assert decision["changed"] == {} and "GROUP_SUBSCRIBED_TO_TOPIC" in decision["reason"], decision
    assert {(t.topic, t.partition): o for t, o in state.seed.committed(state.classic_live).items()} == {
        (state.orders, 0): 7,
        (state.orders, 1): 2,
    }


def test_delete_matches_the_tool_on_twin_groups_and_on_a_live_group(kafka, state, capsys, tmp_path):
    run = state.tool.run("--delete", "--group", state.del_tool, "--group", state.classic_live)
    assert f"These consumer groups were deleted successfully: '{state.del_tool}'" in run.stdout
    assert f"Group '{state.classic_live}' could not be deleted due to:" in run.stdout
    assert "The group is not empty." in run.stdout
    code, data = kgroups(
        capsys,
        kafka.bootstrap,
        "delete",
        state.del_kg,
        state.classic_live,
        "--yes",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_OK and data["deleted"] == [state.del_kg], data["decisions"]
    # Deliberate: kgroups keeps a group with members before asking (the tool sends and Kafka refuses).
    assert data["decisions"][state.classic_live]["decision"] == "keep"
    remaining = state.tool.list_groups()
    assert state.del_tool not in remaining and state.del_kg not in remaining
    assert state.classic_live in remaining
    assert wait_until(lambda: state.seed.committed(state.del_kg) == {}, 10, "no offsets left") is not None
