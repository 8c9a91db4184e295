"""Server side of SASL/OAUTHBEARER, as Kafka's broker validates tokens.

:class:`OAuthBearerServer` is ``OAuthBearerSaslServer.evaluateResponse``: it parses the client
first message (``OAuthBearerClientInitialResponse``, RFC 7628), hands the token to a validator;
an invalid token is answered with the RFC 7628 error JSON (``{"status":"invalid_token"}``) as a
challenge, and the client's ``\\x01`` after it fails the exchange with that JSON as the message.
The token's expiry is the credential lifetime that bounds the session (``SaslServerAuthenticator``
sends the earlier of it and ``connections.max.reauth.ms`` as ``session_lifetime_ms``).

Validators (what a test configures per cluster, ``sasl={"OAUTHBEARER": validator}``):

- :class:`UnsecuredValidator`: ``OAuthBearerUnsecuredValidatorCallbackHandler`` (``alg`` none,
  ``sub`` a string, ``exp`` required and after now minus the allowable skew, ``iat`` not after
  now plus the skew, ``exp > iat``, a required scope -> ``insufficient_scope``).
- :class:`JwksValidator`: ``OAuthBearerValidatorCallbackHandler`` (KIP-768): the signature
  against keys from a JWKS URL, ``exp`` required, ``sub`` (``sasl.oauthbearer.sub.claim.name``),
  the expected audience and issuer, ``sasl.oauthbearer.clock.skew.seconds`` (default 30).
- :class:`MskIamValidator`: what Amazon MSK checks of an IAM token: a SigV4-presigned
  ``kafka-cluster:Connect`` URL for the cluster's region, by a known access key, not expired,
  whose signature the fake recomputes.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .auth import AuthFailed

__all__ = ["OAuthBearerServer", "UnsecuredValidator", "JwksValidator", "MskIamValidator", "Invalid", "Valid"]

_FIRST_MESSAGE = re.compile(
    r"^n,(?:a=(?P<authzid>[^,]*))?,\x01(?P<kvpairs>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$"
)
_AUTH = re.compile(r"^(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)$")


@dataclass(frozen=True)
class Valid:
    principal: str
    expires_ms: int  # the credential's expiry (epoch ms): bounds the session
    scope: tuple[str, ...] = ()


@dataclass
class Invalid(Exception):
    reason: str  # logged by the broker, not sent
    status: str = "invalid_token"
    scope: str | None = None


def _b64url_json(section: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(section + "=" * (-len(section) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise Invalid("section is not base64url JSON") from None


@dataclass
class UnsecuredValidator:
    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    def validate(self, token: str, now: float) -> Valid:
        parts = token.split(".")
        if len(parts) != 3:
            raise Invalid("an unsecured JWS has three sections")
        header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
        if not isinstance(header, dict) or header.get("alg") != "none" or parts[2]:
            raise Invalid("not an unsecured JWS (alg none, empty signature)")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise Invalid(f"no string claim {self.principal_claim}")
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, (int, float)):
            raise Invalid("no exp")
        now_ms, skew = now * 1000, self.allowable_clock_skew_ms
        if isinstance(iat, (int, float)) and 1000 * iat > now_ms + skew:
            raise Invalid("iat after now plus the allowable clock skew")
        if now_ms - skew >= 1000 * exp:
            raise Invalid("now minus the allowable clock skew is on or after exp")
        if isinstance(iat, (int, float)) and exp <= iat:
            raise Invalid("exp not after iat")
        scope = claims.get(self.scope_claim) or []
        scope = tuple(scope.split() if isinstance(scope, str) else scope)
        missing = [s for s in self.required_scope if s not in scope]
        if missing:
            raise Invalid("a required scope is missing", status="insufficient_scope", scope=" ".join(missing))
        return Valid(principal, int(exp * 1000), scope)


@dataclass
class JwksValidator:
    jwks_url: str
    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None
    sub_claim: str = "sub"
    scope_claim: str = "scope"
    clock_skew_s: int = 30
    _client: Any = field(default=None, repr=False)

    def validate(self, token: str, now: float) -> Valid:
        import jwt

        if self._client is None:
            self._client = jwt.PyJWKClient(self.jwks_url, cache_keys=True)
        try:
            key = self._client.get_signing_key_from_jwt(token).key
            options = {"require": ["exp", self.sub_claim], "verify_aud": bool(self.expected_audience)}
            claims = jwt.decode(
                token,
                key,
                algorithms=["RS256", "RS384", "RS512", "ES256"],
                options=options,
                audience=list(self.expected_audience) or None,
                issuer=self.expected_issuer,
                leeway=self.clock_skew_s,
            )
        except jwt.PyJWTError as exc:
            raise Invalid(f"{type(exc).__name__}: {exc}") from None
        principal = claims.get(self.sub_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise Invalid(f"no string claim {self.sub_claim}")
        scope = claims.get(self.scope_claim) or []
        return Valid(
            principal, int(claims["exp"] * 1000), tuple(scope.split() if isinstance(scope, str) else scope)
        )


def _sigv4_signature(secret: str, date: str, region: str, service: str, string_to_sign: str) -> str:
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


@dataclass
class MskIamValidator:
    region: str
    credentials: Mapping[str, str]  # access key id -> secret access key
    principal_prefix: str = "arn:aws:iam::123456789012:user/"

    def validate(self, token: str, now: float) -> Valid:
        try:
            url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise Invalid("not a base64url-encoded URL") from None
        parts = urlsplit(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        params = dict(pairs)
        if (
            parts.hostname != f"kafka.{self.region}.amazonaws.com"
            or params.get("Action") != "kafka-cluster:Connect"
        ):
            raise Invalid("not a kafka-cluster:Connect request for this region")
        akid, date, region, service, _ = (params.get("X-Amz-Credential", "////").split("/") + [""] * 5)[:5]
        if akid not in self.credentials or region != self.region or service != "kafka-cluster":
            raise Invalid("unknown access key or wrong credential scope")
        signed_at = calendar.timegm(
            time.strptime(params.get("X-Amz-Date", "19700101T000000Z"), "%Y%m%dT%H%M%SZ")
        )
        expires = signed_at + int(params.get("X-Amz-Expires", "0"))
        if now >= expires:
            raise Invalid("the signed request has expired")
        # SigV4 query signing (botocore SigV4QueryAuth): canonical request over the sorted query
        # without the signature (and the User-Agent the signer appends after signing), the host
        # header, and the empty payload's hash
        from urllib.parse import quote

        query = "&".join(
            f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
            for k, v in sorted(p for p in pairs if p[0] not in ("X-Amz-Signature", "User-Agent"))
        )
        canonical = "\n".join(
            [
                "GET",
                parts.path or "/",
                query,
                f"host:{parts.hostname}\n",
                "host",
                hashlib.sha256(b"").hexdigest(),
            ]
        )
        scope = f"{date}/{region}/{service}/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", params["X-Amz-Date"], scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        expected = _sigv4_signature(self.credentials[akid], date, region, service, to_sign)
        if not hmac.compare_digest(expected, params.get("X-Amz-Signature", "")):
            raise Invalid("the SigV4 signature does not match")
        return Valid(self.principal_prefix + akid, int(expires * 1000))


class OAuthBearerServer:
    """OAuthBearerSaslServer over one validator. ``username`` is the principal once done,
    ``credential_expires_ms`` the token's expiry, ``extensions`` the client's KIP-342 extensions."""

    mechanism = "OAUTHBEARER"

    def __init__(self, validator, clock=time.time) -> None:
        self.validator = validator
        self.clock = clock
        self.username: str | None = None
        self.credential_expires_ms: int | None = None
        self.extensions: dict[str, str] = {}
        self.tokens: list[str] = []  # what clients presented (tests check tokens were refreshed)
        self._error: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        if token == b"\x01" and self._error is not None:
            raise AuthFailed(self._error)
        self._error = None
        match = _FIRST_MESSAGE.match(token.decode("utf-8", "replace"))
        if not match:
            raise AuthFailed("Invalid OAUTHBEARER client first message")
        pairs = dict(item.split("=", 1) for item in match["kvpairs"].split("\x01") if item)
        auth = _AUTH.match(pairs.pop("auth", ""))
        if not auth or auth["scheme"].lower() != "bearer":
            raise AuthFailed("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        try:
            valid = self.validator.validate(auth["token"], self.clock())
        except Invalid as bad:
            body = {"status": bad.status} | ({"scope": bad.scope} if bad.scope else {})
            self._error = json.dumps(body, separators=(", ", ":"))
            return self._error.encode(), False
        authzid = match["authzid"] or ""
        if authzid and authzid != valid.principal:
            raise AuthFailed(
                "Authentication failed: Client requested an authorization id that is different from "
                "the token's principal name"
            )
        self.tokens.append(auth["token"])
        self.username, self.credential_expires_ms, self.extensions = valid.principal, valid.expires_ms, pairs
        return b"", True
