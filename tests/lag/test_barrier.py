"""Catch-up barrier: fixed targets, reached/remaining, rate, projection, JSON round trip, bad input."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.results import TopicPartition
from airflow_provider_kgroups.lag.barrier import (
    BarrierCheckpoint,
    BarrierTarget,
    TargetKind,
    check_barrier,
    evaluate_barrier,
    fix_target,
)
from tests.support.builders import T0
from tests.support.fakekafka import Member
from tests.support.fakeworld import with_fake_cluster

A, B = TopicPartition("t", 0), TopicPartition("t", 1)
TARGET = BarrierTarget(offsets={"g": {A: 100, B: 50}, "h": {A: 100}}, kind=TargetKind.LOG_END, fixed_at_ms=T0)


def test_reached_when_committed_reaches_the_target_on_every_partition():
    status = evaluate_barrier(TARGET, {"g": {A: 100, B: 60}, "h": {A: 120}}, T0 + 1000)
    assert status.reached and status.remaining() == 0 and status.eta_s() == 0.0


def test_remaining_per_partition_and_group():
    status = evaluate_barrier(TARGET, {"g": {A: 70, B: 50}, "h": {A: 100}}, T0 + 1000)
    assert not status.reached
    assert status.group_reached("h") and not status.group_reached("g")
    assert status.remaining("g") == 30 and status.remaining() == 30
    assert "1 of 2 group(s) not there yet (g)" in status.summary()


def test_rate_and_projection_from_the_previous_check():
    first = evaluate_barrier(TARGET, {"g": {A: 40, B: 10}, "h": {A: 100}}, T0)
    second = evaluate_barrier(
        TARGET, {"g": {A: 60, B: 30}, "h": {A: 100}}, T0 + 10_000, previous=first.checkpoint()
    )
    by_tp = {(p.group_id, p.topic, p.partition): p for p in second.partitions}
    assert by_tp[("g", "t", 0)].rate_per_s == 2.0 and by_tp[("g", "t", 0)].eta_s == 20.0
    assert by_tp[("g", "t", 1)].eta_s == 10.0
    assert second.eta_s("g") == 20.0  # the slowest partition decides


def test_a_partition_that_does_not_move_means_no_projection():
    first = evaluate_barrier(TARGET, {"g": {A: 40, B: 10}, "h": {A: 100}}, T0)
    second = evaluate_barrier(
        TARGET, {"g": {A: 60, B: 10}, "h": {A: 100}}, T0 + 10_000, previous=first.checkpoint()
    )
    assert second.eta_s("g") is None and second.eta_s() is None
    assert "not progressing" in next(p.note for p in second.partitions if p.partition == 1)


def test_a_rewind_between_checks_is_named():
    first = evaluate_barrier(TARGET, {"g": {A: 60, B: 10}, "h": {A: 100}}, T0)
    second = evaluate_barrier(
        TARGET, {"g": {A: 20, B: 10}, "h": {A: 100}}, T0 + 1000, previous=first.checkpoint()
    )
    assert "went back from 60 to 20" in second.partitions[0].note


def test_no_commit_counts_as_reached_only_when_nothing_before_the_target_exists():
    target = BarrierTarget(offsets={"g": {A: 0, B: 50}}, kind=TargetKind.LOG_END, fixed_at_ms=T0)
    status = evaluate_barrier(target, {"g": {A: None, B: None}}, T0, log_starts={A: 0, B: 10})
    assert [p.reached for p in status.partitions] == [True, False]
    assert status.partitions[1].remaining == 40


def test_unread_group_is_a_failure_and_blocks_the_barrier():
    status = evaluate_barrier(TARGET, {"g": {A: 100, B: 60}}, T0)
    assert not status.reached and "h" in status.failures


def test_target_and_checkpoint_are_json_round_trips():
    target = BarrierTarget(
        offsets={"g": {A: 100, B: 50}},
        kind=TargetKind.TIMESTAMP,
        fixed_at_ms=T0,
        timestamp_ms=T0 - 5000,
        read_committed=True,
    )
    assert BarrierTarget.from_dict(json.loads(json.dumps(target.to_dict()))) == target
    checkpoint = BarrierCheckpoint(T0, {"g": {A: 7, B: None}})
    assert BarrierCheckpoint.from_dict(json.loads(json.dumps(checkpoint.to_dict()))) == checkpoint


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(format="other"), "not a barrier target"),
        (lambda d: d.update(kind="soon"), "kind 'soon'"),
        (lambda d: d.update(groups={}), "no groups"),
        (
            lambda d: d["groups"]["g"]["t"].update({"0": -4}),
            r"groups\['g'\]: t\[0\] is -4; offsets are >= 0\.",
        ),
        (lambda d: d["groups"]["g"]["t"].update({"0": -1}), r"t\[0\] is -1 \(latest\); offsets are >= 0\."),
        (
            lambda d: d["groups"]["g"]["t"].update({"0": None}),
            r"t\[0\] is None; an offset is a JSON integer \(>= 0\)",
        ),
        (
            lambda d: d["groups"]["g"]["t"].update({"x": 4}),
            "topic 't' has partition 'x', which is not a partition number",
        ),
        (lambda d: d.update(fixed_at_ms=-1), "fixed_at_ms must be a non-negative"),
    ],
)
def test_malformed_targets_are_configuration_errors(mutate, message):
    data = TARGET.to_dict()
    mutate(data)
    with pytest.raises(ConfigurationError, match=message):
        BarrierTarget.from_dict(data)


# -- against the fake cluster -----------------------------------------------------------------------


def seed(cluster):
    cluster.add_topic("t", partitions=2)
    for p in range(2):
        cluster.append("t", p, 10, timestamp_ms=lambda offset: T0 + offset * 1000)
    cluster.add_group("g", offsets={("t", 0): 3}, members=[Member("m", assignment={"t": [0, 1]})])


async def test_fix_target_at_log_end_does_not_move_when_producers_write():
    async def body(cluster, client):
        target = await fix_target(client, ["g"])
        cluster.append("t", 0, 5)
        cluster.commit("g", {("t", 0): 10, ("t", 1): 10})
        return target, await check_barrier(client, target)

    target, status = await with_fake_cluster(body, setup=seed)
    assert target.offsets == {"g": {A: 10, B: 10}} and target.kind is TargetKind.LOG_END
    assert status.reached  # lag is 5 now, but the target was fixed before those records


async def test_fix_target_for_a_timestamp():
    async def body(cluster, client):
        return await fix_target(client, ["g"], topics=["t"], timestamp_ms=T0 + 4000)

    target = await with_fake_cluster(body, setup=seed)
    assert target.offsets["g"] == {A: 4, B: 4} and target.timestamp_ms == T0 + 4000


async def test_timestamp_newer_than_every_record_targets_the_log_end():
    async def body(cluster, client):
        return await fix_target(client, ["g"], topics=["t"], timestamp_ms=T0 + 999_000)

    assert (await with_fake_cluster(body, setup=seed)).offsets["g"] == {A: 10, B: 10}


async def test_target_for_a_topic_that_does_not_exist_is_a_configuration_error():
    async def body(cluster, client):
        with pytest.raises(ConfigurationError, match="'missing' do not exist"):
            await fix_target(client, ["g"], topics=["missing"])
        with pytest.raises(ConfigurationError, match="timestamp_ms must be a non-negative"):
            await fix_target(client, ["g"], timestamp_ms=-5)

    await with_fake_cluster(body, setup=seed)


async def test_group_without_commits_or_assignment_needs_topics():
    async def body(cluster, client):
        with pytest.raises(ConfigurationError, match="name the topics"):
            await fix_target(client, ["nobody"])

    await with_fake_cluster(body, setup=seed)


async def test_check_barrier_costs_one_offset_fetch_once_coordinators_are_known():
    async def body(cluster, client):
        target = await fix_target(client, ["g"], topics=["t"])
        cluster.commit("g", {("t", 1): 2})
        first = await check_barrier(client, target)  # finds the coordinator
        cluster.reset_counts()
        second = await check_barrier(client, target, previous=first.checkpoint())
        return first, second, cluster.requests_by_api()

    first, second, requests = await with_fake_cluster(body, setup=seed)
    assert requests == {"OffsetFetch": 1}
    assert first.remaining() == 7 + 8 and not second.reached


async def test_target_fixed_during_a_leader_election_gets_the_real_log_end():
    """A new leader catching up answers OFFSET_NOT_AVAILABLE (Partition.fetchOffsetForTimestamp);
    the client asks it again after a metadata refresh (OffsetFetcherUtils.handleListOffsetResponse)
    instead of failing the barrier."""

    async def body(cluster, client):
        assert (cluster.leader_of("t", 0), cluster.leader_of("t", 1)) == (0, 1)
        cluster.move_leader("t", 0, 2, catching_up=2)
        target = await fix_target(client, ["g"])
        return target, {n: cluster.count("ListOffsets", n) for n in range(3)}, cluster.requests("Metadata")

    target, list_offsets, metadata = await with_fake_cluster(body, setup=seed)
    assert target.offsets == {"g": {A: 10, B: 10}} and target.kind is TargetKind.LOG_END
    assert list_offsets == {0: 0, 1: 1, 2: 3}  # twice 78 from the new leader, then its answer
    # bootstrap, the leader lookup, one refresh after each 78
    assert [None if m.request.topics is None else [t.name for t in m.request.topics] for m in metadata] == [
        [],
        ["t"],
        ["t"],
        ["t"],
    ]
