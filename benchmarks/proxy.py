"""TCP proxies in front of a real broker.

:class:`CountingProxy` counts Kafka requests by API on their way to a real broker: Tansu has
no request log, so the benchmark puts this in front of it and makes Tansu advertise the
proxy's port: every client's requests, bootstrap and after, pass through.

:class:`VirtualCluster` presents one real single-node broker as a cluster of several brokers,
each request delayed by a latency (``bench_cli.py``'s ``tansu`` scenario).
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
import zlib
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
    def running_in_thread(cls) -> CountingProxy:
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

    def __enter__(self) -> CountingProxy:
        threading.Thread(target=self._loop.run_forever, daemon=True, name="counting-proxy").start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop
        ).result()
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
        await asyncio.gather(
            self._requests(client_reader, broker_writer),
            self._pipe(broker_reader, client_writer),
            return_exceptions=True,
        )
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


class VirtualCluster:
    """A cluster of ``brokers`` virtual brokers in front of one real single-node broker (Tansu),
    every request delayed by ``latency_s`` on its way, as a network and a busy broker would.

    Each virtual broker has a port of its own and forwards every connection to the real
    broker. What a multi-broker cluster tells its clients is rewritten on the way back, so that
    clients spread their requests as they would over real brokers: Metadata lists the virtual
    brokers and names a leader for each partition (round robin from a hash of the topic);
    FindCoordinator names a coordinator for each group (a hash of the group id); each virtual
    broker's ListGroups lists only the groups it coordinates (a real broker lists its own).
    Everything else passes through untouched, so the real broker does all the work. The
    rewritten answers are kept by the real broker's answer bytes (correlation id aside), so
    repeated runs cost the proxy a dictionary lookup, not a decode and an encode.

    Requests are counted by API, with their arrival times (for round trips, as the fake
    server's ``waves``). The requests of one connection keep their order.
    """

    REWRITTEN = frozenset({3, 10, 16})  # Metadata, FindCoordinator, ListGroups

    def __init__(
        self, target_port: int, brokers: int = 9, latency_s: float = 0.010, host: str = "127.0.0.1"
    ) -> None:
        self.target_port = target_port
        self.brokers = brokers
        self.latency_s = latency_s
        self.host = host
        self.ports: list[int] = []
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.AbstractServer] = []
        self._lock = threading.Lock()
        self._arrivals: list[tuple[float, str, int]] = []  # (monotonic time, api, virtual node)
        self._kept: dict[tuple, bytes] = {}
        self._serving: set[asyncio.Task] = set()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.ports[0]}"

    def coordinator_of(self, group_id: str) -> int:
        return zlib.crc32(group_id.encode()) % self.brokers

    def leader_of(self, topic: str, partition: int) -> int:
        return (zlib.crc32(topic.encode()) + partition) % self.brokers

    def requests(self) -> list[tuple[float, str, int]]:
        with self._lock:
            return list(self._arrivals)

    def counts(self) -> dict[str, int]:
        return dict(Counter(api for _, api, _ in self.requests()))

    def reset(self) -> None:
        with self._lock:
            self._arrivals.clear()

    def __enter__(self) -> VirtualCluster:
        threading.Thread(target=self._loop.run_forever, daemon=True, name="virtual-cluster").start()

        async def start():
            for node in range(self.brokers):
                server = await asyncio.start_server(lambda r, w, n=node: self._serve(n, r, w), self.host, 0)
                self._servers.append(server)
                self.ports.append(server.sockets[0].getsockname()[1])

        asyncio.run_coroutine_threadsafe(start(), self._loop).result()
        return self

    def __exit__(self, *exc) -> None:
        async def stop():
            for server in self._servers:
                server.close()
            for task in self._serving:
                task.cancel()
            await asyncio.gather(*self._serving, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _serve(self, node: int, client_reader, client_writer) -> None:
        task = asyncio.current_task()
        self._serving.add(task)
        try:
            await self._proxy(node, client_reader, client_writer)
        finally:
            self._serving.discard(task)

    async def _proxy(self, node: int, client_reader, client_writer) -> None:
        try:
            broker_reader, broker_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            client_writer.close()
            return
        asked: dict[int, tuple[int, int, bytes]] = {}  # correlation id -> (api key, version, request body)
        await asyncio.gather(
            self._requests(node, client_reader, broker_writer, asked),
            self._responses(node, broker_reader, client_writer, asked),
            return_exceptions=True,
        )
        client_writer.close()
        broker_writer.close()

    async def _requests(self, node: int, reader, writer, asked: dict) -> None:
        queue: asyncio.Queue = asyncio.Queue()

        async def forward():  # in order, each one latency after it arrived
            while (item := await queue.get()) is not None:
                due, frame = item
                if (wait := due - time.monotonic()) > 0:
                    await asyncio.sleep(wait)
                writer.write(frame)

        forwarder = asyncio.ensure_future(forward())
        try:
            while True:
                header = await reader.readexactly(4)
                body = await reader.readexactly(struct.unpack(">i", header)[0])
                api_key, version, correlation_id = struct.unpack_from(">hhi", body)
                arrived = time.monotonic()
                name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
                with self._lock:
                    self._arrivals.append((arrived, name, node))
                asked[correlation_id] = (api_key, version, body if api_key == 10 else b"")
                queue.put_nowait((arrived + self.latency_s, header + body))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            queue.put_nowait(None)
            await forwarder
            writer.close()

    async def _responses(self, node: int, reader, writer, asked: dict) -> None:
        try:
            while True:
                header = await reader.readexactly(4)
                body = await reader.readexactly(struct.unpack(">i", header)[0])
                correlation_id = struct.unpack_from(">i", body)[0]
                api_key, version, request = asked.pop(correlation_id, (None, 0, b""))
                if api_key in self.REWRITTEN:
                    writer.write(self._rewritten(node, api_key, version, request, correlation_id, body))
                else:
                    writer.write(header + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    def _rewritten(
        self, node: int, api_key: int, version: int, request: bytes, correlation_id: int, body: bytes
    ) -> bytes:
        key = (node, api_key, version, request[8:], body[4:])
        frame = self._kept.get(key)
        if frame is None:
            frame = self._rewrite(node, api_key, version, request, body)
            self._kept[key] = frame
        return frame[:4] + struct.pack(">i", correlation_id) + frame[8:]

    def _rewrite(self, node: int, api_key: int, version: int, request: bytes, body: bytes) -> bytes:
        from tests.support.fakekafka.codec import decode_request, encode_response_frame, response_class

        cls = response_class(api_key)
        response = cls.decode(body[4 + (1 if cls.flexible_version_q(version) else 0) :], version=version)
        response._header = None  # decoded without its header: encode the body alone
        address = {n: (self.host, port) for n, port in enumerate(self.ports)}
        if api_key == 3:  # Metadata: the virtual brokers, a leader for each partition
            broker = type(response.brokers[0]) if response.brokers else response.MetadataResponseBroker
            response.brokers = [broker(node_id=n, host=h, port=p, rack=None) for n, (h, p) in address.items()]
            response.controller_id = 0
            for topic in response.topics:
                for p in topic.partitions:
                    if p.leader_id >= 0:
                        p.leader_id = self.leader_of(topic.name, p.partition_index)
                        p.replica_nodes = p.isr_nodes = [p.leader_id]
        elif api_key == 10:  # FindCoordinator: a coordinator for each group
            if version >= 4:
                for c in response.coordinators:
                    if c.error_code == 0:
                        c.node_id = self.coordinator_of(c.key)
                        c.host, c.port = address[c.node_id]
            elif response.error_code == 0:
                key = decode_request(api_key, version, request).key
                response.node_id = self.coordinator_of(key)
                response.host, response.port = address[response.node_id]
        else:  # ListGroups: a broker lists the groups it coordinates
            response.groups = [g for g in response.groups if self.coordinator_of(g.group_id) == node]
        return encode_response_frame(api_key, version, struct.unpack_from(">i", body)[0], response)
