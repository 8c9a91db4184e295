"""Where the Kafka Connect REST API is and how to reach it, validated before any request.

Three ways in, one validation (:meth:`ConnectClusterConfig.create`):

* Python: ``ConnectClusterConfig.create("https://connect:8083", username=..., ...)``;
* the CLI: ``--connect-url`` (repeatable) plus ``connect.*`` keys in the client properties
  file (:func:`connect_configs_from_properties`; :func:`split_connect_properties` takes them
  out before the rest goes to the Kafka client, which refuses keys it does not know);
* an Airflow connection of type ``kgroups_connect`` (:func:`connect_configs_from_connection`,
  pure; the hook in ``hooks/connect.py`` only looks the connection up).

Every error names the option as the user spelled it (property, extra key or argument) and
never the value of a secret. Credentials in the URL (``https://user:pw@host``) are refused:
URLs end up in logs and reasons, credentials must not.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..client.errors import ConfigurationError
from ..client.numbers import check_int, to_number
from ..client.properties import as_bool, is_blank

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_S = 0.5

#: ``connect.*`` keys of the CLI's client properties file -> ConnectClusterConfig fields.
PROPERTY_PREFIX = "connect."
PROPERTIES = {
    "connect.url": "url",
    "connect.basic.auth.user": "username",
    "connect.basic.auth.password": "password",
    "connect.ssl.ca.location": "ca_bundle",
    "connect.ssl.verify": "verify",
    "connect.timeout.ms": "timeout_ms",
    "connect.retries": "retries",
    "connect.retry.backoff.ms": "backoff_ms",
}

#: extra keys of a ``kgroups_connect`` Airflow connection.
CONNECTION_EXTRA = ("verify", "ca_bundle", "timeout_s", "retries", "backoff_s")


@dataclass(frozen=True, slots=True)
class ConnectClusterConfig:
    """One Kafka Connect cluster's REST endpoint (any worker of it: workers forward requests).

    ``verify``: ``True`` (system trust store), ``False`` (no certificate check) or the path of
    a PEM CA bundle (file or ``c_rehash`` directory). ``timeout_s`` bounds one HTTP request;
    the caller's deadline bounds the whole read (retries included). ``retries``: further
    attempts after a 5xx, a 429 or a connection error, ``backoff_s`` apart (doubling), or as
    long as the server's ``Retry-After`` says when that fits in the deadline.
    """

    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    verify: bool | str = True
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S

    @classmethod
    def create(
        cls,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        verify: bool | str = True,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        names: Mapping[str, str] | None = None,
    ) -> ConnectClusterConfig:
        """Validate and normalise; ``names`` maps a field to the option name the user wrote."""

        def name(field_name: str) -> str:
            return (names or {}).get(field_name, field_name)

        url = _validate_url(url, name("url"))
        username = None if is_blank(username) else str(username)
        password = None if is_blank(password) else str(password)
        if (username is None) != (password is None):
            missing = "password" if password is None else "username"
            raise ConfigurationError(
                f"Kafka Connect basic auth needs both a user and a password: "
                f"{name(missing)} is missing for {url}."
            )
        if isinstance(verify, str):
            text = verify
            if is_blank(text):
                verify = True
            else:
                try:
                    verify = as_bool(name("verify"), text)
                except ConfigurationError:
                    verify = _validate_ca_path(text, name("verify"))
        elif not isinstance(verify, bool):
            raise ConfigurationError(
                f"{name('verify')} must be true, false or the path of a CA bundle, got {verify!r}."
            )
        if isinstance(verify, str) and not url.startswith("https://"):
            raise ConfigurationError(
                f"{name('verify')} names a CA bundle but {url} is not https: use an https:// "
                "URL or drop the CA bundle."
            )
        timeout_s = _positive_seconds(name("timeout_s"), timeout_s)
        backoff_s = _positive_seconds(name("backoff_s"), backoff_s, allow_zero=True)
        check_int(name("retries"), retries, at_least=0, must_be="a whole number >= 0")
        return cls(url, username, password, verify, timeout_s, retries, backoff_s)

    @property
    def uses_auth(self) -> bool:
        return self.username is not None

    def redacted(self) -> dict[str, Any]:
        """For logs and reports: never the password."""
        return {
            "url": self.url,
            "username": self.username,
            "password": "***" if self.password else None,
            "verify": self.verify,
            "timeout_s": self.timeout_s,
            "retries": self.retries,
            "backoff_s": self.backoff_s,
        }


def _validate_url(url: Any, option: str) -> str:
    if is_blank(url) or not isinstance(url, str):
        raise ConfigurationError(
            f"{option} is missing: give the Kafka Connect REST URL, e.g. http://connect:8083."
        )
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"{option} {text!r} is not an http:// or https:// URL with a host, e.g. http://connect:8083."
        )
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ConfigurationError(
            f"{option} must not carry credentials: give the user and password as their own "
            "options (they are never logged; a URL is)."
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(
            f"{option} {text!r} must not have a query or fragment: give the REST root, "
            "e.g. http://connect:8083 or https://gw/connect."
        )
    try:
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        raise ConfigurationError(f"{option} {text!r} has an invalid port.") from None
    return text.rstrip("/")


def _validate_ca_path(path: str, option: str) -> str:
    path = os.path.expanduser(path.strip())
    if not os.path.exists(path):
        raise ConfigurationError(
            f"{option}: CA bundle {path!r} does not exist: give the path of a PEM file (or true/false)."
        )
    return path


def _positive_seconds(option: str, value: Any, *, allow_zero: bool = False) -> float:
    seconds = to_number(option, value, must_be="a number of seconds")
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise ConfigurationError(
            f"{option} must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}."
        )
    return seconds


def _number(option: str, value: Any, *, scale: float = 1.0, whole: bool = False) -> float | int:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ConfigurationError(f"{option} must be a number, got {value!r}.") from None
    if whole:
        if not number.is_integer():
            raise ConfigurationError(f"{option} must be a whole number, got {value!r}.")
        return int(number)
    return number * scale


# -- the CLI: --connect-url and connect.* properties ------------------------------------------


def split_connect_properties(properties: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(Kafka client properties, ``connect.*`` properties): the Kafka client refuses unknown keys."""
    kafka = {k: v for k, v in properties.items() if not k.startswith(PROPERTY_PREFIX)}
    connect = {k: v for k, v in properties.items() if k.startswith(PROPERTY_PREFIX)}
    return kafka, connect


def connect_configs_from_properties(
    properties: Mapping[str, Any], urls: Iterable[str] = ()
) -> list[ConnectClusterConfig]:
    """One config per URL: ``urls`` (``--connect-url``, repeatable) then ``connect.url``
    (comma-separated), duplicates dropped; the credentials, CA bundle and timeouts of the
    ``connect.*`` properties apply to every URL. Keys not starting with ``connect.`` are
    ignored (they are the Kafka client's); an unknown ``connect.*`` key is an error.
    No URL at all: an empty list (Connect evidence not configured)."""
    props = _connect_properties(properties)
    all_urls = _distinct_urls([*urls, *str(props.get("connect.url", "")).split(",")])
    if not all_urls:
        if set(props) - {"connect.url"}:
            raise ConfigurationError(
                f"{', '.join(sorted(props))} set but no Kafka Connect URL: give --connect-url "
                "(or connect.url in the properties)."
            )
        return []
    verify = _verify_from_properties(props)
    names = {
        "url": "--connect-url/connect.url",
        "username": "connect.basic.auth.user",
        "password": "connect.basic.auth.password",
        "verify": "connect.ssl.ca.location" if isinstance(verify, str) else "connect.ssl.verify",
        "timeout_s": "connect.timeout.ms",
        "retries": "connect.retries",
        "backoff_s": "connect.retry.backoff.ms",
    }
    kwargs = _numbers_from_properties(props)
    return [
        ConnectClusterConfig.create(
            url,
            username=props.get("connect.basic.auth.user"),
            password=props.get("connect.basic.auth.password"),
            verify=verify,
            names=names,
            **kwargs,
        )
        for url in all_urls
    ]


def _connect_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The ``connect.*`` properties that are set; an unknown one is an error."""
    _, props = split_connect_properties(properties)
    props = {k: v for k, v in props.items() if not is_blank(v)}
    unknown = sorted(set(props) - set(PROPERTIES))
    if unknown:
        raise ConfigurationError(
            f"unknown Kafka Connect propert{'ies' if len(unknown) > 1 else 'y'} "
            f"{', '.join(unknown)}; known: {', '.join(PROPERTIES)}."
        )
    return props


def _distinct_urls(urls: Iterable[str | None]) -> list[str]:
    """The non-blank URLs, stripped, in order, each once (a trailing ``/`` makes no other URL)."""
    out: list[str] = []
    for url in urls:
        url = (url or "").strip()
        if url and url.rstrip("/") not in [u.rstrip("/") for u in out]:
            out.append(url)
    return out


def _verify_from_properties(props: Mapping[str, Any]) -> bool | str:
    """``connect.ssl.ca.location`` (a CA bundle's path), else ``connect.ssl.verify``, else True."""
    if (
        "connect.ssl.verify" in props
        and "connect.ssl.ca.location" in props
        and not as_bool("connect.ssl.verify", props["connect.ssl.verify"])
    ):
        raise ConfigurationError(
            "connect.ssl.verify=false with connect.ssl.ca.location cannot be honoured: drop one of them."
        )
    if "connect.ssl.ca.location" in props:
        return str(props["connect.ssl.ca.location"])
    if "connect.ssl.verify" in props:
        return as_bool("connect.ssl.verify", props["connect.ssl.verify"])
    return True


def _numbers_from_properties(props: Mapping[str, Any]) -> dict[str, Any]:
    """The timeout, backoff (both in ms) and retries that are set, as ConnectClusterConfig's."""
    kwargs: dict[str, Any] = {}
    if "connect.timeout.ms" in props:
        kwargs["timeout_s"] = _number("connect.timeout.ms", props["connect.timeout.ms"], scale=0.001)
    if "connect.retry.backoff.ms" in props:
        kwargs["backoff_s"] = _number(
            "connect.retry.backoff.ms", props["connect.retry.backoff.ms"], scale=0.001
        )
    if "connect.retries" in props:
        kwargs["retries"] = _number("connect.retries", props["connect.retries"], whole=True)
    return kwargs


# -- Airflow: a kgroups_connect connection (pure; the hook only looks it up) ------------------


def urls_from_host(host: str | None, port: int | None, schema: str | None) -> list[str]:
    """Host holds a URL or a host name, or several comma-separated (one per Connect cluster);
    entries without a scheme take Schema (default http), entries without a port take Port."""
    if is_blank(host):
        return []
    scheme = (schema or "").strip().lower() or "http"
    urls = []
    for item in str(host).split(","):
        item = item.strip()
        if not item:
            continue
        if "://" not in item:
            hostpart = item.split("/", 1)[0]
            has_port = "]:" in hostpart if hostpart.startswith("[") else ":" in hostpart
            if port and not has_port:
                rest = item[len(hostpart) :]
                item = f"{hostpart}:{port}{rest}"
            item = f"{scheme}://{item}"
        urls.append(item)
    return urls


def connect_configs_from_connection(
    conn_type: str | None,
    *,
    conn_id: str = "?",
    host: str | None = None,
    port: int | None = None,
    schema: str | None = None,
    login: str | None = None,
    password: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> list[ConnectClusterConfig]:
    """A ``kgroups_connect`` (or generic ``http``) connection -> one config per URL in Host.

    Extra: ``verify`` (true/false), ``ca_bundle`` (PEM path; implies verification),
    ``timeout_s``, ``retries``, ``backoff_s``."""
    extra = {k: v for k, v in dict(extra or {}).items() if not is_blank(v)}
    try:
        _check_connection(conn_type, extra)
        urls = urls_from_host(host, port, schema)
        if not urls:
            raise ConfigurationError(
                "no Kafka Connect URL: set Host to e.g. 'https://connect:8083' "
                "(several Connect clusters: comma-separated)."
            )
        verify = _verify_from_extra(extra)
        kwargs: dict[str, Any] = {key: extra[key] for key in ("timeout_s", "backoff_s") if key in extra}
        if "retries" in extra:
            kwargs["retries"] = _number("retries", extra["retries"], whole=True)
        names = {
            "url": "Host",
            "username": "Login",
            "password": "Password",
            "verify": "ca_bundle" if isinstance(verify, str) else "verify",
        }
        return [
            ConnectClusterConfig.create(
                url, username=login, password=password, verify=verify, names=names, **kwargs
            )
            for url in urls
        ]
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"connection {conn_id!r} ({conn_type or 'kgroups_connect'}): {exc}"
        ) from None


def _check_connection(conn_type: str | None, extra: Mapping[str, Any]) -> None:
    """A Kafka Connect connection type, and only known keys in its extra."""
    if conn_type not in ("kgroups_connect", "http", None, ""):
        raise ConfigurationError(
            f"connection type {conn_type!r} is not a Kafka Connect REST connection: use 'kgroups_connect'."
        )
    unknown = sorted(set(extra) - set(CONNECTION_EXTRA))
    if unknown:
        raise ConfigurationError(
            f"unknown option(s) {', '.join(unknown)} in the extra; known: {', '.join(CONNECTION_EXTRA)}."
        )


def _verify_from_extra(extra: Mapping[str, Any]) -> bool | str:
    """``ca_bundle`` (a CA bundle's path), else ``verify``, else True."""
    if "ca_bundle" in extra:
        if "verify" in extra and not as_bool("verify", extra["verify"]):
            raise ConfigurationError("verify=false with ca_bundle cannot be honoured: drop one of them.")
        return str(extra["ca_bundle"])
    if "verify" in extra:
        return as_bool("verify", extra["verify"])
    return True
