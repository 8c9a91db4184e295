"""KIP-368 SASL re-authentication against the fake cluster, which ends sessions as Kafka's broker
does (SaslServerAuthenticator's session_lifetime_ms: the earlier of connections.max.reauth.ms and
an OAUTHBEARER token's expiry; SocketServer.processCompletedReceives closes an expired channel at
its next request, unprocessed; KafkaChannel.maybeBeginServerReauthentication takes a SaslHandshake
on the same connection). The client renews at 85-95 % of the session (SaslClientAuthenticator,
KafkaChannel.maybeBeginClientReauthentication): no failed request, no reconnect, nothing sent twice,
and a connection the broker closed for an expired session is not a lost response."""

from __future__ import annotations

import asyncio
import time

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, GroupDeletion
from airflow_provider_kgroups.client.errors import ErrorCode
from airflow_provider_kgroups.client.transport.authenticator import Session
from tests.support.fakekafka import FakeCluster
from tests.support.fakekafka.oauth import JwksValidator
from tests.support.fakeutil import seed
from tests.support.oidc import IdentityProvider

PASSWORD = "pw-reauth-never-print"


def scram(c: FakeCluster, **options) -> ClientConfig:
    return ClientConfig.create(
        c.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_username="alice",
        sasl_password=PASSWORD,
        retry_backoff_s=0.01,
        **options,
    )


def test_the_renewal_point_is_85_to_95_percent_of_the_session():
    class Fixed:
        def __init__(self, value):
            self.value = value

        def uniform(self, a, b):
            return a + (b - a) * self.value

    low, high = Session.start(10_000, 100.0, Fixed(0.0)), Session.start(10_000, 100.0, Fixed(1.0))
    assert (low.reauth_at, high.reauth_at) == (100.0 + 8.5, 100.0 + 9.5)  # from when the last token was sent
    assert not low.reauth_due(108.49) and low.reauth_due(108.5)
    assert not low.may_have_expired(109.99) and low.may_have_expired(110.0)
    none = Session.start(0, 1.0)
    assert not none.reauth_due(1e9) and not none.may_have_expired(1e9)


async def test_sessions_renew_on_the_same_connection_across_several_lifetimes():
    async with FakeCluster(
        brokers=1, sasl={"SCRAM-SHA-256": {"alice": PASSWORD}}, connections_max_reauth_ms=1200
    ) as c:
        seeded = seed(c, 3)
        async with AsyncGroupsClient(scram(c)) as client:
            await client.list_groups()
            connections = c.count("ApiVersions")
            ends = time.monotonic() + 4.2  # 3.5 session lifetimes
            calls = 0
            while time.monotonic() < ends:
                result = await client.fetch_committed_offsets(list(seeded))
                assert result.failures == {}
                calls += 1
                await asyncio.sleep(0.15)
            assert client.stats.errors == 0
        assert c.count("ApiVersions") == connections  # no reconnect
        assert c.expired_closes == 0 and c.reauthentications >= 3
        # each renewal is one SaslHandshake plus SCRAM's two SaslAuthenticate, on the live connection
        assert c.count("SaslHandshake") == connections + c.reauthentications
        assert c.count("OffsetFetch") == calls


async def test_in_flight_requests_are_neither_failed_nor_sent_again_during_a_renewal():
    async with FakeCluster(
        brokers=1, sasl={"PLAIN": {"alice": PASSWORD}}, connections_max_reauth_ms=1500, latency_s=0.25
    ) as c:
        seeded = seed(c, 2)
        config = ClientConfig.create(
            c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_username="alice",
            sasl_password=PASSWORD,
        )
        async with AsyncGroupsClient(config) as client:
            await client.describe_groups(list(seeded))
            base = c.count("DescribeGroups")
            tasks = []
            ends = time.monotonic() + 2.5
            while time.monotonic() < ends:  # a request in flight at every moment, 0.25 s each
                tasks.append(asyncio.ensure_future(client.describe_groups(list(seeded))))
                await asyncio.sleep(0.05)
            results = await asyncio.gather(*tasks)
            assert all(r.failures == {} for r in results) and client.stats.errors == 0
        assert c.reauthentications >= 1 and c.expired_closes == 0
        assert c.count("DescribeGroups") - base == len(tasks)  # none sent twice
        assert c.count("ApiVersions") == 2  # the bootstrap connection and broker 0's, never replaced


async def test_oauthbearer_renews_with_a_fresh_token_before_the_token_expires():
    """The session ends with the token (SaslServerAuthenticator: the credential's expiry); the token
    cache refreshes at 80-85 % of the token's life, so each renewal presents a new token."""
    with IdentityProvider({"svc": "s3cret"}, lifetime_s=2.2) as idp:
        async with FakeCluster(brokers=1, sasl={"OAUTHBEARER": JwksValidator(idp.jwks_url)}) as c:
            seeded = seed(c, 2)
            config = ClientConfig.create(
                c.bootstrap,
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="OAUTHBEARER",
                sasl_oauthbearer_token_endpoint_url=idp.token_url,
                sasl_oauthbearer_client_id="svc",
                sasl_oauthbearer_client_secret="s3cret",
            )
            async with AsyncGroupsClient(config) as client:
                await client.list_groups()
                connections = c.count("ApiVersions")
                ends = time.monotonic() + 5.0
                while time.monotonic() < ends:
                    assert (await client.fetch_committed_offsets(list(seeded))).failures == {}
                    await asyncio.sleep(0.2)
                assert client.stats.errors == 0
            assert c.count("ApiVersions") == connections and c.expired_closes == 0
            assert c.reauthentications >= 2
            presented = [bytes(e.request.auth_bytes) for e in c.requests("SaslAuthenticate")]
            assert len(set(presented)) >= 3 and len(idp.requests) >= 3  # a new token for each renewal


async def test_a_delete_cut_off_by_an_expired_session_is_never_read_as_deleted():
    """The DeleteGroups reaches the broker after the session ended (a slow request ahead of it on
    the connection): the broker closes the connection without processing it. That is not a lost
    response, so a later GROUP_ID_NOT_FOUND stays a failure, never "deleted"; a group that exists
    is deleted by the retry, on the broker's word."""
    async with FakeCluster(
        brokers=1, sasl={"PLAIN": {"alice": PASSWORD}}, connections_max_reauth_ms=1500
    ) as c:
        c.add_topic("orders", 1, end_offsets=10)
        c.add_group("old", offsets={("orders", 0): 5})
        config = ClientConfig.create(
            c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_username="alice",
            sasl_password=PASSWORD,
            retry_backoff_s=0.01,
        )
        async with AsyncGroupsClient(config) as client:
            await client.describe_groups(["old", "ghost"])  # every connection authenticated now
            await asyncio.sleep(0.3)  # well before the 85 % renewal point
            c.set_delay(processing_s=1.6, api="DescribeGroups")
            slow = asyncio.ensure_future(client.describe_groups(["old"]))
            await asyncio.sleep(0.05)  # the describe is written first, the delete queues behind it
            deleted = await client.delete_groups(["ghost", "old"])
            assert (await slow).failures == {}
        assert c.expired_closes == 1
        assert deleted.values == {"old": GroupDeletion.DELETED}
        assert deleted.failures["ghost"].code == ErrorCode.GROUP_ID_NOT_FOUND
        assert c.count("DeleteGroups") == 2  # the cut-off one and the retry
