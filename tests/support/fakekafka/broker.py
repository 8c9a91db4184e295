"""One fake broker: an asyncio server on 127.0.0.1 that can go down and come back on the same port."""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING

from .connection import Connection

if TYPE_CHECKING:
    from .cluster import FakeCluster

__all__ = ["FakeBroker"]


class FakeBroker:
    """``versions``: ``{api key: (min, max)}`` this broker advertises and accepts."""

    def __init__(
        self,
        cluster: FakeCluster,
        node_id: int,
        *,
        versions: dict[int, tuple[int, int]],
        host: str = "127.0.0.1",
        ssl_context: ssl.SSLContext | None = None,
        rack: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.versions = versions
        self.host = host
        self.rack = rack
        self.port = 0  # the real port once started; kept across stop/start
        self.ssl_context = ssl_context
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[Connection] = set()
        self._wake: asyncio.Event | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def connections(self) -> int:
        """Open client connections."""
        return len(self._connections)

    async def start(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(
            self._on_connect, self.host, self.port, ssl=self.ssl_context, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Down: stop listening (connection refused) and reset every open connection."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for conn in list(self._connections):
            conn.abort()
        await server.wait_closed()

    def wake_event(self) -> asyncio.Event:
        """Set when faults change, so stalled (blackholed) connections look again."""
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake

    def wake(self) -> None:
        """Loop thread only."""
        event, self._wake = self._wake, None
        if event is not None:
            event.set()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(self.cluster, self, reader, writer)
        self._connections.add(conn)
        try:
            await conn.serve()
        except asyncio.CancelledError:
            pass
        finally:
            self._connections.discard(conn)

    def __repr__(self) -> str:
        return f"FakeBroker(node_id={self.node_id}, {self.host}:{self.port}, running={self.running})"
