"""SASL (PLAIN, SCRAM-SHA-256/512) and TLS against the fake cluster. Every connection
authenticates before anything else; a wrong password raises AuthenticationError at once
(no other broker is tried, nothing else is sent), and the password appears nowhere: not
in the exception, its chain, the traceback, the config's repr, or any log line."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import traceback

import pytest

from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    AuthenticationError,
    ClientConfig,
    KafkaGroupsError,
    NoBrokerAvailable,
    TopicPartition,
)
from airflow_provider_kgroups.client.errors import is_retriable
from tests.support.fakekafka import FakeCluster, make_self_signed_cert, server_ssl_context

PASSWORD = "pw-Zq8!x7-never-print-me"
WRONG = "wrong-Kt4?y2-never-print-me"
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
#: SaslAuthenticate round trips per connection
ROUND_TRIPS = {"PLAIN": 1, "SCRAM-SHA-256": 2, "SCRAM-SHA-512": 2}


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_self_signed_cert(tmp_path_factory.mktemp("tls"))


def seed(c: FakeCluster) -> dict[str, dict[TopicPartition, int]]:
    c.add_topic("orders", 3, end_offsets=1000)
    out = {}
    for i in range(9):
        c.add_group(f"g{i}", offsets={("orders", i % 3): 10 + i})
        out[f"g{i}"] = {TopicPartition("orders", i % 3): 10 + i}
    return out


def sasl_config(c: FakeCluster, mechanism: str, user: str, password: str, **options) -> ClientConfig:
    return ClientConfig.create(
        c.bootstrap,
        security_protocol=options.pop("security_protocol", "SASL_PLAINTEXT"),
        sasl_mechanism=mechanism,
        sasl_username=user,
        sasl_password=password,
        retry_backoff_s=0.01,
        **options,
    )


def everything_said(exc: BaseException) -> str:
    """The exception as any logger or caller could render it, chained causes included."""
    return "\n".join([str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))])


def assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text


def committed(result):
    return {g: v.committed() for g, v in result.values.items()}


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_sasl_happy_path(mechanism, caplog):
    caplog.set_level(logging.DEBUG)

    async with FakeCluster(brokers=3, sasl={mechanism: {"alice": PASSWORD, "bob": "other"}}) as c:
        seeded = seed(c)
        config = sasl_config(c, mechanism, "alice", PASSWORD)
        async with AsyncGroupsClient(config) as client:
            result = await client.fetch_committed_offsets(list(seeded))
            assert committed(result) == seeded and result.failures == {}
            assert dict(client.stats.by_api) == c.requests_by_api()
            assert repr(config).count(PASSWORD) == 0 and PASSWORD not in str(config.redacted())
        connections = c.count("ApiVersions")
        assert connections == 4  # the bootstrap connection plus one per broker
        assert c.count("SaslHandshake") == connections
        assert c.count("SaslAuthenticate") == connections * ROUND_TRIPS[mechanism]
        assert {e.request.mechanism for e in c.requests("SaslHandshake")} == {mechanism}
        assert c.count("OffsetFetch") == len({c.coordinator_of(g) for g in seeded})

    assert "SaslAuthenticate v" in caplog.text  # the request log was captured, and holds no secret
    assert_no_secret(caplog.text, PASSWORD)


async def test_scram_username_with_reserved_characters():
    user = "svc=ops,team"
    async with FakeCluster(brokers=1, sasl={"SCRAM-SHA-256": {user: PASSWORD}}) as c:
        seeded = seed(c)
        async with AsyncGroupsClient(sasl_config(c, "SCRAM-SHA-256", user, PASSWORD)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_wrong_password_raises_authentication_error_without_the_password(mechanism, caplog):
    caplog.set_level(logging.DEBUG)

    async with FakeCluster(brokers=3, sasl={mechanism: {"alice": PASSWORD}}) as c:
        seed(c)
        async with AsyncGroupsClient(sasl_config(c, mechanism, "alice", WRONG)) as client:
            with pytest.raises(AuthenticationError) as info:
                await client.fetch_committed_offsets(["g1", "g2"])
        text = everything_said(info.value)
        assert "alice" in str(info.value) and mechanism in str(info.value)
        assert_no_secret(text, WRONG, PASSWORD)
        # one connection, one failed exchange, nothing else: no other broker tried
        assert c.requests_by_api() == {
            "ApiVersions": 1,
            "SaslHandshake": 1,
            "SaslAuthenticate": ROUND_TRIPS[mechanism],
        }

    assert "SaslAuthenticate v" in caplog.text
    assert_no_secret(caplog.text, WRONG, PASSWORD)


async def test_unknown_user_and_unoffered_mechanism(caplog):
    caplog.set_level(logging.DEBUG)

    async with FakeCluster(brokers=2, sasl={"SCRAM-SHA-512": {"alice": PASSWORD}}) as c:
        async with AsyncGroupsClient(sasl_config(c, "SCRAM-SHA-512", "mallory", WRONG)) as client:
            with pytest.raises(AuthenticationError) as unknown_user:
                await client.list_groups()
        async with AsyncGroupsClient(sasl_config(c, "PLAIN", "alice", PASSWORD)) as client:
            with pytest.raises(AuthenticationError, match="SCRAM-SHA-512") as unoffered:
                await client.list_groups()
        assert_no_secret(everything_said(unknown_user.value), WRONG)
        assert_no_secret(everything_said(unoffered.value), PASSWORD)
        assert c.count("Metadata") == 0 and c.count("ListGroups") == 0

    assert_no_secret(caplog.text, WRONG, PASSWORD)


async def test_tls_with_a_self_signed_certificate(cert):
    async with FakeCluster(brokers=3, ssl_context=server_ssl_context(cert)) as c:
        seeded = seed(c)
        config = ClientConfig.create(
            c.bootstrap, security_protocol="SSL", ssl_cafile=cert.cert, retry_backoff_s=0.01
        )
        async with AsyncGroupsClient(config) as client:
            result = await client.fetch_committed_offsets(list(seeded))
            ends = await client.log_end_offsets([TopicPartition("orders", p) for p in range(3)])
        assert committed(result) == seeded and result.failures == {}
        assert {tp.partition: v.offset for tp, v in ends.values.items()} == {0: 1000, 1: 1000, 2: 1000}


async def test_sasl_over_tls(cert):
    async with FakeCluster(
        brokers=2, ssl_context=server_ssl_context(cert), sasl={"SCRAM-SHA-512": {"alice": PASSWORD}}
    ) as c:
        seeded = seed(c)
        config = sasl_config(
            c, "SCRAM-SHA-512", "alice", PASSWORD, security_protocol="SASL_SSL", ssl_cafile=cert.cert
        )
        async with AsyncGroupsClient(config) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded
        assert c.count("SaslAuthenticate") == 2 * c.count("ApiVersions")


async def test_tls_with_an_untrusted_certificate_names_the_problem(cert):
    async with FakeCluster(brokers=2, ssl_context=server_ssl_context(cert)) as c:
        config = ClientConfig.create(c.bootstrap, security_protocol="SSL", retry_backoff_s=0.01)
        async with AsyncGroupsClient(config) as client:
            with pytest.raises(AuthenticationError) as info:  # not retried, not another broker
                await client.list_groups(timeout_s=5)
        assert "TLS certificate verification of broker" in str(info.value)
        assert "certificate" in str(info.value).lower() and not is_retriable(info.value)
        assert c.requests() == []  # the handshake failed before any request


@pytest.mark.parametrize("iterations", [1, 1_000_000_000])
async def test_a_scram_server_asking_an_unsafe_iteration_count_is_refused_at_once(iterations):
    """Java's ScramSaslClient refuses fewer than 4096 iterations; more than a Kafka broker stores
    (16384, KIP-554) would hold the client in PBKDF2. Either ends the call with the count named."""
    async with FakeCluster(
        brokers=1, sasl={"SCRAM-SHA-512": {"alice": PASSWORD}}, scram_iterations=iterations
    ) as c:
        seed(c)
        started = time.monotonic()
        async with AsyncGroupsClient(sasl_config(c, "SCRAM-SHA-512", "alice", PASSWORD)) as client:
            with pytest.raises(AuthenticationError, match=f"asked for {iterations} iterations") as info:
                await client.fetch_committed_offsets(["g1"])
        assert time.monotonic() - started < 5
        assert "alice" in str(info.value) and c.bootstrap.split(",")[0] in str(info.value)
        assert not is_retriable(info.value)
        assert_no_secret(everything_said(info.value), PASSWORD)
        # the client answered nothing to the server's first message: no proof was sent
        assert c.requests_by_api() == {"ApiVersions": 1, "SaslHandshake": 1, "SaslAuthenticate": 1}


async def test_a_scram_server_asking_the_most_a_broker_stores_is_accepted():
    async with FakeCluster(
        brokers=1, sasl={"SCRAM-SHA-256": {"alice": PASSWORD}}, scram_iterations=16384
    ) as c:
        seeded = seed(c)
        async with AsyncGroupsClient(sasl_config(c, "SCRAM-SHA-256", "alice", PASSWORD)) as client:
            result = await client.fetch_committed_offsets(list(seeded))
        assert committed(result) == seeded


async def test_a_slow_scram_derivation_never_holds_the_event_loop_past_the_deadline(monkeypatch):
    """PBKDF2 runs in a thread: with a derivation that takes far longer than the connect timeout
    (a machine starved of CPU, played by a derivation that waits on an event), the loop keeps
    running other work and the call ends at its deadline, not when the derivation ends."""
    from airflow_provider_kgroups.client.transport import sasl

    release = threading.Event()
    real_pbkdf2 = sasl.hashlib.pbkdf2_hmac

    def slow_pbkdf2(*args):
        release.wait(30)
        return real_pbkdf2(*args)

    monkeypatch.setattr(sasl.hashlib, "pbkdf2_hmac", slow_pbkdf2)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.05)

    try:
        async with FakeCluster(brokers=1, sasl={"SCRAM-SHA-512": {"alice": PASSWORD}}) as c:
            seed(c)
            config = sasl_config(
                c, "SCRAM-SHA-512", "alice", PASSWORD, connect_timeout_s=0.5, call_timeout_s=1.5
            )
            ticking = asyncio.get_running_loop().create_task(ticker())
            started = time.monotonic()
            async with AsyncGroupsClient(config) as client:
                with pytest.raises(KafkaGroupsError) as info:
                    await client.fetch_committed_offsets(["g1"])
            elapsed = time.monotonic() - started
            ticking.cancel()
            assert elapsed < 5, elapsed
            assert ticks >= 10  # the loop ran the ticker while derivations were pending
            assert "took over 0.5" in everything_said(info.value)
            assert not release.is_set()
    finally:
        release.set()  # let the derivation threads end
