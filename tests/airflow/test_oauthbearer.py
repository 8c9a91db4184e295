"""OAUTHBEARER through Airflow: the kgroups form's fields, the official kafka connection's
librdkafka and Java keys, oauth_cb behind the allow list ([kgroups] allowed_token_callbacks, or
the official provider's [apache_kafka] callback_allowlist, as KafkaBaseHook._resolve_callbacks
guards it), and a deferred check that outlives several SASL sessions (KIP-368) without a
reconnect. The client secret and the tokens stay out of logs, events and trigger kwargs."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
import time
import uuid

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from airflow_provider_kgroups.lag.gate import GateSpec
from airflow_provider_kgroups.triggers.lag import ConsumerLagTrigger
from tests.support.fakekafka import FakeCluster
from tests.support.fakekafka.oauth import JwksValidator, UnsecuredValidator
from tests.support.oidc import IdentityProvider

SECRET = f"cs-{uuid.uuid4().hex}"
PROBE = "tests.airflow.oauth_probe"


@pytest.fixture(scope="module")
def idp():
    with IdentityProvider({"svc": SECRET}) as provider:
        yield provider


@pytest.fixture(scope="module")
def oauth_cluster(idp):
    with FakeCluster.running_in_thread(
        brokers=1, sasl={"OAUTHBEARER": JwksValidator(idp.jwks_url)}
    ) as cluster:
        cluster.add_topic("orders", partitions=1, end_offsets=10)
        cluster.add_group("billing", offsets={("orders", 0): 7})
        yield cluster


async def first_event(trigger: ConsumerLagTrigger) -> dict:
    async with asyncio.timeout(30):
        async for event in trigger.run():
            return event.payload


def connections(kgroups_conn, cluster, idp, secret=SECRET) -> dict[str, str]:
    return {
        "kgroups": kgroups_conn(
            "kg_oidc",
            "kgroups",
            host=cluster.bootstrap,
            extra={
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauthbearer_token_endpoint_url": idp.token_url,
                "sasl_oauthbearer_client_id": "svc",
                "sasl_oauthbearer_client_secret": secret,
                "sasl_oauthbearer_scope": "kafka",
            },
        ),
        "kafka-librdkafka": kgroups_conn(
            "kafka_oidc",
            "kafka",
            extra={
                "bootstrap.servers": cluster.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.method": "oidc",
                "sasl.oauthbearer.client.id": "svc",
                "sasl.oauthbearer.client.secret": secret,
                "sasl.oauthbearer.token.endpoint.url": idp.token_url,
                "group.id": "ignored",
            },
        ),
        "kafka-java": kgroups_conn(
            "kafka_java_oidc",
            "kafka",
            extra={
                "bootstrap.servers": cluster.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.token.endpoint.url": idp.token_url,
                "sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                f'clientId="svc" clientSecret="{secret}";',
            },
        ),
    }


@pytest.mark.parametrize("kind", ["kgroups", "kafka-librdkafka", "kafka-java"])
def test_every_connection_form_logs_in_with_oidc(kind, oauth_cluster, idp, kgroups_conn, caplog, capfd):
    conn_id = connections(kgroups_conn, oauth_cluster, idp)[kind]
    caplog.set_level(logging.DEBUG)
    hook = KafkaGroupsHook(conn_id)
    assert hook.test_connection() == (True, "Connected: 1 broker(s), 1 topic(s).")
    try:
        snapshot = KafkaGroupsHook(conn_id).snapshot(["billing"])
    finally:
        hook.close()
    assert snapshot.groups["billing"].total_lag == 3
    out = capfd.readouterr()
    said = caplog.text + out.out + out.err
    assert f"OAUTHBEARER with OIDC client credentials at {idp.token_url} as client 'svc'" in said
    assert SECRET not in said


def test_wrong_client_secret_fails_the_connection_test_naming_the_endpoint(
    oauth_cluster, idp, kgroups_conn, capfd
):
    wrong = f"wrong-{uuid.uuid4().hex}"
    conn_id = connections(kgroups_conn, oauth_cluster, idp, secret=wrong)["kgroups"]
    ok, message = KafkaGroupsHook(conn_id).test_connection()
    assert ok is False and "HTTP 401" in message and idp.token_url in message
    out = capfd.readouterr()
    assert wrong not in message + out.out + out.err


def test_a_token_callback_is_refused_unless_allowed_and_then_imported(kgroups_conn, monkeypatch):
    with FakeCluster.running_in_thread(brokers=1, sasl={"OAUTHBEARER": UnsecuredValidator()}) as cluster:
        conn_id = kgroups_conn(
            "kafka_cb",
            "kafka",
            extra={
                "bootstrap.servers": cluster.bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "oauth_cb": f"{PROBE}.token",
                "sasl.oauthbearer.config": "dora",
            },
        )
        monkeypatch.delenv("AIRFLOW__KGROUPS__ALLOWED_TOKEN_CALLBACKS", raising=False)
        monkeypatch.delenv("AIRFLOW__APACHE_KAFKA__CALLBACK_ALLOWLIST", raising=False)
        sys.modules.pop(PROBE, None)
        with pytest.raises(
            ConfigurationError,
            match=r"oauth_cb '.*oauth_probe.token' is not allowed.*"
            r"\[kgroups\] allowed_token_callbacks",
        ):
            KafkaGroupsHook(conn_id).client_config
        assert PROBE not in sys.modules  # refused before anything was imported
        monkeypatch.setenv("AIRFLOW__KGROUPS__ALLOWED_TOKEN_CALLBACKS", "other.module.fn")
        with pytest.raises(ConfigurationError, match="not allowed"):
            KafkaGroupsHook(conn_id).client_config
        # the official provider's allow list means the same for the same key
        monkeypatch.setenv("AIRFLOW__APACHE_KAFKA__CALLBACK_ALLOWLIST", f"{PROBE}.token")
        hook = KafkaGroupsHook(conn_id)
        try:
            assert hook.test_connection()[0] is True
        finally:
            hook.close()
        assert sys.modules[PROBE].calls == ["dora"]  # called with sasl.oauthbearer.config


async def test_a_deferred_check_outlives_several_sessions_without_reconnecting(kgroups_conn, caplog):
    """A ConsumerLagTrigger polling for 4.5 s of 1.5 s sessions bounded by 1.6 s tokens: every
    renewal on the same connection, each with a fresh token; nothing fails, nothing reconnects."""
    caplog.set_level(logging.DEBUG)
    with (
        IdentityProvider({"svc": SECRET}, lifetime_s=1.6) as provider,
        FakeCluster.running_in_thread(
            brokers=1, sasl={"OAUTHBEARER": JwksValidator(provider.jwks_url)}, connections_max_reauth_ms=1500
        ) as c,
    ):
        c.add_topic("orders", partitions=1, end_offsets=10)
        c.add_group("billing", offsets={("orders", 0): 7})
        conn_id = connections(kgroups_conn, c, provider)["kgroups"]
        spec = GateSpec.parse(
            group_ids=("billing",), topics=("orders",), lag_mode="threshold", max_total_lag=0
        ).to_dict()
        now_ms = int(time.time() * 1000)
        trigger = ConsumerLagTrigger(
            kafka_groups_conn_id=conn_id,
            spec=spec,
            state={"started_ms": now_ms, "checks": 1},
            deadline_ms=now_ms + 60_000,
            poll_interval=0.2,
            deferred_at_ms=now_ms,
        )
        catch_up = threading.Timer(4.5, lambda: c.commit("billing", {("orders", 0): 10}))
        catch_up.start()

        try:
            payload = await first_event(trigger)
        finally:
            catch_up.cancel()
        assert payload["status"] == "done", payload
        assert payload["result"]["checks"] >= 15
        assert c.count("ApiVersions") == 2  # the bootstrap connection and broker 0's, for the whole run
        assert c.expired_closes == 0 and c.reauthentications >= 2
        tokens = {bytes(e.request.auth_bytes) for e in c.requests("SaslAuthenticate")}
        assert len(tokens) >= 3 and len(provider.requests) >= 3
        kwargs = json.dumps(trigger.serialize())
        said = caplog.text + kwargs + json.dumps(payload)
        assert SECRET not in said and not any(t.split(b"Bearer ")[1][:40].decode() in said for t in tokens)


async def test_a_token_endpoint_refusal_ends_the_deferred_check_at_once(oauth_cluster, idp, kgroups_conn):
    conn_id = connections(kgroups_conn, oauth_cluster, idp, secret="nope")["kgroups"]
    spec = GateSpec.parse(
        group_ids=("billing",), topics=("orders",), lag_mode="threshold", max_total_lag=0
    ).to_dict()
    now_ms = int(time.time() * 1000)
    trigger = ConsumerLagTrigger(
        kafka_groups_conn_id=conn_id,
        spec=spec,
        state={"started_ms": now_ms, "checks": 1},
        deadline_ms=now_ms + 3_600_000,
        poll_interval=0.1,
        deferred_at_ms=now_ms,
    )

    started = time.monotonic()
    payload = await first_event(trigger)
    assert payload["status"] == "fail" and payload["kind"] == "not_retriable", payload
    assert "HTTP 401" in payload["message"] and time.monotonic() - started < 10


@pytest.mark.parametrize(
    "options, named",
    [
        ({"sasl_oauthbearer_method": "magic"}, "sasl_oauthbearer_method 'magic' is unknown"),
        ({"sasl_oauthbearer_token_endpoint_url": "idp/token"}, "is not an http(s) URL"),
        ({"oauth_cb": "not a path"}, "is not a dotted path"),
        ({"sasl_oauthbearer_extensions": "auth=x"}, "'auth' is invalid"),
        ({"sasl_login_retry_backoff_s": "soon"}, "must be a number"),
        ({"sasl_oauthbearer_client_secret": 12345}, "must be a string"),
    ],
)
def test_bad_oauthbearer_client_options_fail_when_the_hook_is_built(options, named):
    """At DAG parse time: a hook's client_options are checked when it is built (no connection yet)."""
    import re

    with pytest.raises(ConfigurationError, match=re.escape(named)):
        KafkaGroupsHook("kgroups_default", client_options=options)
