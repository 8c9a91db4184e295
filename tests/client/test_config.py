"""Bad input is refused with a message naming the input and the fix, before any socket opens."""

from pathlib import Path

import pytest

from airflow_provider_kgroups.client import ClientConfig, ConfigurationError
from airflow_provider_kgroups.client.config import parse_bootstrap_servers
from airflow_provider_kgroups.client.properties import config_from_kafka_properties


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("", "bootstrap_servers is empty"),
        (" , ", "bootstrap_servers is empty"),
        ([], "bootstrap_servers is empty"),
        (None, "bootstrap_servers is missing"),
        ("kafka-1", "'kafka-1' is not 'host:port'"),
        ("kafka-1:99999", "outside 1-65535"),
        ("kafka 1:9092", "is not 'host:port'"),
    ],
)
def test_malformed_bootstrap_servers_are_named(value, fragment):
    with pytest.raises(ConfigurationError, match=fragment):
        parse_bootstrap_servers(value)


def test_bootstrap_servers_accept_lists_ipv6_and_listener_prefixes():
    addresses = parse_bootstrap_servers("PLAINTEXT://a:9092, [::1]:9093,b.example.com:1")
    assert [(a.host, a.port) for a in addresses] == [("a", 9092), ("::1", 9093), ("b.example.com", 1)]
    assert str(addresses[1]) == "[::1]:9093"


def test_unknown_sasl_mechanism_is_refused_with_the_supported_list():
    with pytest.raises(
        ConfigurationError, match="sasl_mechanism 'GSSAPI' is not supported: use one of PLAIN"
    ):
        ClientConfig.create(
            "a:1", security_protocol="SASL_SSL", sasl_mechanism="GSSAPI", sasl_username="u", sasl_password="p"
        )


def test_sasl_without_credentials_is_refused():
    with pytest.raises(ConfigurationError, match="needs sasl_username and sasl_password"):
        ClientConfig.create("a:1", security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN")


def test_mechanism_without_sasl_protocol_is_refused():
    with pytest.raises(ConfigurationError, match="use SASL_PLAINTEXT or SASL_SSL"):
        ClientConfig.create("a:1", sasl_mechanism="PLAIN")


@pytest.mark.parametrize("option", ["request_timeout_s", "call_timeout_s", "connect_timeout_s"])
@pytest.mark.parametrize("value", [-1, 0, "10"])
def test_negative_zero_or_textual_timeouts_are_refused(option, value):
    with pytest.raises(ConfigurationError, match=option):
        ClientConfig.create("a:1", **{option: value})


def test_unknown_option_is_named():
    with pytest.raises(ConfigurationError, match="unknown client option.*sasl_pasword"):
        ClientConfig.create("a:1", sasl_pasword="x")


def test_missing_tls_file_is_named(tmp_path):
    with pytest.raises(ConfigurationError, match="ssl_cafile .*nope.pem.* is not a readable file"):
        ClientConfig.create("a:1", security_protocol="SSL", ssl_cafile=str(tmp_path / "nope.pem"))


def test_secrets_are_hidden_from_repr_and_redacted_view():
    config = ClientConfig.create(
        "a:1",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="svc",
        sasl_password="hunter2",
    )
    assert "hunter2" not in repr(config)
    assert "hunter2" not in str(config.redacted())
    assert config.redacted()["sasl_password"] == "***"


def test_kafka_properties_are_translated_and_unsupported_ones_refused():
    config = config_from_kafka_properties(
        {
            "bootstrap.servers": "k1:9092,k2:9092",
            "security.protocol": "sasl_ssl",
            "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "svc",
            "sasl.password": "pw",
            "request.timeout.ms": "2500",
            "group.id": "ignored",
        }
    )
    assert config.security_protocol == "SASL_SSL" and config.sasl_mechanism == "SCRAM-SHA-256"
    assert config.request_timeout_s == 2.5 and len(config.bootstrap_servers) == 2
    with pytest.raises(
        ConfigurationError, match="unsupported Kafka client option.*sasl.kerberos.service.name"
    ):
        config_from_kafka_properties({"bootstrap.servers": "k:1", "sasl.kerberos.service.name": "kafka"})
    with pytest.raises(ConfigurationError, match="sasl.jaas.config must read"):
        config_from_kafka_properties({"bootstrap.servers": "k:1", "sasl.jaas.config": "x"})


@pytest.mark.parametrize(
    "option",
    ["connect_timeout_s", "request_timeout_s", "call_timeout_s", "retry_backoff_s", "retry_backoff_max_s"],
)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinite_timeouts_are_refused_by_name(option, value):
    """NaN compares false with everything: accepted, a call then never ended."""
    with pytest.raises(ConfigurationError, match=f"{option} must be a finite number of seconds"):
        ClientConfig.create("a:1", **{option: value})


@pytest.mark.parametrize(
    "key, value",
    [("request.timeout.ms", "nan"), ("default.api.timeout.ms", "inf"), ("retry.backoff.ms", "-100")],
)
def test_nan_infinite_or_negative_timeout_properties_are_refused_by_name(key, value):
    with pytest.raises(
        ConfigurationError, match=f"option {key} must be a finite number of milliseconds >= 0"
    ):
        config_from_kafka_properties({"bootstrap.servers": "a:1", key: value})


@pytest.mark.parametrize(
    "extra", [{"call_timeout_s": "nan"}, {"request_timeout_s": float("inf")}, {"connect_timeout_s": -3}]
)
def test_nan_infinite_or_negative_timeouts_in_connection_extras_are_refused(extra):
    from airflow_provider_kgroups.hooks.connection import client_config_from_connection

    (name,) = extra
    with pytest.raises(ConfigurationError, match=f"connection 'c' .*option {name} must be a finite number"):
        client_config_from_connection("kgroups", conn_id="c", host="a:1", extra=extra)
    with pytest.raises(ConfigurationError, match=f"option {name} must be a finite number"):
        client_config_from_connection(
            "kgroups", conn_id="c", host="a:1", overrides=extra
        )  # hook client_options


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_sasl_credentials_without_a_sasl_protocol_are_refused(protocol, tmp_path):
    from tests.support.fakekafka.tls import make_self_signed_cert

    tls = {"ssl.ca.location": make_self_signed_cert(tmp_path).cert} if protocol == "SSL" else {}
    for credentials in ({"sasl.username": "etl", "sasl.password": "s3cret"}, {"sasl.username": "etl"}):
        with pytest.raises(ConfigurationError, match=f"security_protocol is {protocol}") as caught:
            config_from_kafka_properties(
                {"bootstrap.servers": "a:1", "security.protocol": protocol, **tls, **credentials}
            )
        assert "s3cret" not in str(caught.value)


def test_tls_files_are_loaded_when_the_config_is_built(tmp_path):
    from cryptography.hazmat.primitives import serialization

    from tests.support.fakekafka.tls import make_self_signed_cert

    files = make_self_signed_cert(tmp_path)
    ok = ClientConfig.create(
        "a:1", security_protocol="SSL", ssl_cafile=files.cert, ssl_certfile=files.cert, ssl_keyfile=files.key
    )
    assert ok.ssl_context() is not None
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("this is not PEM\n")
    with pytest.raises(ConfigurationError, match="the TLS files cannot be loaded .*ssl_cafile="):
        ClientConfig.create("a:1", security_protocol="SSL", ssl_cafile=str(garbage))
    with pytest.raises(ConfigurationError, match="the TLS files cannot be loaded .*ssl_keyfile="):
        ClientConfig.create(
            "a:1",
            security_protocol="SSL",
            ssl_cafile=files.cert,
            ssl_certfile=files.cert,
            ssl_keyfile=str(garbage),
        )
    key = serialization.load_pem_private_key(Path(files.key).read_bytes(), password=None)
    encrypted = tmp_path / "encrypted.pem"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"right"),
        )
    )
    assert (
        ClientConfig.create(
            "a:1",
            security_protocol="SSL",
            ssl_cafile=files.cert,
            ssl_certfile=files.cert,
            ssl_keyfile=str(encrypted),
            ssl_key_password="right",
        ).ssl_context()
        is not None
    )
    for password in ("wrong", None):  # None must not make OpenSSL prompt on the terminal
        with pytest.raises(ConfigurationError, match="ssl_key_password the key's password") as caught:
            ClientConfig.create(
                "a:1",
                security_protocol="SSL",
                ssl_cafile=files.cert,
                ssl_certfile=files.cert,
                ssl_keyfile=str(encrypted),
                ssl_key_password=password,
            )
        assert "wrong" not in str(caught.value)


def test_binary_or_non_utf8_properties_files_are_named(tmp_path):
    from airflow_provider_kgroups.client.properties import read_properties_file

    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes("client.id=caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigurationError, match="latin1.properties' is not UTF-8 text"):
        read_properties_file(str(latin1))
    binary = tmp_path / "keystore.properties"
    binary.write_bytes(b"\x00\x00\x00\x02bootstrap.servers=a:1\n")
    with pytest.raises(ConfigurationError, match="keystore.properties' is binary"):
        read_properties_file(str(binary))
