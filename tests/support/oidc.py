"""A real identity provider on loopback: an OAuth 2 token endpoint (client credentials) and a JWKS.

It issues RS256 JWTs signed with a key the JWKS publishes, so the fake cluster's
:class:`~tests.support.fakekafka.oauth.JwksValidator` checks them as Kafka's broker would.
Faults are scripted per test: ``fail_next(503, times=2)``, ``delay_next(2.0)``,
``issue_next("expired" | "malformed" | "no_sub" | "wrong_audience")``. Every token request is
recorded (client id, grant type, scope, the Authorization header's scheme): never the secret.

    with IdentityProvider({"svc": "s3cret"}, lifetime_s=3) as idp:
        idp.token_url, idp.jwks_url
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

__all__ = ["IdentityProvider", "TokenRequest", "signing_key"]

_KEY = None


def signing_key():
    """One RSA key per test session (generating one takes ~50 ms)."""
    global _KEY
    if _KEY is None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        _KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return _KEY


@dataclass
class TokenRequest:
    client_id: str | None
    grant_type: str | None
    scope: str | None
    auth_scheme: str | None
    at: float


@dataclass
class _Fault:
    kind: str  # "status", "delay", "token"
    value: Any
    times: int


@dataclass
class IdentityProvider:
    clients: Mapping[str, str]
    lifetime_s: float = 3600.0
    audience: str = "kafka"
    issuer: str = "https://idp.test"
    kid: str = "test-key"
    requests: list[TokenRequest] = field(default_factory=list)
    jwks_requests: int = 0
    _faults: list[_Fault] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> IdentityProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                provider._token(self)

            def do_GET(self) -> None:
                provider._jwks(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="test-idp", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token_url(self) -> str:
        return self.base_url + "/oauth2/token"

    @property
    def jwks_url(self) -> str:
        return self.base_url + "/jwks"

    # -- faults ------------------------------------------------------------------------------

    def fail_next(self, status: int, times: int = 1, body: dict | None = None) -> None:
        with self._lock:
            self._faults.append(_Fault("status", (status, body), times))

    def delay_next(self, seconds: float, times: int = 1) -> None:
        with self._lock:
            self._faults.append(_Fault("delay", seconds, times))

    def issue_next(self, kind: str, times: int = 1) -> None:
        with self._lock:
            self._faults.append(_Fault("token", kind, times))

    def _take(self, kind: str):
        with self._lock:
            for fault in self._faults:
                if fault.kind == kind and fault.times > 0:
                    fault.times -= 1
                    return fault.value
        return None

    # -- tokens ------------------------------------------------------------------------------

    def issue(self, subject: str, *, lifetime_s: float | None = None, **claims: Any) -> str:
        import jwt

        now = time.time()
        body = {
            "sub": subject,
            "iss": self.issuer,
            "aud": self.audience,
            "iat": int(now),
            "exp": now + (self.lifetime_s if lifetime_s is None else lifetime_s),
            "scope": "kafka",
        }
        body.update(claims)
        return jwt.encode(body, signing_key(), algorithm="RS256", headers={"kid": self.kid})

    def _reply(self, handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _token(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(handler.rfile.read(length).decode()).items()}
        scheme, _, credentials = (handler.headers.get("Authorization") or "").partition(" ")
        client_id = secret = None
        if scheme == "Basic":
            client_id, _, secret = base64.b64decode(credentials).decode().partition(":")
        self.requests.append(
            TokenRequest(client_id, form.get("grant_type"), form.get("scope"), scheme or None, time.time())
        )
        delay = self._take("delay")
        if delay:
            time.sleep(delay)
        status = self._take("status")
        if status is not None:
            code, body = status
            return self._reply(
                handler, code, body if body is not None else {"error": "temporarily_unavailable"}
            )
        if client_id not in self.clients or self.clients[client_id] != secret:
            return self._reply(
                handler, 401, {"error": "invalid_client", "error_description": "Client authentication failed"}
            )
        if form.get("grant_type") != "client_credentials":
            return self._reply(handler, 400, {"error": "unsupported_grant_type"})
        kind = self._take("token")
        if kind == "expired":
            token = self.issue(client_id, lifetime_s=-60, iat=int(time.time()) - 120)
        elif kind == "malformed":
            token = "not-a-jwt"
        elif kind == "no_sub":
            token = self.issue(client_id, sub=None)
        elif kind == "wrong_audience":
            token = self.issue(client_id, aud="someone-else")
        else:
            token = self.issue(client_id)
        self._reply(
            handler, 200, {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime_s}
        )

    def _jwks(self, handler: BaseHTTPRequestHandler) -> None:
        from jwt.algorithms import RSAAlgorithm

        if handler.path != "/jwks":
            return self._reply(handler, 404, {"error": "not_found"})
        self.jwks_requests += 1
        jwk = RSAAlgorithm.to_jwk(signing_key().public_key(), as_dict=True) | {
            "kid": self.kid,
            "use": "sig",
            "alg": "RS256",
        }
        self._reply(handler, 200, {"keys": [jwk]})
