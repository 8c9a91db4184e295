"""SaslHandshake and SaslAuthenticate (KIP-152), over the per-connection :class:`SaslSession`.

Handshake v1 is followed by SaslAuthenticate requests; handshake v0 by raw SASL tokens
(length-prefixed, no Kafka header), which the connection feeds to :meth:`SaslSession.raw`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from kafka.protocol.api_key import ApiKey
from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

from ..auth import AuthFailed, PlainServer, ScramServer, new_mechanism
from ..codec import Err

if TYPE_CHECKING:
    from ..dispatch import RequestContext

__all__ = ["HANDLERS", "SaslSession"]


@dataclass
class SaslSession:
    """Authentication state of one connection. ``config`` is the cluster's
    ``{mechanism: {user: password}}`` (None: no SASL on this listener)."""

    config: Mapping[str, Mapping[str, str]] | None
    mechanism: PlainServer | ScramServer | None = None
    handshake_version: int | None = None
    authenticated: bool = False
    principal: str | None = None

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
    if not config or session.authenticated or session.mechanism is not None:
        # Kafka: a PLAINTEXT listener, or a second handshake, is ILLEGAL_SASL_STATE
        ctx.close_after = True
        return SaslHandshakeResponse(error_code=Err.ILLEGAL_SASL_STATE, mechanisms=mechanisms)
    name = ctx.request.mechanism
    if name not in config:
        return SaslHandshakeResponse(error_code=Err.UNSUPPORTED_SASL_MECHANISM, mechanisms=mechanisms)
    session.mechanism = new_mechanism(name, config[name])
    session.handshake_version = ctx.version
    return SaslHandshakeResponse(error_code=0, mechanisms=mechanisms)


def sasl_authenticate(ctx: RequestContext) -> Any:
    session: SaslSession = ctx.session
    R = SaslAuthenticateResponse
    if session.mechanism is None or session.handshake_version == 0 or session.authenticated:
        ctx.close_after = True
        return R(error_code=Err.ILLEGAL_SASL_STATE, error_message="Unexpected SaslAuthenticate request",
                 auth_bytes=b"", session_lifetime_ms=0)
    try:
        reply = session.step(bytes(ctx.request.auth_bytes))
    except AuthFailed as exc:
        ctx.close_after = True  # Kafka closes the connection after a failed authentication
        return R(error_code=Err.SASL_AUTHENTICATION_FAILED, error_message=str(exc), auth_bytes=b"",
                 session_lifetime_ms=0)
    return R(error_code=0, error_message=None, auth_bytes=reply, session_lifetime_ms=0)


HANDLERS = {
    ApiKey.SaslHandshake: sasl_handshake,
    ApiKey.SaslAuthenticate: sasl_authenticate,
}
