"""Bad input fails with a ConfigurationError naming the problem, before anything is sent:
the fake cluster, running and pointed at by an otherwise valid config, receives no request
at all (not even ApiVersions)."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    ClientConfig,
    ConfigurationError,
    GroupSelector,
    TopicPartition,
)
from tests.support.fakekafka import FakeCluster

BAD_CALLS = [
    # (what, coroutine factory, message fragment)
    ("empty group list", lambda cl: cl.fetch_committed_offsets([]), "group_ids is empty"),
    ("empty group list, describe", lambda cl: cl.describe_groups([]), "group_ids is empty"),
    ("empty group list, delete", lambda cl: cl.delete_groups(iter(())), "group_ids is empty"),
    ("one string for a list", lambda cl: cl.fetch_committed_offsets("orders-app"), "not the single string"),
    ("empty group id", lambda cl: cl.describe_groups(["ok", ""]), "non-empty string"),
    ("None as a group id", lambda cl: cl.delete_groups(["ok", None]), "non-empty string"),
    ("negative timeout", lambda cl: cl.fetch_committed_offsets(["g"], timeout_s=-1), "timeout_s"),
    ("zero timeout", lambda cl: cl.list_groups(timeout_s=0), "timeout_s"),
    ("timeout as text", lambda cl: cl.describe_groups(["g"], timeout_s="5"), "timeout_s"),
    ("timeout as bool", lambda cl: cl.delete_groups(["g"], timeout_s=True), "timeout_s"),
    (
        "negative timeout, offsets",
        lambda cl: cl.log_end_offsets([TopicPartition("t", 0)], timeout_s=-0.5),
        "timeout_s",
    ),
    (
        "negative partition in topics",
        lambda cl: cl.fetch_committed_offsets(["g"], topics={"t": [-1]}),
        "partitions are ints",
    ),
    (
        "partition as text in topics",
        lambda cl: cl.fetch_committed_offsets(["g"], topics={"t": ["0"]}),
        "partitions are ints",
    ),
    ("blank topic in topics", lambda cl: cl.fetch_committed_offsets(["g"], topics={"": [0]}), "topic name"),
    (
        "partitions not a list",
        lambda cl: cl.fetch_committed_offsets(["g"], topics={"t": 3}),
        "list of partitions",
    ),
    ("negative partition", lambda cl: cl.log_end_offsets([TopicPartition("t", -1)]), "TopicPartition"),
    ("partition as text", lambda cl: cl.log_start_offsets([TopicPartition("t", "0")]), "TopicPartition"),
    ("blank topic", lambda cl: cl.log_end_offsets([TopicPartition("", 0)]), "TopicPartition"),
    ("not a TopicPartition", lambda cl: cl.log_end_offsets([("t", 0)]), "TopicPartition"),
    ("bad offset spec", lambda cl: cl.list_offsets({TopicPartition("t", 0): -4}), "offset spec"),
    ("negative timestamp", lambda cl: cl.offsets_for_timestamp([TopicPartition("t", 0)], -5), "timestamp_ms"),
    ("one string for states", lambda cl: cl.list_groups(states="Stable"), "not the single string"),
    ("unknown state", lambda cl: cl.list_groups(states=["Stabel"]), "is not a group state"),
    ("blank type", lambda cl: cl.list_groups(types=[""]), "group type"),
]


@pytest.mark.parametrize("what, call, message", BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
async def test_bad_call_arguments_send_nothing(what, call, message):
    async with FakeCluster(brokers=3) as c:
        c.add_topic("t", 1, end_offsets=10)
        c.add_group("g", offsets={("t", 0): 5})
        async with AsyncGroupsClient(ClientConfig.create(c.bootstrap, retry_backoff_s=0.01)) as client:
            with pytest.raises(ConfigurationError, match=message):
                await call(client)
            await asyncio.sleep(0)  # let anything the call started reach the brokers
            assert c.requests() == []
            assert all(b.connections == 0 for b in c.brokers.values())  # not even a socket


async def test_bad_input_after_a_good_call_sends_nothing_more():
    async with FakeCluster(brokers=3) as c:
        c.add_group("g")
        async with AsyncGroupsClient(ClientConfig.create(c.bootstrap, retry_backoff_s=0.01)) as client:
            assert (await client.describe_groups(["g"])).failures == {}
            c.reset_counts()
            for _, call, _ in BAD_CALLS:
                with pytest.raises(ConfigurationError):
                    await call(client)
        assert c.requests() == []


BAD_CONFIGS = [
    ("empty bootstrap", "", {}, "bootstrap_servers is empty"),
    ("blank bootstrap list", " , ,", {}, "bootstrap_servers is empty"),
    ("no port", "127.0.0.1", {}, "is not 'host:port'"),
    ("port out of range", "127.0.0.1:70000", {}, "outside 1-65535"),
    ("port zero", "127.0.0.1:0", {}, "outside 1-65535"),
    ("port not a number", "127.0.0.1:kafka", {}, "is not 'host:port'"),
    ("unbracketed IPv6", "::1:9092", {}, "is not 'host:port'"),
    ("space inside", "kafka 1:9092", {}, "is not 'host:port'"),
    (
        "unknown SASL mechanism",
        None,
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "GSSAPI",
            "sasl_username": "u",
            "sasl_password": "p",
        },
        "GSSAPI",
    ),
    (
        "SASL without password",
        None,
        {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "u"},
        "sasl_password",
    ),
    ("mechanism without SASL", None, {"sasl_mechanism": "PLAIN"}, "security_protocol is PLAINTEXT"),
    ("unknown protocol", None, {"security_protocol": "TLS"}, "security_protocol"),
    ("negative request timeout", None, {"request_timeout_s": -1}, "request_timeout_s"),
    ("zero call timeout", None, {"call_timeout_s": 0}, "call_timeout_s"),
    ("negative backoff", None, {"retry_backoff_s": -0.1}, "retry_backoff_s"),
    ("missing CA file", None, {"security_protocol": "SSL", "ssl_cafile": "/no/such/ca.pem"}, "ssl_cafile"),
    ("unknown option", None, {"bootstrap": "x:1"}, "unknown client option"),
]


@pytest.mark.parametrize("what, bootstrap, options, message", BAD_CONFIGS, ids=[b[0] for b in BAD_CONFIGS])
async def test_bad_configuration_is_refused_before_connecting(what, bootstrap, options, message):
    async with FakeCluster(brokers=1) as c:
        with pytest.raises(ConfigurationError, match=message):
            ClientConfig.create(c.bootstrap if bootstrap is None else bootstrap, **options)
        assert c.requests() == [] and c.brokers[0].connections == 0


@pytest.mark.parametrize(
    "selector, message",
    [
        (dict(), "no groups selected"),
        (dict(patterns=["orders-[ab"]), "unclosed"),
        (dict(patterns=["re:orders-(["]), "not a valid regular expression"),
        (dict(patterns=[""]), "is empty"),
        (dict(ids="orders"), "not single strings"),
        (dict(ids=["ok", ""]), "non-empty string"),
    ],
)
def test_invalid_group_selection(selector, message):
    with pytest.raises(ConfigurationError, match=message):
        GroupSelector(**selector)
