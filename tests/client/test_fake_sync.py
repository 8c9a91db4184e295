"""The blocking facade (GroupsClient) against a fake cluster running on its own thread:
the same verbs, the same batching, from plain synchronous code and from inside a running
event loop."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import (
    AuthenticationError,
    ClientConfig,
    ConfigurationError,
    GroupDeletion,
    GroupsClient,
    GroupState,
    TopicPartition,
)
from airflow_provider_kgroups.client.errors import CLIENT_TIMEOUT
from tests.support.fakekafka import Err, FakeCluster, Member
from tests.support.fakeutil import HANDSHAKE_APIS, counts


def seed(c) -> dict[str, dict[TopicPartition, int]]:
    c.add_topic("orders", 6, end_offsets=[10, 20, 30, 40, 50, 60])
    out = {}
    for i in range(40):
        c.add_group(f"g{i}", offsets={("orders", i % 6): i})
        out[f"g{i}"] = {TopicPartition("orders", i % 6): i}
    c.add_group("live", members=[Member("m1", {"orders": [0, 1, 2]}), Member("m2", {"orders": [3, 4, 5]})])
    return out


def test_sync_facade_runs_every_verb_batched():
    with FakeCluster.running_in_thread(brokers=3) as c:
        seeded = seed(c)
        owners = {c.coordinator_of(g) for g in seeded}
        with GroupsClient(ClientConfig.create(c.bootstrap, retry_backoff_s=0.01)) as client:
            offsets = client.fetch_committed_offsets(list(seeded))
            assert {g: v.committed() for g, v in offsets.values.items()} == seeded
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": len(owners)}

            c.reset_counts()
            described = client.describe_groups(["live", "g0"])
            assert described.values["live"].state is GroupState.STABLE
            assert described.values["live"].assigned_partitions == frozenset(
                TopicPartition("orders", p) for p in range(6)
            )
            assert counts(c) == {
                "FindCoordinator": 1,
                "DescribeGroups": len({c.coordinator_of("live"), c.coordinator_of("g0")}),
            }

            listed = client.list_groups(states=["Stable"])
            assert [g.group_id for g in listed.groups] == ["live"]

            ends = client.log_end_offsets([TopicPartition("orders", p) for p in range(6)])
            assert {tp.partition: v.offset for tp, v in ends.values.items()} == {
                0: 10,
                1: 20,
                2: 30,
                3: 40,
                4: 50,
                5: 60,
            }

            deleted = client.delete_groups(["g0", "live", "missing"])
            assert dict(deleted.values) == {"g0": GroupDeletion.DELETED}
            assert {g: f.code for g, f in deleted.failures.items()} == {"live": 68, "missing": 69}
            assert client.stats.by_api["OffsetFetch"] == len(owners)

            with pytest.raises(ConfigurationError):
                client.fetch_committed_offsets([])
            with pytest.raises(AttributeError):
                client.no_such_verb
        client.close()  # a second close is harmless


async def test_sync_facade_inside_a_running_event_loop():
    """Airflow code may hold a loop already (this test runs on one): the facade runs its own and
    still works."""
    asyncio.get_running_loop()
    with FakeCluster.running_in_thread(brokers=2) as c:
        seeded = seed(c)
        with GroupsClient(ClientConfig.create(c.bootstrap, retry_backoff_s=0.01)) as client:
            result = client.fetch_committed_offsets(list(seeded))
        assert {g: v.committed() for g, v in result.values.items()} == seeded


def test_sync_facade_faults_and_errors_surface_the_same():
    with FakeCluster.running_in_thread(brokers=3, sasl={"PLAIN": {"alice": "right"}}) as c:
        seeded = seed(c)
        stuck = "g3"
        c.inject_error("OffsetFetch", Err.COORDINATOR_LOAD_IN_PROGRESS, key=stuck)
        c.inject_error("OffsetFetch", Err.GROUP_AUTHORIZATION_FAILED, key="g4")
        config = ClientConfig.create(
            c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_username="alice",
            sasl_password="right",
            retry_backoff_s=0.01,
            retry_backoff_max_s=0.05,
        )
        with GroupsClient(config) as client:
            result = client.fetch_committed_offsets(list(seeded), timeout_s=0.5)
        assert {g: f.code for g, f in result.failures.items()} == {stuck: CLIENT_TIMEOUT, "g4": 30}
        assert len(result.values) == len(seeded) - 2

        wrong = ClientConfig.create(
            c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_username="alice",
            sasl_password="wrong",
        )
        with GroupsClient(wrong) as client, pytest.raises(AuthenticationError):
            client.list_groups()
