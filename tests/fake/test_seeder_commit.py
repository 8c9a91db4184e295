"""The test seeder's OffsetCommit (demo/seed.py) retries what Kafka's clients retry: a cluster just
started answers COORDINATOR_LOAD_IN_PROGRESS while the group's offsets partition loads (a fresh
three-node Apache Kafka did, failing a test's seeding), and it fails at once on what retrying
cannot fix."""

from __future__ import annotations

import time

import pytest

from demo.seed import CommitRefused, Seeder, SeedError
from tests.support.fakekafka import Err, FakeCluster


@pytest.fixture()
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", partitions=2, end_offsets=10)
        yield c


def test_a_loading_coordinator_is_retried_until_the_commit_lands(cluster):
    cluster.inject_error("OffsetCommit", Err.COORDINATOR_LOAD_IN_PROGRESS, key="billing", times=2)
    with Seeder(cluster.bootstrap, timeout=10) as seed:
        seed.commit("billing", {("orders", 0): 7})
    assert cluster.count("OffsetCommit") == 3
    assert cluster.committed("billing") == {("orders", 0): 7}


def test_an_error_retrying_cannot_fix_fails_at_once_naming_it(cluster):
    cluster.inject_error("OffsetCommit", Err.GROUP_AUTHORIZATION_FAILED, key="billing", times=5)
    started = time.monotonic()
    with (
        Seeder(cluster.bootstrap, timeout=10) as seed,
        pytest.raises(CommitRefused, match="GroupAuthorizationFailed"),
    ):
        seed.commit("billing", {("orders", 0): 7})
    assert cluster.count("OffsetCommit") == 1
    assert time.monotonic() - started < 5


def test_a_coordinator_still_loading_at_the_deadline_names_the_last_answer(cluster):
    cluster.inject_error("OffsetCommit", Err.COORDINATOR_LOAD_IN_PROGRESS, key="billing", times=1000)
    with (
        Seeder(cluster.bootstrap, timeout=1) as seed,
        pytest.raises(SeedError, match="CoordinatorLoadInProgress"),
    ):
        seed.commit("billing", {("orders", 0): 7})
    assert cluster.count("OffsetCommit") > 1
