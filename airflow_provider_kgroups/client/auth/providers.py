"""Where tokens come from, and the one cache per process that keeps them until their refresh time.

Every connection of every client in a process that uses the same :class:`OAuthBearerConfig`
shares one token (Java keeps one per ``LoginManager``): a trigger with a hundred connections
asks the identity provider once per refresh, not once per connection. A token is refreshed
at :func:`.token.refresh_at` (``ExpiringCredentialRefreshingLogin``); when the refresh fails
for a reason that may pass (:class:`TokenUnavailable`) while the current token is still valid,
the current one is used and the refresh is tried again 10 s later, as the Java refresher
thread does (``DELAY_SECONDS_BEFORE_NEXT_RETRY_WHEN_RELOGIN_FAILS``).

Fetching blocks (HTTP, AWS signing, a user's callback): the transport calls :func:`current_token`
in a worker thread; the per-config lock makes concurrent callers wait for one fetch.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import AuthenticationError, TokenUnavailable
from ..numbers import is_number
from .config import OAuthBearerConfig, TokenSource, load_callback
from .token import Token, refresh_at, token_from_jwt

log = logging.getLogger(__name__)

RETRY_AFTER_FAILED_REFRESH_S = 10.0


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    token: Token | None = None
    refresh_at: float = 0.0  # epoch seconds
    fetches: int = 0


_ENTRIES: dict[OAuthBearerConfig, _Entry] = {}
_ENTRIES_LOCK = threading.Lock()


def _entry(config: OAuthBearerConfig) -> _Entry:
    with _ENTRIES_LOCK:
        return _ENTRIES.setdefault(config, _Entry())


def fetch_count(config: OAuthBearerConfig) -> int:
    """Tokens fetched for ``config`` in this process (for tests and logs)."""
    return _entry(config).fetches


def forget_tokens() -> None:
    """Drop every cached token (tests)."""
    with _ENTRIES_LOCK:
        _ENTRIES.clear()


def current_token(
    config: OAuthBearerConfig, deadline: float, *, connect_timeout_s: float, read_timeout_s: float
) -> Token:
    """The cached token, or a new one when its refresh time has come (``deadline``: monotonic)."""
    entry = _entry(config)
    with entry.lock:
        now = time.time()
        if entry.token is not None and now < entry.refresh_at:
            return entry.token
        try:
            token = fetch_token(
                config, deadline, connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s
            )
        except TokenUnavailable as exc:
            if entry.token is None or entry.token.expired(time.time()):
                raise
            entry.refresh_at = time.time() + RETRY_AFTER_FAILED_REFRESH_S
            log.warning(
                "Token refresh failed (%s); the current token is valid until %s: trying again in %.0f s",
                exc,
                _when(entry.token.expires_at),
                RETRY_AFTER_FAILED_REFRESH_S,
            )
            return entry.token
        entry.fetches += 1
        entry.token = token
        entry.refresh_at = refresh_at(token, time.time(), config)
        log.info(
            "OAUTHBEARER token from %s%s, valid until %s; refresh at %s",
            config.describe(),
            f" for {token.principal}" if token.principal else "",
            _when(token.expires_at),
            _when(entry.refresh_at),
        )
        return token


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def fetch_token(
    config: OAuthBearerConfig, deadline: float, *, connect_timeout_s: float, read_timeout_s: float
) -> Token:
    """A new token from ``config``'s source (no cache)."""
    if config.source is TokenSource.OIDC:
        from .config import endpoint_name
        from .oidc import fetch_access_token

        value = fetch_access_token(
            config,
            deadline,
            connect_timeout_s=config.connect_timeout_s or connect_timeout_s,
            read_timeout_s=config.read_timeout_s or read_timeout_s,
        )
        origin = f"token endpoint {endpoint_name(str(config.token_endpoint_url))}"
        return token_from_jwt(value, config, origin, time.time())
    if config.source is TokenSource.AWS_MSK_IAM:
        return _msk_iam_token(config)
    if config.source is TokenSource.CALLBACK:
        return _callback_token(config)
    return unsecured_token(config, time.time())


def _msk_iam_token(config: OAuthBearerConfig) -> Token:
    """AWS's own signer (aws-msk-iam-sasl-signer-python): a SigV4-presigned ``kafka-cluster:Connect``
    URL, base64url-encoded, valid 15 minutes."""
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    region = config.aws_region
    try:
        if config.aws_profile:
            value, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_profile(
                region, config.aws_profile
            )
        elif config.aws_role_arn:
            value, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(
                region, config.aws_role_arn
            )
        else:
            value, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
    except (NoCredentialsError, AttributeError, ValueError):  # the signer's ways of saying "no credentials"
        raise AuthenticationError(
            "AWS MSK IAM: no AWS credentials found (environment, profile, instance or "
            "task role); retrying cannot fix this."
        ) from None
    except (BotoCoreError, ClientError) as exc:
        raise TokenUnavailable(
            f"AWS MSK IAM: signing a token for {region} failed: {type(exc).__name__}"
        ) from None
    return Token(value, expiry_ms / 1000.0)


def _callback_token(config: OAuthBearerConfig) -> Token:
    """confluent-kafka's ``oauth_cb`` contract: ``f(config_str) -> (token, expiry)`` or
    ``(token, expiry, principal, extensions)``, the expiry in seconds since the epoch."""
    path = str(config.callback)
    function = load_callback(path)
    try:
        result = function(config.callback_config or "")
    except Exception as exc:  # noqa: BLE001 - the user's code: its message may hold a credential
        raise TokenUnavailable(
            f"token callback {path} raised {type(exc).__name__} (its message is not repeated "
            "here in case it holds a credential)"
        ) from None
    if not isinstance(result, tuple) or len(result) not in (2, 4):
        raise AuthenticationError(
            f"token callback {path} must return (token, expiry) or (token, expiry, principal, "
            f"extensions), got {type(result).__name__}."
        )
    value, expiry = result[0], result[1]
    principal, extensions = (result[2], result[3]) if len(result) == 4 else (None, None)
    if not isinstance(value, str) or not value.strip():
        raise AuthenticationError(f"token callback {path} returned an empty token.")
    if not is_number(expiry):
        raise AuthenticationError(
            f"token callback {path} returned an expiry that is not a number of seconds since the epoch."
        )
    now = time.time()
    if expiry <= now:
        raise AuthenticationError(
            f"token callback {path} returned a token that expired {now - expiry:.0f} s ago "
            "(its expiry must be seconds since the epoch, not a lifetime)."
        )
    pairs = tuple((str(k), str(v)) for k, v in (extensions or {}).items())
    return Token(value.strip(), float(expiry), str(principal) if principal else None, extensions=pairs)


def _b64url_json(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def unsecured_token(config: OAuthBearerConfig, now: float) -> Token:
    """An unsigned JWS, as OAuthBearerUnsecuredLoginCallbackHandler builds it: header
    ``{"alg":"none"}``, the configured claims plus ``iat`` and ``exp``, an empty signature."""
    claims = dict(config.unsecured_claims)
    claims.update(iat=now, exp=now + config.unsecured_lifetime_s)
    value = f"{_b64url_json({'alg': 'none'})}.{_b64url_json(claims)}."
    return Token(value, claims["exp"], str(claims["sub"]), issued_at=now)
