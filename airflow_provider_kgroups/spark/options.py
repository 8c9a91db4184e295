"""What the batch and the streaming ``kgroups`` sources read from their options alike: the client
(``kafka.*`` and ``kgroups.command.config``, secrets refused), the isolation level, the read
flags, and the small value parsers. Spark hands Python data sources case-insensitive options;
:func:`lower` normalises them once and every parser here takes the lowered mapping."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..client.config import ClientConfig
from ..client.errors import ConfigurationError
from ..client.properties import config_from_kafka_properties, read_properties_file

DEFAULT_FETCH_BYTES = 1024 * 1024
#: Options that would put a secret into query plans and the Spark UI.
SECRET_OPTIONS = (
    "kafka.sasl.password",
    "kafka.ssl.key.password",
    "kafka.sasl.jaas.config",
    "kafka.sasl.oauthbearer.client.secret",
    "kafka.sasl.oauthbearer.client.credentials.client.secret",
    "kafka.sasl.oauthbearer.config",
)
#: ``kafka.*`` options that are the source's own, not client properties.
SOURCE_KAFKA_OPTIONS = ("kafka.bootstrap.servers", "kafka.isolation.level")


@dataclass(frozen=True)
class ReadFlags:
    """How every task reads its records, whichever source planned them."""

    read_committed: bool
    fail_on_data_loss: bool
    include_headers: bool
    fetch_bytes: int


def lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): v for k, v in options.items()}


def positive_int(options: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    text = options.get(name.lower())
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ConfigurationError(f"option {name} must be an integer >= {minimum}, got {text!r}.")
    return value


def optional_positive_int(options: Mapping[str, str], name: str) -> int | None:
    return positive_int(options, name, 0) or None if name.lower() in options else None


def boolean(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = options.get(name.lower())
    if text is None:
        return default
    folded = str(text).strip().lower()
    if folded not in ("true", "false"):
        raise ConfigurationError(f"option {name} must be true or false, got {text!r}.")
    return folded == "true"


_TIME_UNITS_MS = {
    "us": 0.001,
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}


def duration_ms(options: Mapping[str, str], name: str, default: str) -> int:
    """A time as Spark writes it (``JavaUtils.timeStringAsMs``: ``15m``, ``30s``, ``500ms``, ``2h``;
    a bare number is milliseconds)."""
    text = str(options.get(name.lower(), default)).strip().lower()
    match = re.fullmatch(r"(\d+)\s*([a-z]*)", text)
    if not match or match.group(2) not in ("", *_TIME_UNITS_MS):
        raise ConfigurationError(
            f"option {name} must be a time such as '15m', '30s' or '500ms', got {options.get(name.lower())!r}."
        )
    return int(int(match.group(1)) * _TIME_UNITS_MS.get(match.group(2), 1))


def refuse_secrets(opts: Mapping[str, str]) -> None:
    secrets = [name for name in SECRET_OPTIONS if name in opts]
    if secrets:
        raise ConfigurationError(
            f"option(s) {', '.join(secrets)} would show a secret in query plans and the Spark "
            "UI: put it in a client.properties file and pass its path as "
            "kgroups.command.config."
        )


def client_config(opts: Mapping[str, str], own: tuple[str, ...]) -> ClientConfig:
    """The client: ``kafka.bootstrap.servers`` (required), the properties file, then every other
    ``kafka.<property>`` (``own`` names the source's options that are not client properties)."""
    refuse_secrets(opts)
    bootstrap = opts.get("kafka.bootstrap.servers")
    if not bootstrap or not str(bootstrap).strip():
        raise ConfigurationError(
            "option kafka.bootstrap.servers is required, e.g. 'kafka-1:9092,kafka-2:9092'."
        )
    properties = {}
    path = opts.get("kgroups.command.config")
    if path:
        properties.update(read_properties_file(path))
    skip = set(own) | set(SOURCE_KAFKA_OPTIONS)
    properties.update(
        {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.") and k not in skip}
    )
    properties["bootstrap.servers"] = bootstrap
    return config_from_kafka_properties(properties, client_id="kgroups-spark")


def read_flags(opts: Mapping[str, str]) -> ReadFlags:
    isolation = str(opts.get("kafka.isolation.level", "read_uncommitted")).strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ConfigurationError(
            f"option kafka.isolation.level must be read_uncommitted or read_committed, "
            f"got {opts['kafka.isolation.level']!r}."
        )
    return ReadFlags(
        read_committed=isolation == "read_committed",
        fail_on_data_loss=boolean(opts, "failOnDataLoss", True),
        include_headers=boolean(opts, "includeHeaders", False),
        fetch_bytes=positive_int(opts, "kgroups.fetch.bytes", DEFAULT_FETCH_BYTES, minimum=1024),
    )
