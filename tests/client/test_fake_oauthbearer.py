"""SASL/OAUTHBEARER end to end: the client's token sources against a real HTTP identity provider
(:mod:`tests.support.oidc`) and the fake cluster validating tokens as Kafka's broker does
(OAuthBearerValidatorCallbackHandler against the JWKS, OAuthBearerUnsecuredValidatorCallbackHandler,
MSK IAM's SigV4 token). Followed on the client: OAuthBearerSaslClient, OAuthBearerClientInitialResponse,
OAuthBearerLoginCallbackHandler / HttpAccessTokenRetriever, ExpiringCredentialRefreshingLogin.

Secrets (the client secret, tokens) appear in no exception, repr or log line."""

from __future__ import annotations

import asyncio
import logging
import time
import traceback

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, AuthenticationError, ClientConfig
from airflow_provider_kgroups.client.auth.providers import fetch_count, forget_tokens
from airflow_provider_kgroups.client.errors import TokenUnavailable, is_retriable
from tests.support.fakekafka import FakeCluster
from tests.support.fakekafka.oauth import JwksValidator, MskIamValidator, UnsecuredValidator
from tests.support.fakeutil import committed, seed
from tests.support.oidc import IdentityProvider

SECRET = "cs-Vq9!secret-never-print"


def oidc_config(c: FakeCluster, idp: IdentityProvider, secret: str = SECRET, **options) -> ClientConfig:
    return ClientConfig.create(
        c.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        retry_backoff_s=0.01,
        sasl_oauthbearer_token_endpoint_url=idp.token_url,
        sasl_oauthbearer_client_id="svc",
        sasl_oauthbearer_client_secret=secret,
        sasl_oauthbearer_scope="kafka",
        **options,
    )


def jwks(idp: IdentityProvider, **options) -> dict:
    return {
        "OAUTHBEARER": JwksValidator(
            idp.jwks_url, expected_audience=("kafka",), expected_issuer=idp.issuer, **options
        )
    }


def everything_said(exc: BaseException) -> str:
    return "\n".join([str(exc), repr(exc), "".join(traceback.format_exception(exc))])


async def test_oidc_client_credentials_end_to_end_one_token_for_every_connection(caplog):
    caplog.set_level(logging.DEBUG)

    with IdentityProvider({"svc": SECRET}) as idp:
        async with FakeCluster(brokers=3, sasl=jwks(idp)) as c:
            seeded = seed(c, 9)
            config = oidc_config(
                c, idp, sasl_oauthbearer_extensions="logicalCluster=lkc-1,identityPoolId=pool-2"
            )
            async with AsyncGroupsClient(config) as client:
                result = await client.fetch_committed_offsets(list(seeded))
            assert committed(result) == seeded and result.failures == {}
            # HttpAccessTokenRetriever: Basic client auth, grant_type=client_credentials, the scope
            assert [(r.auth_scheme, r.client_id, r.grant_type, r.scope) for r in idp.requests] == [
                ("Basic", "svc", "client_credentials", "kafka")
            ]
            assert c.count("SaslHandshake") == c.count("ApiVersions") == 4  # bootstrap + 3 brokers
            assert {e.request.mechanism for e in c.requests("SaslHandshake")} == {"OAUTHBEARER"}
            # KIP-342 extensions reach the broker
            first = c.requests("SaslAuthenticate")[0].request.auth_bytes
            assert first.startswith(b"n,,\x01auth=Bearer ") and first.endswith(
                b"\x01logicalCluster=lkc-1\x01identityPoolId=pool-2\x01\x01"
            )
            assert SECRET not in repr(config) and SECRET not in str(config.redacted())
            token = first.split(b"Bearer ")[1].split(b"\x01")[0].decode()

    assert SECRET not in caplog.text and token not in caplog.text


async def test_the_token_is_cached_per_process_across_clients():
    with IdentityProvider({"svc": SECRET}) as idp:
        async with FakeCluster(brokers=2, sasl=jwks(idp)) as c:
            seed(c, 2)
            config = oidc_config(c, idp)
            for _ in range(3):
                async with AsyncGroupsClient(config) as client:
                    await client.list_groups()
            assert len(idp.requests) == 1 and fetch_count(config.oauthbearer) == 1


async def test_a_short_lived_token_is_refreshed_before_it_expires():
    """ExpiringCredentialRefreshingLogin: a 3 s token is refreshed at 80-85 % of its life (it is
    too short for the 60 s minimum period and 300 s buffer), so new connections after that
    present a new token, and the broker accepts it."""
    with IdentityProvider({"svc": SECRET}, lifetime_s=3) as idp:
        async with FakeCluster(brokers=1, sasl=jwks(idp)) as c:
            seed(c, 1)
            config = oidc_config(c, idp)
            async with AsyncGroupsClient(config) as client:
                await client.list_groups()
            await asyncio.sleep(2.7)  # past 85 % of 3 s: the next token request refreshes
            async with AsyncGroupsClient(config) as client:
                await client.list_groups()
            assert len(idp.requests) == 2
            tokens = [bytes(e.request.auth_bytes) for e in c.requests("SaslAuthenticate")]
            assert len(set(tokens)) == 2


async def test_token_endpoint_401_is_an_authentication_failure_at_once_and_nothing_reaches_kafka():
    with IdentityProvider({"svc": "the-right-one"}) as idp:
        async with FakeCluster(brokers=2, sasl=jwks(idp)) as c:
            started = time.monotonic()
            async with AsyncGroupsClient(oidc_config(c, idp)) as client:
                with pytest.raises(AuthenticationError) as info:
                    await client.list_groups()
            assert time.monotonic() - started < 2 and len(idp.requests) == 1  # not retried
            assert "HTTP 401 (invalid_client - Client authentication failed)" in str(info.value)
            assert idp.token_url in str(info.value) and not is_retriable(info.value)
            assert SECRET not in everything_said(info.value)
            assert c.requests() == []  # the token comes before any socket to a broker


@pytest.mark.parametrize(
    "fault, options, first_gap",
    [
        (lambda idp: idp.fail_next(503, times=2), {}, 0.09),  # 5xx answers
        (
            lambda idp: idp.delay_next(1.0, times=2),
            {"sasl_login_read_timeout_s": 0.3},
            0.39,
        ),  # no answer in time
    ],
)
async def test_a_transient_token_endpoint_failure_is_retried_with_backoff(fault, options, first_gap):
    """HttpAccessTokenRetriever / Retry: sasl.login.retry.backoff.ms (100) doubling between attempts."""
    with IdentityProvider({"svc": SECRET}) as idp:
        fault(idp)
        async with FakeCluster(brokers=1, sasl=jwks(idp)) as c:
            seed(c, 1)
            async with AsyncGroupsClient(oidc_config(c, idp, **options)) as client:
                assert (await client.list_groups()).groups
            assert len(idp.requests) == 3
            gaps = [b.at - a.at for a, b in zip(idp.requests, idp.requests[1:])]
            assert gaps[0] >= first_gap and gaps[1] >= first_gap + 0.1, gaps


async def test_token_endpoint_down_fails_within_the_deadline_naming_the_endpoint():
    with IdentityProvider({"svc": SECRET}) as idp:
        idp.fail_next(503, times=1000)
        async with FakeCluster(brokers=2, sasl=jwks(idp)) as c:
            config = oidc_config(c, idp, connect_timeout_s=1.5, sasl_login_retry_backoff_max_s=0.4)
            started = time.monotonic()
            async with AsyncGroupsClient(config) as client:
                with pytest.raises(TokenUnavailable) as info:
                    await client.list_groups(timeout_s=5)
            elapsed = time.monotonic() - started
            assert 1.3 < elapsed < 3.0, elapsed  # one connect timeout of retries, not one per broker
            assert f"token endpoint {idp.token_url} gave no token" in str(info.value)
            assert "HTTP 503" in str(info.value) and is_retriable(info.value)
            assert len(idp.requests) >= 3 and c.requests() == []


@pytest.mark.parametrize(
    "kind, reason",
    [
        ("expired", "returned a token that expired"),
        ("malformed", r"malformed JWT: 1 section\(s\)"),
        ("no_sub", "without a 'sub' claim"),
    ],
)
async def test_a_bad_jwt_from_the_endpoint_is_refused_with_the_reason(kind, reason):
    with IdentityProvider({"svc": SECRET}) as idp:
        idp.issue_next(kind)
        async with FakeCluster(brokers=1, sasl=jwks(idp)) as c:
            async with AsyncGroupsClient(oidc_config(c, idp)) as client:
                with pytest.raises(AuthenticationError, match=reason) as info:
                    await client.list_groups()
            assert c.requests() == [] and "not-a-jwt" not in str(info.value)


async def test_the_broker_refuses_a_token_for_another_audience():
    """OAuthBearerSaslServer: the RFC 7628 error JSON as a challenge, the client's \\x01, then
    SASL_AUTHENTICATION_FAILED; the client says so at once, no other broker tried."""
    with IdentityProvider({"svc": SECRET}) as idp:
        idp.issue_next("wrong_audience")
        async with FakeCluster(brokers=2, sasl=jwks(idp)) as c:
            async with AsyncGroupsClient(oidc_config(c, idp)) as client:
                with pytest.raises(AuthenticationError, match="invalid_token") as info:
                    await client.list_groups()
            assert not is_retriable(info.value)
            assert c.requests_by_api() == {"ApiVersions": 1, "SaslHandshake": 1, "SaslAuthenticate": 2}
            assert bytes(c.requests("SaslAuthenticate")[1].request.auth_bytes) == b"\x01"


async def test_unsecured_jws_as_the_java_default_login():
    async with FakeCluster(
        brokers=2, sasl={"OAUTHBEARER": UnsecuredValidator(required_scope=("kafka",))}
    ) as c:
        seeded = seed(c, 4)
        from airflow_provider_kgroups.client.properties import config_from_kafka_properties

        config = config_from_kafka_properties(
            {
                "bootstrap.servers": c.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope=",kafka,x";',
            }
        )
        async with AsyncGroupsClient(config) as client:
            assert committed(await client.fetch_committed_offsets(list(seeded))) == seeded


async def test_unsecured_jws_without_the_required_scope_is_insufficient_scope():
    async with FakeCluster(
        brokers=1, sasl={"OAUTHBEARER": UnsecuredValidator(required_scope=("admin",))}
    ) as c:
        config = ClientConfig.create(
            c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauthbearer_unsecured_claims={"sub": "alice"},
        )
        async with AsyncGroupsClient(config) as client:
            with pytest.raises(AuthenticationError, match="insufficient_scope.*admin"):
                await client.list_groups()


def token_callback(config_str: str):
    """A confluent-kafka style oauth_cb (used by the callback tests through its dotted path)."""
    import base64
    import json

    from tests.support.fakekafka.oauth import UnsecuredValidator

    now = time.time()
    claims = {"sub": config_str or "cb-user", "iat": now, "exp": now + 600}
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    return f"{enc({'alg': 'none'})}.{enc(claims)}.", now + 600, claims["sub"], {"traceId": "t1"}


async def test_an_allowed_callback_by_dotted_path_provides_the_token():
    path = "tests.client.test_fake_oauthbearer.token_callback"

    async with FakeCluster(brokers=1, sasl={"OAUTHBEARER": UnsecuredValidator()}) as c:
        seed(c, 1)
        config = ClientConfig.create(
            c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            oauth_cb=path,
            sasl_oauthbearer_config="carol",
            allowed_token_callbacks=[path],
        )
        async with AsyncGroupsClient(config) as client:
            await client.list_groups()
        first = bytes(c.requests("SaslAuthenticate")[0].request.auth_bytes)
        assert first.endswith(b"\x01traceId=t1\x01\x01")  # the callback's extensions
        conn_principals = {conn.session.principal for b in c.brokers.values() for conn in b._connections}
        assert conn_principals <= {"carol"}


async def test_msk_iam_token_signed_by_aws_signer_is_accepted(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTKGROUPS")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "msk-secret-never-print")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_PROFILE", raising=False)

    validator = MskIamValidator("eu-west-1", {"AKIATESTKGROUPS": "msk-secret-never-print"})
    async with FakeCluster(brokers=2, sasl={"OAUTHBEARER": validator}) as c:
        seeded = seed(c, 3)
        config = ClientConfig.create(
            c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauthbearer_method="aws_msk_iam",
            sasl_oauthbearer_aws_region="eu-west-1",
        )
        async with AsyncGroupsClient(config) as client:
            assert committed(await client.fetch_committed_offsets(list(seeded))) == seeded
        assert c.handler_errors == []
        # the wrong region is refused by the broker's check of the signature's scope
        forget_tokens()
        wrong = ClientConfig.create(
            c.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauthbearer_method="aws_msk_iam",
            sasl_oauthbearer_aws_region="us-east-1",
        )
        async with AsyncGroupsClient(wrong) as client:
            with pytest.raises(AuthenticationError, match="invalid_token"):
                await client.list_groups()
