"""One connection per broker, opened on first use and shared by every request to it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..config import BrokerAddress, ClientConfig
from ..errors import (
    AuthenticationError,
    KafkaGroupsError,
    NoBrokerAvailable,
    RequestTimeout,
    TokenUnavailable,
)
from .connection import BrokerConnection

log = logging.getLogger("airflow_provider_kgroups.client.requests")


class AddressBook(Protocol):
    """Where each broker is: the cluster metadata (:class:`~..cluster.ClusterMetadata`) is the one
    owner of broker addresses; the pool only reads them."""

    def address_of(self, node_id: int) -> BrokerAddress | None: ...

    @property
    def known_nodes(self) -> list[int]: ...

    @property
    def bootstrap_nodes(self) -> list[int]: ...


class RequestObserver(Protocol):
    def __call__(
        self, node_id: int, api: str, version: int, seconds: float, error: BaseException | None
    ) -> None: ...


@dataclass
class RequestStats:
    """Requests sent, by API and by broker: what benchmarks and tests count."""

    by_api: Counter[str] = field(default_factory=Counter)
    by_node: Counter[int] = field(default_factory=Counter)
    seconds_by_api: Counter[str] = field(default_factory=Counter)  # float seconds
    errors: int = 0

    def __call__(
        self, node_id: int, api: str, version: int, seconds: float, error: BaseException | None
    ) -> None:
        self.by_api[api] += 1
        self.by_node[node_id] += 1
        self.seconds_by_api[api] += seconds  # type: ignore[assignment]  # typeshed's Counter counts ints only; Counter adds floats
        if error is not None:
            self.errors += 1
        if log.isEnabledFor(logging.DEBUG):
            outcome = f" failed: {error}" if error is not None else ""
            log.debug("%s v%d -> broker %d in %.1f ms%s", api, version, node_id, seconds * 1000, outcome)

    @property
    def total(self) -> int:
        return sum(self.by_api.values())

    def reset(self) -> None:
        self.by_api.clear()
        self.by_node.clear()
        self.seconds_by_api.clear()
        self.errors = 0


def _load_order(conn: BrokerConnection, last_failure: float) -> tuple[bool, float, int, bool, int]:
    # As NetworkClient.leastLoadedNode: a broker throttling this client (quota) is the last
    # choice, and one that just failed (timed out, dropped the connection) comes after those
    # that did not (Java keeps it out while its reconnect backoff lasts).
    return conn.throttled_for > 0, last_failure, conn.in_flight, conn.node_id < 0, abs(conn.node_id)


class ConnectionPool:
    """Keeps one live connection per node, at the address ``addresses`` gives for it now.

    A node whose address changed (a broker moved) gets a new connection on next use; the old
    one is closed.
    """

    def __init__(
        self, config: ClientConfig, addresses: AddressBook, stats: RequestStats | None = None
    ) -> None:
        self._config = config
        self.stats = stats or RequestStats()
        self._addresses = addresses
        self._connections: dict[int, BrokerConnection] = {}
        self._connecting: dict[int, asyncio.Task[BrokerConnection]] = {}
        self._last_failure: dict[BrokerAddress, float] = {}  # monotonic, by address

    def _failed_at(self, address: BrokerAddress | None) -> float:
        return self._last_failure.get(address, 0.0) if address is not None else 0.0

    def live(self) -> list[BrokerConnection]:
        """Connections open now (no waiting): unthrottled first, then those whose broker failed
        least recently (never first), least loaded, real brokers before bootstrap entries, then
        by node id: the same choice every time for the same state."""
        for node_id, conn in list(self._connections.items()):
            if not conn.connected:
                del self._connections[node_id]
                if conn.failed_at is not None:
                    self._failed(conn.address, conn.failed_at)
            elif conn.address != self._addresses.address_of(node_id):
                self._moved(node_id)
        return sorted(
            self._connections.values(), key=lambda c: _load_order(c, self._last_failure.get(c.address, 0.0))
        )

    def _failed(self, address: BrokerAddress, at: float) -> None:
        self._last_failure[address] = max(at, self._last_failure.get(address, 0.0))

    def _moved(self, node_id: int) -> None:
        conn = self._connections.pop(node_id)
        asyncio.get_running_loop().create_task(conn.close())

    async def get(self, node_id: int, timeout: float | None = None) -> BrokerConnection:
        """The live connection to ``node_id``, opening it if needed (one attempt at a time).

        ``timeout`` bounds how long this caller waits for a connection being opened (a broker
        that accepts the socket but never answers): :class:`RequestTimeout` then, while the
        attempt itself goes on, bounded by ``connect_timeout_s``, for whoever asks next.
        """
        conn = self._connections.get(node_id)
        if conn is not None and conn.connected:
            if conn.address == self._addresses.address_of(node_id):
                return conn
            self._moved(node_id)
        task = self._connecting.get(node_id)
        if task is None:
            address = self._addresses.address_of(node_id)
            if address is None:
                raise KafkaGroupsError(f"no address known for broker {node_id}")
            conn = BrokerConnection(node_id, address, self._config, observer=self.stats)
            task = asyncio.get_running_loop().create_task(self._open(node_id, conn))
            self._connecting[node_id] = task
        if timeout is None:
            return await asyncio.shield(task)
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            if task.done():
                raise  # the attempt itself timed out (connect_timeout_s): its own error says so
            raise RequestTimeout(
                f"connecting to broker {node_id} at {self._addresses.address_of(node_id)} "
                f"took over {timeout:.3g}s"
            ) from None

    async def _open(self, node_id: int, conn: BrokerConnection) -> BrokerConnection:
        try:
            await conn.connect()
            self._connections[node_id] = conn
            return conn
        except Exception:
            self._failed(conn.address, time.monotonic())
            raise
        finally:
            self._connecting.pop(node_id, None)

    async def any(
        self, prefer: Iterable[int] = (), timeout: float | None = None, exclude: Iterable[int] = ()
    ) -> BrokerConnection:
        """The least-loaded live connection, else the first broker that accepts one
        (waiting at most ``timeout`` for each). Brokers in ``exclude`` (by node id or by
        address: a bootstrap entry and the node id it turned out to be are one broker) are
        left out: they just failed this caller.

        Used for requests any broker can answer (Metadata, FindCoordinator).
        """
        book = self._addresses
        excluded = {book.address_of(n) for n in exclude}
        live = [c for c in self.live() if c.address not in excluded]
        if live:
            return live[0]
        candidates = list(prefer) + book.known_nodes + sorted(book.bootstrap_nodes, reverse=True)
        candidates = sorted(
            (n for n in dict.fromkeys(candidates) if book.address_of(n) not in excluded),
            key=lambda n: self._failed_at(book.address_of(n)),
        )  # stable
        errors = []
        for node_id in candidates:  # already one entry per node
            try:
                return await self.get(node_id, timeout)
            except (AuthenticationError, TokenUnavailable):
                raise  # a wrong password, or no token, is not fixed by trying the next broker
            except (KafkaGroupsError, OSError) as exc:
                errors.append(f"{book.address_of(node_id)}: {exc}")
        raise NoBrokerAvailable("no broker reachable; tried " + "; ".join(errors))

    async def close(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        opening = list(self._connecting.values())
        for task in opening:
            task.cancel()
        # Await the cancelled opens too: a task dropped while pending is reported by asyncio at exit.
        await asyncio.gather(*opening, *(c.close() for c in connections), return_exceptions=True)
