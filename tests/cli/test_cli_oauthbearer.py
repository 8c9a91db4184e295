"""``kgroups`` with OAUTHBEARER from a Java-style client.properties (what Java users already hand
kafka-consumer-groups.sh --command-config): OIDC client credentials against a real local
identity provider; bad input exits 2 before any request to the identity provider or a broker;
a token endpoint that refuses the credentials exits 3 (unreachable: authentication) at once."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNREACHABLE, main
from tests.support.fakekafka import FakeCluster
from tests.support.fakekafka.oauth import JwksValidator
from tests.support.oidc import IdentityProvider

SECRET = "cli-secret-never-print"
JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'clientId="svc" clientSecret="{secret}" scope="kafka";'
)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def properties(tmp_path, name: str, **values: str) -> str:
    path = tmp_path / name
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    return str(path)


def java_oidc(tmp_path, token_url: str, secret: str = SECRET, name: str = "client.properties") -> str:
    return properties(
        tmp_path,
        name,
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            "sasl.oauthbearer.token.endpoint.url": token_url,
            "sasl.jaas.config": JAAS.format(secret=secret),
        },
    )


def test_lag_with_a_java_oidc_properties_file(capsys, tmp_path):
    with (
        IdentityProvider({"svc": SECRET}) as idp,
        FakeCluster.running_in_thread(brokers=2, sasl={"OAUTHBEARER": JwksValidator(idp.jwks_url)}) as c,
    ):
        c.add_topic("orders", 2, end_offsets=100)
        c.add_group("billing", offsets={("orders", 0): 90, ("orders", 1): 100})
        code, out, err = run(
            capsys,
            "-b",
            c.bootstrap,
            "--command-config",
            java_oidc(tmp_path, idp.token_url),
            "--format",
            "json",
            "lag",
            "billing",
        )
        assert code == EXIT_OK, err
        assert json.loads(out)["groups"]["billing"]["total_lag"] == 10
        assert len(idp.requests) == 1 and SECRET not in out + err


def test_a_refused_client_secret_exits_unreachable_naming_the_endpoint(capsys, tmp_path):
    with (
        IdentityProvider({"svc": "the-real-one"}) as idp,
        FakeCluster.running_in_thread(brokers=1, sasl={"OAUTHBEARER": JwksValidator(idp.jwks_url)}) as c,
    ):
        code, out, err = run(
            capsys, "-b", c.bootstrap, "--command-config", java_oidc(tmp_path, idp.token_url), "groups"
        )
        assert code == EXIT_UNREACHABLE and out == ""
        assert f"token endpoint {idp.token_url} refused the client credentials" in err and "HTTP 401" in err
        assert SECRET not in err and c.requests() == []


def test_bad_oauthbearer_input_exits_2_before_any_request(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW__KGROUPS__ALLOWED_TOKEN_CALLBACKS", raising=False)
    base = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    jaas = JAAS.format(secret=SECRET)
    cases = [
        ({"sasl.jaas.config": jaas}, "needs sasl.oauthbearer.token.endpoint.url"),
        (
            {"sasl.oauthbearer.token.endpoint.url": "idp.example.com/token", "sasl.jaas.config": jaas},
            "is not an http(s) URL",
        ),
        (
            {
                "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/t",
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'clientId="svc";',
            },
            "needs the client secret",
        ),
        (
            {
                "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/t",
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                f'clientSecret="{SECRET}";',
            },
            "needs the client id",
        ),
        ({"oauth_cb": "my_company.kafka_auth.token"}, "is not allowed"),
        (
            {"sasl.login.callback.handler.class": "com.example.MyHandler", "sasl.jaas.config": jaas},
            "sasl.login.callback.handler.class=com.example.MyHandler is not supported",
        ),
        ({"sasl.jaas.config": f'OAuthBearerLoginModule clientSecret="{SECRET}";'}, "control flag"),
    ]
    with IdentityProvider({"svc": SECRET}) as idp, FakeCluster.running_in_thread(brokers=1) as c:
        for i, (values, fragment) in enumerate(cases):
            path = properties(tmp_path, f"bad-{i}.properties", **base, **values)
            code, out, err = run(capsys, "-b", c.bootstrap, "--command-config", path, "groups")
            assert (code, out) == (EXIT_BAD_INPUT, ""), (values, err)
            assert fragment in err and SECRET not in err, (fragment, err)
        assert c.requests() == [] and idp.requests == []
