"""How a client gets its OAUTHBEARER token: one validated value, checked before any network call.

The names follow Kafka's Java client (KIP-768 ``OAuthBearerLoginCallbackHandler``, KIP-1139's
``sasl.oauthbearer.client.credentials.*``) and librdkafka (``sasl.oauthbearer.method``,
``oauth_cb``); :mod:`.jaas` translates their properties into the flat options read here
(:data:`OPTIONS`), which are also the ``kgroups`` connection's extra keys.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigurationError
from ..numbers import check_number, to_number


class TokenSource(str, Enum):
    """Where the token comes from."""

    OIDC = "oidc"  # client credentials at a token endpoint (KIP-768 HttpAccessTokenRetriever)
    AWS_MSK_IAM = "aws_msk_iam"  # a SigV4-signed token from AWS's aws-msk-iam-sasl-signer-python
    CALLBACK = "callback"  # a function by dotted path, as confluent-kafka's oauth_cb
    UNSECURED = "unsecured"  # an unsigned JWS (OAuthBearerUnsecuredLoginCallbackHandler): development only


#: Amazon MSK bootstrap hosts name their region (as the official Kafka provider reads them):
#: b-1.demo.abcde1.c2.kafka.us-east-1.amazonaws.com, boot-abcde1.c2.kafka-serverless.us-east-1.amazonaws.com
MSK_HOST = re.compile(
    r"\.kafka(?:-serverless)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$", re.IGNORECASE
)
_AWS_REGION = re.compile(r"^[a-z]{2}(?:-[a-z]+)+-\d+$")
_DOTTED_PATH = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
#: RFC 7628 section 3.1 as OAuthBearerClientInitialResponse checks extensions (KIP-342)
_EXTENSION_KEY = re.compile(r"^[A-Za-z]+$")
_EXTENSION_VALUE = re.compile(r"^[\x21-\x7E \t\r\n]+$")
SIGNER_MODULE = "aws_msk_iam_sasl_signer"
ALLOW_LIST_OPTION = "[kgroups] allowed_token_callbacks"


@dataclass(frozen=True, slots=True)
class OAuthBearerConfig:
    """One way to get tokens, with Kafka's defaults (SaslConfigs) for timing. Secrets
    (``client_secret``, ``callback_config``) are hidden from ``repr``."""

    source: TokenSource
    token_endpoint_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scope: str | None = None
    extensions: tuple[
        tuple[str, str], ...
    ] = ()  # KIP-342 SASL extensions, e.g. Confluent Cloud's logicalCluster
    sub_claim_name: str = "sub"  # sasl.oauthbearer.sub.claim.name
    scope_claim_name: str = "scope"  # sasl.oauthbearer.scope.claim.name
    aws_region: str | None = None
    aws_profile: str | None = None
    aws_role_arn: str | None = None
    callback: str | None = (
        None  # dotted path: f(config_str) -> (token, expiry epoch s[, principal, extensions])
    )
    callback_config: str | None = field(
        default=None, repr=False
    )  # sasl.oauthbearer.config, handed to the callback
    allowed_callbacks: tuple[str, ...] = ()  # the operator's allow list ([kgroups] allowed_token_callbacks)
    unsecured_claims: tuple[tuple[str, Any], ...] = ()  # unsecuredLogin*Claim_<name> options
    unsecured_lifetime_s: float = 3600.0  # unsecuredLoginLifetimeSeconds
    connect_timeout_s: float | None = (
        None  # sasl.login.connect.timeout.ms (None: the client's connect timeout)
    )
    read_timeout_s: float | None = None  # sasl.login.read.timeout.ms (None: the client's request timeout)
    retry_backoff_s: float = 0.1  # sasl.login.retry.backoff.ms
    retry_backoff_max_s: float = 10.0  # sasl.login.retry.backoff.max.ms
    refresh_window_factor: float = 0.8  # sasl.login.refresh.window.factor
    refresh_window_jitter: float = 0.05  # sasl.login.refresh.window.jitter
    refresh_min_period_s: float = 60.0  # sasl.login.refresh.min.period.seconds
    refresh_buffer_s: float = 300.0  # sasl.login.refresh.buffer.seconds

    def __post_init__(self) -> None:
        check = _CHECKS[self.source]
        check(self)
        for name, value in self.extensions:
            if name == "auth" or not _EXTENSION_KEY.match(name):
                raise ConfigurationError(
                    f"SASL extension name {name!r} is invalid: letters only, and not 'auth' "
                    "(RFC 7628, KIP-342)."
                )
            if not _EXTENSION_VALUE.match(value):
                raise ConfigurationError(
                    f"SASL extension {name!r} has a value with characters RFC 7628 does not "
                    "allow (printable ASCII, space, tab, CR, LF)."
                )
        for name, low, high in (
            ("refresh_window_factor", 0.5, 1.0),
            ("refresh_window_jitter", 0.0, 0.25),
            ("refresh_min_period_s", 0, 900),
            ("refresh_buffer_s", 0, 3600),
            ("retry_backoff_s", 0, math.inf),
            ("retry_backoff_max_s", 0, math.inf),
            ("unsecured_lifetime_s", 1, math.inf),
        ):
            _within(name, getattr(self, name), low, high)
        for name in ("connect_timeout_s", "read_timeout_s"):
            if getattr(self, name) is not None:
                _within(name, getattr(self, name), 0.001, math.inf)
        if self.retry_backoff_max_s < self.retry_backoff_s:
            raise ConfigurationError("sasl.login.retry.backoff.max.ms is below sasl.login.retry.backoff.ms.")

    def describe(self) -> str:
        """One line for logs, without secrets."""
        if self.source is TokenSource.OIDC:
            url = endpoint_name(str(self.token_endpoint_url))
            return f"OIDC client credentials at {url} as client {self.client_id!r}"
        if self.source is TokenSource.AWS_MSK_IAM:
            how = (
                f" (profile {self.aws_profile})"
                if self.aws_profile
                else f" (role {self.aws_role_arn})"
                if self.aws_role_arn
                else ""
            )
            return f"AWS MSK IAM in {self.aws_region}{how}"
        if self.source is TokenSource.CALLBACK:
            return f"token callback {self.callback}"
        return "unsecured JWS (development only)"

    def redacted(self) -> dict[str, Any]:
        url = endpoint_name(self.token_endpoint_url) if self.token_endpoint_url else None
        return {
            "source": self.source.value,
            "token_endpoint_url": url,
            "client_id": self.client_id,
            "client_secret": "***" if self.client_secret else None,
            "scope": self.scope,
            "extensions": [name for name, _ in self.extensions],
            "aws_region": self.aws_region,
            "callback": self.callback,
        }


def endpoint_name(url: str) -> str:
    """A URL as it may be shown: no user info, no query, no fragment."""
    parts = urlsplit(str(url).strip())
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _within(name: str, value: Any, low: float, high: float) -> None:
    bound = f"between {low:g} and {high:g}" if math.isfinite(high) else f">= {low:g}"
    check_number(
        f"OAUTHBEARER option {name}",
        value,
        at_least=low,
        at_most=high if math.isfinite(high) else None,
        must_be=f"a number {bound}",
    )


def _check_oidc(c: OAuthBearerConfig) -> None:
    url = c.token_endpoint_url
    if not url or not str(url).strip():
        raise ConfigurationError(
            "OAUTHBEARER with OIDC needs sasl.oauthbearer.token.endpoint.url (the identity "
            "provider's token endpoint, e.g. https://idp.example.com/oauth2/token)."
        )
    parts = urlsplit(str(url).strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"sasl.oauthbearer.token.endpoint.url {url!r} is not an http(s) URL with a host: "
            "give the identity provider's token endpoint, e.g. https://idp.example.com/token "
            "(a file: URL, Kafka's FileJwtRetriever, is not supported)."
        )
    for name, java in (("client_id", "clientId"), ("client_secret", "clientSecret")):
        value = getattr(c, name)
        if not isinstance(value, str) or not value.strip():
            raise ConfigurationError(
                f"OAUTHBEARER with OIDC needs the {name.replace('_', ' ')}: set "
                f'sasl.oauthbearer.client.credentials.{name.replace("_", ".")} (or {java}="..." in '
                f"sasl.jaas.config, or the connection's sasl_oauthbearer_{name})."
            )


def _check_msk(c: OAuthBearerConfig) -> None:
    if importlib.util.find_spec(SIGNER_MODULE) is None:
        raise ConfigurationError(
            "OAUTHBEARER with AWS MSK IAM needs AWS's signer (aws-msk-iam-sasl-signer-python): "
            "pip install 'airflow-provider-kgroups[msk]'."
        )
    if not c.aws_region or not _AWS_REGION.match(c.aws_region):
        got = f" ({c.aws_region!r} is not one)" if c.aws_region else ""
        raise ConfigurationError(
            f"OAUTHBEARER with AWS MSK IAM needs the cluster's AWS region{got}: set "
            "sasl_oauthbearer_aws_region (e.g. 'us-east-1'), or use the MSK bootstrap host "
            "names (b-1.<cluster>.kafka.<region>.amazonaws.com), which carry it."
        )
    if c.aws_profile and c.aws_role_arn:
        raise ConfigurationError("AWS MSK IAM: give an AWS profile or a role ARN, not both.")


def _check_callback(c: OAuthBearerConfig) -> None:
    path = c.callback
    if not isinstance(path, str) or not _DOTTED_PATH.match(path.strip()):
        raise ConfigurationError(
            f"oauth_cb {path!r} is not a dotted path such as 'my_company.kafka_auth.token'."
        )
    if not callback_allowed(path, c.allowed_callbacks):
        listed = ", ".join(c.allowed_callbacks) or "empty"
        raise ConfigurationError(
            f"oauth_cb {path!r} is not allowed: only callbacks listed in {ALLOW_LIST_OPTION} "
            f"(now {listed}) are imported; an administrator adds the full path there "
            "(AIRFLOW__KGROUPS__ALLOWED_TOKEN_CALLBACKS)."
        )
    load_callback(path)


def callback_allowed(path: str, allowed: Iterable[str]) -> bool:
    """``path`` is listed, or its module is (``module.*``)."""
    module = path.rpartition(".")[0]
    return any(entry == path or (entry.endswith(".*") and entry[:-2] == module) for entry in allowed)


def _check_unsecured(c: OAuthBearerConfig) -> None:
    claims = dict(c.unsecured_claims)
    if not isinstance(claims.get("sub"), str) or not claims["sub"].strip():
        raise ConfigurationError(
            'OAUTHBEARER unsecured login needs unsecuredLoginStringClaim_sub="<principal>" '
            "in sasl.jaas.config (Kafka's OAuthBearerUnsecuredLoginCallbackHandler)."
        )


_CHECKS = {
    TokenSource.OIDC: _check_oidc,
    TokenSource.AWS_MSK_IAM: _check_msk,
    TokenSource.CALLBACK: _check_callback,
    TokenSource.UNSECURED: _check_unsecured,
}


def load_callback(path: str) -> Callable[..., object]:
    """Import the allowed callback ``path`` (``package.module.function``): a clear error if it cannot be."""
    module_name, _, attribute = path.strip().rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(
            f"oauth_cb {path!r}: module {module_name!r} cannot be imported ({exc})."
        ) from None
    function: object = getattr(module, attribute, None)
    if not callable(function):
        raise ConfigurationError(f"oauth_cb {path!r}: {module_name} has no callable {attribute!r}.")
    return function


def region_from_bootstrap(hosts: Iterable[str]) -> str | None:
    for host in hosts:
        match = MSK_HOST.search(host)
        if match:
            return match["region"].lower()
    return None


# -- flat options (the kgroups connection's extra keys, ClientConfig.create's keyword arguments) ----

#: flat option -> OAuthBearerConfig field
OPTIONS = {
    "sasl_oauthbearer_method": "source",
    "sasl_oauthbearer_token_endpoint_url": "token_endpoint_url",
    "sasl_oauthbearer_client_id": "client_id",
    "sasl_oauthbearer_client_secret": "client_secret",
    "sasl_oauthbearer_scope": "scope",
    "sasl_oauthbearer_extensions": "extensions",
    "sasl_oauthbearer_sub_claim_name": "sub_claim_name",
    "sasl_oauthbearer_scope_claim_name": "scope_claim_name",
    "sasl_oauthbearer_aws_region": "aws_region",
    "sasl_oauthbearer_aws_profile": "aws_profile",
    "sasl_oauthbearer_aws_role_arn": "aws_role_arn",
    "oauth_cb": "callback",
    "sasl_oauthbearer_config": "callback_config",
    "allowed_token_callbacks": "allowed_callbacks",
    "sasl_oauthbearer_unsecured_claims": "unsecured_claims",
    "sasl_oauthbearer_unsecured_lifetime_s": "unsecured_lifetime_s",
    "sasl_login_connect_timeout_s": "connect_timeout_s",
    "sasl_login_read_timeout_s": "read_timeout_s",
    "sasl_login_retry_backoff_s": "retry_backoff_s",
    "sasl_login_retry_backoff_max_s": "retry_backoff_max_s",
    "sasl_login_refresh_window_factor": "refresh_window_factor",
    "sasl_login_refresh_window_jitter": "refresh_window_jitter",
    "sasl_login_refresh_min_period_s": "refresh_min_period_s",
    "sasl_login_refresh_buffer_s": "refresh_buffer_s",
}
SECRET_OPTIONS = ("sasl_oauthbearer_client_secret", "sasl_oauthbearer_config")
_NUMBERS = {
    "connect_timeout_s",
    "read_timeout_s",
    "retry_backoff_s",
    "retry_backoff_max_s",
    "refresh_window_factor",
    "refresh_window_jitter",
    "refresh_min_period_s",
    "refresh_buffer_s",
    "unsecured_lifetime_s",
}
_SOURCES = {s.value: s for s in TokenSource} | {"oidc": TokenSource.OIDC, "default": None}


def parse_extensions(value: Any) -> tuple[tuple[str, str], ...]:
    """``"logicalCluster=lkc-1,identityPoolId=pool-2"`` (librdkafka's form) or a mapping."""
    if isinstance(value, Mapping):
        return tuple((str(k), str(v)) for k, v in value.items())
    if isinstance(value, (tuple, list)):
        return tuple((str(k), str(v)) for k, v in value)
    pairs = []
    for item in str(value).split(","):
        if item.strip():
            name, sep, val = item.partition("=")
            if not sep:
                raise ConfigurationError(
                    f"sasl.oauthbearer.extensions item {name.strip()!r} is not name=value."
                )
            pairs.append((name.strip(), val.strip()))
    return tuple(pairs)


def oauthbearer_from_options(
    options: Mapping[str, Any], bootstrap_hosts: Iterable[str] = ()
) -> OAuthBearerConfig:
    """The flat options -> a validated config. The source is given (``sasl_oauthbearer_method``)
    or follows from what is set: ``oauth_cb``, a token endpoint, MSK bootstrap hosts (as the
    official Kafka provider infers MSK IAM), unsecured claims."""
    values: dict[str, Any] = {}
    for key, value in options.items():
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        target = OPTIONS[key]
        if target == "source":
            text = value.value if isinstance(value, TokenSource) else str(value).strip().lower()
            if text not in _SOURCES:
                raise ConfigurationError(
                    f"sasl_oauthbearer_method {value!r} is unknown: use oidc, aws_msk_iam, "
                    "callback or unsecured."
                )
            if _SOURCES[text] is not None:
                values["source"] = _SOURCES[text]
        elif target == "extensions":
            values[target] = parse_extensions(value)
        elif target == "allowed_callbacks":
            items = value.split(",") if isinstance(value, str) else list(value)
            values[target] = tuple(p.strip() for p in items if str(p).strip())
        elif target == "unsecured_claims":
            claims = value.items() if isinstance(value, Mapping) else value
            values[target] = tuple((str(k), tuple(v) if isinstance(v, list) else v) for k, v in claims)
        elif target in _NUMBERS:
            values[target] = _number(key, value)
        else:
            values[target] = str(value).strip() if target != "client_secret" else str(value)
    hosts = list(bootstrap_hosts)
    if "source" not in values:
        values["source"] = _infer_source(values, hosts)
    if values["source"] is TokenSource.AWS_MSK_IAM and "aws_region" not in values:
        region = region_from_bootstrap(hosts)
        if region:
            values["aws_region"] = region
    return OAuthBearerConfig(**values)


def check_options(options: Mapping[str, Any]) -> None:
    """Each OAUTHBEARER option given on its own well-formed (a hook's ``client_options``, checked at
    DAG parse time; the rest comes from the connection at run time): the method, the endpoint URL,
    the callback's path, extensions, numbers, secrets as strings."""
    for key, value in options.items():
        target = OPTIONS.get(key)
        if target is None or value is None:
            continue
        if target == "source":
            if str(value).strip().lower() not in _SOURCES:
                raise ConfigurationError(
                    f"{key} {value!r} is unknown: use oidc, aws_msk_iam, callback or unsecured."
                )
        elif target == "token_endpoint_url":
            parts = urlsplit(str(value).strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigurationError(f"{key} {value!r} is not an http(s) URL with a host.")
        elif target == "callback" and not _DOTTED_PATH.match(str(value).strip()):
            raise ConfigurationError(
                f"oauth_cb {value!r} is not a dotted path such as 'my_company.kafka_auth.token'."
            )
        elif target == "extensions":
            OAuthBearerConfig(
                TokenSource.UNSECURED, unsecured_claims=(("sub", "x"),), extensions=parse_extensions(value)
            )
        elif target in _NUMBERS:
            _number(key, value)
        elif key in SECRET_OPTIONS and not isinstance(value, str):
            raise ConfigurationError(f"{key} must be a string.")


def _infer_source(values: Mapping[str, Any], hosts: list[str]) -> TokenSource:
    if values.get("callback"):
        return TokenSource.CALLBACK
    if values.get("token_endpoint_url") or values.get("client_id") or values.get("client_secret"):
        return TokenSource.OIDC
    if (
        values.get("aws_region")
        or values.get("aws_profile")
        or values.get("aws_role_arn")
        or region_from_bootstrap(hosts)
    ):
        return TokenSource.AWS_MSK_IAM
    if values.get("unsecured_claims"):
        return TokenSource.UNSECURED
    raise ConfigurationError(
        "sasl_mechanism OAUTHBEARER needs a token source: an OIDC token endpoint with a client id and secret "
        "(sasl.oauthbearer.token.endpoint.url), AWS MSK IAM (sasl_oauthbearer_method=aws_msk_iam), or a token "
        "callback (oauth_cb, allowed in [kgroups] allowed_token_callbacks)."
    )


def _number(name: str, value: Any) -> float:
    return to_number(f"OAUTHBEARER option {name}", value)


def with_allowed_callbacks(
    config: OAuthBearerConfig | None, allowed: Iterable[str]
) -> OAuthBearerConfig | None:
    """``config`` checked again against ``allowed`` (the hook's Airflow configuration)."""
    if config is None:
        return None
    return replace(config, allowed_callbacks=tuple(dict.fromkeys((*config.allowed_callbacks, *allowed))))
