"""Java and librdkafka SASL properties -> ClientConfig options, and back (for the Spark data
source's properties file). One translation for the CLI's ``--command-config``, the official
``kafka`` connection's extra and ``kgroups.command.config``.

Java writes the credentials in ``sasl.jaas.config`` (``JaasConfig``'s syntax: one login
module, a control flag, ``key="value"`` options, a ``;``)::

    sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \\
        clientId="svc" clientSecret="..." scope="kafka" extension_logicalCluster="lkc-1";

The OAuthBearerLoginModule options read: ``clientId``, ``clientSecret``, ``scope``
(``OAuthBearerLoginCallbackHandler``), ``extension_<name>`` (KIP-342), and the unsecured
login's ``unsecuredLogin*`` options (``OAuthBearerUnsecuredLoginCallbackHandler``). PLAIN and
SCRAM modules give ``username`` / ``password``; AWS's ``IAMLoginModule`` (``sasl.mechanism=
AWS_MSK_IAM``, what MSK tells Java users to write) means MSK IAM, which this client speaks as
OAUTHBEARER with AWS's Python signer. No error message repeats an option's value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from .config import OAuthBearerConfig, TokenSource

#: Java login callback handlers / JWT retrievers that mean "the client-credentials grant" (KIP-768, KIP-1139)
OIDC_HANDLERS = frozenset(
    {
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
        "org.apache.kafka.common.security.oauthbearer.ClientCredentialsJwtRetriever",
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
    }
)
MSK_LOGIN_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
MSK_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
ALLOW_LIST_ENV = "AIRFLOW__KGROUPS__ALLOWED_TOKEN_CALLBACKS"

#: property -> flat option (the same meaning); milliseconds are converted
_DIRECT = {
    "sasl.oauthbearer.token.endpoint.url": "sasl_oauthbearer_token_endpoint_url",
    "sasl.oauthbearer.client.credentials.client.id": "sasl_oauthbearer_client_id",  # KIP-1139
    "sasl.oauthbearer.client.credentials.client.secret": "sasl_oauthbearer_client_secret",
    "sasl.oauthbearer.client.id": "sasl_oauthbearer_client_id",  # librdkafka
    "sasl.oauthbearer.client.secret": "sasl_oauthbearer_client_secret",
    "sasl.oauthbearer.scope": "sasl_oauthbearer_scope",
    "sasl.oauthbearer.extensions": "sasl_oauthbearer_extensions",
    "sasl.oauthbearer.sub.claim.name": "sasl_oauthbearer_sub_claim_name",
    "sasl.oauthbearer.scope.claim.name": "sasl_oauthbearer_scope_claim_name",
    "sasl.oauthbearer.aws.region": "sasl_oauthbearer_aws_region",  # this package's own (no Java name)
    "sasl.oauthbearer.config": "sasl_oauthbearer_config",
    "oauth_cb": "oauth_cb",
    "sasl.login.refresh.window.factor": "sasl_login_refresh_window_factor",
    "sasl.login.refresh.window.jitter": "sasl_login_refresh_window_jitter",
    "sasl.login.refresh.min.period.seconds": "sasl_login_refresh_min_period_s",
    "sasl.login.refresh.buffer.seconds": "sasl_login_refresh_buffer_s",
}
_MILLIS = {
    "sasl.login.connect.timeout.ms": "sasl_login_connect_timeout_s",
    "sasl.login.read.timeout.ms": "sasl_login_read_timeout_s",
    "sasl.login.retry.backoff.ms": "sasl_login_retry_backoff_s",
    "sasl.login.retry.backoff.max.ms": "sasl_login_retry_backoff_max_s",
}
_MARKERS = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class",
    "sasl.oauthbearer.jwt.retriever.class",
    "sasl.oauthbearer.method",
    "enable.sasl.oauthbearer.unsecure.jwt",
)
SASL_PROPERTIES = frozenset(_DIRECT) | frozenset(_MILLIS) | frozenset(_MARKERS)

_OPTION = re.compile(r'\s*([A-Za-z_][\w.\-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')
_FLAGS = ("required", "requisite", "sufficient", "optional")


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """``LoginModule flag key="value" ...;`` -> (module class, options)."""
    body = str(text).strip()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    if ";" in body.replace("\\;", ""):
        stripped = re.sub(r'"(?:[^"\\]|\\.)*"', '""', body)
        if ";" in stripped:
            raise ConfigurationError(
                "sasl.jaas.config must hold exactly one login module (one ';' at its end)."
            )
    head = body.split(None, 2)
    if len(head) < 2 or head[1].lower() not in _FLAGS:
        raise ConfigurationError(
            "sasl.jaas.config must read '<LoginModule class> required key=\"value\" ...;' "
            "(a login module, then its control flag)."
        )
    rest = head[2] if len(head) == 3 else ""
    options: dict[str, str] = {}
    position = 0
    while position < len(rest):
        if not rest[position:].strip():
            break
        match = _OPTION.match(rest, position)
        if not match:
            after = f" after option {list(options)[-1]!r}" if options else ""
            raise ConfigurationError(
                f'sasl.jaas.config: cannot read a key="value" option{after} (quote values '
                "that hold spaces or ';')."
            )
        value = match[2] if match[2] is not None else match[3]
        options[match[1]] = re.sub(r"\\(.)", r"\1", value)
        position = match.end()
    return head[0], options


def _unsecured(options: Mapping[str, str]) -> dict[str, Any]:
    """OAuthBearerUnsecuredLoginCallbackHandler's options -> claims, extensions, lifetime."""
    claims: dict[str, Any] = {}
    extensions = []
    lifetime = None
    for key, value in options.items():
        if key.startswith("unsecuredLoginStringClaim_"):
            claims[key.removeprefix("unsecuredLoginStringClaim_")] = value
        elif key.startswith("unsecuredLoginNumberClaim_"):
            try:
                claims[key.removeprefix("unsecuredLoginNumberClaim_")] = float(value)
            except ValueError:
                raise ConfigurationError(f"sasl.jaas.config option {key} must be a number.") from None
        elif key.startswith("unsecuredLoginListClaim_"):  # the first character is the delimiter
            claims[key.removeprefix("unsecuredLoginListClaim_")] = (
                [v for v in value[1:].split(value[:1]) if v] if value else []
            )
        elif key.startswith("unsecuredLoginExtension_"):
            extensions.append((key.removeprefix("unsecuredLoginExtension_"), value))
        elif key == "unsecuredLoginLifetimeSeconds":
            lifetime = value
    out: dict[str, Any] = {}
    if claims:
        out["sasl_oauthbearer_unsecured_claims"] = claims
    if extensions:
        out["sasl_oauthbearer_extensions"] = extensions
    if lifetime is not None:
        out["sasl_oauthbearer_unsecured_lifetime_s"] = lifetime
    return out


def sasl_options(properties: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """The SASL properties among ``properties`` (see :data:`SASL_PROPERTIES`) -> ClientConfig options."""
    from .config import _number

    out: dict[str, Any] = {}
    present = {k: v for k, v in properties.items() if k in SASL_PROPERTIES and not _blank(v)}
    mechanism = (
        str(properties.get("sasl.mechanism") or properties.get("sasl.mechanisms") or "").strip().upper()
    )
    for key, value in present.items():
        if key in _DIRECT:
            out[_DIRECT[key]] = value
        elif key in _MILLIS:
            out[_MILLIS[key]] = _number(key, value) / 1000.0
    for key in ("sasl.login.callback.handler.class", "sasl.oauthbearer.jwt.retriever.class"):
        if key in present:
            if str(present[key]).strip() not in OIDC_HANDLERS:
                raise ConfigurationError(
                    f"{key}={present[key]} is not supported: this client fetches OIDC tokens "
                    "itself (Kafka's OAuthBearerLoginCallbackHandler); for another source use "
                    "oauth_cb."
                )
            out.setdefault("sasl_oauthbearer_method", TokenSource.OIDC.value)
    handler = str(present.get("sasl.client.callback.handler.class", "")).strip()
    if handler and handler != MSK_HANDLER:
        raise ConfigurationError(
            f"sasl.client.callback.handler.class={handler} is not supported (only AWS's "
            f"{MSK_HANDLER}, for MSK IAM)."
        )
    method = str(present.get("sasl.oauthbearer.method", "")).strip().lower()
    if method:
        out["sasl_oauthbearer_method"] = {"oidc": "oidc", "default": "default"}.get(method, method)
    if "sasl.jaas.config" in present:
        module, options = parse_jaas(present["sasl.jaas.config"])
        out.update(_from_login_module(module, options, mechanism))
    if mechanism == "AWS_MSK_IAM":
        out["sasl_mechanism"] = "OAUTHBEARER"
        out["sasl_oauthbearer_method"] = TokenSource.AWS_MSK_IAM.value
        notes.append(
            "sasl.mechanism=AWS_MSK_IAM: spoken as OAUTHBEARER with AWS's MSK IAM token signer "
            "(MSK's IAM listeners accept both)"
        )
    if (
        mechanism == "OAUTHBEARER"
        and "sasl.oauthbearer.config" in present
        and "oauth_cb" not in present
        and method in ("", "default")
    ):
        # librdkafka's default method without a callback: an unsecured JWT from "principal=... scope=..."
        out.update(_librdkafka_unsecured(str(present["sasl.oauthbearer.config"])))
        out.pop("sasl_oauthbearer_config", None)
    if mechanism == "OAUTHBEARER" or out.get("sasl_mechanism") == "OAUTHBEARER":
        allowed = os.environ.get(ALLOW_LIST_ENV, "")
        if allowed.strip():
            out["allowed_token_callbacks"] = allowed
    return out


def _from_login_module(module: str, options: Mapping[str, str], mechanism: str) -> dict[str, Any]:
    if module.endswith(".OAuthBearerLoginModule"):
        out: dict[str, Any] = {}
        for java, option in (
            ("clientId", "sasl_oauthbearer_client_id"),
            ("clientSecret", "sasl_oauthbearer_client_secret"),
            ("scope", "sasl_oauthbearer_scope"),
        ):
            if java in options:
                out[option] = options[java]
        extensions = [
            (k.removeprefix("extension_"), v) for k, v in options.items() if k.startswith("extension_")
        ]
        unsecured = _unsecured(options)
        if extensions:
            unsecured["sasl_oauthbearer_extensions"] = [
                *unsecured.get("sasl_oauthbearer_extensions", []),
                *extensions,
            ]
        out.update(unsecured)
        if unsecured.get("sasl_oauthbearer_unsecured_claims") and not any(
            k in out for k in ("sasl_oauthbearer_client_id", "sasl_oauthbearer_client_secret")
        ):
            out["sasl_oauthbearer_method"] = TokenSource.UNSECURED.value
        return out
    if module == MSK_LOGIN_MODULE:
        out = {}
        if options.get("awsProfileName"):
            out["sasl_oauthbearer_aws_profile"] = options["awsProfileName"]
        if options.get("awsRoleArn"):
            out["sasl_oauthbearer_aws_role_arn"] = options["awsRoleArn"]
        return out
    if module.endswith((".PlainLoginModule", ".ScramLoginModule")):
        if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise ConfigurationError(
                f"sasl.jaas.config names {module.rsplit('.', 1)[-1]} but sasl.mechanism is "
                f"{mechanism or 'not set'}."
            )
        return {"sasl_username": options.get("username"), "sasl_password": options.get("password")}
    raise ConfigurationError(
        f"sasl.jaas.config login module {module} is not supported: use Kafka's "
        "OAuthBearerLoginModule, PlainLoginModule, ScramLoginModule or AWS's IAMLoginModule."
    )


def _librdkafka_unsecured(text: str) -> dict[str, Any]:
    """librdkafka's ``sasl.oauthbearer.config`` for its unsecured JWT: ``principal=alice
    scope=a,b lifeSeconds=3600 extension_NAME=value``."""
    claims: dict[str, Any] = {}
    out: dict[str, Any] = {}
    extensions = []
    for item in text.split():
        key, _, value = item.partition("=")
        if key == "principal":
            claims["sub"] = value
        elif key == "scope":
            claims["scope"] = value.split(",")
        elif key == "lifeSeconds":
            out["sasl_oauthbearer_unsecured_lifetime_s"] = value
        elif key.startswith("extension_"):
            extensions.append((key.removeprefix("extension_"), value))
    out["sasl_oauthbearer_unsecured_claims"] = claims
    out["sasl_oauthbearer_method"] = TokenSource.UNSECURED.value
    if extensions:
        out["sasl_oauthbearer_extensions"] = extensions
    return out


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def oauthbearer_to_properties(oauth: OAuthBearerConfig) -> dict[str, str]:
    """The inverse of :func:`sasl_options` for a properties file (secrets included: mode 0600)."""
    out: dict[str, str] = {}
    if oauth.source is TokenSource.OIDC:
        out.update(
            {
                "sasl.oauthbearer.token.endpoint.url": str(oauth.token_endpoint_url),
                "sasl.oauthbearer.client.credentials.client.id": str(oauth.client_id),
                "sasl.oauthbearer.client.credentials.client.secret": str(oauth.client_secret),
            }
        )
        if oauth.scope:
            out["sasl.oauthbearer.scope"] = oauth.scope
    elif oauth.source is TokenSource.AWS_MSK_IAM:
        out["sasl.oauthbearer.method"] = TokenSource.AWS_MSK_IAM.value
        out["sasl.oauthbearer.aws.region"] = str(oauth.aws_region)
        options = [f'awsProfileName="{oauth.aws_profile}"'] if oauth.aws_profile else []
        options += [f'awsRoleArn="{oauth.aws_role_arn}"'] if oauth.aws_role_arn else []
        out["sasl.jaas.config"] = f"{MSK_LOGIN_MODULE} required {' '.join(options)};".replace("  ", " ")
    elif oauth.source is TokenSource.CALLBACK:
        out["oauth_cb"] = str(oauth.callback)
        if oauth.callback_config:
            out["sasl.oauthbearer.config"] = oauth.callback_config
    else:
        raise ConfigurationError("an unsecured OAUTHBEARER login cannot be written to a properties file.")
    if oauth.extensions:
        out["sasl.oauthbearer.extensions"] = ",".join(f"{k}={v}" for k, v in oauth.extensions)
    for key, option in (
        ("sasl.oauthbearer.sub.claim.name", "sub_claim_name"),
        ("sasl.oauthbearer.scope.claim.name", "scope_claim_name"),
    ):
        if getattr(oauth, option) != OAuthBearerConfig.__dataclass_fields__[option].default:
            out[key] = getattr(oauth, option)
    return out
