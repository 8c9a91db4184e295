"""SaslHandshake and SaslAuthenticate (KIP-152), over the per-connection :class:`SaslSession`.

Handshake v1 is followed by SaslAuthenticate requests; handshake v0 by raw SASL tokens
(length-prefixed, no Kafka header), which the connection feeds to :meth:`SaslSession.raw`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

from ..auth import AuthFailed, new_mechanism
from ..codec import Err

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["HANDLERS", "SaslSession"]


@dataclass
class SaslSession:
    """Authentication state of one connection. ``config`` is the cluster's
    ``{mechanism: {user: password}}`` (None: no SASL on this listener).

    KIP-368, as SaslServerAuthenticator / KafkaChannel: a session ends at the earlier of
    ``max_reauth_ms`` (``connections.max.reauth.ms``) and the credential's expiry (OAUTHBEARER);
    a SaslHandshake on an authenticated session with an end starts a re-authentication (at most
    one a second), which must keep the mechanism and the principal."""

    config: Mapping[str, Any] | None
    mechanism: Any = None
    handshake_version: int | None = None
    authenticated: bool = False
    principal: str | None = None
    mechanism_name: str | None = None
    max_reauth_ms: int = 0
    expires_at: float | None = None  # time.monotonic(); None: the session does not expire
    reauthenticating: bool = False
    last_reauth_start: float | None = None
    previous: tuple[str, str | None] | None = None  # (mechanism, principal) before a re-authentication
    bad_mechanism: str | None = None
    reauthentications: int = 0

    def expired(self, now: float) -> bool:
        return self.authenticated and self.expires_at is not None and now > self.expires_at

    def lifetime_ms(self, now: float) -> int:
        """ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs; sets the session's end."""
        credential = getattr(self.mechanism, "credential_expires_ms", None)
        candidates = [self.max_reauth_ms] if self.max_reauth_ms > 0 else []
        if credential is not None:
            candidates.append(max(0, int(credential - time.time() * 1000)))
        if not candidates:
            self.expires_at = None
            return 0
        lifetime = max(0, min(candidates))
        self.expires_at = now + lifetime / 1000.0
        return lifetime

    @property
    def required(self) -> bool:
        return bool(self.config) and not self.authenticated

    @property
    def raw_mode(self) -> bool:
        """After a v0 handshake the client sends raw SASL tokens until authenticated."""
        return self.handshake_version == 0 and self.mechanism is not None and not self.authenticated

    def step(self, token: bytes) -> bytes:
        """Feed one client token; raises AuthFailed."""
        assert self.mechanism is not None
        reply, done = self.mechanism.step(token)
        if done:
            self.authenticated = True
            self.principal = self.mechanism.username
        return reply

    def raw(self, token: bytes) -> bytes | None:
        """A raw (v0) token -> the raw reply, or None when authentication failed."""
        try:
            return self.step(token)
        except AuthFailed:
            return None


def sasl_handshake(ctx: RequestContext) -> Any:
    session: SaslSession = ctx.session
    config = session.config or {}
    mechanisms = sorted(config)
    now = time.monotonic()
    if (
        session.authenticated
        and session.expires_at is not None
        and (session.last_reauth_start is None or now - session.last_reauth_start >= 1.0)
    ):
        # KafkaChannel.maybeBeginServerReauthentication (even after the session ended)
        session.previous = (str(session.mechanism_name), session.principal)
        session.reauthenticating, session.authenticated, session.last_reauth_start = True, False, now
        name = ctx.request.mechanism
        if name != session.mechanism_name:
            session.bad_mechanism = (
                f"SASL mechanism '{name}' requested by client is not supported for "
                f"re-authentication of mechanism '{session.mechanism_name}'"
            )
            return SaslHandshakeResponse(error_code=0, mechanisms=mechanisms)
        session.mechanism = new_mechanism(name, config[name], scram_iterations=ctx.cluster.scram_iterations)
        return SaslHandshakeResponse(error_code=0, mechanisms=mechanisms)
    if not config or session.authenticated or session.mechanism is not None:
        # Kafka: a PLAINTEXT listener, or a second handshake, is ILLEGAL_SASL_STATE
        ctx.close_after = True
        return SaslHandshakeResponse(error_code=Err.ILLEGAL_SASL_STATE, mechanisms=mechanisms)
    name = ctx.request.mechanism
    if name not in config:
        return SaslHandshakeResponse(error_code=Err.UNSUPPORTED_SASL_MECHANISM, mechanisms=mechanisms)
    session.mechanism = new_mechanism(name, config[name], scram_iterations=ctx.cluster.scram_iterations)
    session.mechanism_name = name
    session.handshake_version = ctx.version
    return SaslHandshakeResponse(error_code=0, mechanisms=mechanisms)


def sasl_authenticate(ctx: RequestContext) -> Any:
    session: SaslSession = ctx.session
    R = SaslAuthenticateResponse
    if session.mechanism is None or session.handshake_version == 0 or session.authenticated:
        ctx.close_after = True
        return R(
            error_code=Err.ILLEGAL_SASL_STATE,
            error_message="Unexpected SaslAuthenticate request",
            auth_bytes=b"",
            session_lifetime_ms=0,
        )
    try:
        if session.bad_mechanism:
            raise AuthFailed(session.bad_mechanism)
        reply = session.step(bytes(ctx.request.auth_bytes))
        # ReauthInfo.ensurePrincipalUnchanged
        if session.authenticated and session.reauthenticating and session.principal != session.previous[1]:
            raise AuthFailed(
                f"Cannot change principals during re-authentication from User:{session.previous[1]}: "
                f"User:{session.principal}"
            )
    except AuthFailed as exc:
        ctx.close_after = True  # Kafka closes the connection after a failed authentication
        return R(
            error_code=Err.SASL_AUTHENTICATION_FAILED,
            error_message=str(exc),
            auth_bytes=b"",
            session_lifetime_ms=0,
        )
    lifetime = session.lifetime_ms(time.monotonic()) if session.authenticated else 0
    if session.authenticated and session.reauthenticating:
        session.reauthenticating = False
        session.reauthentications += 1
        ctx.cluster.reauthentications += 1
    return R(error_code=0, error_message=None, auth_bytes=reply, session_lifetime_ms=lifetime)


HANDLERS = {
    ApiKey.SaslHandshake: sasl_handshake,
    ApiKey.SaslAuthenticate: sasl_authenticate,
}
