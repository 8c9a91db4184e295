"""Lag in seconds: exact from the record, labelled estimates otherwise, never silent extrapolation."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError, Failure
from airflow_provider_kgroups.client.results import RecordPosition, RecordTimestamp, TopicPartition
from airflow_provider_kgroups.lag.seconds import (
    LagSecondsBasis,
    interpolate_produce_time,
    lag_seconds,
    log_end_history,
    resolve_lag_seconds,
)
from airflow_provider_kgroups.lag.snapshot import take_snapshot
from tests.support.builders import MINUTE, T0, group, partition, snapshot
from tests.support.fakeworld import with_fake_cluster

NOW = T0 + 60 * MINUTE
HISTORY = [(T0, 0), (T0 + 10 * MINUTE, 1000), (T0 + 20 * MINUTE, 2000), (NOW, 6000)]


def at(offset, ts, position=RecordPosition.AT_OFFSET, hw=6000):
    return RecordTimestamp(offset, position, offset=offset, timestamp_ms=ts, high_watermark=hw)


def test_exact_seconds_from_the_record():
    p = partition("t", 0, 1500, 6000)
    result = resolve_lag_seconds("g", p, at(1500, NOW - 90_000), HISTORY, NOW)
    assert result.seconds == 90.0 and result.basis is LagSecondsBasis.RECORD and not result.estimate
    assert result.record_timestamp_ms == NOW - 90_000


def test_caught_up_is_zero_and_exact():
    result = resolve_lag_seconds("g", partition("t", 0, 6000, 6000), None, HISTORY, NOW)
    assert result.seconds == 0.0 and result.basis is LagSecondsBasis.CAUGHT_UP and not result.estimate


def test_future_timestamp_gives_zero_and_says_why():
    result = resolve_lag_seconds("g", partition("t", 0, 1500, 6000), at(1500, NOW + 5000), HISTORY, NOW)
    assert result.seconds == 0.0 and "in the future" in result.reason


def test_lost_record_is_interpolated_and_labelled_an_estimate():
    p = partition("t", 0, 1500, 6000, log_start=3000)  # 1500 deleted by retention
    result = resolve_lag_seconds("g", p, None, HISTORY, NOW)
    assert result.basis is LagSecondsBasis.HISTORY and result.estimate and not result.at_least
    # produced between T0+10 min (log end 1000) and T0+20 min (log end 2000): rank 501/1000
    produced = T0 + 10 * MINUTE + 501 / 1000 * 10 * MINUTE
    assert result.seconds == pytest.approx((NOW - produced) / 1000)
    assert result.bounds == (40 * 60.0, 50 * 60.0)
    assert "estimate" in result.reason and "retention" in result.reason


def test_older_than_the_history_is_only_a_lower_bound():
    p = partition("t", 0, 500, 6000, log_start=3000)
    result = resolve_lag_seconds("g", p, None, HISTORY[1:], NOW)  # history starts at log end 1000
    assert result.basis is LagSecondsBasis.HISTORY_BOUND and result.at_least and result.estimate
    assert result.seconds == 50 * 60.0


def test_no_history_means_no_number_not_an_extrapolation():
    p = partition("t", 0, 1500, 6000, log_start=3000)
    result = resolve_lag_seconds("g", p, None, [], NOW)
    assert result.seconds is None and result.basis is LagSecondsBasis.UNKNOWN
    assert "no estimate" in result.reason


def test_compacted_record_uses_the_history_bounded_by_the_next_record():
    p = partition("t", 0, 1500, 6000)
    fetched = at(1700, NOW - 30 * MINUTE, RecordPosition.AFTER_GAP)
    result = resolve_lag_seconds("g", p, fetched, HISTORY, NOW)
    assert result.basis is LagSecondsBasis.HISTORY and result.estimate and "compacted" in result.reason
    assert result.seconds >= 30 * 60.0


def test_compacted_record_without_history_is_a_lower_bound_from_the_next_record():
    p = partition("t", 0, 1500, 6000)
    result = resolve_lag_seconds("g", p, at(1700, NOW - 30 * MINUTE, RecordPosition.AFTER_GAP), [], NOW)
    assert result.basis is LagSecondsBasis.NEXT_RECORD and result.at_least and result.seconds == 30 * 60.0


def test_fetch_failure_falls_back_to_history_or_unknown():
    p = partition("t", 0, 1500, 6000)
    assert resolve_lag_seconds("g", p, Failure(6), HISTORY, NOW).basis is LagSecondsBasis.HISTORY
    assert resolve_lag_seconds("g", p, Failure(6), [], NOW).basis is LagSecondsBasis.UNKNOWN


def test_no_commit_under_from_earliest_is_measured_from_the_log_start():
    p = partition("t", 0, None, 6000, log_start=1000)
    counted = type(p)(p.topic, p.partition, None, 1000, 6000, 5000, p.flags)  # from_earliest: end - start
    result = resolve_lag_seconds("g", counted, at(1000, NOW - 60_000), HISTORY, NOW)
    assert result.basis is LagSecondsBasis.RECORD and result.seconds == 60.0
    assert resolve_lag_seconds("g", p, None, HISTORY, NOW).basis is LagSecondsBasis.UNKNOWN  # fail: no lag


def test_caught_up_between_snapshot_and_fetch():
    p = partition("t", 0, 1500, 6000)
    fetched = RecordTimestamp(1500, RecordPosition.AT_LOG_END, high_watermark=1500)
    assert resolve_lag_seconds("g", p, fetched, HISTORY, NOW).basis is LagSecondsBasis.CAUGHT_UP


def test_interpolation_ignores_samples_before_a_topic_was_recreated():
    samples = [(0, 5000), (10, 9000), (20, 0), (30, 100), (40, 200)]
    _estimate, earliest, latest = interpolate_produce_time(samples, 150)
    assert (earliest, latest) == (30.0, 40.0)


def test_log_end_history_from_snapshots():
    snaps = [
        snapshot(T0, group("g", partition("t", 0, 1, 10))),
        snapshot(T0 + 1, group("h", partition("t", 0, 1, 12))),
    ]
    assert log_end_history(snaps) == {TopicPartition("t", 0): [(T0, 10), (T0 + 1, 12)]}


# -- against the fake cluster -----------------------------------------------------------------------


def seed(cluster):
    cluster.add_topic("t", partitions=3, leaders=[0, 1, 2])
    for p in range(3):
        cluster.append("t", p, 100, timestamp_ms=lambda offset: T0 + offset * 1000)
    cluster.add_group("a", offsets={("t", 0): 40, ("t", 1): 90, ("t", 2): 100})
    cluster.add_group("b", offsets={("t", 0): 70, ("t", 1): 95})


async def test_worst_partition_of_each_group_exact_in_one_fetch_per_leader_per_round():
    async def body(cluster, client):
        snap = await take_snapshot(client, ["a", "b"])
        cluster.reset_counts()
        result = await lag_seconds(client, snap, worst_n=1, now_ms=T0 + 200_000)
        return result, cluster.requests_by_api()

    result, requests = await with_fake_cluster(body, setup=seed)
    worst_a, worst_b = result["a"].worst, result["b"].worst
    assert (worst_a.tp, worst_a.seconds, worst_a.basis) == (
        TopicPartition("t", 0),
        160.0,
        LagSecondsBasis.RECORD,
    )
    assert (worst_b.tp, worst_b.seconds) == (TopicPartition("t", 0), 130.0)
    assert result["a"].unmeasured == 1 and result["b"].unmeasured == 1
    assert requests == {
        "Fetch": 1
    }  # both worst partitions are t[0] (offsets 40 and 70): one page answers both


async def test_all_lagging_partitions_one_fetch_per_leader():
    async def body(cluster, client):
        snap = await take_snapshot(client, ["a", "b"])
        cluster.reset_counts()
        result = await lag_seconds(client, snap, worst_n=None, now_ms=T0 + 200_000)
        return result, cluster.requests("Fetch")

    result, fetches = await with_fake_cluster(body, setup=seed)
    assert {p.tp: p.seconds for p in result["a"].partitions} == {
        TopicPartition("t", 0): 160.0,
        TopicPartition("t", 1): 110.0,
    }
    assert {p.tp: p.seconds for p in result["b"].partitions} == {
        TopicPartition("t", 0): 130.0,
        TopicPartition("t", 1): 105.0,
    }
    assert result["a"].max_seconds == 160.0 and result["a"].unmeasured == 0
    assert sorted(r.node for r in fetches) == [0, 1]  # t0@40+70 and t1@90+95: one page each


async def test_offsets_beyond_one_page_are_read_from_the_next_page():
    def setup(cluster):
        cluster.add_topic("big", partitions=1)
        cluster.append("big", 0, 100, timestamp_ms=lambda offset: T0 + offset, value=b"x" * 100)

    async def body(cluster, client):
        answer = await client.fetch_record_timestamps(
            {TopicPartition("big", 0): [2, 5, 50, 99]}, partition_bytes=1024
        )
        return answer, [r.request.topics[0].partitions[0].fetch_offset for r in cluster.requests("Fetch")]

    answer, fetch_offsets = await with_fake_cluster(body, setup=setup)
    found = answer[TopicPartition("big", 0)]
    assert {o: r.timestamp_ms for o, r in found.items()} == {2: T0 + 2, 5: T0 + 5, 50: T0 + 50, 99: T0 + 99}
    assert fetch_offsets == [2, 50, 99]  # 2 and 5 share the first page


async def test_lost_partition_is_estimated_from_history_without_a_fetch():
    def setup(cluster):
        seed(cluster)
        cluster.set_offsets("t", 0, start=60)  # group a's 40 is gone

    async def body(cluster, client):
        snap = await take_snapshot(client, ["a"])
        history = {TopicPartition("t", 0): [(T0 + 30_000, 30), (T0 + 50_000, 50)]}
        cluster.reset_counts()
        result = await lag_seconds(client, snap, history=history, now_ms=T0 + 200_000)
        return result, cluster.count("Fetch")

    result, fetches = await with_fake_cluster(body, setup=setup)
    worst = result["a"].worst
    assert worst.basis is LagSecondsBasis.HISTORY and worst.estimate
    assert worst.seconds == pytest.approx(200 - 30 - 20 * 11 / 20)  # rank (40-30+1)/20 of 20 s after 30 s
    assert fetches == 0


async def test_worst_n_must_be_positive():
    async def body(cluster, client):
        snap = await take_snapshot(client, ["a"])
        with pytest.raises(ConfigurationError, match="worst_n must be a positive int"):
            await lag_seconds(client, snap, worst_n=0)

    await with_fake_cluster(body, setup=seed)
