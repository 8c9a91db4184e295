"""OAUTHBEARER configuration and wire format, without a network: the client first message
(KIP-255, RFC 7628, OAuthBearerClientInitialResponse.toBytes), KIP-342 extension rules, the
JAAS and property names Java (KIP-768, KIP-1139) and librdkafka users write, the refresh time
(ExpiringCredentialRefreshingLogin.refreshMs), HttpAccessTokenRetriever's request, and every
bad input refused before any network call with a message naming it and never a secret."""

from __future__ import annotations

import base64
import importlib.util
import random

import pytest

from airflow_provider_kgroups.client import ClientConfig, ConfigurationError
from airflow_provider_kgroups.client.auth.config import OAuthBearerConfig, TokenSource
from airflow_provider_kgroups.client.auth.jaas import parse_jaas
from airflow_provider_kgroups.client.auth.oidc import authorization_header, endpoint_name, request_body
from airflow_provider_kgroups.client.auth.token import Token, refresh_at
from airflow_provider_kgroups.client.properties import (
    config_from_kafka_properties,
    config_to_kafka_properties,
)
from airflow_provider_kgroups.client.transport.sasl import OAuthBearerMechanism

SECRET = "cs-Zx8#never-print"
OIDC = {
    "security_protocol": "SASL_SSL",
    "sasl_mechanism": "OAUTHBEARER",
    "sasl_oauthbearer_token_endpoint_url": "https://idp.example.com/oauth2/token",
    "sasl_oauthbearer_client_id": "svc",
    "sasl_oauthbearer_client_secret": SECRET,
}


def test_client_first_message_is_rfc_7628_with_kip_342_extensions():
    plain = OAuthBearerMechanism("eyJ.abc.def")
    assert plain.first() == b"n,,\x01auth=Bearer eyJ.abc.def\x01\x01"
    with_ext = OAuthBearerMechanism("t.o.k", (("logicalCluster", "lkc-1"), ("identityPoolId", "pool-2")))
    assert (
        with_ext.first()
        == b"n,,\x01auth=Bearer t.o.k\x01logicalCluster=lkc-1\x01identityPoolId=pool-2\x01\x01"
    )
    assert with_ext.step(b"") is None  # an empty server answer completes
    assert (
        with_ext.step(b'{"status":"invalid_token"}') == b"\x01"
    )  # an error: answer \x01, the broker fails it
    assert with_ext.server_error == '{"status":"invalid_token"}'
    assert "t.o.k" not in repr(with_ext)


@pytest.mark.parametrize(
    "extensions, named",
    [
        ("auth=x", "'auth' is invalid"),
        ("log-cluster=x", "'log-cluster' is invalid"),
        ({"cluster": "a\x00b"}, "'cluster' has a value"),
    ],
)
def test_extensions_follow_rfc_7628(extensions, named):
    with pytest.raises(ConfigurationError, match=named):
        ClientConfig.create("a:1", **OIDC, sasl_oauthbearer_extensions=extensions)


def test_http_access_token_retriever_request():
    # Basic auth over "id:secret" in the standard (not URL-safe) base64 alphabet (KAFKA-14496)
    header = authorization_header("svc", "a?b>c")
    assert header == "Basic " + base64.b64encode(b"svc:a?b>c").decode()
    assert request_body(None) == "grant_type=client_credentials"
    assert request_body(" kafka read ") == "grant_type=client_credentials&scope=kafka+read"
    assert (
        endpoint_name("https://user:pw@idp.example.com:8443/t?client_secret=x#f")
        == "https://idp.example.com:8443/t"
    )


def config(**fields) -> OAuthBearerConfig:
    return OAuthBearerConfig(TokenSource.UNSECURED, unsecured_claims=(("sub", "a"),), **fields)


class Rng(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def test_refresh_time_follows_expiring_credential_refreshing_login():
    c = config()
    hour = Token("x", expires_at=3600.0, issued_at=0.0)
    # 0.8 of the life plus up to 0.05 jitter, from the token's start
    assert refresh_at(hour, now=10.0, config=c, rng=Rng(0.0)) == pytest.approx(2880.0)
    assert refresh_at(hour, now=10.0, config=c, rng=Rng(1.0)) == pytest.approx(3060.0)
    # never inside the 300 s buffer before expiry
    assert refresh_at(hour, now=10.0, config=config(refresh_window_factor=1.0), rng=Rng(0.0)) == 3300.0
    # never sooner than the 60 s minimum period from now
    late = Token("x", expires_at=3600.0, issued_at=-100_000.0)
    assert refresh_at(late, now=1000.0, config=c, rng=Rng(0.0)) == 1060.0
    # too short-lived for both buffers: the factor of what remains
    short = Token("x", expires_at=130.0, issued_at=100.0)
    assert refresh_at(short, now=100.0, config=c, rng=Rng(0.0)) == pytest.approx(124.0)
    assert refresh_at(short, now=200.0, config=c) == 200.0  # expired: now


def test_jaas_config_syntax():
    module, options = parse_jaas(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'clientId="svc" clientSecret="a \\"quoted\\"; one" scope=kafka;'
    )
    assert module.endswith("OAuthBearerLoginModule")
    assert options == {"clientId": "svc", "clientSecret": 'a "quoted"; one', "scope": "kafka"}
    with pytest.raises(ConfigurationError, match="control flag"):
        parse_jaas('OAuthBearerLoginModule clientId="x";')
    with pytest.raises(ConfigurationError, match="exactly one login module") as info:
        parse_jaas(f'A required a="1"; B required b="{SECRET}";')
    assert SECRET not in str(info.value)
    with pytest.raises(ConfigurationError, match="after option 'clientId'") as info:
        parse_jaas(f'A required clientId="x" clientSecret="{SECRET}')
    assert SECRET not in str(info.value)


def java(**extra) -> dict:
    return {
        "bootstrap.servers": "k:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        **extra,
    }


def test_java_kip_768_and_kip_1139_and_librdkafka_names_mean_the_same():
    url = "https://idp.example.com/oauth2/token"
    kip768 = config_from_kafka_properties(
        java(
            **{
                "sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
                "sasl.oauthbearer.token.endpoint.url": url,
                "sasl.login.connect.timeout.ms": "15000",
                "sasl.login.read.timeout.ms": "5000",
                "sasl.login.retry.backoff.ms": "200",
                "sasl.login.retry.backoff.max.ms": "4000",
                "sasl.login.refresh.window.factor": "0.9",
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                f'clientId="svc" clientSecret="{SECRET}" scope="kafka" extension_logicalCluster="lkc-1";',
            }
        )
    )
    kip1139 = config_from_kafka_properties(
        java(
            **{
                "sasl.oauthbearer.jwt.retriever.class": "org.apache.kafka.common.security.oauthbearer."
                "ClientCredentialsJwtRetriever",
                "sasl.oauthbearer.token.endpoint.url": url,
                "sasl.oauthbearer.client.credentials.client.id": "svc",
                "sasl.oauthbearer.client.credentials.client.secret": SECRET,
                "sasl.oauthbearer.scope": "kafka",
                "sasl.oauthbearer.extensions": "logicalCluster=lkc-1",
            }
        )
    )
    librdkafka = config_from_kafka_properties(
        java(
            **{
                "sasl.oauthbearer.method": "oidc",
                "sasl.oauthbearer.token.endpoint.url": url,
                "sasl.oauthbearer.client.id": "svc",
                "sasl.oauthbearer.client.secret": SECRET,
                "sasl.oauthbearer.scope": "kafka",
                "sasl.oauthbearer.extensions": "logicalCluster=lkc-1",
            }
        )
    )
    for c in (kip768, kip1139, librdkafka):
        o = c.oauthbearer
        assert (o.source, o.token_endpoint_url, o.client_id, o.client_secret, o.scope, o.extensions) == (
            TokenSource.OIDC,
            url,
            "svc",
            SECRET,
            "kafka",
            (("logicalCluster", "lkc-1"),),
        )
        assert SECRET not in repr(c) and SECRET not in str(c.redacted())
    o = kip768.oauthbearer
    assert (
        o.connect_timeout_s,
        o.read_timeout_s,
        o.retry_backoff_s,
        o.retry_backoff_max_s,
        o.refresh_window_factor,
    ) == (15.0, 5.0, 0.2, 4.0, 0.9)
    # written back for the Spark data source's properties file, read the same
    again = config_from_kafka_properties(config_to_kafka_properties(kip1139))
    assert again.oauthbearer == kip1139.oauthbearer


def test_aws_msk_iam_from_the_properties_msk_documents_for_java():
    c = config_from_kafka_properties(
        {
            "bootstrap.servers": "b-1.demo.abc123.c2.kafka.eu-central-1.amazonaws.com:9098",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "AWS_MSK_IAM",
            "sasl.jaas.config": 'software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="analytics";',
            "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
        }
    )
    assert c.sasl_mechanism == "OAUTHBEARER"
    assert (c.oauthbearer.source, c.oauthbearer.aws_region, c.oauthbearer.aws_profile) == (
        TokenSource.AWS_MSK_IAM,
        "eu-central-1",
        "analytics",
    )
    serverless = ClientConfig.create(
        "boot-abc.c1.kafka-serverless.us-east-2.amazonaws.com:9098",
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
    )
    assert (serverless.oauthbearer.source, serverless.oauthbearer.aws_region) == (
        TokenSource.AWS_MSK_IAM,
        "us-east-2",
    )
    assert config_from_kafka_properties(config_to_kafka_properties(c)).oauthbearer == c.oauthbearer


def test_plain_and_scram_credentials_in_sasl_jaas_config():
    c = config_from_kafka_properties(
        {
            "bootstrap.servers": "k:1",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
            f'password="{SECRET}";',
        }
    )
    assert (c.sasl_username, c.sasl_password) == ("u", SECRET)


@pytest.mark.parametrize(
    "options, named",
    [
        ({}, "needs a token source"),
        (
            {"sasl_oauthbearer_client_id": "svc", "sasl_oauthbearer_client_secret": SECRET},
            "needs sasl.oauthbearer.token.endpoint.url",
        ),
        (
            {
                "sasl_oauthbearer_token_endpoint_url": "idp.example.com/token",
                "sasl_oauthbearer_client_id": "svc",
                "sasl_oauthbearer_client_secret": SECRET,
            },
            "is not an http\\(s\\) URL",
        ),
        (
            {
                "sasl_oauthbearer_token_endpoint_url": "file:///etc/token",
                "sasl_oauthbearer_client_id": "svc",
                "sasl_oauthbearer_client_secret": SECRET,
            },
            "is not an http\\(s\\) URL",
        ),
        (
            {
                "sasl_oauthbearer_token_endpoint_url": "https://idp/t",
                "sasl_oauthbearer_client_secret": SECRET,
            },
            "needs the client id: set sasl.oauthbearer.client.credentials.client.id",
        ),
        (
            {"sasl_oauthbearer_token_endpoint_url": "https://idp/t", "sasl_oauthbearer_client_id": "svc"},
            "needs the client secret",
        ),
        ({"oauth_cb": "not a path"}, "is not a dotted path"),
        ({"oauth_cb": "my_company.auth.token"}, r"not allowed: only callbacks listed in \[kgroups\]"),
        (
            {"oauth_cb": "my_company.auth.token", "allowed_token_callbacks": "my_company.auth.token"},
            "module 'my_company.auth' cannot be imported",
        ),
        ({"oauth_cb": "json.nothing_here", "allowed_token_callbacks": ["json.nothing_here"]}, "no callable"),
        (
            {"oauth_cb": "json.nothing_here", "allowed_token_callbacks": ["json.*"]},
            "no callable",
        ),  # module.* allows
        ({"oauth_cb": "json.decoder.scanstring", "allowed_token_callbacks": ["json.*"]}, "is not allowed"),
        ({"sasl_oauthbearer_method": "kerberos"}, "sasl_oauthbearer_method 'kerberos' is unknown"),
        ({"sasl_oauthbearer_method": "aws_msk_iam"}, "needs the cluster's AWS region"),
        (
            {"sasl_oauthbearer_method": "aws_msk_iam", "sasl_oauthbearer_aws_region": "Frankfurt"},
            "is not one",
        ),
        (
            {**OIDC, "sasl_login_refresh_window_factor": 0.3},
            "refresh_window_factor must be a number between 0.5",
        ),
        ({**OIDC, "sasl_login_retry_backoff_s": "fast"}, "must be a number"),
    ],
)
def test_bad_oauthbearer_input_is_named_before_any_network_call(options, named):
    fields = {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", **options}
    with pytest.raises(ConfigurationError, match=named) as info:
        ClientConfig.create("a:9093", **fields)
    assert SECRET not in str(info.value)


def test_mechanism_and_options_must_agree():
    with pytest.raises(ConfigurationError, match="OAUTHBEARER option.*set but sasl_mechanism is PLAIN"):
        ClientConfig.create(
            "a:1",
            security_protocol="SASL_SSL",
            sasl_mechanism="PLAIN",
            sasl_username="u",
            sasl_password="p",
            sasl_oauthbearer_client_id="x",
        )
    with pytest.raises(ConfigurationError, match="are not used by OAUTHBEARER"):
        ClientConfig.create("a:1", **OIDC, sasl_username="u", sasl_password="p")
    with pytest.raises(ConfigurationError, match="security_protocol is PLAINTEXT"):
        ClientConfig.create(
            "a:1",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauthbearer_token_endpoint_url="https://i/t",
            sasl_oauthbearer_client_id="c",
            sasl_oauthbearer_client_secret=SECRET,
        )


def test_msk_iam_without_the_msk_extra_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "aws_msk_iam_sasl_signer" else real(name, *a),
    )
    with pytest.raises(ConfigurationError, match=r"pip install 'airflow-provider-kgroups\[msk\]'"):
        ClientConfig.create(
            "b-1.x.y.c2.kafka.us-east-1.amazonaws.com:9098",
            security_protocol="SASL_SSL",
            sasl_mechanism="OAUTHBEARER",
        )


def readme_properties_blocks() -> dict[str, str]:
    """The client.properties files the documentation's "Logging in with OAUTHBEARER" (docs/connections.rst)
    tells users to write, by the title of the subsection they are in."""
    from pathlib import Path

    text = Path(__file__).resolve().parents[2].joinpath("docs", "connections.rst").read_text()
    section = text[text.index("Logging in with OAUTHBEARER") : text.index(".. _connection-kgroups-connect:")]
    blocks, title, lines = {}, "", section.splitlines()
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and lines[i + 1].startswith("^^^^"):
            title = line
        if line.endswith("::") and "client.properties" in " ".join(lines[max(0, i - 2) : i + 1]):
            body = []
            for follow in lines[i + 2 :]:
                if follow and not follow.startswith("   "):
                    break
                body.append(follow[3:])
            blocks[title] = "\n".join(body).strip() + "\n"
    return blocks


def test_the_readme_properties_files_are_read_as_they_say(tmp_path, monkeypatch):
    from airflow_provider_kgroups.client.auth import config as auth_config
    from airflow_provider_kgroups.client.properties import read_properties_file

    monkeypatch.setenv("AIRFLOW__KGROUPS__ALLOWED_TOKEN_CALLBACKS", "my_company.kafka_auth.google_token")
    monkeypatch.setattr(auth_config, "load_callback", lambda path: print)  # the docs' module is the user's
    blocks = readme_properties_blocks()
    expected = {
        "Amazon MSK": TokenSource.AWS_MSK_IAM,
        "Confluent Cloud": TokenSource.OIDC,
        "An OIDC provider": TokenSource.OIDC,
        "Google Cloud": TokenSource.CALLBACK,
    }
    assert {next(k for k in expected if t.startswith(k)) for t in blocks} == set(expected)
    for title, text in blocks.items():
        path = tmp_path / "client.properties"
        path.write_text(text)
        props = read_properties_file(str(path))
        props.pop("ssl.ca.location", None)  # a path on the user's machine
        props.setdefault("bootstrap.servers", "b-1.analytics.abc123.c2.kafka.eu-west-1.amazonaws.com:9098")
        c = config_from_kafka_properties(props)
        assert c.oauthbearer.source is next(v for k, v in expected.items() if title.startswith(k)), title
        if title.startswith("Confluent"):  # java.util.Properties line continuations
            assert c.oauthbearer.extensions == (
                ("logicalCluster", "lkc-abc123"),
                ("identityPoolId", "pool-XyZ1"),
            )
            assert c.oauthbearer.client_id == "airflow-kgroups"
