"""SASL on the real broker: SCRAM-SHA-256/512 and OAUTHBEARER with an unsecured JWS on the ``kafka``
fixture; OAUTHBEARER with JWTs the broker checks against the tests' identity provider's JWKS
(``OAuthBearerValidatorCallbackHandler``) and KIP-368 re-authentication on ``kafka_short``
(sessions of 3 s). Secrets never appear in an error."""

from __future__ import annotations

import time

import pytest

from airflow_provider_kgroups.client import AuthenticationError, ClientConfig, GroupsClient, TopicPartition
from tests.support.kafka_clusters import OIDC_CLIENTS, REAUTH_MS, SCRAM_ALICE
from tests.support.kafka_clusters import SASL_LISTENER as SHORT_LISTENER
from tests.support.pytest_kafka import SASL_LISTENER, USERS


@pytest.fixture(scope="module")
def committed_group(kafka_seed):
    topic, group = "auth-t", "auth-g"
    kafka_seed.create_topic(topic, partitions=1)
    kafka_seed.produce(topic, 0, 2)
    kafka_seed.commit(group, {(topic, 0): 1})
    return group, TopicPartition(topic, 0)


def _offsets(config: ClientConfig, group: str) -> dict:
    with GroupsClient(config) as client:
        result = client.fetch_committed_offsets([group])
    assert result.failures == {}
    return {tp: c.offset for tp, c in result.values[group].partitions.items()}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_password_mechanisms(kafka, committed_group, mechanism):
    group, tp = committed_group
    config = ClientConfig.create(
        kafka.address(SASL_LISTENER),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_username="alice",
        sasl_password=USERS["alice"],
    )
    assert _offsets(config, group) == {tp: 1}


def test_a_wrong_scram_password_is_an_authentication_error_that_keeps_the_secret(kafka, committed_group):
    wrong = "not-alice-secret-never-print"
    config = ClientConfig.create(
        kafka.address(SASL_LISTENER),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="alice",
        sasl_password=wrong,
        call_timeout_s=15,
    )
    with GroupsClient(config) as client, pytest.raises(AuthenticationError) as raised:
        client.fetch_committed_offsets([committed_group[0]])
    said = f"{raised.value!s} {raised.value!r}"
    assert "Authentication failed" in said and wrong not in said


def test_oauthbearer_unsecured_jws(kafka, committed_group):
    group, tp = committed_group
    config = ClientConfig.create(
        kafka.address(SASL_LISTENER),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_method="unsecured",
        sasl_oauthbearer_unsecured_claims={"sub": "alice"},
    )
    assert _offsets(config, group) == {tp: 1}


def _oidc(cluster, **options) -> ClientConfig:
    [(client_id, secret)] = OIDC_CLIENTS.items()
    return ClientConfig.create(
        cluster.address(SHORT_LISTENER),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauthbearer_token_endpoint_url=cluster.idp.token_url,
        sasl_oauthbearer_client_id=client_id,
        sasl_oauthbearer_client_secret=secret,
        sasl_oauthbearer_scope="kafka",
        **options,
    )


@pytest.fixture(scope="module")
def short_group(kafka_short):
    from demo.seed import Seeder

    topic, group = "reauth-t", "reauth-g"
    with Seeder(kafka_short.bootstrap) as seed:
        seed.create_topic(topic, partitions=1)
        seed.produce(topic, 0, 3)
        seed.commit(group, {(topic, 0): 2})
    return group, TopicPartition(topic, 0)


def test_jwts_checked_against_the_jwks(kafka_short, short_group):
    group, tp = short_group
    assert _offsets(_oidc(kafka_short), group) == {tp: 2}
    assert kafka_short.idp.jwks_requests >= 1, "the broker fetched the identity provider's keys"


def test_a_jwt_for_another_audience_is_refused(kafka_short, short_group):
    kafka_short.idp.issue_next("wrong_audience")
    with (
        GroupsClient(_oidc(kafka_short, call_timeout_s=15)) as client,
        pytest.raises(AuthenticationError) as raised,
    ):
        client.fetch_committed_offsets([short_group[0]])
    said = f"{raised.value!s} {raised.value!r}"
    assert "OAUTHBEARER" in said and OIDC_CLIENTS["svc"] not in said


@pytest.mark.parametrize("mechanism", ["OAUTHBEARER", "SCRAM-SHA-256"])
def test_sessions_are_renewed_on_the_same_connection_across_several_lifetimes(
    kafka_short, short_group, mechanism
):
    """KIP-368: the broker ends each session after connections.max.reauth.ms (3 s) and closes a
    connection whose session expired at its next request. Calls every 0.3 s for 3.5 lifetimes: none
    fails, the connections stay the same, the one in use was re-authenticated at least 3 times."""
    group, tp = short_group
    if mechanism == "OAUTHBEARER":
        config = _oidc(kafka_short)
    else:
        _, user, password = SCRAM_ALICE
        config = ClientConfig.create(
            kafka_short.address(SHORT_LISTENER),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_username=user,
            sasl_password=password,
        )
    with GroupsClient(config) as client:
        client.fetch_committed_offsets([group])
        connections = {id(conn): conn for conn in client.aclient.pool.live()}
        ends = time.monotonic() + 3.5 * REAUTH_MS / 1000
        calls = 0
        while time.monotonic() < ends:
            offsets = client.fetch_committed_offsets([group])
            ends_now = client.log_end_offsets([tp])
            assert offsets.failures == {} and ends_now.failures == {}
            assert offsets.values[group].partitions[tp].offset == 2 and ends_now.values[tp].offset == 3
            calls += 1
            time.sleep(0.3)
        assert client.stats.errors == 0
        live = {id(conn): conn for conn in client.aclient.pool.live()}
        assert live.keys() == connections.keys(), "no connection was closed and opened again"
        # the connection that carried the calls renewed its session 3 times; an idle one (the
        # bootstrap connection) renews before its next request, whenever that comes
        assert max(conn.authenticator.reauthentications for conn in live.values()) >= 3, [
            conn.authenticator.reauthentications for conn in live.values()
        ]
    assert calls >= 20
