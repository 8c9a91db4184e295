"""Bad input is refused with a message naming the input and the fix, before any socket opens."""

import pytest

from airflow_provider_kgroups.client import ClientConfig, ConfigurationError
from airflow_provider_kgroups.client.config import config_from_kafka_properties, parse_bootstrap_servers


@pytest.mark.parametrize("value, fragment", [
    ("", "bootstrap_servers is empty"),
    (" , ", "bootstrap_servers is empty"),
    ([], "bootstrap_servers is empty"),
    (None, "bootstrap_servers is missing"),
    ("kafka-1", "'kafka-1' is not 'host:port'"),
    ("kafka-1:99999", "outside 1-65535"),
    ("kafka 1:9092", "is not 'host:port'"),
])
def test_malformed_bootstrap_servers_are_named(value, fragment):
    with pytest.raises(ConfigurationError, match=fragment):
        parse_bootstrap_servers(value)


def test_bootstrap_servers_accept_lists_ipv6_and_listener_prefixes():
    addresses = parse_bootstrap_servers("PLAINTEXT://a:9092, [::1]:9093,b.example.com:1")
    assert [(a.host, a.port) for a in addresses] == [("a", 9092), ("::1", 9093), ("b.example.com", 1)]
    assert str(addresses[1]) == "[::1]:9093"


def test_unknown_sasl_mechanism_is_refused_with_the_supported_list():
    with pytest.raises(ConfigurationError, match="sasl_mechanism 'GSSAPI' is not supported: use one of PLAIN"):
        ClientConfig.create("a:1", security_protocol="SASL_SSL", sasl_mechanism="GSSAPI",
                            sasl_username="u", sasl_password="p")


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
    config = ClientConfig.create("a:1", security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                                 sasl_username="svc", sasl_password="hunter2")
    assert "hunter2" not in repr(config)
    assert "hunter2" not in str(config.redacted())
    assert config.redacted()["sasl_password"] == "***"


def test_kafka_properties_are_translated_and_unsupported_ones_refused():
    config = config_from_kafka_properties({
        "bootstrap.servers": "k1:9092,k2:9092", "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "svc", "sasl.password": "pw", "request.timeout.ms": "2500", "group.id": "ignored",
    })
    assert config.security_protocol == "SASL_SSL" and config.sasl_mechanism == "SCRAM-SHA-256"
    assert config.request_timeout_s == 2.5 and len(config.bootstrap_servers) == 2
    with pytest.raises(ConfigurationError, match="unsupported Kafka client option.*sasl.jaas.config"):
        config_from_kafka_properties({"bootstrap.servers": "k:1", "sasl.jaas.config": "x"})
