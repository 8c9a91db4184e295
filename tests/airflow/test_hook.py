"""KafkaGroupsHook: both connection types, the async path, and secrets that never leak.

The fake cluster speaks SASL (SCRAM-SHA-512) over TLS, which the real broker here does not;
its password is unique per session so that any leak is unambiguous.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.hooks.connection import client_config_from_connection
from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from airflow_provider_kgroups.lag.gate import LagGate
from airflow_provider_kgroups.triggers.lag import ConsumerLagTrigger
from airflow_provider_kgroups.version_compat import AIRFLOW_V_3_1_PLUS
from tests.support.airflow_env import scanned_for_secrets
from tests.support.fakekafka import FakeCluster, make_self_signed_cert, server_ssl_context

PASSWORD = f"pw-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def secure_cluster(tmp_path_factory):
    certs = make_self_signed_cert(tmp_path_factory.mktemp("tls"))
    with FakeCluster.running_in_thread(
        brokers=1, sasl={"SCRAM-SHA-512": {"alice": PASSWORD}}, ssl_context=server_ssl_context(certs)
    ) as cluster:
        cluster.add_topic("orders", partitions=2, end_offsets=[10, 5])
        cluster.add_group("billing", offsets={("orders", 0): 7, ("orders", 1): 5})
        yield cluster, certs


def define_connections(kgroups_conn, cluster, certs, password=PASSWORD) -> dict[str, str]:
    """The same cluster as a kgroups connection and as the official provider's kafka connection."""
    return {
        "kgroups": kgroups_conn(
            "kg_secure",
            "kgroups",
            host=cluster.bootstrap,
            login="alice",
            password=password,
            extra={
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "SCRAM-SHA-512",
                "ssl_cafile": certs.cert,
                "call_timeout_s": "10",
            },
        ),
        "kafka": kgroups_conn(
            "kafka_secure",
            "kafka",
            extra={
                "bootstrap.servers": cluster.bootstrap,
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": "alice",
                "sasl.password": password,
                "ssl.ca.location": certs.cert,
                "group.id": "ignored-consumer-setting",
                "request.timeout.ms": "10000",
            },
        ),
    }


# -- translation (pure) -------------------------------------------------------------------------


def test_kgroups_form_fields_become_the_client_config(tmp_path):
    ca = make_self_signed_cert(tmp_path).cert  # TLS files are loaded when the config is built
    config = client_config_from_connection(
        "kgroups",
        host="k1:9093, k2",
        port=9094,
        login="svc",
        password="secret",
        extra={
            "security_protocol": "sasl_ssl",
            "sasl_mechanism": "scram-sha-256",
            "ssl_cafile": ca,
            "ssl_check_hostname": "false",
            "request_timeout_s": "5",
            "client_id": None,
        },
    )
    assert [str(b) for b in config.bootstrap_servers] == ["k1:9093", "k2:9094"]
    assert (config.security_protocol, config.sasl_mechanism, config.sasl_username) == (
        "SASL_SSL",
        "SCRAM-SHA-256",
        "svc",
    )
    assert config.sasl_password == "secret" and config.ssl_check_hostname is False
    assert config.request_timeout_s == 5.0 and config.client_id == "kgroups"
    assert "secret" not in repr(config) and "secret" not in json.dumps(config.redacted())


def test_kafka_connection_extra_is_translated_and_consumer_options_ignored():
    config = client_config_from_connection(
        "kafka",
        extra={
            "bootstrap.servers": "b1:9092,b2:9092",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "u",
            "sasl.password": "p",
            "client.id": "airflow",
            "socket.timeout.ms": 2500,
            "group.id": "g",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "ssl.endpoint.identification.algorithm": "none",
        },
    )
    assert len(config.bootstrap_servers) == 2 and config.client_id == "airflow"
    assert (config.security_protocol, config.sasl_mechanism, config.sasl_password) == (
        "SASL_PLAINTEXT",
        "PLAIN",
        "p",
    )
    assert config.request_timeout_s == 2.5 and config.ssl_check_hostname is False


def test_an_official_kafka_connection_as_its_docs_write_it_is_accepted_with_notes(
    kgroups_conn, caplog, capfd
):
    """The official provider's examples set confluent-kafka callbacks and socket.timeout.ms=10:
    callbacks are ignored with a note, and 10 ms (librdkafka: one request's network timeout) is
    raised to a sane minimum, said once, instead of failing every request."""
    notes: list[str] = []
    extra = {
        "bootstrap.servers": "b1:9092",
        "group.id": "g",
        "socket.timeout.ms": 10,
        "error_cb": "module.error_cb",
        "stats_cb": "module.stats_cb",
        "logger": "kafka_logger",
    }
    config = client_config_from_connection("kafka", extra=extra, notes=notes)
    assert config.request_timeout_s == 1.0
    assert sorted(n.split(" ")[0] for n in notes) == [
        "error_cb",
        "logger",
        "socket.timeout.ms=10",
        "stats_cb",
    ]
    assert "using 1 s" in next(n for n in notes if n.startswith("socket.timeout.ms"))
    kgroups_conn("kafka_docs", "kafka", extra=extra)
    caplog.set_level(logging.INFO)
    hook_config = KafkaGroupsHook("kafka_docs").client_config
    assert hook_config.request_timeout_s == 1.0
    out = capfd.readouterr()
    # four notes, each said once: at most once in each place the log reaches (Airflow 2 and 3.0 log a
    # hook to both caplog and the console, 3.1+ to one of them)
    by_place = [
        [
            line.split("Connection kafka_docs:", 1)[1]
            for line in text.splitlines()
            if "Connection kafka_docs:" in line
        ]
        for text in (caplog.text, out.out + out.err)
    ]
    notes = {note for logged in by_place for note in logged}
    assert len(notes) == 4 and any("error_cb ignored" in note for note in notes)
    assert all(len(logged) == len(set(logged)) for logged in by_place)


@pytest.mark.parametrize(
    "conn_type, fields, named",
    [
        (
            "kafka",
            {
                "extra": {
                    "bootstrap.servers": "b:1",
                    "security.protocol": "SASL_SSL",
                    "sasl.mechanism": "GSSAPI",
                    "sasl.username": "u",
                    "sasl.password": "hunter2",
                    "sasl.kerberos.service.name": "kafka",
                }
            },
            "sasl.kerberos.service.name",
        ),
        (
            "kafka",
            {
                "extra": {
                    "bootstrap.servers": "b:1",
                    "ssl.keystore.location": "/k.p12",
                    "ssl.keystore.password": "hunter2",
                }
            },
            "ssl.keystore.location",
        ),
        (
            "kafka",
            {
                "extra": {
                    "bootstrap.servers": "b:1",
                    "security.protocol": "SASL_SSL",
                    "sasl.mechanism": "OAUTHBEARER",
                    "sasl.username": "u",
                    "sasl.password": "hunter2",
                }
            },
            "OAUTHBEARER",
        ),
        (
            "kafka",
            {
                "extra": {
                    "bootstrap.servers": "b:1",
                    "sasl.mechanism": "PLAIN",
                    "sasl.mechanisms": "SCRAM-SHA-256",
                }
            },
            "sasl_mechanism is set twice",
        ),
        ("kgroups", {"host": "b:1", "extra": {"sasl_password": "hunter2"}}, "Login and Password fields"),
        ("kgroups", {"host": "b:1", "login": "u", "password": "hunter2"}, "security_protocol is PLAINTEXT"),
        ("kgroups", {"host": "b:1", "extra": {"securty_protocol": "SSL"}}, "securty_protocol"),
        ("kgroups", {"extra": {}}, "no bootstrap servers"),
        ("http", {"host": "b:1"}, "connection type 'http'"),
    ],
)
def test_options_that_cannot_be_honoured_are_refused_by_name(conn_type, fields, named):
    with pytest.raises(ConfigurationError) as info:
        client_config_from_connection(conn_type, conn_id="c1", **fields)
    assert named in str(info.value) and "'c1'" in str(info.value)
    assert "hunter2" not in str(info.value)


# -- against a SASL_SSL cluster -----------------------------------------------------------------


@pytest.mark.parametrize("conn_type", ["kgroups", "kafka"])
def test_hook_works_with_both_connection_types(conn_type, secure_cluster, kgroups_conn, caplog, capfd):
    cluster, certs = secure_cluster
    conn_id = define_connections(kgroups_conn, cluster, certs)[conn_type]
    caplog.set_level(logging.DEBUG)
    hook = KafkaGroupsHook(conn_id)
    assert hook.test_connection()[0] is True
    try:
        snapshot = hook.snapshot(["billing"])
    finally:
        hook.close()
    lags = {(p.topic, p.partition): p.lag for p in snapshot.groups["billing"].partitions}
    assert lags == {("orders", 0): 3, ("orders", 1): 0}
    out = capfd.readouterr()
    assert PASSWORD not in caplog.text + out.out + out.err


def test_a_wrong_password_fails_the_test_without_echoing_it(secure_cluster, kgroups_conn, caplog, capfd):
    cluster, certs = secure_cluster
    wrong = f"wrong-{uuid.uuid4().hex}"
    conn_id = define_connections(kgroups_conn, cluster, certs, password=wrong)["kafka"]
    ok, message = KafkaGroupsHook(conn_id).test_connection()
    assert ok is False and "Authentication" in message
    out = capfd.readouterr()
    assert wrong not in message + caplog.text + out.out + out.err


def _on_an_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def test_the_async_path_never_uses_the_sync_connection_lookup(
    secure_cluster, kgroups_conn, monkeypatch
):
    cluster, certs = secure_cluster
    conn_id = define_connections(kgroups_conn, cluster, certs)["kafka"]

    def forbidden(*args, **kwargs):
        # Airflow 3.1+ has an async lookup, so no sync one runs at all; before, the sync one runs in a
        # worker thread (version_compat.aget_connection), never on the loop
        if AIRFLOW_V_3_1_PLUS or _on_an_event_loop():
            raise AssertionError("synchronous connection lookup on the event loop")
        return original(*args[1:], **kwargs)  # args[0]: the class the classmethod got

    original = KafkaGroupsHook.get_connection

    monkeypatch.setattr(KafkaGroupsHook, "get_connection", classmethod(forbidden))

    hook = KafkaGroupsHook(conn_id)
    try:
        snapshot = await hook.asnapshot(["billing"], topics=["orders"])
    finally:
        await hook.aclose()
    assert snapshot.groups["billing"].total_lag == 3


def test_secrets_stay_out_of_task_logs_xcom_and_trigger_kwargs(
    secure_cluster, kgroups_conn, run_dag, tmp_path, monkeypatch, caplog, capfd
):
    """A real run (snapshot, then a deferrable barrier) through the kafka connection type."""
    cluster, certs = secure_cluster
    conn_id = define_connections(kgroups_conn, cluster, certs)["kafka"]
    triggers = []  # each hand-over the sensor made (Airflow 2's dag.test() runs it without serializing)
    original_for_gate = ConsumerLagTrigger.for_gate.__func__
    monkeypatch.setattr(
        ConsumerLagTrigger,
        "for_gate",
        classmethod(lambda cls, *args: triggers.append(original_for_gate(cls, *args)) or triggers[-1]),
    )
    fixed = threading.Event()
    original_set_target = LagGate.set_target

    def set_target(self, target):
        original_set_target(self, target)
        fixed.set()

    monkeypatch.setattr(LagGate, "set_target", set_target)
    catch_up = threading.Thread(
        target=lambda: fixed.wait(60) and cluster.commit("billing", {("orders", 0): 10}), daemon=True
    )
    catch_up.start()
    caplog.set_level(logging.DEBUG)
    try:
        result = run_dag("kg_secrets", {"conn": conn_id, "history": str(tmp_path / "history")})
    finally:
        catch_up.join(60)
        cluster.commit("billing", {("orders", 0): 7})  # back to the module's initial state
    assert result.state == "success", result
    assert triggers, "the sensor should have deferred"
    serialized = [trigger.serialize() for trigger in triggers]
    assert result.xcoms["gate"]["endingOffsets"] == '{"orders": {"0": 10, "1": 5}}'
    out = capfd.readouterr()
    everything = (
        caplog.text + out.out + out.err + json.dumps(result.xcoms, default=str) + json.dumps(serialized)
    )
    # the logs were captured (Airflow 3 prints a task's log; Airflow 2 logs it through this process's logging)
    assert "Kafka groups connection kafka_secure (type kafka)" in caplog.text + out.out + out.err
    assert PASSWORD not in scanned_for_secrets(everything)
