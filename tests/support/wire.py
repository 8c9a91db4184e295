"""A tiny blocking Kafka wire client for tests: one socket, one request at a time.

It uses kafka-python's ``kafka.protocol`` codec only (no kafka-python client), so a test can
send exactly the request it means, at exactly the version it means, and look at the raw
answer. It exists to pin down what a broker (Tansu) really answers; the project's own
client must not depend on it.

    with WireConnection("127.0.0.1", port) as conn:
        resp = conn.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]),
                         version=4)

Codec gotchas (see /work/shared/notes/kafka-admin-semantics.md): a request needs
``.with_header()`` before ``encode(header=True)``; a batched FindCoordinator below v4 or
OffsetFetch below v8 silently drops the batch. ``send`` refuses neither: the caller picks.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from typing import Any

__all__ = ["WireConnection", "WireError", "response_class_for", "api_versions", "fetch"]

_INT32 = struct.Struct(">i")


class WireError(RuntimeError):
    """The connection failed, timed out, or the answer did not match the request."""


def response_class_for(request_cls: type) -> type:
    """The response class paired with a kafka.protocol request class (same API key)."""
    from kafka.protocol.api_header import ResponseClassRegistry

    cls = ResponseClassRegistry._response_class_registry.get(request_cls.API_KEY)
    if cls is None:
        raise WireError(f"no response class registered for api key {request_cls.API_KEY}")
    return cls


class WireConnection:
    """One blocking TCP connection to a broker, requests sent one after the other.

    ``timeout`` bounds every socket operation (connect, each send, each receive) in
    seconds; a timeout raises :class:`WireError` and closes the connection.
    """

    def __init__(
        self, host: str, port: int, *, timeout: float = 10.0, client_id: str = "kgroups-tests"
    ) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.client_id = client_id
        self._correlation = itertools.count(1)
        try:
            self._sock: socket.socket | None = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise WireError(f"cannot connect to {host}:{port}: {exc}") from exc
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @classmethod
    def to(cls, bootstrap: str, **kwargs: Any) -> WireConnection:
        """Connect to ``"host:port"``."""
        host, _, port = bootstrap.rpartition(":")
        return cls(host, int(port), **kwargs)

    def __enter__(self) -> WireConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def send_raw(self, request: Any, version: int) -> tuple[int, bytes]:
        """Send ``request`` at ``version``; return (correlation id, raw response frame body).

        The body still holds the response header. Useful when the codec cannot decode
        the answer (to look at the bytes).
        """
        if self._sock is None:
            raise WireError("connection is closed")
        correlation_id = next(self._correlation)
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        data = request.encode(version=version, header=True, framed=True)
        try:
            self._sock.sendall(data)
            (size,) = _INT32.unpack(self._recv_exactly(4))
            if size < 4:
                raise WireError(f"response frame too short: {size} bytes")
            body = self._recv_exactly(size)
        except (OSError, WireError) as exc:
            self.close()
            if isinstance(exc, WireError):
                raise
            raise WireError(f"{type(request).__name__} v{version} to {self.host}:{self.port}: {exc}") from exc
        (got,) = _INT32.unpack_from(body, 0)
        if got != correlation_id:
            self.close()
            raise WireError(f"correlation id {got} != {correlation_id}")
        return correlation_id, body

    def send(self, request: Any, version: int, response_cls: type | None = None) -> Any:
        """Send ``request`` at ``version`` and return the decoded response object."""
        _, body = self.send_raw(request, version)
        cls = response_cls or response_class_for(type(request))
        return cls.decode(body, version=version, header=True)

    def _recv_exactly(self, n: int) -> bytes:
        assert self._sock is not None
        chunks = []
        remaining = n
        deadline = time.monotonic() + self.timeout
        while remaining:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireError(f"timed out after {self.timeout}s waiting for {n} bytes")
            self._sock.settimeout(left)
            chunk = self._sock.recv(remaining)
            if not chunk:
                raise WireError("connection closed by the broker")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)


def api_versions(conn: WireConnection) -> dict[int, tuple[int, int]]:
    """ApiVersions v3 (falls back to v0): ``{api_key: (min_version, max_version)}``."""
    from kafka.protocol.metadata import ApiVersionsRequest

    for version in (3, 0):
        req = (
            ApiVersionsRequest(client_software_name="kgroups-tests", client_software_version="0")
            if version >= 3
            else ApiVersionsRequest()
        )
        resp = conn.send(req, version)
        if resp.error_code == 0:
            return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    raise WireError(f"ApiVersions failed with error {resp.error_code}")


def fetch(
    conn: WireConnection, topic: str, partition: int, offset: int, version: int, max_wait_ms: int = 200
):
    """One partition's Fetch from ``offset`` at ``version`` (read_uncommitted, 1 MiB), the raw answer."""
    from kafka.protocol.consumer import FetchRequest

    FT = FetchRequest.FetchTopic
    FP = FT.FetchPartition
    req = FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        rack_id="",
        forgotten_topics_data=[],
        topics=[
            FT(
                topic=topic,
                partitions=[FP(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)],
            )
        ],
    )
    return conn.send(req, version)
