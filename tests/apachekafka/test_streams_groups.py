"""Streams groups (KIP-1071) on the real Apache Kafka broker, made by a real Kafka Streams
application (demo/kafka_streams.py: kafka-streams 4.4.0, ``group.protocol=streams``, a topology
counting its input's values: subtopology 0 reads the input and writes a repartition topic,
subtopology 1 reads that and keeps a changelog), judged against Kafka's own
``kafka-streams-groups.sh`` (tests/support/streams_groups_tool.py) on the same state.

The application starts once for the module and is stopped (it leaves its group) half-way: the
tests run in file order, the live group's first, then the Empty group's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from airflow_provider_kgroups.cli import main as kgroups_main
from airflow_provider_kgroups.client import ClientConfig, GroupsClient, GroupState, TopicPartition
from airflow_provider_kgroups.client.errors import ErrorCode
from demo.apache_kafka import KafkaCluster
from demo.kafka_streams import StreamsApp
from demo.seed import Seeder, wait_until
from tests.support.streams_groups_tool import StreamsGroupsTool, parse_tasks

RECORDS = 5  # per input partition, produced before the app starts
MORE = 3  # produced to partition 0 once the app has stopped: the Empty group's lag


@dataclass
class Streams:
    app: StreamsApp
    tool: StreamsGroupsTool
    seed: Seeder
    group: str
    words: str
    repartition: str
    changelog: str

    @property
    def bootstrap(self) -> str:
        return self.app.bootstrap

    def committed(self) -> dict[tuple[str, int], int]:
        return {(t.topic, t.partition): o for t, o in self.seed.committed(self.group).items()}

    def log_ends(self) -> dict[tuple[str, int], int]:
        return {
            (topic, p): end
            for topic in (self.words, self.repartition)
            for p, end in self.seed.end_offsets(topic, (0, 1)).items()
        }


def _caught_up(streams: Streams) -> bool:
    """Every input record read and every repartition record counted, and committed."""
    committed, ends = streams.committed(), streams.log_ends()
    return all(ends[tp] > 0 for tp in ends if tp[0] == streams.words) and committed == ends


def _described(bootstrap: str, group: str):
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        return client.describe_groups([group]).values[group]


@pytest.fixture(scope="module")
def streams(kafka: KafkaCluster, kafka_seed: Seeder, tmp_path_factory):
    prefix = "st-"
    group, words, counts = prefix + "app", prefix + "words", prefix + "counts"
    kafka_seed.create_topics({words: 2, counts: 2})
    for partition in (0, 1):
        kafka_seed.produce(words, partition, RECORDS, value=lambda i: b"w%d" % (i % 3))
    app = StreamsApp(
        bootstrap=kafka.bootstrap,
        application_id=group,
        input_topic=words,
        output_topic=counts,
        workdir=tmp_path_factory.mktemp("streams-app"),
    )
    state = Streams(
        app=app,
        tool=StreamsGroupsTool(kafka),
        seed=kafka_seed,
        group=group,
        words=words,
        repartition=f"{group}-by-value-repartition",
        changelog=f"{group}-counts-changelog",
    )
    with app:
        # Kafka says so: the group Stable with one member owning all four tasks, everything committed.
        wait_until(
            lambda: (
                (d := _described(app.bootstrap, group)).state is GroupState.STABLE
                and [len(m.assignment) for m in d.members] == [4]
            ),
            60,
            "the streams group Stable with one member owning 4 partitions",
            interval=0.2,
        )
        wait_until(lambda: _caught_up(state), 60, "the app's offsets committed up to each log end", 0.2)
        yield state


def _kgroups(capsys, bootstrap: str, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = kgroups_main(["-b", bootstrap, "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_listed_and_described_as_the_tool_sees_it(streams: Streams, capsys):
    """ListGroups v5 and StreamsGroupDescribe as kgroups reports them, against the tool's --list
    --state, --describe --members --verbose and --describe --state on the same live group."""
    code, listed = _kgroups(capsys, streams.bootstrap, "groups", "--type", "streams")
    assert code == 0
    assert [(g["group_id"], g["state"], g["protocol_type"], g["group_type"]) for g in listed["groups"]] == [
        (streams.group, "Stable", "streams", "streams")
    ]
    tool_states = {r["GROUP"]: r["STATE"] for r in streams.tool.table("--list", "--state")}
    assert tool_states == {streams.group: "Stable"}

    code, out = _kgroups(capsys, streams.bootstrap, "describe", streams.group)
    assert code == 0
    ours = out["results"][streams.group]
    [member] = ours["members"]
    [tool_member] = streams.tool.table("--describe", "--group", streams.group, "--members", "--verbose")
    # Task p of subtopology 0 reads partition p of the input, of subtopology 1 the repartition topic.
    reads = {"0": streams.words, "1": streams.repartition}
    active = parse_tasks(tool_member["ASSIGNMENTS"])
    assert active == parse_tasks(tool_member["ASSIGNMENTS"], "TARGET-ACTIVE") == {"0": [0, 1], "1": [0, 1]}
    assert (member["member_id"], member["client_id"]) == (tool_member["MEMBER"], tool_member["CLIENT-ID"])
    assert member["client_id"] == f"{streams.group}-StreamThread-1-consumer"  # one member per stream thread
    assert {(t, p) for t, ps in member["assignment"].items() for p in ps} == {
        (reads[sub], p) for sub, parts in active.items() for p in parts
    }
    assert member["subscribed_topics"] == sorted([streams.words, streams.repartition])  # never the changelog

    [tool_state] = streams.tool.table("--describe", "--group", streams.group, "--state")
    assert (
        tool_state["COORDINATOR (ID)"].rsplit("(", 1)[1].rstrip(")"),
        tool_state["ASSIGNOR"],
        tool_state["STATE"],
        tool_state["#MEMBERS"],
    ) == (str(ours["coordinator_id"]), ours["protocol"], ours["state"], "1")
    assert (ours["protocol"], ours["protocol_type"], ours["group_type"]) == ("sticky", "streams", "streams")


def _lag_rows(out: dict, group: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    return {
        (p["topic"], p["partition"]): (p["committed"], p["log_end"], p["lag"])
        for p in out["groups"][group]["partitions"]
    }


def test_lag_is_what_the_tool_says(streams: Streams, capsys):
    """Every partition the app committed, input and repartition topic, caught up: the tool's
    --describe --offsets --verbose and ``kgroups lag`` give the same offsets and lag."""
    code, out = _kgroups(capsys, streams.bootstrap, "lag", streams.group)
    assert code == 0
    theirs = {
        (r["TOPIC"], int(r["PARTITION"])): (
            int(r["CURRENT-OFFSET"]),
            int(r["LOG-END-OFFSET"]),
            int(r["OFFSET-LAG"]),
        )
        for r in streams.tool.table("--describe", "--group", streams.group, "--offsets", "--verbose")
    }
    ours = _lag_rows(out, streams.group)
    assert ours == theirs
    assert {tp: row for tp, row in ours.items() if tp[0] == streams.words} == {
        (streams.words, 0): (RECORDS, RECORDS, 0),
        (streams.words, 1): (RECORDS, RECORDS, 0),
    }
    # every input record went through the repartition topic, and was counted
    assert sum(row[1] for tp, row in ours.items() if tp[0] == streams.repartition) == 2 * RECORDS
    assert out["groups"][streams.group]["total_lag"] == 0


def test_a_live_streams_group_is_kept_by_every_verb(streams: Streams, capsys, tmp_path):
    """Kafka refuses DeleteGroups (68) and OffsetDelete on what the topology reads (86, input and
    repartition topic alike); kgroups does not even ask: ``delete`` keeps it as active,
    ``reset-offsets`` refuses a streams group (the tool refuses too while it runs), and
    ``delete-offsets`` predicts the broker's refusal."""
    before = streams.committed()
    with GroupsClient(ClientConfig.create(streams.bootstrap)) as client:
        refused = client.delete_groups([streams.group])
        kept = client.delete_committed_offsets(
            {streams.group: [TopicPartition(streams.words, 0), TopicPartition(streams.repartition, 0)]}
        )
    assert {g: f.code for g, f in refused.failures.items()} == {streams.group: ErrorCode.NON_EMPTY_GROUP}
    assert {tp: f.code for tp, f in kept.values[streams.group].items()} == dict.fromkeys(
        (TopicPartition(streams.words, 0), TopicPartition(streams.repartition, 0)),
        ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
    )

    backup = ("--backup-url", str(tmp_path))
    code, out = _kgroups(capsys, streams.bootstrap, "delete", streams.group, "--yes", *backup)
    assert (code, out["deleted"], out["kept"]) == (0, [], {"active": 1})
    assert out["decisions"][streams.group]["decision"] == "keep"

    code, out = _kgroups(
        capsys,
        streams.bootstrap,
        "reset-offsets",
        streams.group,
        "--all-topics",
        "--to-earliest",
        "--execute",
        *backup,
    )
    decision = out["decisions"][streams.group]
    assert (code, decision["decision"], decision["refusal"]) == (1, "refused", "streams_group")
    assert "kafka-streams-groups.sh --reset-offsets" in decision["reason"]
    tool = streams.tool.run(
        "--reset-offsets", "--group", streams.group, "--all-input-topics", "--to-earliest", "--dry-run"
    ).check()
    assert tool.rows == [] and any("can only be reset if the group" in n for n in tool.notes), tool.stdout

    code, out = _kgroups(
        capsys,
        streams.bootstrap,
        "delete-offsets",
        streams.group,
        "--topic",
        streams.words,
        "--execute",
        *backup,
    )
    decision = out["decisions"][streams.group]
    assert (code, decision["refusal"], decision["changed"]) == (1, "subscribed", {})
    assert streams.committed() == before


def test_a_stopped_app_leaves_an_empty_group_whose_lag_is_exact(streams: Streams, capsys, tmp_path):
    """The app closes and leaves its group: Empty at once, its committed offsets kept. Records
    produced since are its lag, which the tool's own --reset-offsets --to-current and --to-latest
    plans give too (its --describe --offsets shows nothing for a group without members)."""
    streams.app.stop()
    wait_until(
        lambda: (
            (d := _described(streams.bootstrap, streams.group)).state is GroupState.EMPTY and not d.members
        ),
        30,
        "the streams group Empty once the app left",
        interval=0.1,
    )
    streams.seed.produce(streams.words, 0, MORE)

    code, out = _kgroups(capsys, streams.bootstrap, "lag", streams.group)
    assert code == 0
    ours = _lag_rows(out, streams.group)
    assert {tp: row for tp, row in ours.items() if tp[0] == streams.words} == {
        (streams.words, 0): (RECORDS, RECORDS + MORE, MORE),
        (streams.words, 1): (RECORDS, RECORDS, 0),
    }
    assert out["groups"][streams.group]["total_lag"] == MORE
    assert out["groups"][streams.group]["state"] == "Empty"

    def plan(strategy: str) -> dict[tuple[str, int], int]:
        rows = streams.tool.table(
            "--reset-offsets", "--group", streams.group, "--all-input-topics", strategy, "--dry-run"
        )
        return {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in rows}

    current, latest = plan("--to-current"), plan("--to-latest")
    assert {tp: (current[tp], latest[tp], latest[tp] - current[tp]) for tp in current} == {
        tp: row for tp, row in ours.items() if tp[0] == streams.words
    }
    [tool_state] = streams.tool.run("--describe", "--group", streams.group, "--state").check().rows
    assert (tool_state["STATE"], tool_state["#MEMBERS"]) == ("Empty", "0")

    # kgroups still leaves resetting a streams group to the tool, which now plans it (above)
    code, out = _kgroups(
        capsys, streams.bootstrap, "reset-offsets", streams.group, "--all-topics", "--to-latest", "--dry-run"
    )
    assert (code, out["decisions"][streams.group]["refusal"]) == (1, "streams_group")


def test_an_empty_streams_group_kgroups_keeps_and_kafka_deletes(streams: Streams, capsys, tmp_path):
    """``kgroups delete`` keeps even an Empty streams group (paused: the consumer-group rules do not
    judge it, and its changelog and repartition topics name it a Kafka Streams app); OffsetDelete
    now deletes what the topology reads, as ``delete-offsets`` predicts; Kafka's own tool deletes
    the group, after which kgroups finds it Dead."""
    backup = ("--backup-url", str(tmp_path))
    code, out = _kgroups(capsys, streams.bootstrap, "delete", streams.group, "--yes", *backup)
    assert (code, out["deleted"], out["kept"]) == (0, [], {"paused": 1})
    reason = out["decisions"][streams.group]["reason"]
    assert "a streams group" in reason and "looks like a Kafka Streams application id" in reason
    assert "kafka-streams-groups.sh --delete" in reason  # where its owner deletes it

    code, out = _kgroups(
        capsys,
        streams.bootstrap,
        "delete-offsets",
        streams.group,
        "--topic",
        streams.words,
        "--execute",
        *backup,
    )
    decision = out["decisions"][streams.group]
    assert (code, decision["decision"]) == (0, "done"), decision
    assert [p["prediction"] for p in decision["partitions"]] == ["delete", "delete"]
    assert {tp[0] for tp in streams.committed()} == {streams.repartition}

    run = streams.tool.run("--delete", "--group", streams.group).check()
    assert f"Deletion of requested streams groups ('{streams.group}') was successful." in run.stdout
    assert _described(streams.bootstrap, streams.group).state is GroupState.DEAD
    code, listed = _kgroups(capsys, streams.bootstrap, "groups", "--type", "streams")
    assert (code, listed["groups"]) == (0, [])
    assert streams.committed() == {}
