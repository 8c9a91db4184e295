"""A TCP proxy that counts Kafka requests by API on their way to a real broker.

Tansu has no request log, so the benchmark puts this in front of it and makes Tansu
advertise the proxy's port: every client's requests, bootstrap and after, pass through.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from collections import Counter

from kafka.protocol.api_key import ApiKey


class CountingProxy:
    def __init__(self) -> None:
        self._counts: Counter = Counter()
        self._lock = threading.Lock()
        self._target_port: int | None = None
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self.port: int | None = None

    @classmethod
    def running_in_thread(cls) -> "CountingProxy":
        return cls()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def forward_to(self, port: int) -> None:
        self._target_port = port

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def __enter__(self) -> "CountingProxy":
        threading.Thread(target=self._loop.run_forever, daemon=True, name="counting-proxy").start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop).result()
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc) -> None:
        async def stop():
            self._server.close()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _serve(self, client_reader, client_writer) -> None:
        if self._target_port is None:
            client_writer.close()
            return
        broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", self._target_port)
        await asyncio.gather(self._requests(client_reader, broker_writer),
                             self._pipe(broker_reader, client_writer), return_exceptions=True)
        client_writer.close()
        broker_writer.close()

    async def _requests(self, reader, writer) -> None:
        try:
            while True:
                header = await reader.readexactly(4)
                body = await reader.readexactly(struct.unpack(">i", header)[0])
                api_key = struct.unpack_from(">h", body)[0]
                name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
                with self._lock:
                    self._counts[name] += 1
                writer.write(header + body)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _pipe(self, reader, writer) -> None:
        try:
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        writer.close()
