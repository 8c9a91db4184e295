"""SASL client mechanisms: PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and
OAUTHBEARER (RFC 7628, KIP-255, extensions per KIP-342).

A mechanism is a tiny state machine: ``first()`` gives the initial message and
``step(challenge)`` the next one (or None when done). Secrets never reach an exception.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from ..errors import AuthenticationError


class PlainMechanism:
    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._message = b"\0" + username.encode() + b"\0" + password.encode()

    def first(self) -> bytes:
        return self._message

    def step(self, challenge: bytes) -> bytes | None:
        return None


#: Java's ScramSaslClient refuses a server asking fewer iterations (ScramMechanism.minIterations).
SCRAM_MIN_ITERATIONS = 4096
#: The most a Kafka broker stores for a SCRAM credential (KIP-554, ScramMechanism.maxIterations):
#: a server asking more is not a Kafka broker's credential, and would hold the client in PBKDF2.
SCRAM_MAX_ITERATIONS = 16384


def _saslname(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


class ScramMechanism:
    def __init__(self, name: str, username: str, password: str, nonce: str | None = None) -> None:
        self.name = name
        self._hash = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}[name]
        self._username = username
        self._password = password.encode()
        self._nonce = nonce or base64.b64encode(secrets.token_bytes(24)).decode()
        self._first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def first(self) -> bytes:
        return ("n,," + self._first_bare).encode()

    def _hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash).digest()

    def step(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._client_final(challenge.decode())
        self._verify_server_final(challenge.decode())
        return None

    def _client_final(self, server_first: str) -> bytes:
        attrs = _scram_attributes(server_first, "r", "s", "i")
        nonce, iterations = attrs["r"], attrs["i"]
        if not iterations.isdigit():
            raise AuthenticationError(
                f"SCRAM server's iteration count {iterations[:20]!r} is not a whole number"
            )
        count = int(iterations)
        if not SCRAM_MIN_ITERATIONS <= count <= SCRAM_MAX_ITERATIONS:
            raise AuthenticationError(
                f"SCRAM server asked for {count} iterations: this client, like Java's, accepts "
                f"{SCRAM_MIN_ITERATIONS} to {SCRAM_MAX_ITERATIONS} (fewer is too weak to send a proof for, more "
                "than a Kafka broker stores, KIP-554); check the broker's SCRAM credential for this user"
            )
        try:
            salt = base64.b64decode(attrs["s"], validate=True)
        except ValueError:
            raise AuthenticationError("SCRAM server's salt is not base64") from None
        if not nonce.startswith(self._nonce):
            raise AuthenticationError("SCRAM server nonce does not extend the client nonce")
        salted = hashlib.pbkdf2_hmac(self._hash().name, self._password, salt, count)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = self._hash(client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{server_first},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, server_final: str) -> None:
        attrs = _scram_attributes(server_final, "v")
        if not hmac.compare_digest(base64.b64decode(attrs["v"]), self._server_signature or b""):
            raise AuthenticationError(
                "SCRAM server signature does not match: the broker could not prove the password"
            )


def _scram_attributes(message: str, *required: str) -> dict[str, str]:
    """A SCRAM server message's ``name=value`` attributes; its ``e=`` error is raised."""
    attrs = dict(item.split("=", 1) for item in message.split(",") if "=" in item)
    if "e" in attrs:
        raise AuthenticationError(f"SCRAM server error: {attrs['e']}")
    missing = [name for name in required if name not in attrs]
    if missing:
        raise AuthenticationError(f"SCRAM server message lacks {', '.join(missing)}: not a SCRAM server")
    return attrs


_CTRL_A = "\x01"


class OAuthBearerMechanism:
    """The client side of Kafka's OAuthBearerSaslClient: the client first message
    (OAuthBearerClientInitialResponse.toBytes) ``n,,\\x01auth=Bearer <token>[\\x01k=v...]\\x01\\x01``;
    an empty server answer completes the exchange, a non-empty one is the server's error (RFC 7628
    3.2.2, a JSON such as ``{"status":"invalid_token"}``), answered with a single ``\\x01`` after
    which the broker fails the exchange with SASL_AUTHENTICATION_FAILED."""

    name = "OAUTHBEARER"

    def __init__(self, token: str, extensions: tuple[tuple[str, str], ...] = ()) -> None:
        ext = "".join(f"{_CTRL_A}{key}={value}" for key, value in extensions)
        self._message = f"n,,{_CTRL_A}auth=Bearer {token}{ext}{_CTRL_A}{_CTRL_A}".encode()
        self.server_error: str | None = None

    def __repr__(self) -> str:
        return "OAuthBearerMechanism()"

    def first(self) -> bytes:
        return self._message

    def step(self, challenge: bytes) -> bytes | None:
        if not challenge:
            return None
        self.server_error = challenge.decode("utf-8", "replace")[:500]
        return _CTRL_A.encode()


def mechanism_for(name: str, username: str, password: str) -> PlainMechanism | ScramMechanism:
    if name == "PLAIN":
        return PlainMechanism(username, password)
    if name in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        return ScramMechanism(name, username, password)
    raise AuthenticationError(f"SASL mechanism {name!r} is not supported")
