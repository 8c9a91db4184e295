"""Client configuration, validated once, before any socket is opened."""

from __future__ import annotations

import math
import re
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError
from .numbers import is_int, is_number

if TYPE_CHECKING:
    from .auth.config import OAuthBearerConfig

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

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
        raise ConfigurationError(
            "bootstrap_servers is missing: give at least one 'host:port', e.g. 'kafka-1:9092'."
        )
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [str(item).strip() for item in items]
    items = [item for item in items if item]
    if not items:
        raise ConfigurationError(
            "bootstrap_servers is empty: give at least one 'host:port', e.g. 'kafka-1:9092'."
        )
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
    if not is_number(value):
        raise ConfigurationError(f"{name} must be a number of seconds, got {value!r}.")
    if not math.isfinite(value):  # NaN compares false with everything: a call would never end
        raise ConfigurationError(f"{name} must be a finite number of seconds (e.g. 30), got {value!r}.")
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigurationError(f"{name} must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}.")
    return float(value)


def _count(name: str, value: int, minimum: int, unit: str) -> int:
    if not is_int(value):
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
    #: the later ones (see the docs, docs/real-clusters.rst, "Large batches").
    max_in_flight_per_connection: int = 5
    #: How OAUTHBEARER gets its tokens (:mod:`.auth`); set for ``sasl_mechanism="OAUTHBEARER"`` only.
    oauthbearer: OAuthBearerConfig | None = None

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
                    "(GSSAPI is not implemented)."
                )
            if self.sasl_mechanism == "OAUTHBEARER":
                self._check_oauthbearer()
            elif self.oauthbearer is not None:
                raise ConfigurationError(
                    f"OAUTHBEARER options are set but sasl_mechanism is {self.sasl_mechanism}: "
                    "set sasl_mechanism to OAUTHBEARER, or drop them."
                )
            elif not self.sasl_username or self.sasl_password is None:
                raise ConfigurationError(
                    f"security_protocol {self.security_protocol} needs sasl_username and sasl_password."
                )
        elif self.sasl_mechanism is not None or self.oauthbearer is not None:
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
            raise ConfigurationError(
                "ssl_keyfile is set without ssl_certfile: give both for client certificates."
            )
        for name in ("connect_timeout_s", "request_timeout_s", "call_timeout_s", "retry_backoff_max_s"):
            _positive(name, getattr(self, name))
        _positive("retry_backoff_s", self.retry_backoff_s, allow_zero=True)
        for name, (minimum, unit) in SIZE_OPTIONS.items():
            _count(name, getattr(self, name), minimum, unit)
        if self.uses_tls:
            self._check_tls_files()

    def _check_oauthbearer(self) -> None:
        if self.oauthbearer is None:
            from .auth.config import oauthbearer_from_options  # raises, naming the ways to get a token

            oauthbearer_from_options({}, [a.host for a in self.bootstrap_servers])
        if self.sasl_username is not None or self.sasl_password is not None:
            raise ConfigurationError(
                "sasl_username / sasl_password are not used by OAUTHBEARER (the token is): "
                "remove them, or choose PLAIN or SCRAM."
            )

    def _check_tls_files(self) -> None:
        """Load the TLS context now: a PEM file that holds no certificate or key, or a wrong key
        password, is bad input named here, not a failure at every broker later."""
        try:
            self.ssl_context()
        except ssl.SSLError as exc:
            files = ", ".join(
                f"{n}={getattr(self, n)!r}"
                for n in ("ssl_cafile", "ssl_certfile", "ssl_keyfile")
                if getattr(self, n)
            )
            reason = exc.reason or exc.strerror or type(exc).__name__
            raise ConfigurationError(
                f"the TLS files cannot be loaded ({files}): {reason}. Check that ssl_cafile holds PEM "
                "certificates, ssl_certfile a PEM certificate, ssl_keyfile its PEM private key, and "
                "ssl_key_password the key's password."
            ) from None

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
            elif f.name == "oauthbearer":
                value = value.redacted() if value is not None else None
            elif f.name == "bootstrap_servers":
                value = ",".join(map(str, value))
            out[f.name] = value
        return out

    @classmethod
    def create(cls, bootstrap_servers: str | Iterable[str], **options: Any) -> ClientConfig:
        """Build from loose input (strings from a CLI, env or connection); every error names its option."""
        from .auth.config import OPTIONS as OAUTH_OPTIONS

        known = {f.name for f in fields(cls)} - {"bootstrap_servers"} | set(OAUTH_OPTIONS)
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigurationError(
                f"unknown client option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}."
            )
        options = {key: value for key, value in options.items() if value is not None}
        if "security_protocol" in options:
            options["security_protocol"] = str(options["security_protocol"]).upper()
        if "sasl_mechanism" in options:
            options["sasl_mechanism"] = str(options["sasl_mechanism"]).upper()
        addresses = parse_bootstrap_servers(bootstrap_servers)
        oauth = {key: options.pop(key) for key in list(options) if key in OAUTH_OPTIONS}
        if options.get("sasl_mechanism") == "OAUTHBEARER" and "oauthbearer" not in options:
            from .auth.config import oauthbearer_from_options

            options["oauthbearer"] = oauthbearer_from_options(oauth, [a.host for a in addresses])
        elif oauth:
            raise ConfigurationError(
                f"OAUTHBEARER option(s) {', '.join(sorted(oauth))} are set but sasl_mechanism "
                f"is {options.get('sasl_mechanism')}: set sasl_mechanism to OAUTHBEARER, or "
                "drop them."
            )
        return cls(bootstrap_servers=addresses, **options)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ClientConfig:
        values = dict(values)
        return cls.create(values.pop("bootstrap_servers", None), **values)
