"""One deadline for several calls (a CLI command, a hook verb, a sensor check).

Each call ends by the earlier of its own timeout and the enclosing deadline; once the deadline
has passed, later calls send nothing and fail every key with CLIENT_TIMEOUT naming it. The
driver follows the Java admin client's per-call deadline (``KafkaAdminClient.calcDeadlineMs``,
one deadline for every request a call makes); the enclosing deadline extends the same rule to
a chain of calls.
"""

from __future__ import annotations

import math

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, ConfigurationError, GroupsClient
from airflow_provider_kgroups.client.deadline import current_deadline, deadline
from airflow_provider_kgroups.client.errors import CLIENT_TIMEOUT
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import config, counts


async def test_calls_after_the_deadline_send_nothing_and_name_it():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 1, end_offsets=10)
        c.add_group("slow", offsets={("orders", 0): 5}, coordinator=2)
        c.blackhole(2)
        async with AsyncGroupsClient(config(c, call_timeout_s=30)) as client:
            async with client.deadline(0.5) as active:
                described = await client.describe_groups(["slow"])
                assert active.time_left <= 0
                before = counts(c)
                offsets = await client.fetch_committed_offsets(["slow"])
                assert counts(c) == before  # nothing sent once the deadline passed
        c.blackhole(2, on=False)
        for result in (described, offsets):
            assert result.values == {}
            assert list(result.failures) == ["slow"]
            assert result.failures["slow"].code == CLIENT_TIMEOUT
            assert result.failures["slow"].message.startswith("the 0.5 s deadline passed before a result")
        # the connection to node 2 stalled in its handshake: no DescribeGroups ever went out
        assert before == {"Metadata": 1, "FindCoordinator": 1}


def test_the_sync_facade_carries_the_callers_deadline_into_its_loop_thread():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_group("slow", coordinator=1)
        c.blackhole(1)
        with GroupsClient(config(c, call_timeout_s=30)) as client, client.deadline(0.4):
            result = client.describe_groups(["slow"])
        c.blackhole(1, on=False)
    assert result.failures["slow"].code == CLIENT_TIMEOUT
    assert result.failures["slow"].message.startswith("the 0.4 s deadline passed")


async def test_a_call_timeout_shorter_than_the_deadline_still_applies():
    async with FakeCluster(brokers=3) as c:
        c.add_group("slow", coordinator=2)
        c.blackhole(2)
        async with AsyncGroupsClient(config(c)) as client, client.deadline(30):
            result = await client.describe_groups(["slow"], timeout_s=0.3)
        c.blackhole(2, on=False)
        assert result.failures["slow"].message.startswith("the call's 0.3 s timeout passed")


def test_an_inner_deadline_never_extends_an_outer_one():
    assert current_deadline() is None
    with deadline(1) as outer:
        with deadline(100) as inner:
            assert inner is outer and current_deadline() is outer
        with deadline(0.1) as shorter:
            assert shorter.seconds == 0.1 and current_deadline() is shorter
        assert current_deadline() is outer
    assert current_deadline() is None


@pytest.mark.parametrize("seconds", [math.nan, math.inf, -1, 0, "5", True])
async def test_a_deadline_or_a_call_timeout_must_be_positive_and_finite(seconds):
    with pytest.raises(ConfigurationError, match="must be a positive, finite number of seconds"):
        deadline(seconds)

    async with FakeCluster(brokers=1) as c:
        async with AsyncGroupsClient(config(c)) as client:
            with pytest.raises(ConfigurationError, match="timeout_s must be a positive, finite number"):
                await client.describe_groups(["g"], timeout_s=seconds)
        assert counts(c) == {}
