"""Server side of the SASL mechanisms: PLAIN and SCRAM-SHA-256/512 (RFC 5802, RFC 7677).

Each mechanism is a small state machine: ``step(client_token) -> (server_token, done)``;
it raises :class:`AuthFailed` with Kafka's message when the credentials are wrong.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Mapping

__all__ = ["AuthFailed", "MECHANISMS", "new_mechanism", "SCRAM_SALT", "SCRAM_ITERATIONS"]

SCRAM_SALT = b"fakekafka-salt!!"  # fixed, so a test can precompute credentials
SCRAM_ITERATIONS = 4096


class AuthFailed(Exception):
    """Wrong credentials or a malformed exchange: SASL_AUTHENTICATION_FAILED (58)."""


class PlainServer:
    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = users
        self.username: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        _authzid, user, password = (p.decode("utf-8") for p in parts)
        if user not in self.users or not hmac.compare_digest(self.users[user], password):
            raise AuthFailed("Authentication failed: Invalid username or password")
        self.username = user
        return b"", True


def _scram_unescape(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """SCRAM with the fixed salt ``SCRAM_SALT`` and ``iterations`` (any count, so a test can
    play a broker asking too few or too many)."""

    def __init__(self, users: Mapping[str, str], mechanism: str, iterations: int = SCRAM_ITERATIONS) -> None:
        self.users = users
        self.mechanism = mechanism
        self.iterations = iterations
        self.hash_name = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
        self.username: str | None = None
        self._state = "client-first"
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2_header = ""
        self._nonce = ""

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.hash_name).digest()

    def _fail(self) -> AuthFailed:
        self._state = "failed"
        return AuthFailed(
            "Authentication failed during authentication due to invalid credentials "
            f"with SASL mechanism {self.mechanism}"
        )

    def step(self, token: bytes) -> tuple[bytes, bool]:
        message = token.decode("utf-8")
        if self._state == "client-first":
            return self._client_first(message), False
        if self._state == "client-final":
            return self._client_final(message), True
        raise AuthFailed(f"Unexpected SCRAM message in state {self._state}")

    def _client_first(self, message: str) -> bytes:
        gs2_flag, _, rest = message.partition(",")
        authzid, _, bare = rest.partition(",")
        if gs2_flag not in ("n", "y") or not bare:
            raise self._fail()
        attrs = dict(a.split("=", 1) for a in bare.split(",") if "=" in a)
        user = _scram_unescape(attrs.get("n", ""))
        if user not in self.users or "r" not in attrs:
            raise AuthFailed("Authentication failed: Invalid user credentials")
        self.username = user
        self._gs2_header = f"{gs2_flag},{authzid},"
        self._client_first_bare = bare
        self._nonce = attrs["r"] + base64.b64encode(os.urandom(18)).decode()
        salt = base64.b64encode(SCRAM_SALT).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self.iterations}"
        self._state = "client-final"
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        without_proof, sep, proof_b64 = message.rpartition(",p=")
        if not sep:
            raise self._fail()
        attrs = dict(a.split("=", 1) for a in without_proof.split(",") if "=" in a)
        if attrs.get("r") != self._nonce:
            raise self._fail()
        if base64.b64decode(attrs.get("c", "")) != self._gs2_header.encode():
            raise self._fail()
        salted = hashlib.pbkdf2_hmac(
            self.hash_name, self.users[self.username].encode(), SCRAM_SALT, self.iterations
        )
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_signature = self._hmac(stored_key, auth_message)
        try:
            proof = base64.b64decode(proof_b64)
        except ValueError:
            raise self._fail() from None
        if len(proof) != len(client_signature):
            raise self._fail()
        recovered_client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.hash_name, recovered_client_key).digest(), stored_key):
            raise self._fail()
        server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        self._state = "done"
        return b"v=" + base64.b64encode(server_signature)


MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def new_mechanism(name: str, users, *, scram_iterations: int = SCRAM_ITERATIONS):
    """``users``: ``{user: password}``, or for OAUTHBEARER a validator (see :mod:`.oauth`)."""
    if name == "OAUTHBEARER":
        from .oauth import OAuthBearerServer

        return OAuthBearerServer(users)
    if name == "PLAIN":
        return PlainServer(users)
    if name in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        return ScramServer(users, name, scram_iterations)
    raise ValueError(f"unsupported SASL mechanism {name!r} (supported: {MECHANISMS})")
