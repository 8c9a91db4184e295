"""The fake cluster's pytest plugin bites (tests/support/pytest_fakekafka.py): a test during which a
handler of the fake raised fails at teardown though it never looked at ``handler_errors`` and
its own assertions held (the client retried past the closed connection), on the test's loop or
a threaded cluster's; a test marked ``fake_handler_errors`` passes and asserts the errors itself;
a clean test passes.

The tests below run in this process (pytester, in-process), so the handler errors they provoke
are this test's too: it is marked like any test that provokes them on purpose."""

from __future__ import annotations

import pytest

INNER_TESTS = '''
import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, GroupsClient, TopicPartition
from tests.support.fakekafka import ApiKey, FakeCluster
from tests.support.fakekafka.handlers import HANDLERS


class FakeBug(Exception):
    pass


def break_offset_fetch_once(monkeypatch):
    """The OffsetFetch handler raises once (a bug of the fake), then answers as before."""
    answer, calls = HANDLERS[ApiKey.OffsetFetch], []

    def once(ctx):
        calls.append(ctx)
        if len(calls) == 1:
            raise FakeBug("offset fetch handler broke")
        return answer(ctx)

    monkeypatch.setitem(HANDLERS, ApiKey.OffsetFetch, once)


def seeded(c):
    c.add_topic("orders", 1, end_offsets=10)
    c.add_group("billing", offsets={("orders", 0): 5})


def config(c):
    return ClientConfig.create(c.bootstrap, retry_backoff_s=0.01)


async def fetch_past_a_broken_handler(monkeypatch):
    """The client retries past the closed connection: the test's own assertions hold."""
    async with FakeCluster(brokers=1) as c:
        seeded(c)
        break_offset_fetch_once(monkeypatch)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(["billing"], timeout_s=10)
    assert result.failures == {} and result.values["billing"].committed() == {TopicPartition("orders", 0): 5}
    return c


async def test_forgetful_on_the_test_loop(monkeypatch):
    await fetch_past_a_broken_handler(monkeypatch)


def test_forgetful_on_a_threaded_cluster(monkeypatch):
    with FakeCluster.running_in_thread(brokers=1) as c:
        seeded(c)
        break_offset_fetch_once(monkeypatch)
        with GroupsClient(config(c)) as client:
            result = client.fetch_committed_offsets(["billing"], timeout_s=10)
    assert result.failures == {}


@pytest.mark.fake_handler_errors
async def test_provokes_them_on_purpose_and_says_so(monkeypatch):
    c = await fetch_past_a_broken_handler(monkeypatch)
    assert [str(e) for e in c.handler_errors] == ["offset fetch handler broke"]


async def test_clean():
    async with FakeCluster(brokers=1) as c:
        seeded(c)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(["billing"], timeout_s=10)
    assert result.failures == {}
'''


@pytest.mark.fake_handler_errors
def test_a_handler_error_fails_the_test_that_forgot_to_look(pytester: pytest.Pytester):
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "addopts = --strict-markers\n"
    )
    pytester.makeconftest('pytest_plugins = ["tests.support.pytest_fakekafka"]\n')
    pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=4, errors=2)
    failed = {
        r.nodeid.split("::")[-1]
        for r in result.reprec.getreports("pytest_runtest_logreport")
        if r.when == "teardown" and r.failed
    }
    assert failed == {"test_forgetful_on_the_test_loop", "test_forgetful_on_a_threaded_cluster"}
    result.stdout.fnmatch_lines(
        [
            "*1 handler error(s) in the fake cluster during this test*mark the test @pytest.mark.fake_handler_errors*",
            "- the fake's OffsetFetch v* handler on node 0 raised FakeBug('offset fetch handler broke')",
        ]
    )
