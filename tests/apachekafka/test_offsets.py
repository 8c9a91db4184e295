"""Offsets on the real broker: ListOffsets by timestamp (the barrier at a timestamp, ``kgroups
reset-offsets --to-datetime``), the log start moved by DeleteRecords under a committed offset, and
KIP-211 offsets expiry (``kafka_short``: an Empty group's offsets expire one minute after its
last commit, and the group with them).

Records are seeded one per batch with timestamps BASE + i s (demo.seed); partition 0 then loses
offsets 0-2 to DeleteRecords (confluent-kafka's AdminClient)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_kgroups.cli import main as kgroups_main
from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    ClientConfig,
    GroupsClient,
    GroupState,
    TopicPartition,
)
from airflow_provider_kgroups.lag.gate import FailureKind, GateSpec, GateStatus, LagGate, check_gate
from demo.seed import BASE_TIMESTAMP_MS, Seeder
from tests.support.kafka_clusters import EXPIRING_GROUP, EXPIRING_TOPIC

MIDDLE_MS = BASE_TIMESTAMP_MS + 2_500  # between the records at offsets 2 and 3


def _kgroups(capsys, bootstrap: str, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = kgroups_main(["-b", bootstrap, "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def timed(kafka, kafka_seed):
    """Topic with 6 records on each of 2 partitions; partition 0's log start moved to 3; group
    ``behind`` committed 1 (now below the log start) and 5."""
    topic, group = "offs-t", "offs-behind"
    kafka_seed.create_topic(topic, partitions=2)
    for partition in (0, 1):
        kafka_seed.produce(topic, partition, 6)
    kafka_seed.commit(group, {(topic, 0): 1, (topic, 1): 5})
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([CkTopicPartition(topic, 0, 3)]).values():
        assert future.result(30).low_watermark == 3
    return {"topic": topic, "group": group, "tp0": TopicPartition(topic, 0), "tp1": TopicPartition(topic, 1)}


def test_offsets_for_timestamps(kafka, timed):
    tp0, tp1 = timed["tp0"], timed["tp1"]
    with GroupsClient(ClientConfig.create(kafka.bootstrap)) as client:
        middle = client.offsets_for_timestamp([tp0, tp1], MIDDLE_MS).values
        before = client.offsets_for_timestamp([tp0, tp1], BASE_TIMESTAMP_MS - 1).values
        after = client.offsets_for_timestamp([tp0, tp1], BASE_TIMESTAMP_MS + 60_000).values
        starts = client.log_start_offsets([tp0, tp1]).values
    assert {tp: (o.offset, o.timestamp) for tp, o in middle.items()} == {
        tp0: (3, BASE_TIMESTAMP_MS + 3_000),
        tp1: (3, BASE_TIMESTAMP_MS + 3_000),
    }
    # before every record: the first one still in the log (partition 0's deleted records are not searched)
    assert {tp: o.offset for tp, o in before.items()} == {tp0: 3, tp1: 0}
    assert {tp: o.offset for tp, o in after.items()} == {tp0: -1, tp1: -1}  # none that recent
    assert {tp: o.offset for tp, o in starts.items()} == {tp0: 3, tp1: 0}


def test_a_commit_below_the_log_start_is_lag_flagged_lost(kafka, timed, capsys):
    code, out = _kgroups(capsys, kafka.bootstrap, "lag", timed["group"])
    assert code == 0, out
    rows = [
        (p["partition"], p["committed"], p["log_start"], p["log_end"], p["lag"], p["flags"])
        for p in out["groups"][timed["group"]]["partitions"]
    ]
    assert rows == [(0, 1, 3, 6, 5, ["lost"]), (1, 5, 0, 6, 1, [])]


def test_reset_to_datetime_plans_the_first_offset_at_or_after_it(kafka, timed, capsys):
    def planned(when: str) -> list[tuple[int, int, int]]:
        code, out = _kgroups(
            capsys,
            kafka.bootstrap,
            "reset-offsets",
            timed["group"],
            "--topic",
            timed["topic"],
            "--to-datetime",
            when,
            "--dry-run",
        )
        assert code == 0, out
        return [
            (p["partition"], p["current"], p["new"]) for p in out["decisions"][timed["group"]]["partitions"]
        ]

    assert planned("2023-11-14T22:13:22.500") == [(0, 1, 3), (1, 5, 3)]  # MIDDLE_MS, read as UTC
    assert planned("2023-11-14T22:13:19") == [(0, 1, 3), (1, 5, 0)]  # before all: the log start
    assert planned("2030-01-01T00:00:00") == [(0, 1, 6), (1, 5, 6)]  # none that recent: the log end


def test_the_barrier_at_a_timestamp(kafka, kafka_seed, timed):
    """The barrier of a gate with ``barrier_timestamp_ms`` (the sensor's data_interval_end): per
    partition, the first offset at or after it. Waits while partition 0 is below it, opens once
    the group commits there."""
    group = timed["group"] + "-barrier"
    kafka_seed.commit(group, {(timed["topic"], 0): 2, (timed["topic"], 1): 4})

    async def checks():
        async with AsyncGroupsClient(ClientConfig.create(kafka.bootstrap)) as client:
            gate = LagGate.start(
                GateSpec.parse(group_ids=(group,), barrier_timestamp=MIDDLE_MS), timeout_s=60
            )
            first = await check_gate(client, gate)
            await asyncio.to_thread(kafka_seed.commit, group, {(timed["topic"], 0): 3})
            return first, await check_gate(client, gate)

    first, second = asyncio.run(checks())
    assert first.status is GateStatus.WAIT, first
    assert first.fixed["kind"] == "timestamp" and first.fixed["groups"] == {
        group: {timed["topic"]: {"0": 3, "1": 3}}
    }
    assert second.status is GateStatus.DONE, second


def test_an_empty_groups_offsets_expire_and_the_group_with_them(kafka_short, capsys, tmp_path):
    """KIP-211: one minute after its last commit (the group never had members), the group is gone:
    described as Dead, its offsets unreadable; the gate fails it as missing, the cleanup reports it
    not found. Committed as ``kafka_short`` started, so most of the minute has passed already."""
    deadline = kafka_short.expiring_since / 1000 + 60 + 30  # retention + the check interval + slack
    with GroupsClient(ClientConfig.create(kafka_short.bootstrap)) as client:
        while True:
            described = client.describe_groups([EXPIRING_GROUP]).values[EXPIRING_GROUP]
            if described.state is GroupState.DEAD:
                break
            assert described.state is GroupState.EMPTY, described
            assert time.time() < deadline, f"{EXPIRING_GROUP} did not expire within 90 s of its commit"
            time.sleep(0.5)
        expired_after_s = time.time() - kafka_short.expiring_since / 1000
        offsets = client.fetch_committed_offsets([EXPIRING_GROUP])
    assert expired_after_s >= 60, "not before offsets.retention.minutes"
    assert offsets.values[EXPIRING_GROUP].partitions == {}
    assert EXPIRING_GROUP not in {g.group_id for g in _listing(kafka_short)}

    async def gate():
        async with AsyncGroupsClient(ClientConfig.create(kafka_short.bootstrap)) as client:
            return await check_gate(
                client, LagGate.start(GateSpec.parse(group_ids=(EXPIRING_GROUP,)), timeout_s=30)
            )

    decision = asyncio.run(gate())
    assert (decision.status, decision.kind) == (GateStatus.FAIL, FailureKind.MISSING), decision
    code, out = _kgroups(
        capsys, kafka_short.bootstrap, "delete", "--yes", "--backup-url", str(tmp_path), EXPIRING_GROUP
    )
    assert (code, out["deleted"], out["not_found"]) == (0, [], [EXPIRING_GROUP]), out
    with Seeder(kafka_short.bootstrap) as seed:  # the topic and its records are untouched
        assert seed.end_offset(EXPIRING_TOPIC, 0) == 2


def _listing(cluster):
    with GroupsClient(ClientConfig.create(cluster.bootstrap)) as client:
        return client.list_groups().groups
