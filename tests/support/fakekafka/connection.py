"""One client connection to a fake broker: framing, ordering, delays, connection faults.

Like Kafka, a connection's requests are handled one at a time in arrival order (Kafka mutes
a channel until its response is sent), so responses leave in order. Two delays apply:
``processing_s`` is broker work and holds up the next request on this connection;
``latency_s`` is network delay on the response only, so the next pipelined request is
processed meanwhile (a writer task sends each response when it is due, in order).

A quota throttle (:class:`.faults.Throttle`) mutes the connection after the response is
queued, as Kafka's SocketServer does (KafkaChannel: MUTED_AND_THROTTLED until THROTTLE_ENDED):
nothing is read until it ends. A request that reaches the broker meanwhile waits unread; its
arrival time is logged, so tests can see a client that did not hold back.

A request frame larger than the cluster's ``max_request_bytes`` (Kafka's
``socket.request.max.bytes``, 100 MiB by default) is not read: the connection is closed, as
Kafka's ``NetworkReceive.readFrom`` throws ``InvalidReceiveException`` on such a size and the
``Selector`` (``pollSelectionKeys``) closes the channel. The size is recorded
(``request_log.refused``), and so is every response's (``largest_response``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .codec import INT32, api_name
from .dispatch import receive, respond, session_expired
from .handlers.sasl import SaslSession
from .reqlog import RequestLog

if TYPE_CHECKING:
    from .broker import FakeBroker
    from .cluster import FakeCluster

__all__ = ["Connection"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Outgoing:
    due: float  # loop time at which the response reaches the client
    frame: bytes
    drop: bool = False  # write part of the frame, then close


_CLOSE = object()


class Connection:
    def __init__(
        self,
        cluster: FakeCluster,
        broker: FakeBroker,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.cluster = cluster
        self.broker = broker
        self.reader = reader
        self.writer = writer
        self.session = SaslSession(cluster.sasl, max_reauth_ms=cluster.connections_max_reauth_ms)
        self._out: asyncio.Queue = asyncio.Queue()
        self._task: asyncio.Task | None = None

    async def serve(self) -> None:
        self._task = asyncio.current_task()
        writer_task = asyncio.create_task(self._write_loop())
        try:
            await self._read_loop()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # the client went away
        except asyncio.CancelledError:
            writer_task.cancel()
            raise
        finally:
            self._out.put_nowait(_CLOSE)
        try:
            await writer_task
        finally:
            self._close()

    def abort(self) -> None:
        """Broker going down: reset the connection at once, drop what is pending."""
        self.writer.transport.abort()
        if self._task is not None:
            self._task.cancel()

    async def _read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        faults, node = self.cluster.faults, self.broker.node_id
        held: tuple[float, bytes] | None = None  # a request that arrived during a mute
        while True:
            arrived = None
            if held is not None:
                (arrived, body), held = held, None
            else:
                body = await self._read_frame()
                if body is None:
                    return
            if self.session.raw_mode:  # SASL tokens after a v0 handshake
                token = self.session.raw(body)
                if token is None:
                    return
                self._out.put_nowait(_Outgoing(loop.time(), INT32.pack(len(token)) + token))
                continue
            try:
                incoming = receive(self.broker, body, self.cluster.request_log, arrived)
            except ValueError:  # not even a request header: Kafka drops such a connection
                return
            if session_expired(self.cluster, self.broker, self.session, incoming):
                return
            api_key = incoming.prefix.api_key
            while faults.is_blackholed(node, api_key):  # read, logged, never answered while on
                await self.broker.wake_event().wait()
            processing_s, latency_s = faults.delay_for(node, api_key)
            if processing_s > 0:
                await asyncio.sleep(processing_s)
            reply = respond(self.cluster, self.broker, self.session, incoming)
            if reply.extra_delay_s > 0:
                await asyncio.sleep(reply.extra_delay_s)
            if reply.no_response:
                continue
            if reply.frame is None:
                return
            drop = faults.take_drop(api_key, node)
            self.cluster.request_log.record_response(api_name(api_key), len(reply.frame) - INT32.size)
            self._out.put_nowait(_Outgoing(loop.time() + latency_s, reply.frame, drop))
            if drop or reply.close_after:
                return
            if reply.throttle is not None:
                held = await self._mute(reply.throttle)

    async def _read_frame(self) -> bytes | None:
        (size,) = INT32.unpack(await self.reader.readexactly(4))
        if not 0 < size <= self._max_request_bytes(size):
            return None
        return await self.reader.readexactly(size)

    def _max_request_bytes(self, size: int) -> int:
        """The cap, after recording ``size`` as refused when it is over it."""
        cap = self.cluster.max_request_bytes
        if size > cap:
            self.cluster.request_log.record_refused(self.broker.node_id, size)
        return cap

    async def _mute(self, throttle) -> tuple[float, bytes] | None:
        """Read nothing for the throttle time; return a request that arrived meanwhile (with
        its arrival time), to be handled once the mute ends."""
        start = RequestLog.now()
        end = start + throttle.throttle_ms / 1000.0
        throttle.mutes.append((start, end))
        held = None
        try:
            header = await asyncio.wait_for(self.reader.readexactly(4), end - start)
        except TimeoutError:
            pass  # readexactly consumed nothing: the client sent nothing during the mute
        else:
            arrived = RequestLog.now()
            (size,) = INT32.unpack(header)
            if not 0 < size <= self._max_request_bytes(size):
                raise ConnectionError("bad frame size")
            held = (arrived, await self.reader.readexactly(size))
        remaining = end - RequestLog.now()
        if remaining > 0:
            await asyncio.sleep(remaining)
        return held

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                item = await self._out.get()
                if item is _CLOSE:
                    return
                delay = item.due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if item.drop:
                    self.writer.write(item.frame[: max(1, len(item.frame) // 2)])
                    await self.writer.drain()
                    return
                self.writer.write(item.frame)
                await self.writer.drain()
        except (ConnectionError, OSError):
            pass

    def _close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()
