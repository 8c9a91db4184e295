"""A token as a value, the client's light checks of a JWT, and when to refresh it.

- :func:`token_from_jwt` checks what Kafka's ``LoginAccessTokenValidator`` (``ClientJwtValidator``
  from 4.0) checks of a token from the endpoint (three sections, a JSON payload, ``exp`` present
  and not negative, a non-empty subject, ``iat`` not negative, the scope a string or a list;
  the signature is the broker's to verify), and refuses an already expired token with the
  reason. No message ever carries the token.
- :func:`refresh_at` is ``ExpiringCredentialRefreshingLogin.refreshMs``: at the window factor
  (0.8) plus jitter (up to 0.05) of the token's life, no later than the buffer (300 s) before
  expiry and no sooner than the minimum period (60 s) from now, unless the token lives too
  short for both buffers, when the factor of what remains is used.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from ..errors import AuthenticationError
from ..numbers import is_number
from .config import OAuthBearerConfig


@dataclass(frozen=True, slots=True)
class Token:
    """An access token (``value`` never shown) and what the client knows of it."""

    value: str = field(repr=False)
    expires_at: float  # epoch seconds
    principal: str | None = None
    issued_at: float | None = None  # epoch seconds, the token's start time (iat) if it has one
    extensions: tuple[tuple[str, str], ...] = ()  # SASL extensions a callback returned with the token

    def expired(self, now: float) -> bool:
        return now >= self.expires_at


def _b64url(section: str) -> bytes:
    return base64.urlsafe_b64decode(section + "=" * (-len(section) % 4))


def jwt_claims(value: str, origin: str) -> dict[str, Any]:
    """The payload of a serialized JWT (SerializedJwt + OAuthBearerUnsecuredJws.toMap), or an
    AuthenticationError saying what is wrong with it (never the token itself)."""
    if not isinstance(value, str) or not value.strip():
        raise AuthenticationError(f"{origin} returned an empty access token.")
    sections = value.strip().split(".")
    if len(sections) != 3:
        raise AuthenticationError(
            f"{origin} returned a malformed JWT: {len(sections)} section(s), expected three "
            "(header, payload, signature)."
        )
    if not sections[0] or not sections[1]:
        raise AuthenticationError(f"{origin} returned a malformed JWT: an empty header or payload section.")
    try:
        claims = json.loads(_b64url(sections[1]))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise AuthenticationError(
            f"{origin} returned a malformed JWT: its payload is not base64url-encoded JSON."
        ) from None
    if not isinstance(claims, dict):
        raise AuthenticationError(f"{origin} returned a malformed JWT: its payload is not a JSON object.")
    return claims


@overload
def _number_claim(claims: Mapping[str, Any], name: str, origin: str, required: Literal[True]) -> float: ...
@overload
def _number_claim(claims: Mapping[str, Any], name: str, origin: str, required: bool) -> float | None: ...
def _number_claim(claims: Mapping[str, Any], name: str, origin: str, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise AuthenticationError(
                f"{origin} returned a JWT without the '{name}' claim (Kafka requires it)."
            )
        return None
    if not is_number(value) or value < 0:
        raise AuthenticationError(
            f"{origin} returned a JWT whose '{name}' claim is not a non-negative number."
        )
    return float(value)


def token_from_jwt(value: str, config: OAuthBearerConfig, origin: str, now: float) -> Token:
    """Check a JWT from ``origin`` (a token endpoint, a callback) as the Java client does, and
    refuse it when it is already expired: a broker would refuse it, and no retry changes that."""
    claims = jwt_claims(value, origin)
    expires_at = _number_claim(claims, "exp", origin, required=True)
    issued_at = _number_claim(claims, "iat", origin, required=False)
    subject = claims.get(config.sub_claim_name)
    if not isinstance(subject, str) or not subject.strip():
        raise AuthenticationError(
            f"{origin} returned a JWT without a '{config.sub_claim_name}' claim naming the "
            "principal (set sasl.oauthbearer.sub.claim.name if your provider uses another)."
        )
    scope = claims.get(config.scope_claim_name)
    if scope is not None and not isinstance(scope, (str, list)):
        raise AuthenticationError(
            f"{origin} returned a JWT whose '{config.scope_claim_name}' claim is neither a string nor a list."
        )
    if expires_at <= now:
        raise AuthenticationError(
            f"{origin} returned a token that expired {now - expires_at:.0f} s ago (exp "
            f"{expires_at:.0f}, this host's clock {now:.0f}): check the clocks of this host "
            "and of the identity provider."
        )
    return Token(value.strip(), expires_at, subject.strip(), issued_at)


def refresh_at(
    token: Token, now: float, config: OAuthBearerConfig, rng: random.Random | None = None
) -> float:
    """When to fetch the next token (epoch seconds), as ExpiringCredentialRefreshingLogin.refreshMs."""
    draw = rng.random if rng is not None else random.random
    expires = token.expires_at
    if now >= expires:
        return now
    pct = config.refresh_window_factor + config.refresh_window_jitter * draw()
    if now + config.refresh_min_period_s + config.refresh_buffer_s > expires:
        # too short-lived for both buffers: the factor of what remains
        return now + (expires - now) * pct
    start = token.issued_at if token.issued_at is not None else now
    proposed = start + (expires - start) * pct
    if proposed > expires - config.refresh_buffer_s:
        return expires - config.refresh_buffer_s
    if proposed < now + config.refresh_min_period_s:
        return now + config.refresh_min_period_s
    return proposed
