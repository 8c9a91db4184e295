"""Lag in seconds never reports a bound that carries no information, nor an unknown as a number:
"at least 0 s" taken from the snapshot itself is *unknown* with its reason; a partition whose
offset lag is unknown leaves the group's age unknown; the JSON says when the age is a bound."""

from __future__ import annotations

import time

from airflow_provider_kgroups.client.errors import CLIENT_UNSUPPORTED, Failure
from airflow_provider_kgroups.client.results import RecordPosition, RecordTimestamp
from airflow_provider_kgroups.lag.seconds import LagSecondsBasis, lag_seconds, resolve_lag_seconds
from airflow_provider_kgroups.lag.snapshot import take_snapshot
from tests.support.builders import HOUR, MINUTE, T0, partition
from tests.support.fakeworld import with_fake_cluster
from tests.support.undecodable import undecodable_batches

NOW = T0 + 60 * MINUTE
UNDECODABLE = Failure(
    CLIENT_UNSUPPORTED,
    "cannot decode records: UnsupportedCodecError: Libraries for lz4 compression codec not found",
)


def test_at_least_zero_seconds_from_the_snapshot_itself_is_unknown():
    """The only history sample is the snapshot being judged (what check_gate and the CLI pass):
    "older than the oldest sample" then means "at least 0 s", which says nothing."""
    p = partition("t", 0, 1500, 6000)
    result = resolve_lag_seconds("g", p, UNDECODABLE, [(NOW, 6000)], NOW)
    assert result.seconds is None and result.basis is LagSecondsBasis.UNKNOWN and not result.at_least
    assert "cannot decode records" in result.reason and "the snapshot itself" in result.reason


def test_a_lost_record_with_only_the_snapshot_as_history_is_unknown():
    p = partition("t", 0, 1500, 6000, log_start=3000)
    result = resolve_lag_seconds("g", p, None, [(NOW, 6000)], NOW)
    assert result.basis is LagSecondsBasis.UNKNOWN and "retention" in result.reason


def test_an_older_history_sample_still_gives_a_real_lower_bound():
    p = partition("t", 0, 1500, 6000)
    result = resolve_lag_seconds("g", p, UNDECODABLE, [(NOW - 20 * MINUTE, 4000), (NOW, 6000)], NOW)
    assert result.basis is LagSecondsBasis.HISTORY_BOUND and result.at_least and result.seconds == 20 * 60.0


def test_a_next_record_no_older_than_the_snapshot_gives_no_bound():
    p = partition("t", 0, 1500, 6000)
    fetched = RecordTimestamp(
        1500, RecordPosition.AFTER_GAP, offset=1700, timestamp_ms=NOW + 5_000, high_watermark=6000
    )
    result = resolve_lag_seconds("g", p, fetched, [], NOW)
    assert result.seconds is None and result.basis is LagSecondsBasis.UNKNOWN
    assert "compacted" in result.reason


def seed(cluster):
    cluster.add_topic("t", partitions=2, leaders=[0, 1])
    for p in range(2):
        cluster.append("t", p, 100, timestamp_ms=lambda offset: T0 + offset * 1000)
    cluster.add_group("a", offsets={("t", 0): 40})  # t[1]: no commit (unknown under the fail policy)


async def test_a_partition_with_unknown_offset_lag_leaves_the_groups_age_unknown():
    async def body(cluster, client):
        snap = await take_snapshot(client, ["a"], topics=["t"])
        return await lag_seconds(client, snap, worst_n=None, now_ms=T0 + 200_000)

    result = (await with_fake_cluster(body, setup=seed))["a"]
    assert result.max_seconds is None  # t[0] is 160 s behind, t[1]'s lag is not known at all
    unknown = [p for p in result.partitions if p.basis is LagSecondsBasis.UNKNOWN]
    assert [(p.partition, p.seconds) for p in unknown] == [(1, None)] and "no committed offset" in unknown[
        0
    ].reason


async def test_an_undecodable_record_is_unknown_and_says_why(monkeypatch):
    undecodable_batches(monkeypatch)
    old = int(time.time() * 1000) - int(3.6 * HOUR)

    def setup(cluster):
        cluster.add_topic("t", partitions=1)
        cluster.append("t", 0, 50, timestamp_ms=old)
        cluster.add_group("a", offsets={("t", 0): 10})

    async def body(cluster, client):
        return await lag_seconds(client, await take_snapshot(client, ["a"]))

    result = (await with_fake_cluster(body, setup=setup))["a"]
    assert result.max_seconds is None
    assert result.to_dict()["max_seconds"] is None and result.to_dict()["at_least"] is False
    worst = result.partitions[0]
    assert worst.basis is LagSecondsBasis.UNKNOWN and "cannot decode records" in worst.reason


def test_the_json_says_when_the_groups_age_is_only_a_lower_bound():
    p = partition("t", 0, 1500, 6000)
    fetched = RecordTimestamp(
        1500, RecordPosition.AFTER_GAP, offset=1700, timestamp_ms=NOW - 30 * MINUTE, high_watermark=6000
    )
    from airflow_provider_kgroups.lag.seconds import GroupLagSeconds

    group = GroupLagSeconds("g", (resolve_lag_seconds("g", p, fetched, [], NOW),))
    assert group.to_dict()["max_seconds"] == 30 * 60.0 and group.to_dict()["at_least"] is True
