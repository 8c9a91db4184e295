"""From an Airflow connection's fields to a :class:`ClientConfig`. Pure: no Airflow import.

Two connection types are read:

* ``kgroups`` (this provider's form): host = bootstrap servers (``h1:9092,h2:9092``; a host
  without a port takes the port field, else 9092), login/password = SASL username and
  password, extra = the other client options under their ClientConfig names
  (``security_protocol``, ``sasl_mechanism``, ``ssl_cafile``, ...), or ``bootstrap_servers``.
* ``kafka`` (the official ``apache-airflow-providers-apache-kafka`` connection): the extra is
  a librdkafka configuration dict. The options an admin client needs are translated; options
  that only shape a consumer or a producer are ignored; anything else is refused with an error
  naming it, because silently dropping (say) a Kerberos setting would connect differently from
  what the connection says.

Error messages name options, never the value of a secret.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..client.config import ClientConfig
from ..client.errors import ConfigurationError

DEFAULT_PORT = 9092
SECRET_OPTIONS = ("sasl_password", "ssl_key_password")

#: kgroups extra keys (ClientConfig names); SASL credentials go in login/password.
KGROUPS_EXTRA_OPTIONS = (
    "bootstrap_servers", "client_id", "security_protocol", "sasl_mechanism", "ssl_cafile", "ssl_certfile",
    "ssl_keyfile", "ssl_key_password", "ssl_check_hostname", "connect_timeout_s", "request_timeout_s",
    "call_timeout_s", "retry_backoff_s", "retry_backoff_max_s",
)
_FLOAT_OPTIONS = ("connect_timeout_s", "request_timeout_s", "call_timeout_s", "retry_backoff_s", "retry_backoff_max_s")

#: librdkafka option -> ClientConfig option (same meaning, same unit).
KAFKA_TRANSLATED = {
    "bootstrap.servers": "bootstrap_servers",
    "metadata.broker.list": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_key_password",
}
#: librdkafka option in milliseconds -> ClientConfig option in seconds.
KAFKA_TRANSLATED_MS = {
    "socket.connection.setup.timeout.ms": "connect_timeout_s",
    "socket.timeout.ms": "request_timeout_s",
    "request.timeout.ms": "request_timeout_s",
    "retry.backoff.ms": "retry_backoff_s",
    "retry.backoff.max.ms": "retry_backoff_max_s",
}
#: Options that only shape a consumer, a producer or client-side logging: an admin client of
#: consumer groups has nothing to honour, so they are accepted and ignored (the same
#: connection keeps working for the official provider's operators).
KAFKA_IGNORED = frozenset({
    "group.id", "group.instance.id", "auto.offset.reset", "enable.auto.commit", "auto.commit.interval.ms",
    "enable.auto.offset.store", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
    "partition.assignment.strategy", "group.protocol", "group.remote.assignor", "isolation.level",
    "enable.partition.eof", "check.crcs", "fetch.min.bytes", "fetch.max.bytes", "fetch.wait.max.ms",
    "fetch.message.max.bytes", "max.partition.fetch.bytes", "queued.min.messages", "queued.max.messages.kbytes",
    "acks", "request.required.acks", "enable.idempotence", "linger.ms", "queue.buffering.max.ms",
    "queue.buffering.max.messages", "queue.buffering.max.kbytes", "batch.size", "batch.num.messages",
    "compression.type", "compression.codec", "message.timeout.ms", "delivery.timeout.ms", "transactional.id",
    "transaction.timeout.ms", "message.send.max.retries", "retries", "partitioner", "message.max.bytes",
    "receive.message.max.bytes", "max.in.flight.requests.per.connection", "max.in.flight",
    "debug", "log_level", "log.connection.close", "statistics.interval.ms", "topic.metadata.refresh.interval.ms",
    "metadata.max.age.ms", "allow.auto.create.topics", "socket.keepalive.enable", "socket.nagle.disable",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes", "api.version.request", "broker.version.fallback",
    "broker.address.family", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "client.rack",
    "connections.max.idle.ms",
})


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ConfigurationError(f"connection option {name} must be true or false, got {value!r}.")


def _as_float(name: str, value: Any, scale: float = 1.0) -> float:
    try:
        return float(value) * scale
    except (TypeError, ValueError):
        unit = "milliseconds" if scale != 1.0 else "seconds"
        raise ConfigurationError(f"connection option {name} must be a number of {unit}, got {value!r}.") from None


def bootstrap_from_host(host: str | None, port: int | None) -> str | None:
    """``host`` may hold several servers; entries without a port take ``port`` (else 9092)."""
    if _blank(host):
        return None
    out = []
    for item in str(host).split(","):
        item = item.strip()
        if not item:
            continue
        has_port = "]:" in item if item.startswith("[") else ":" in item
        out.append(item if has_port else f"{item}:{port or DEFAULT_PORT}")
    return ",".join(out) or None


def _kgroups_options(host, port, login, password, extra: Mapping[str, Any]) -> dict[str, Any]:
    extra = {k: v for k, v in extra.items() if not _blank(v)}
    if "sasl_username" in extra or "sasl_password" in extra:
        raise ConfigurationError("a kgroups connection takes the SASL username and password in its Login and "
                                 "Password fields, not in the extra (remove sasl_username/sasl_password from it).")
    unknown = sorted(set(extra) - set(KGROUPS_EXTRA_OPTIONS))
    if unknown:
        raise ConfigurationError(f"unknown option(s) {', '.join(unknown)} in the kgroups connection's extra; "
                                 f"known: {', '.join(KGROUPS_EXTRA_OPTIONS)}.")
    options = dict(extra)
    if "bootstrap_servers" not in options:
        options["bootstrap_servers"] = bootstrap_from_host(host, port)
    if not _blank(login):
        options["sasl_username"] = login
    if not _blank(password):
        options["sasl_password"] = password
    return options


def _kafka_options(host, port, login, password, extra: Mapping[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    unsupported = []
    for key, value in extra.items():
        if _blank(value):
            continue
        if key in KAFKA_TRANSLATED:
            target = KAFKA_TRANSLATED[key]
            if target in options and str(options[target]) != str(value):
                raise ConfigurationError(f"the kafka connection sets {target} twice with different values "
                                         f"(e.g. sasl.mechanism and sasl.mechanisms): keep one.")
            options[target] = value
        elif key in KAFKA_TRANSLATED_MS:
            options[KAFKA_TRANSLATED_MS[key]] = _as_float(key, value, scale=0.001)
        elif key == "ssl.endpoint.identification.algorithm":
            algorithm = str(value).strip().lower()
            if algorithm not in ("https", "none"):
                raise ConfigurationError(f"ssl.endpoint.identification.algorithm {value!r} is not supported: "
                                         "use 'https' (check the host name) or 'none'.")
            options["ssl_check_hostname"] = algorithm == "https"
        elif key == "enable.ssl.certificate.verification":
            if not _as_bool(key, value):
                if "ssl.ca.location" in extra:
                    raise ConfigurationError("enable.ssl.certificate.verification=false with ssl.ca.location "
                                             "cannot be honoured: drop one of them.")
                options["ssl_check_hostname"] = False
        elif key in KAFKA_IGNORED:
            continue
        else:
            unsupported.append(key)
    if unsupported:
        raise ConfigurationError(
            f"the kafka connection sets option(s) this provider cannot honour: {', '.join(sorted(unsupported))}. "
            "Supported: bootstrap.servers, client.id, security.protocol, sasl.mechanism(s) PLAIN/SCRAM-SHA-256/"
            "SCRAM-SHA-512, sasl.username, sasl.password, ssl.ca.location, ssl.certificate.location, "
            "ssl.key.location, ssl.key.password, ssl.endpoint.identification.algorithm, timeouts in ms; "
            "consumer/producer-only options are ignored. Use a kgroups connection, or remove the option(s)."
        )
    if "bootstrap_servers" not in options:
        options["bootstrap_servers"] = bootstrap_from_host(host, port)
    if "sasl_username" not in options and not _blank(login):
        options["sasl_username"] = login
    if "sasl_password" not in options and not _blank(password):
        options["sasl_password"] = password
    return options


def client_config_from_connection(conn_type: str | None, *, conn_id: str = "?", host: str | None = None,
                                  port: int | None = None, login: str | None = None, password: str | None = None,
                                  extra: Mapping[str, Any] | None = None,
                                  overrides: Mapping[str, Any] | None = None) -> ClientConfig:
    """Build and validate the client configuration; every error names the connection and the option."""
    extra = dict(extra or {})
    try:
        if conn_type == "kafka":
            options = _kafka_options(host, port, login, password, extra)
        elif conn_type in ("kgroups", None, ""):
            options = _kgroups_options(host, port, login, password, extra)
        else:
            raise ConfigurationError(f"connection type {conn_type!r} is not supported: use 'kgroups' or the "
                                     "official provider's 'kafka'.")
        options.update({k: v for k, v in (overrides or {}).items() if v is not None})
        if _blank(options.get("bootstrap_servers")):
            raise ConfigurationError("no bootstrap servers: set Host to 'kafka-1:9092,kafka-2:9092' "
                                     "(or bootstrap_servers / bootstrap.servers in the extra).")
        for name in _FLOAT_OPTIONS:
            if name in options:
                options[name] = _as_float(name, options[name])
        if "ssl_check_hostname" in options:
            options["ssl_check_hostname"] = _as_bool("ssl_check_hostname", options["ssl_check_hostname"])
        protocol = str(options.get("security_protocol") or "PLAINTEXT").upper()
        uses_sasl = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
        if not uses_sasl and ("sasl_username" in options or "sasl_password" in options):
            raise ConfigurationError(f"a SASL username/password is set but security_protocol is {protocol}: "
                                     "set security_protocol to SASL_SSL or SASL_PLAINTEXT, or remove the "
                                     "credentials.")
        if uses_sasl and _blank(options.get("sasl_mechanism")):
            raise ConfigurationError(f"security_protocol {protocol} needs sasl_mechanism "
                                     "(PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512).")
        return ClientConfig.create(options.pop("bootstrap_servers"), **options)
    except ConfigurationError as exc:
        raise ConfigurationError(f"connection {conn_id!r} ({conn_type or 'kgroups'}): {exc}") from None
