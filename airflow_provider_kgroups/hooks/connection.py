"""From an Airflow connection's fields to a :class:`ClientConfig`. Pure: no Airflow import.

Two connection types are read:

* ``kgroups`` (this provider's form): host = bootstrap servers (``h1:9092,h2:9092``; a host
  without a port takes the port field, else 9092), login/password = SASL username and
  password, extra = the other client options under their ClientConfig names
  (``security_protocol``, ``sasl_mechanism``, ``ssl_cafile``, ...), or ``bootstrap_servers``;
  OAUTHBEARER's under librdkafka's names with underscores (``sasl_oauthbearer_token_endpoint_url``,
  ``sasl_oauthbearer_client_id``, ``sasl_oauthbearer_client_secret``, ``oauth_cb``, ...: see
  :data:`~..client.auth.config.OPTIONS`).
* ``kafka`` (the official ``apache-airflow-providers-apache-kafka`` connection): the extra is
  a librdkafka configuration dict. The options an admin client needs are translated; options
  that only shape a consumer or a producer are ignored; anything else is refused with an error
  naming it, because silently dropping (say) a Kerberos setting would connect differently from
  what the connection says.

Error messages name options, never the value of a secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..client.auth.config import OPTIONS as OAUTH_OPTIONS
from ..client.auth.config import SECRET_OPTIONS as OAUTH_SECRETS
from ..client.auth.config import check_options as check_oauth_options
from ..client.config import SIZE_OPTIONS, ClientConfig
from ..client.errors import ConfigurationError
from ..client.properties import as_bool, as_int, as_seconds, is_blank, kafka_properties_to_options

DEFAULT_PORT = 9092
SECRET_OPTIONS = ("sasl_password", "ssl_key_password", *OAUTH_SECRETS)

#: kgroups extra keys (ClientConfig names); SASL credentials go in login/password.
KGROUPS_EXTRA_OPTIONS = (
    "bootstrap_servers",
    "client_id",
    "security_protocol",
    "sasl_mechanism",
    "ssl_cafile",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_key_password",
    "ssl_check_hostname",
    "connect_timeout_s",
    "request_timeout_s",
    "call_timeout_s",
    "retry_backoff_s",
    "retry_backoff_max_s",
    *SIZE_OPTIONS,
    *(
        name for name in OAUTH_OPTIONS if name != "allowed_token_callbacks"
    ),  # the allow list is Airflow's config
)
_FLOAT_OPTIONS = (
    "connect_timeout_s",
    "request_timeout_s",
    "call_timeout_s",
    "retry_backoff_s",
    "retry_backoff_max_s",
)


def bootstrap_from_host(host: str | None, port: int | None) -> str | None:
    """``host`` may hold several servers; entries without a port take ``port`` (else 9092)."""
    if is_blank(host):
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
    extra = {k: v for k, v in extra.items() if not is_blank(v)}
    if "sasl_username" in extra or "sasl_password" in extra:
        raise ConfigurationError(
            "a kgroups connection takes the SASL username and password in its Login and "
            "Password fields, not in the extra (remove sasl_username/sasl_password from it)."
        )
    unknown = sorted(set(extra) - set(KGROUPS_EXTRA_OPTIONS))
    if unknown:
        raise ConfigurationError(
            f"unknown option(s) {', '.join(unknown)} in the kgroups connection's extra; "
            f"known: {', '.join(KGROUPS_EXTRA_OPTIONS)}."
        )
    options = dict(extra)
    if "bootstrap_servers" not in options:
        options["bootstrap_servers"] = bootstrap_from_host(host, port)
    if not is_blank(login):
        options["sasl_username"] = login
    if not is_blank(password):
        options["sasl_password"] = password
    return options


def _kafka_options(host, port, login, password, extra: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    options = kafka_properties_to_options(extra, notes)
    if "bootstrap_servers" not in options:
        options["bootstrap_servers"] = bootstrap_from_host(host, port)
    if str(options.get("sasl_mechanism", "")).upper() == "OAUTHBEARER":
        return options  # the token is the credential; login/password are not used
    if is_blank(options.get("sasl_username")) and not is_blank(login):
        options["sasl_username"] = login
    if is_blank(options.get("sasl_password")) and not is_blank(password):
        options["sasl_password"] = password
    return options


def client_config_from_connection(
    conn_type: str | None,
    *,
    conn_id: str = "?",
    host: str | None = None,
    port: int | None = None,
    login: str | None = None,
    password: str | None = None,
    extra: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    notes: list[str] | None = None,
    allowed_token_callbacks: tuple[str, ...] = (),
) -> ClientConfig:
    """Build and validate the client configuration; every error names the connection and the option.
    ``notes`` receives a line for each option accepted but ignored or changed (to log);
    ``allowed_token_callbacks``: the ``oauth_cb`` paths the Airflow configuration allows."""
    extra = dict(extra or {})
    try:
        if conn_type == "kafka":
            options = _kafka_options(host, port, login, password, extra, notes if notes is not None else [])
        elif conn_type in ("kgroups", None, ""):
            options = _kgroups_options(host, port, login, password, extra)
        else:
            raise ConfigurationError(
                f"connection type {conn_type!r} is not supported: use 'kgroups' or the "
                "official provider's 'kafka'."
            )
        options.update({k: v for k, v in (overrides or {}).items() if v is not None})
        if is_blank(options.get("bootstrap_servers")):
            raise ConfigurationError(
                "no bootstrap servers: set Host to 'kafka-1:9092,kafka-2:9092' "
                "(or bootstrap_servers / bootstrap.servers in the extra)."
            )
        _parse_values(options)
        _check_sasl(options)
        if str(options.get("sasl_mechanism", "")).upper() == "OAUTHBEARER" and allowed_token_callbacks:
            options["allowed_token_callbacks"] = (
                *_as_list(options.get("allowed_token_callbacks")),
                *allowed_token_callbacks,
            )
        return ClientConfig.create(options.pop("bootstrap_servers"), **options)
    except ConfigurationError as exc:
        raise ConfigurationError(f"connection {conn_id!r} ({conn_type or 'kgroups'}): {exc}") from None


def _parse_values(options: dict[str, Any]) -> None:
    """Loose values (text from a connection's extra) as ClientConfig's: seconds, sizes, a bool."""
    for name in _FLOAT_OPTIONS:
        if name in options:
            options[name] = as_seconds(name, options[name])
    for name in SIZE_OPTIONS:
        if name in options:
            options[name] = as_int(name, options[name])
    if "ssl_check_hostname" in options:
        options["ssl_check_hostname"] = as_bool("ssl_check_hostname", options["ssl_check_hostname"])


def _check_sasl(options: Mapping[str, Any]) -> None:
    """SASL credentials only with a SASL protocol, and a SASL protocol only with a mechanism."""
    protocol = str(options.get("security_protocol") or "PLAINTEXT").upper()
    uses_sasl = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
    if not uses_sasl and ("sasl_username" in options or "sasl_password" in options):
        raise ConfigurationError(
            f"a SASL username/password is set but security_protocol is {protocol}: "
            "set security_protocol to SASL_SSL or SASL_PLAINTEXT, or remove the "
            "credentials."
        )
    if uses_sasl and is_blank(options.get("sasl_mechanism")):
        raise ConfigurationError(
            f"security_protocol {protocol} needs sasl_mechanism "
            "(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)."
        )


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [p.strip() for p in (value.split(",") if isinstance(value, str) else value) if str(p).strip()]


def check_client_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """A hook's ``client_options``, checked when the hook is built (at DAG parse time), without
    the connection: known ClientConfig option names and well-formed values."""
    from dataclasses import fields

    from ..client.config import SASL_MECHANISMS, SECURITY_PROTOCOLS, parse_bootstrap_servers

    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ConfigurationError(
            f"client_options must be a dict of client options such as {{'call_timeout_s': 20}}, "
            f"got {type(options).__name__}."
        )
    known = {f.name for f in fields(ClientConfig)} | set(OAUTH_OPTIONS)
    unknown = sorted(str(k) for k in options if k not in known)
    if unknown:
        raise ConfigurationError(
            f"client_options has unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}."
        )
    out = {k: v for k, v in options.items() if v is not None}
    for name in _FLOAT_OPTIONS:
        if name in out:
            seconds = as_seconds(f"client_options[{name!r}]", out[name])
            if seconds == 0 and name != "retry_backoff_s":
                raise ConfigurationError(f"client_options[{name!r}] must be > 0 seconds, got {out[name]!r}.")
            out[name] = seconds
    if "ssl_check_hostname" in out:
        out["ssl_check_hostname"] = as_bool("client_options['ssl_check_hostname']", out["ssl_check_hostname"])
    for name, choices in (("security_protocol", SECURITY_PROTOCOLS), ("sasl_mechanism", SASL_MECHANISMS)):
        if name in out and str(out[name]).upper() not in choices:
            raise ConfigurationError(
                f"client_options[{name!r}]={out[name]!r} is not one of {', '.join(choices)}."
            )
    if "bootstrap_servers" in out:
        parse_bootstrap_servers(out["bootstrap_servers"])
    check_oauth_options(out)
    for secret in SECRET_OPTIONS:
        if secret in out and not isinstance(out[secret], str):
            raise ConfigurationError(f"client_options[{secret!r}] must be a string.")
    return out
