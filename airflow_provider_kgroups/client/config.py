"""Client configuration, validated once, before any socket is opened."""

from __future__ import annotations

import math
import re
import ssl
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping

from .errors import ConfigurationError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.\-]+)):(?P<port>\d{1,5})$")


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_bootstrap_servers(value: str | Iterable[str]) -> tuple[BrokerAddress, ...]:
    """``"h1:9092,h2:9092"`` or a list of ``host:port`` strings -> addresses, or a clear error."""
    if value is None:
        raise ConfigurationError("bootstrap_servers is missing: give at least one 'host:port', e.g. 'kafka-1:9092'.")
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [str(item).strip() for item in items]
    items = [item for item in items if item]
    if not items:
        raise ConfigurationError("bootstrap_servers is empty: give at least one 'host:port', e.g. 'kafka-1:9092'.")
    addresses = []
    for item in items:
        item = re.sub(r"^[A-Za-z_]+://", "", item)  # tolerate 'PLAINTEXT://h:p' as the Java client does not
        match = _HOST_PORT.match(item)
        if not match:
            raise ConfigurationError(
                f"bootstrap_servers entry {item!r} is not 'host:port' (IPv6 as '[::1]:9092'); "
                "separate several servers with commas."
            )
        port = int(match["port"])
        if not 0 < port < 65536:
            raise ConfigurationError(f"bootstrap_servers entry {item!r} has port {port}, outside 1-65535.")
        addresses.append(BrokerAddress(match["v6"] or match["host"], port))
    return tuple(addresses)


def _positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{name} must be a number of seconds, got {value!r}.")
    if not math.isfinite(value):  # NaN compares false with everything: a call would never end
        raise ConfigurationError(f"{name} must be a finite number of seconds (e.g. 30), got {value!r}.")
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigurationError(f"{name} must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}.")
    return float(value)


def _count(name: str, value: int, minimum: int, unit: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{name} must be a whole number of {unit}, got {value!r}.")
    if value < minimum:
        raise ConfigurationError(f"{name} must be at least {minimum} {unit}, got {value!r}.")
    return value


#: Sizes and counts bounding each request (see :mod:`.chunking`): option -> (minimum, unit).
SIZE_OPTIONS = {
    "max_groups_per_request": (1, "groups"),
    "max_request_bytes": (1024, "bytes"),
    "max_response_bytes": (4096, "bytes"),
    "max_in_flight_per_connection": (1, "requests"),
}


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Everything needed to reach and talk to a cluster. Secrets are hidden from ``repr``."""

    bootstrap_servers: tuple[BrokerAddress, ...]
    client_id: str = "kgroups"
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_check_hostname: bool = True
    connect_timeout_s: float = 10.0
    request_timeout_s: float = 30.0
    call_timeout_s: float = 60.0
    retry_backoff_s: float = 0.1
    retry_backoff_max_s: float = 1.0
    #: Groups per request (FindCoordinator, OffsetFetch v8+, DescribeGroups, ConsumerGroupDescribe,
    #: DeleteGroups): what bounds the size of each response.
    max_groups_per_request: int = 1000
    #: Bytes per request frame (Kafka's producer default ``max.request.size``; brokers refuse
    #: frames over ``socket.request.max.bytes``, 100 MiB by default).
    max_request_bytes: int = 1024 * 1024
    #: The largest response frame accepted (librdkafka's ``receive.message.max.bytes``); a larger
    #: one fails its request alone, and a request for several groups is split and sent again.
    max_response_bytes: int = 100 * 1024 * 1024
    #: Requests written to one connection before the earliest is answered. A broker handles a
    #: connection's requests one at a time, and a request's timeout runs from when it is written,
    #: so an unbounded pipeline would count the broker's time on every earlier request against
    #: the later ones (see README, "Large batches").
    max_in_flight_per_connection: int = 5

    def __post_init__(self) -> None:
        if not self.bootstrap_servers:
            raise ConfigurationError("bootstrap_servers is empty: give at least one 'host:port'.")
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ConfigurationError(
                f"security_protocol {self.security_protocol!r} is unknown: use one of {', '.join(SECURITY_PROTOCOLS)}."
            )
        if self.uses_sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise ConfigurationError(
                    f"sasl_mechanism {self.sasl_mechanism!r} is not supported: use one of {', '.join(SASL_MECHANISMS)} "
                    "(GSSAPI and OAUTHBEARER are not implemented)."
                )
            if not self.sasl_username or self.sasl_password is None:
                raise ConfigurationError(
                    f"security_protocol {self.security_protocol} needs sasl_username and sasl_password."
                )
        elif self.sasl_mechanism is not None:
            raise ConfigurationError(
                f"sasl_mechanism {self.sasl_mechanism!r} is set but security_protocol is {self.security_protocol}: "
                "use SASL_PLAINTEXT or SASL_SSL, or drop the mechanism."
            )
        elif self.sasl_username is not None or self.sasl_password is not None:
            # The credentials would silently not be used (and may be sent nowhere safe later).
            raise ConfigurationError(
                f"a SASL username/password (sasl.username / sasl.password) is set but security_protocol is "
                f"{self.security_protocol}: set security_protocol to SASL_SSL or SASL_PLAINTEXT (with "
                "sasl_mechanism), or remove the credentials."
            )
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ConfigurationError(f"{name} {path!r} is not a readable file.")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None) and self.ssl_keyfile is not None:
            raise ConfigurationError("ssl_keyfile is set without ssl_certfile: give both for client certificates.")
        for name in ("connect_timeout_s", "request_timeout_s", "call_timeout_s", "retry_backoff_max_s"):
            _positive(name, getattr(self, name))
        _positive("retry_backoff_s", self.retry_backoff_s, allow_zero=True)
        for name, (minimum, unit) in SIZE_OPTIONS.items():
            _count(name, getattr(self, name), minimum, unit)
        if self.uses_tls:
            self._check_tls_files()

    def _check_tls_files(self) -> None:
        """Load the TLS context now: a PEM file that holds no certificate or key, or a wrong key
        password, is bad input named here, not a failure at every broker later."""
        try:
            self.ssl_context()
        except ssl.SSLError as exc:
            files = ", ".join(f"{n}={getattr(self, n)!r}" for n in ("ssl_cafile", "ssl_certfile", "ssl_keyfile")
                              if getattr(self, n))
            reason = exc.reason or exc.strerror or type(exc).__name__
            raise ConfigurationError(
                f"the TLS files cannot be loaded ({files}): {reason}. Check that ssl_cafile holds PEM "
                "certificates, ssl_certfile a PEM certificate, ssl_keyfile its PEM private key, and "
                "ssl_key_password the key's password.") from None

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.uses_tls:
            return None
        context = ssl.create_default_context(cafile=self.ssl_cafile)
        context.check_hostname = self.ssl_check_hostname
        if not self.ssl_check_hostname:
            context.verify_mode = ssl.CERT_REQUIRED if self.ssl_cafile else ssl.CERT_NONE
        if self.ssl_certfile:
            # Never None: OpenSSL would prompt on the terminal for an encrypted key's password.
            context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, password=self.ssl_key_password or "")
        return context

    def redacted(self) -> dict[str, Any]:
        """A loggable view: the password fields say only whether they are set."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("sasl_password", "ssl_key_password"):
                value = "***" if value is not None else None
            elif f.name == "bootstrap_servers":
                value = ",".join(map(str, value))
            out[f.name] = value
        return out

    @classmethod
    def create(cls, bootstrap_servers: str | Iterable[str], **options: Any) -> "ClientConfig":
        """Build from loose input (strings from a CLI, env or connection); every error names its option."""
        known = {f.name for f in fields(cls)} - {"bootstrap_servers"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigurationError(f"unknown client option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")
        options = {key: value for key, value in options.items() if value is not None}
        if "security_protocol" in options:
            options["security_protocol"] = str(options["security_protocol"]).upper()
        if "sasl_mechanism" in options:
            options["sasl_mechanism"] = str(options["sasl_mechanism"]).upper()
        return cls(bootstrap_servers=parse_bootstrap_servers(bootstrap_servers), **options)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "ClientConfig":
        values = dict(values)
        return cls.create(values.pop("bootstrap_servers", None), **values)


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
    "max.in.flight.requests.per.connection", "max.in.flight",
    "debug", "log_level", "log.connection.close", "statistics.interval.ms", "topic.metadata.refresh.interval.ms",
    "metadata.max.age.ms", "allow.auto.create.topics", "socket.keepalive.enable", "socket.nagle.disable",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes", "api.version.request", "broker.version.fallback",
    "broker.address.family", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "client.rack",
    "connections.max.idle.ms",
})


#: confluent-kafka configuration keys that hold Python callables or a logger (the official
#: provider's examples set them): accepted and ignored, with a note.
KAFKA_CALLBACKS = frozenset({
    "error_cb", "throttle_cb", "stats_cb", "log_cb", "logger", "oauth_cb", "on_delivery", "on_commit",
    "on_assign", "on_revoke", "on_lost",
})
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
    try:
        if isinstance(value, bool):
            raise TypeError
        seconds = float(value) * scale
    except (TypeError, ValueError):
        raise ConfigurationError(f"option {name} must be a number of {unit}, got {value!r}.") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ConfigurationError(f"option {name} must be a finite number of {unit} >= 0 (e.g. 30000 ms / 30 s), "
                                 f"got {value!r}.")
    return seconds


def as_int(name: str, value: Any) -> int:
    """A whole number from loose input (``"1000"`` from a properties file or a connection extra)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if not text.isdigit():
        raise ConfigurationError(f"option {name} must be a whole number, got {value!r}.")
    return int(text)


def kafka_properties_to_options(properties: Mapping[str, Any], notes: list[str] | None = None) -> dict[str, Any]:
    """Java/librdkafka properties -> ClientConfig options. Anything this client cannot honour
    is an error naming it: silently dropping (say) a Kerberos setting would connect otherwise.
    What is accepted but changed or ignored is said in ``notes`` (one line each, no values of
    secrets), for the caller to log."""
    options: dict[str, Any] = {}
    unsupported = []
    notes = notes if notes is not None else []
    for key, value in properties.items():
        if key in KAFKA_CALLBACKS:
            notes.append(f"{key} ignored: a client callback or logger (confluent-kafka) has no meaning for this "
                         "admin client")
            continue
        if is_blank(value):
            continue
        if key == "socket.timeout.ms":
            seconds = as_seconds(key, value, scale=0.001)
            if seconds < MIN_SOCKET_TIMEOUT_S:
                notes.append(f"socket.timeout.ms={value} is librdkafka's timeout for one network request; below "
                             f"{MIN_SOCKET_TIMEOUT_S:g} s every request to a busy broker would time out: using "
                             f"{MIN_SOCKET_TIMEOUT_S:g} s")
                seconds = MIN_SOCKET_TIMEOUT_S
            options["request_timeout_s"] = seconds
            continue
        if key in KAFKA_TRANSLATED:
            target = KAFKA_TRANSLATED[key]
            if target in options and str(options[target]) != str(value):
                raise ConfigurationError(f"{target} is set twice with different values "
                                         f"(e.g. sasl.mechanism and sasl.mechanisms): keep one.")
            options[target] = value
        elif key in KAFKA_TRANSLATED_MS:
            options[KAFKA_TRANSLATED_MS[key]] = as_seconds(key, value, scale=0.001)
        elif key in KAFKA_TRANSLATED_BYTES:
            options[KAFKA_TRANSLATED_BYTES[key]] = as_int(key, value)
        elif key == "ssl.endpoint.identification.algorithm":
            algorithm = str(value).strip().lower()
            if algorithm not in ("https", "none"):
                raise ConfigurationError(f"ssl.endpoint.identification.algorithm {value!r} is not supported: "
                                         "use 'https' (check the host name) or 'none'.")
            options["ssl_check_hostname"] = algorithm == "https"
        elif key == "enable.ssl.certificate.verification":
            if not as_bool(key, value):
                if "ssl.ca.location" in properties:
                    raise ConfigurationError("enable.ssl.certificate.verification=false with ssl.ca.location "
                                             "cannot be honoured: drop one of them.")
                options["ssl_check_hostname"] = False
        elif key not in KAFKA_IGNORED:
            unsupported.append(key)
    if unsupported:
        raise ConfigurationError(
            f"unsupported Kafka client option(s) {', '.join(sorted(unsupported))}: this client supports "
            "bootstrap.servers, client.id, security.protocol, sasl.mechanism(s) PLAIN/SCRAM-SHA-256/SCRAM-SHA-512, "
            "sasl.username, sasl.password, ssl.ca.location, ssl.certificate.location, ssl.key.location, "
            "ssl.key.password, ssl.endpoint.identification.algorithm, receive.message.max.bytes and timeouts in ms "
            "(GSSAPI, OAUTHBEARER and "
            "JKS keystores are not implemented); consumer/producer-only options are ignored."
        )
    return options


def config_from_kafka_properties(properties: Mapping[str, Any], **overrides: Any) -> ClientConfig:
    """A ClientConfig from Java/librdkafka-style properties (plus explicit overrides)."""
    options = kafka_properties_to_options(properties)
    options.update({k: v for k, v in overrides.items() if v is not None})
    return ClientConfig.create(options.pop("bootstrap_servers", None), **options)


def config_to_kafka_properties(config: ClientConfig) -> dict[str, str]:
    """The inverse of :func:`config_from_kafka_properties`: ``config`` as Java/librdkafka
    properties (secrets included: for a file of mode 0600, never for a log)."""
    out = {"bootstrap.servers": ",".join(str(b) for b in config.bootstrap_servers), "client.id": config.client_id,
           "security.protocol": config.security_protocol}
    by_option = {option: key for key, option in KAFKA_TRANSLATED.items()
                 if key not in ("metadata.broker.list", "sasl.mechanisms", "bootstrap.servers")}
    for option, key in by_option.items():
        value = getattr(config, option)
        if value is not None and key not in out:
            out[key] = str(value)
    for key, option in (("socket.connection.setup.timeout.ms", "connect_timeout_s"),
                        ("request.timeout.ms", "request_timeout_s"), ("default.api.timeout.ms", "call_timeout_s"),
                        ("retry.backoff.ms", "retry_backoff_s"), ("retry.backoff.max.ms", "retry_backoff_max_s")):
        out[key] = str(round(getattr(config, option) * 1000))
    if not config.ssl_check_hostname:
        out["ssl.endpoint.identification.algorithm"] = "none"
    return out


def read_properties_file(path: str) -> dict[str, str]:
    """A Java-style ``key=value`` client.properties file (``#`` comments)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read client properties file {path!r}: {exc.strerror}.") from None
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"client properties file {path!r} is not UTF-8 text (byte {exc.start}): give a "
                                 "Java-style client.properties file of 'key=value' lines.") from None
    if "\x00" in text:
        raise ConfigurationError(f"client properties file {path!r} is binary (it contains NUL bytes): give a "
                                 "Java-style client.properties file of 'key=value' lines.")
    properties = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ConfigurationError(f"{path}:{number}: expected 'key=value', got {line!r}.")
        properties[key.strip()] = value.strip()
    return properties
