"""KafkaConnectHook: a ``kgroups_connect`` connection from an ``AIRFLOW_CONN_`` variable, read
over real HTTPS with basic auth against the local Connect server (demo/connectserver.py,
shaped as Kafka's ConnectorsResource answers), and the connection type as Airflow registers it.
"""

from __future__ import annotations

import base64
import logging
import uuid

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.connect import ConnectStatus
from airflow_provider_kgroups.hooks.connect import KafkaConnectHook, connect_configs_from_conn_ids
from demo.connectserver import Connector, ConnectServer
from tests.support.fakekafka import make_self_signed_cert, server_ssl_context

PASSWORD = f"connect-pw-{uuid.uuid4().hex}"


def test_hook_reads_connect_from_an_env_connection(kgroups_conn, tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    certs = make_self_signed_cert(tmp_path)
    connectors = [Connector("orders-sink", "PAUSED", ("PAUSED",)), Connector("billing-sink")]
    with ConnectServer(connectors, auth=("svc", PASSWORD), ssl_context=server_ssl_context(certs)) as server:
        host, port = server.url.removeprefix("https://").split(":")
        conn_id = kgroups_conn(
            "connect_test",
            "kgroups_connect",
            host=host,
            port=int(port),
            schema="https",
            login="svc",
            password=PASSWORD,
            extra={"ca_bundle": certs.cert, "timeout_s": 5, "retries": 1, "verify": None},
        )
        hook = KafkaConnectHook(conn_id)
        [config] = hook.cluster_configs
        assert (
            config.url,
            config.username,
            config.password,
            config.verify,
            config.timeout_s,
            config.retries,
        ) == (server.url, "svc", PASSWORD, certs.cert, 5.0, 1)
        evidence = hook.fetch_evidence(timeout_s=20)
        assert evidence.complete
        assert evidence.for_group("connect-orders-sink").status is ConnectStatus.KEEP
        assert evidence.for_group("connect-billing-sink").status is ConnectStatus.ACTIVE
        assert evidence.for_group("connect-gone").status is ConnectStatus.CONNECTOR_GONE
        assert len(server.requests) == 1 and server.requests[0].authorization.startswith("Basic ")
        assert [c.url for c in connect_configs_from_conn_ids([conn_id, conn_id])] == [server.url] * 2
    token = base64.b64encode(f"svc:{PASSWORD}".encode()).decode()
    captured = capsys.readouterr()  # the hook logs through Airflow's structlog (stdout)
    text = caplog.text + captured.out + captured.err
    assert "Kafka Connect connection connect_test: " + server.url + " as svc" in text
    assert "Kafka Connect " + server.url + ": 2 connector(s), 2 sink(s)" in text
    assert PASSWORD not in text and token not in text


def test_hook_errors_name_the_connection_and_option(kgroups_conn):
    kgroups_conn("connect_bad", "kgroups_connect", host="connect", extra={"verfy": False})
    with pytest.raises(
        ConfigurationError, match=r"connection 'connect_bad' \(kgroups_connect\): unknown option"
    ):
        KafkaConnectHook("connect_bad").cluster_configs
    with pytest.raises(ConfigurationError, match="connection id"):
        KafkaConnectHook(" ")
    with pytest.raises(ConfigurationError, match="list of connection ids"):
        connect_configs_from_conn_ids("connect_bad")


def test_airflow_registers_the_connect_connection_type(airflow_db):
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    hook = ProvidersManagerTaskRuntime().hooks["kgroups_connect"]
    assert hook.hook_class_name == "airflow_provider_kgroups.hooks.connect.KafkaConnectHook"
    assert hook.connection_id_attribute_name == "kafka_connect_conn_id"
    pm = ProvidersManager()
    assert pm.field_behaviours["kgroups_connect"]["relabeling"]["host"] == "Connect REST URL(s)"
    assert pm.connection_form_widgets["extra__kgroups_connect__ca_bundle"].field["schema"]["type"] == [
        "string",
        "null",
    ]
    # the Kafka connection type is still the first and unchanged
    assert ProvidersManagerTaskRuntime().hooks["kgroups"].hook_class_name.endswith("KafkaGroupsHook")
