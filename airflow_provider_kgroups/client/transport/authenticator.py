"""SASL on one connection: the first authentication and KIP-368 re-authentication.

After Kafka's ``SaslClientAuthenticator``: SaslHandshake v1, then SaslAuthenticate requests
until the mechanism is done. From SaslAuthenticate v1 the broker answers ``session_lifetime_ms``
(``SaslServerAuthenticator.ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs``: the
earlier of ``connections.max.reauth.ms`` and the credential's expiry); past it the broker
closes the connection at the next request without processing it
(``SocketServer.processCompletedReceives``, "Disconnecting expired channel"), but a
SaslHandshake on that connection starts a re-authentication instead
(``KafkaChannel.maybeBeginServerReauthentication``, at most once a second).

So, as ``ReauthInfo.setAuthenticationEndAndSessionReauthenticationTimes`` and
``KafkaChannel.maybeBeginClientReauthentication``: the session is renewed before the next
request written after 85-95 % of its lifetime (a random point, so many connections do not
renew at once; counted from when the client sent its last token, see :meth:`Session.start`),
on the same connection, with the current token (refreshed by the token cache)
and the ApiVersions of the first authentication; requests already in flight are answered in
order before the broker reads the handshake, and are neither failed nor sent again.

:class:`Session` also tells when a connection the broker closed may have been closed for an
expired session: the broker's clock for the session starts no earlier than when the client
sent its last SaslAuthenticate, so from ``sent + lifetime`` on a close may be the expiry close,
in which the broker processed none of the requests it had not answered.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import BrokerAddress, ClientConfig
from ..errors import AuthenticationError, ErrorCode, RequestTimeout, error_name
from ..protocol import SaslAuthenticateRequest, SaslHandshakeRequest
from .sasl import OAuthBearerMechanism, PlainMechanism, ScramMechanism, mechanism_for

if TYPE_CHECKING:
    from ..auth.config import OAuthBearerConfig
    from ..auth.token import Token

log = logging.getLogger(__name__)

#: SaslClientAuthenticator: re-authenticate at 85 % of the session plus up to 10 % jitter
REAUTH_WINDOW = (0.85, 0.95)

Send = Callable[..., Awaitable[Any]]
Mechanism = PlainMechanism | ScramMechanism | OAuthBearerMechanism


class ReauthRefused(Exception):
    """The broker did not start a re-authentication (no session expiry on its side, or a second one
    within a second): the connection must be replaced, nothing was sent on it for the caller."""


@dataclass(frozen=True, slots=True)
class Session:
    """One authenticated session: ``lifetime_s`` 0 means the broker set no expiry."""

    lifetime_s: float
    last_sent: float  # monotonic: when the final SaslAuthenticate was written
    reauth_at: float  # monotonic

    @classmethod
    def start(cls, lifetime_ms: int, last_sent: float, rng: random.Random | None = None) -> Session:
        """The renewal point counts from when the final SaslAuthenticate was sent, a lower bound of
        the broker's authentication end, where Java counts from the response's arrival: then no
        request written before the renewal reaches the broker after the session, whatever the
        network latency (the broker's session starts one trip after ``last_sent`` at the earliest)."""
        lifetime = max(0, lifetime_ms) / 1000.0
        uniform = rng.uniform if rng is not None else random.uniform
        return cls(lifetime, last_sent, last_sent + lifetime * uniform(*REAUTH_WINDOW))

    def reauth_due(self, now: float) -> bool:
        return self.lifetime_s > 0 and now >= self.reauth_at

    def may_have_expired(self, now: float) -> bool:
        return self.lifetime_s > 0 and now >= self.last_sent + self.lifetime_s


class SaslAuthenticator:
    def __init__(self, config: ClientConfig, address: BrokerAddress) -> None:
        self._config = config
        self._address = address
        self.session: Session | None = None
        self.reauthentications = 0

    @property
    def mechanism_name(self) -> str:
        return str(self._config.sasl_mechanism)

    def reauth_due(self) -> bool:
        return self.session is not None and self.session.reauth_due(time.monotonic())

    def may_have_expired(self, now: float) -> bool:
        return self.session is not None and self.session.may_have_expired(now)

    async def prepare(self, deadline: float) -> None:
        """Have a token before the socket opens (OAUTHBEARER): a token endpoint that fails is named
        as such, not as a slow broker."""
        if self._config.oauthbearer is not None:
            await self._token(self._config.oauthbearer, deadline)

    async def _token(self, oauthbearer: OAuthBearerConfig, deadline: float) -> Token:
        from ..auth.providers import current_token

        return await asyncio.to_thread(
            current_token,
            oauthbearer,
            deadline,
            connect_timeout_s=self._config.connect_timeout_s,
            read_timeout_s=self._config.request_timeout_s,
        )

    async def _mechanism(self, deadline: float) -> Mechanism:
        cfg = self._config
        if cfg.oauthbearer is None:
            if cfg.sasl_username is None or cfg.sasl_password is None:  # ClientConfig refuses this
                raise AuthenticationError(
                    f"SASL {self.mechanism_name} with broker {self._address} needs sasl_username and "
                    "sasl_password."
                )
            return mechanism_for(self.mechanism_name, cfg.sasl_username, cfg.sasl_password)
        token = await self._token(cfg.oauthbearer, deadline)
        return OAuthBearerMechanism(token.value, cfg.oauthbearer.extensions + token.extensions)

    def _who(self) -> str:
        if self._config.oauthbearer is not None:
            return f"with a token from {self._config.oauthbearer.describe()}"
        return f"as {self._config.sasl_username!r}"

    async def _step(self, mechanism: Mechanism, challenge: bytes, what: str, timeout: float) -> bytes | None:
        """The mechanism's answer, computed in a thread (SCRAM's PBKDF2 is CPU work the event loop
        must not wait for: a deadline or a cancellation ends the wait, the thread ends alone)."""
        try:
            return await asyncio.wait_for(asyncio.to_thread(mechanism.step, challenge), timeout)
        except TimeoutError:
            raise RequestTimeout(
                f"SASL {self.mechanism_name} {what} with broker {self._address}: the client's "
                f"side of the exchange took over {timeout:g} s"
            ) from None
        except AuthenticationError as exc:
            raise AuthenticationError(
                f"SASL {self.mechanism_name} {what} {self._who()} to broker {self._address} failed: {exc}"
            ) from None

    async def authenticate(self, send: Send, auth_version: int, *, reauth: bool = False) -> None:
        """One SASL exchange over ``send(request, version, timeout)``; raises AuthenticationError
        (or :class:`ReauthRefused` when the broker does not take a re-authentication)."""
        timeout = self._config.connect_timeout_s
        what = "re-authentication" if reauth else "authentication"
        handshake = await send(SaslHandshakeRequest(mechanism=self.mechanism_name), 1, timeout)
        if handshake.error_code:
            if reauth and handshake.error_code == ErrorCode.ILLEGAL_SASL_STATE:
                raise ReauthRefused(
                    f"broker {self._address} refused SASL re-authentication "
                    f"({error_name(handshake.error_code)})"
                )
            raise AuthenticationError(
                f"broker {self._address} refused SASL mechanism {self.mechanism_name} "
                f"({error_name(handshake.error_code)}); it offers {', '.join(handshake.mechanisms or [])}"
            )
        mechanism = await self._mechanism(time.monotonic() + timeout)
        message: bytes | None = mechanism.first()
        response, sent = None, time.monotonic()
        while message is not None:
            sent = time.monotonic()
            response = await send(SaslAuthenticateRequest(auth_bytes=message), auth_version, timeout)
            if response.error_code:
                # The broker's message names the user at most, never a password or token.
                detail = response.error_message or error_name(response.error_code)
                raise AuthenticationError(
                    f"SASL {self.mechanism_name} {what} {self._who()} to broker "
                    f"{self._address} failed: {detail}"
                )
            message = await self._step(mechanism, bytes(response.auth_bytes or b""), what, timeout)
        lifetime_ms = getattr(response, "session_lifetime_ms", 0) if auth_version >= 1 else 0
        self.session = Session.start(lifetime_ms or 0, sent)
        if reauth:
            self.reauthentications += 1
        if self.session.lifetime_s:
            log.debug(
                "SASL %s with broker %s done: session of %.1f s, renewed after %.1f s",
                what,
                self._address,
                self.session.lifetime_s,
                self.session.reauth_at - time.monotonic(),
            )
