"""A tiny asyncio Kafka wire client for driving the fake with raw codec requests.

    resp = await roundtrip(host, port, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)

:class:`WireClient` keeps one connection for several requests (SASL, pipelining).
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
from typing import Any

from .codec import INT32, decode_response

__all__ = ["WireClient", "roundtrip", "ConnectionClosed"]


class ConnectionClosed(ConnectionError):
    """The broker closed the connection (possibly mid-frame; ``partial`` holds the bytes)."""

    def __init__(self, message: str, partial: bytes = b"") -> None:
        super().__init__(message)
        self.partial = partial


class WireClient:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "fakekafka-test",
        ssl_context: ssl.SSLContext | None = None,
        timeout: float = 5.0,
    ) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.ssl_context = ssl_context
        self.timeout = timeout
        self._correlation = itertools.count(1)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> WireClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(
                self.host,
                self.port,
                ssl=self.ssl_context,
                server_hostname=self.host if self.ssl_context else None,
            ),
            self.timeout,
        )

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError, ssl.SSLError):
                pass
            self.writer = self.reader = None

    def write_request(self, request: Any, version: int, correlation_id: int | None = None) -> int:
        """Send without waiting (pipelining); returns the correlation id."""
        assert self.writer is not None, "not connected"
        cid = next(self._correlation) if correlation_id is None else correlation_id
        request.with_header(correlation_id=cid, client_id=self.client_id)
        self.writer.write(bytes(request.encode(version=version, header=True, framed=True)))
        return cid

    def write_raw(self, payload: bytes) -> None:
        """Send ``payload`` framed with its int32 size (raw SASL tokens)."""
        assert self.writer is not None, "not connected"
        self.writer.write(INT32.pack(len(payload)) + payload)

    async def read_frame(self) -> bytes:
        """The next response frame body (header included)."""
        assert self.reader is not None, "not connected"

        async def read() -> bytes:
            head = await self.reader.read(4)
            while len(head) < 4:
                more = await self.reader.read(4 - len(head))
                if not more:
                    raise ConnectionClosed("closed before a frame", head)
                head += more
            (size,) = INT32.unpack(head)
            try:
                return await self.reader.readexactly(size)
            except asyncio.IncompleteReadError as exc:
                raise ConnectionClosed(
                    f"closed after {len(exc.partial)} of {size} bytes", head + exc.partial
                ) from None

        return await asyncio.wait_for(read(), self.timeout)

    async def read_response(self, request_cls_or_key: Any, version: int) -> Any:
        key = request_cls_or_key if isinstance(request_cls_or_key, int) else request_cls_or_key.API_KEY
        return decode_response(key, version, await self.read_frame())

    async def send(self, request: Any, version: int) -> Any:
        """Send one request, wait for its response, decode it."""
        cid = self.write_request(request, version)
        frame = await self.read_frame()
        (got,) = INT32.unpack_from(frame, 0)
        if got != cid:
            raise AssertionError(f"correlation id {got}, expected {cid}")
        return decode_response(request.API_KEY, version, frame)


async def roundtrip(host: str, port: int, request: Any, version: int, **kwargs: Any) -> Any:
    """One request on a fresh connection; returns the decoded response."""
    async with WireClient(host, port, **kwargs) as client:
        return await client.send(request, version)
