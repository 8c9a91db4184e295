"""Java / librdkafka client properties <-> :class:`~.config.ClientConfig`: one translation for the
CLI's ``--command-config`` files, Airflow ``kafka`` connections, the Spark data source's
``kgroups.command.config`` and the properties written back for it; plus the loose-value
parsers (booleans, seconds, whole numbers) that connection extras and properties files share.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .auth.jaas import SASL_PROPERTIES, sasl_options
from .config import ClientConfig
from .errors import ConfigurationError
from .numbers import is_int, to_number

#: Java / librdkafka client property -> ClientConfig option (same meaning, same unit). One
#: translation serves the CLI's ``--command-config`` files and Airflow ``kafka`` connections.
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
#: Property in milliseconds -> ClientConfig option in seconds.
KAFKA_TRANSLATED_MS = {
    "socket.connection.setup.timeout.ms": "connect_timeout_s",
    "request.timeout.ms": "request_timeout_s",
    "default.api.timeout.ms": "call_timeout_s",
    "retry.backoff.ms": "retry_backoff_s",
    "retry.backoff.max.ms": "retry_backoff_max_s",
}
#: Property in bytes -> ClientConfig option in bytes.
KAFKA_TRANSLATED_BYTES = {
    "receive.message.max.bytes": "max_response_bytes",
}
#: Properties that only shape a consumer, a producer or client-side logging: an admin client
#: of consumer groups has nothing to honour, so they are accepted and ignored (the same
#: configuration keeps working for consumers and the official provider's operators).
KAFKA_IGNORED = frozenset(
    {
        "group.id",
        "group.instance.id",
        "auto.offset.reset",
        "enable.auto.commit",
        "auto.commit.interval.ms",
        "enable.auto.offset.store",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "partition.assignment.strategy",
        "group.protocol",
        "group.remote.assignor",
        "isolation.level",
        "enable.partition.eof",
        "check.crcs",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "fetch.wait.max.ms",
        "fetch.message.max.bytes",
        "max.partition.fetch.bytes",
        "queued.min.messages",
        "queued.max.messages.kbytes",
        "acks",
        "request.required.acks",
        "enable.idempotence",
        "linger.ms",
        "queue.buffering.max.ms",
        "queue.buffering.max.messages",
        "queue.buffering.max.kbytes",
        "batch.size",
        "batch.num.messages",
        "compression.type",
        "compression.codec",
        "message.timeout.ms",
        "delivery.timeout.ms",
        "transactional.id",
        "transaction.timeout.ms",
        "message.send.max.retries",
        "retries",
        "partitioner",
        "message.max.bytes",
        "max.in.flight.requests.per.connection",
        "max.in.flight",
        "debug",
        "log_level",
        "log.connection.close",
        "statistics.interval.ms",
        "topic.metadata.refresh.interval.ms",
        "metadata.max.age.ms",
        "allow.auto.create.topics",
        "socket.keepalive.enable",
        "socket.nagle.disable",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "api.version.request",
        "broker.version.fallback",
        "broker.address.family",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "client.rack",
        "connections.max.idle.ms",
    }
)


#: confluent-kafka configuration keys that hold Python callables or a logger (the official
#: provider's examples set them): accepted and ignored, with a note.
KAFKA_CALLBACKS = frozenset(
    {
        "error_cb",
        "throttle_cb",
        "stats_cb",
        "log_cb",
        "logger",
        "on_delivery",
        "on_commit",
        "on_assign",
        "on_revoke",
        "on_lost",
    }
)
#: librdkafka's ``socket.timeout.ms`` is one request's network timeout (10 ms to 300 s, default
#: 60 s); values below this are raised to it (an official example sets 10 ms).
MIN_SOCKET_TIMEOUT_S = 1.0


def is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ConfigurationError(f"option {name} must be true or false, got {value!r}.")


def as_seconds(name: str, value: Any, scale: float = 1.0) -> float:
    """A number of seconds (``scale`` 0.001 for a property in ms) that is finite and >= 0."""
    unit = "milliseconds" if scale != 1.0 else "seconds"
    seconds = to_number(f"option {name}", value, must_be=f"a number of {unit}") * scale
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigurationError(
            f"option {name} must be a finite number of {unit} >= 0 (e.g. 30000 ms / 30 s), got {value!r}."
        )
    return seconds


def as_int(name: str, value: Any) -> int:
    """A whole number from loose input (``"1000"`` from a properties file or a connection extra)."""
    if is_int(value):
        return value
    text = str(value).strip()
    if not text.isdigit():
        raise ConfigurationError(f"option {name} must be a whole number, got {value!r}.")
    return int(text)


def kafka_properties_to_options(
    properties: Mapping[str, Any], notes: list[str] | None = None
) -> dict[str, Any]:
    """Java/librdkafka properties -> ClientConfig options. Anything this client cannot honour
    is an error naming it: silently dropping (say) a Kerberos setting would connect otherwise.
    What is accepted but changed or ignored is said in ``notes`` (one line each, no values of
    secrets), for the caller to log."""
    options: dict[str, Any] = {}
    unsupported = []
    notes = notes if notes is not None else []
    options.update(sasl_options(properties, notes))  # SASL/OAUTHBEARER and sasl.jaas.config (auth.jaas)
    for key, value in properties.items():
        if key in SASL_PROPERTIES:
            continue
        if key in KAFKA_CALLBACKS:
            notes.append(
                f"{key} ignored: a client callback or logger (confluent-kafka) has no meaning for this "
                "admin client"
            )
            continue
        if is_blank(value):
            continue
        if key in _SPECIAL_PROPERTIES:
            _SPECIAL_PROPERTIES[key](value, properties, options, notes)
        elif key in KAFKA_TRANSLATED:
            _set_translated(KAFKA_TRANSLATED[key], value, options)
        elif key in KAFKA_TRANSLATED_MS:
            options[KAFKA_TRANSLATED_MS[key]] = as_seconds(key, value, scale=0.001)
        elif key in KAFKA_TRANSLATED_BYTES:
            options[KAFKA_TRANSLATED_BYTES[key]] = as_int(key, value)
        elif key not in KAFKA_IGNORED:
            unsupported.append(key)
    if unsupported:
        raise ConfigurationError(
            f"unsupported Kafka client option(s) {', '.join(sorted(unsupported))}: this client supports "
            "bootstrap.servers, client.id, security.protocol, sasl.mechanism(s) PLAIN/SCRAM-SHA-256/SCRAM-SHA-512/"
            "OAUTHBEARER, sasl.username, sasl.password, sasl.jaas.config, sasl.oauthbearer.*, sasl.login.*, oauth_cb, "
            "ssl.ca.location, ssl.certificate.location, ssl.key.location, "
            "ssl.key.password, ssl.endpoint.identification.algorithm, receive.message.max.bytes and timeouts in ms "
            "(GSSAPI and JKS keystores are not implemented); consumer/producer-only options are ignored."
        )
    return options


def _set_translated(target: str, value: Any, options: dict[str, Any]) -> None:
    """A :data:`KAFKA_TRANSLATED` property: the same value under the ClientConfig name, which two
    spellings (sasl.mechanism and sasl.mechanisms) must not set differently."""
    if target == "sasl_mechanism" and options.get(target) == "OAUTHBEARER":
        return  # AWS_MSK_IAM, spoken as OAUTHBEARER (auth.jaas)
    if target in options and str(options[target]) != str(value):
        raise ConfigurationError(
            f"{target} is set twice with different values "
            "(e.g. sasl.mechanism and sasl.mechanisms): keep one."
        )
    options[target] = value


def _socket_timeout(
    value: Any, properties: Mapping[str, Any], options: dict[str, Any], notes: list[str]
) -> None:
    seconds = as_seconds("socket.timeout.ms", value, scale=0.001)
    if seconds < MIN_SOCKET_TIMEOUT_S:
        notes.append(
            f"socket.timeout.ms={value} is librdkafka's timeout for one network request; below "
            f"{MIN_SOCKET_TIMEOUT_S:g} s every request to a busy broker would time out: using "
            f"{MIN_SOCKET_TIMEOUT_S:g} s"
        )
        seconds = MIN_SOCKET_TIMEOUT_S
    options["request_timeout_s"] = seconds


def _endpoint_identification(
    value: Any, properties: Mapping[str, Any], options: dict[str, Any], notes: list[str]
) -> None:
    algorithm = str(value).strip().lower()
    if algorithm not in ("https", "none"):
        raise ConfigurationError(
            f"ssl.endpoint.identification.algorithm {value!r} is not supported: "
            "use 'https' (check the host name) or 'none'."
        )
    options["ssl_check_hostname"] = algorithm == "https"


def _certificate_verification(
    value: Any, properties: Mapping[str, Any], options: dict[str, Any], notes: list[str]
) -> None:
    if as_bool("enable.ssl.certificate.verification", value):
        return
    if "ssl.ca.location" in properties:
        raise ConfigurationError(
            "enable.ssl.certificate.verification=false with ssl.ca.location "
            "cannot be honoured: drop one of them."
        )
    options["ssl_check_hostname"] = False


#: Properties with a rule of their own: (value, all the properties, the options, the notes).
_SPECIAL_PROPERTIES: dict[str, Callable[[Any, Mapping[str, Any], dict[str, Any], list[str]], None]] = {
    "socket.timeout.ms": _socket_timeout,
    "ssl.endpoint.identification.algorithm": _endpoint_identification,
    "enable.ssl.certificate.verification": _certificate_verification,
}


def config_from_kafka_properties(properties: Mapping[str, Any], **overrides: Any) -> ClientConfig:
    """A ClientConfig from Java/librdkafka-style properties (plus explicit overrides)."""
    options = kafka_properties_to_options(properties)
    options.update({k: v for k, v in overrides.items() if v is not None})
    return ClientConfig.create(options.pop("bootstrap_servers", None), **options)


def config_to_kafka_properties(config: ClientConfig) -> dict[str, str]:
    """The inverse of :func:`config_from_kafka_properties`: ``config`` as Java/librdkafka
    properties (secrets included: for a file of mode 0600, never for a log)."""
    out = {
        "bootstrap.servers": ",".join(str(b) for b in config.bootstrap_servers),
        "client.id": config.client_id,
        "security.protocol": config.security_protocol,
    }
    by_option = {
        option: key
        for key, option in KAFKA_TRANSLATED.items()
        if key not in ("metadata.broker.list", "sasl.mechanisms", "bootstrap.servers")
    }
    for option, key in by_option.items():
        value = getattr(config, option)
        if value is not None and key not in out:
            out[key] = str(value)
    for key, option in (
        ("socket.connection.setup.timeout.ms", "connect_timeout_s"),
        ("request.timeout.ms", "request_timeout_s"),
        ("default.api.timeout.ms", "call_timeout_s"),
        ("retry.backoff.ms", "retry_backoff_s"),
        ("retry.backoff.max.ms", "retry_backoff_max_s"),
    ):
        out[key] = str(round(getattr(config, option) * 1000))
    if not config.ssl_check_hostname:
        out["ssl.endpoint.identification.algorithm"] = "none"
    if config.oauthbearer is not None:
        from .auth.jaas import oauthbearer_to_properties

        out.update(oauthbearer_to_properties(config.oauthbearer))
    return out


#: What Java's ``String.trim()`` removes: every character up to and including the space.
_JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))


def parse_properties(text: str) -> dict[str, str]:
    """``text`` read exactly as ``java.util.Properties.load(Reader)`` reads it (``key=value``,
    ``key: value``, ``key value``, backslash escapes including ``\\uXXXX``, continued lines,
    ``#`` and ``!`` comments; the last of a repeated key wins). The ``javaproperties`` library
    does the parsing (imported here, not at the top: it brings urllib.request, email and xml with
    it, which every command that reads no properties file would pay at its start; measured in
    docs/performance.rst, "The everyday lag")."""
    import javaproperties

    try:
        return javaproperties.loads(text)
    except javaproperties.InvalidUEscapeError:
        # the escape's text is left out of the message: it may be part of a password
        raise ConfigurationError(
            "malformed \\uXXXX escape: Java needs four hexadecimal digits after \\u "
            "(write a backslash itself as \\\\)."
        ) from None


def format_properties(properties: Mapping[str, str]) -> str:
    """``properties`` as a properties file that :func:`parse_properties` and Java read back to
    the same values (``=``, ``:``, ``#``, backslashes and non-ASCII escaped)."""
    import javaproperties

    return javaproperties.dumps(properties, timestamp=None, sort_keys=False)


def read_properties_file(path: str) -> dict[str, str]:
    """A client.properties file, read as Java's Kafka tools read one: ``java.util.Properties``
    syntax (:func:`parse_properties`), then each value trimmed as Kafka's ``ConfigDef`` trims
    string and password values before using them. The file is read as UTF-8."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read client properties file {path!r}: {exc.strerror}.") from None
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"client properties file {path!r} is not UTF-8 text (byte {exc.start}): give a "
            "Java-style client.properties file of 'key=value' lines."
        ) from None
    if "\x00" in text:
        raise ConfigurationError(
            f"client properties file {path!r} is binary (it contains NUL bytes): give a "
            "Java-style client.properties file of 'key=value' lines."
        )
    try:
        properties = parse_properties(text)
    except ConfigurationError as exc:
        raise ConfigurationError(f"client properties file {path!r}: {exc}") from None
    return {key: value.strip(_JAVA_TRIMMED) for key, value in properties.items()}
