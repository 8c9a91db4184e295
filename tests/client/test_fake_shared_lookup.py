"""Calls running side by side share one coordinator lookup and one bootstrap Metadata
(CoordinatorLookup.lookup / ClusterMetadata.bootstrap): the lag snapshot describes groups and
fetches their commits in the same round. Request shapes follow KafkaApis.handleFindCoordinatorRequest
(v4+: every key in one request) and KafkaApis.handleTopicMetadataRequest."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakeutil import committed, config, counts, seed


async def test_describe_and_offset_fetch_side_by_side_share_the_lookup_and_the_bootstrap():
    async with FakeCluster(brokers=3) as c:
        expected = seed(c, 20)
        ids = sorted(expected)
        async with AsyncGroupsClient(config(c)) as client:
            described, offsets = await asyncio.gather(
                client.describe_groups(ids), client.fetch_committed_offsets(ids)
            )
        coordinators = {c.coordinator_of(g) for g in ids}
        n = counts(c)
    assert committed(offsets) == expected and not offsets.failures
    assert sorted(described.values) == sorted(expected) and not described.failures
    assert n == {
        "Metadata": 1,
        "FindCoordinator": 1,
        "DescribeGroups": len(coordinators),
        "OffsetFetch": len(coordinators),
    }


async def test_a_lookup_error_shared_by_two_calls_reaches_both_per_group():
    """GROUP_AUTHORIZATION_FAILED from FindCoordinator is final for that key: both calls that
    waited on the one lookup report it for that group, and the other groups stay exact."""
    async with FakeCluster(brokers=3) as c:
        expected = seed(c, 4)
        c.inject_error("FindCoordinator", Err.GROUP_AUTHORIZATION_FAILED, key="g1")
        async with AsyncGroupsClient(config(c)) as client:
            described, offsets = await asyncio.gather(
                client.describe_groups(sorted(expected)), client.fetch_committed_offsets(sorted(expected))
            )
        n = counts(c)
    for result in (described, offsets):
        assert set(result.failures) == {"g1"}
        assert result.failures["g1"].code == Err.GROUP_AUTHORIZATION_FAILED
    assert committed(offsets) == {g: v for g, v in expected.items() if g != "g1"}
    assert n["FindCoordinator"] == 1 and n["Metadata"] == 1


async def test_a_bootstrap_that_reaches_no_broker_fails_every_call_that_waited_on_it():
    async with FakeCluster(brokers=1) as c:
        seed(c, 2)
        bootstrap = c.bootstrap
    # the cluster is gone: nothing answers the shared bootstrap
    from airflow_provider_kgroups.client import ClientConfig, NoBrokerAvailable

    async with AsyncGroupsClient(
        ClientConfig.create(bootstrap, call_timeout_s=2, retry_backoff_s=0.01)
    ) as client:
        results = await asyncio.gather(
            client.describe_groups(["g0"]), client.fetch_committed_offsets(["g0"]), return_exceptions=True
        )
    assert all(isinstance(r, NoBrokerAvailable) for r in results), results
