"""Client configuration, validated once, before any socket is opened."""

from __future__ import annotations

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
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigurationError(f"{name} must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}.")
    return float(value)


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
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ConfigurationError(f"{name} {path!r} is not a readable file.")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None) and self.ssl_keyfile is not None:
            raise ConfigurationError("ssl_keyfile is set without ssl_certfile: give both for client certificates.")
        for name in ("connect_timeout_s", "request_timeout_s", "call_timeout_s", "retry_backoff_max_s"):
            _positive(name, getattr(self, name))
        _positive("retry_backoff_s", self.retry_backoff_s, allow_zero=True)

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
            context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, password=self.ssl_key_password)
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


#: Java / librdkafka client property -> ClientConfig field. One table for the CLI's
#: ``--command-config`` files and Airflow ``kafka`` connections alike.
KAFKA_PROPERTY_NAMES = {
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
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",
    "enable.ssl.certificate.verification": "ssl_check_hostname",
    "request.timeout.ms": "request_timeout_s",
    "socket.connection.setup.timeout.ms": "connect_timeout_s",
    "default.api.timeout.ms": "call_timeout_s",
    "retry.backoff.ms": "retry_backoff_s",
    "retry.backoff.max.ms": "retry_backoff_max_s",
}
#: Properties that change nothing for an admin client and are accepted silently.
KAFKA_PROPERTIES_IGNORED = frozenset({
    "group.id", "auto.offset.reset", "enable.auto.commit", "session.timeout.ms", "acks", "linger.ms",
    "api.version.request", "socket.keepalive.enable", "log_level", "debug",
})


def config_from_kafka_properties(properties: Mapping[str, Any], **overrides: Any) -> ClientConfig:
    """Translate Java/librdkafka-style properties; anything this client cannot honour is an error."""
    options: dict[str, Any] = {}
    unsupported = []
    for key, value in properties.items():
        if key in KAFKA_PROPERTIES_IGNORED:
            continue
        name = KAFKA_PROPERTY_NAMES.get(key)
        if name is None:
            unsupported.append(key)
            continue
        if name.endswith("_s") and key.endswith(".ms"):
            try:
                value = float(value) / 1000.0
            except (TypeError, ValueError):
                raise ConfigurationError(f"{key} must be a number of milliseconds, got {value!r}.") from None
        elif key == "ssl.endpoint.identification.algorithm":
            value = str(value).lower() == "https"
        elif key == "enable.ssl.certificate.verification":
            value = str(value).lower() not in ("false", "0", "no")
        options[name] = value
    if unsupported:
        raise ConfigurationError(
            f"unsupported Kafka client propert{'y' if len(unsupported) == 1 else 'ies'} "
            f"{', '.join(sorted(unsupported))}: this client supports {', '.join(sorted(KAFKA_PROPERTY_NAMES))} "
            "(GSSAPI/OAUTHBEARER and JKS keystores are not implemented; use PEM files)."
        )
    options.update({k: v for k, v in overrides.items() if v is not None})
    return ClientConfig.create(options.pop("bootstrap_servers", None), **options)


def read_properties_file(path: str) -> dict[str, str]:
    """A Java-style ``key=value`` client.properties file (``#`` comments)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigurationError(f"cannot read client properties file {path!r}: {exc.strerror}.") from None
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
