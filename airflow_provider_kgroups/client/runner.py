"""The sender: the one place where a call's requests go to brokers and come back.

After ``KafkaAdminClient.invokeDriver`` (clients/.../admin/KafkaAdminClient.java): :func:`run`
polls the :class:`~.driver.Driver` for what to send, sends it through the connection pool, and
feeds back every response and failure, until each key is settled or the deadline passes.
Requests to different brokers are in flight at once; the requests of one dispatch are pipelined
on its broker's connection.

A lookup's requests go where its declared :class:`~.contract.Routing` says, as
``leastLoadedNode`` picks in the Java client (the runner never asks which API a lookup is):
``BATCHING`` (FindCoordinator) to the least-loaded live broker that batches (v4+), connecting
to every known broker only when no live one does, and otherwise one request per key spread over
them; ``LEAST_LOADED`` (Metadata) to the least-loaded broker, moving on to the next one at once
when it fails (``NetworkClient.DefaultMetadataUpdater``); ``ANY`` keys need no lookup request and
go to the least-loaded broker (DescribeConfigs of topics); ``FIXED`` keys name their broker and
never reach the sender. Calls running side by side share one bootstrap Metadata and one lookup
per key (:class:`InFlight`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .cluster import ClusterMetadata
from .config import ClientConfig
from .contract import Lookup, Outcome, RequestPlan, Routing
from .deadline import Deadline
from .driver import LOOKUP, Dispatch, Driver
from .errors import (
    NoBrokerAvailable,
    ProtocolError,
    RequestTimeout,
    TransportError,
    UnsupportedVersion,
    error_name,
)
from .handlers.base import Handler
from .protocol import ApiMessage, MetadataRequest, warmup
from .results import KeyedResults
from .transport import BrokerConnection, ConnectionPool

log = logging.getLogger(__name__)

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class InFlight:
    """Lookups in flight for one client, which calls running side by side wait for instead of
    asking again: the bootstrap Metadata and each key's lookup (a group's FindCoordinator, a
    partition's Metadata)."""

    bootstrap: asyncio.Future[None] | None = None
    lookups: dict[Lookup[Any], dict[Any, asyncio.Future[Outcome[Any, int]]]] = field(
        default_factory=dict
    )  # lookup -> key -> its answer


@dataclass
class Call:
    """What one public call shares: the pool, the cluster metadata, the deadline, the backoff policy."""

    pool: ConnectionPool
    metadata: ClusterMetadata
    config: ClientConfig
    deadline: float
    limit: str = ""  # which timeout ends the call, for messages ("the 2 s deadline")
    in_flight: InFlight = field(default_factory=InFlight)

    @classmethod
    def start(
        cls,
        pool: ConnectionPool,
        metadata: ClusterMetadata,
        config: ClientConfig,
        timeout_s: float | None,
        enclosing: Deadline | None = None,
        in_flight: InFlight | None = None,
    ) -> Call:
        """Ends at the earlier of the call's own timeout and the ``enclosing`` deadline (a
        command's, a hook verb's, a sensor check's: see :mod:`.deadline`)."""
        own = timeout_s if timeout_s is not None else config.call_timeout_s
        ends, limit = time.monotonic() + own, f"the call's {own:g} s timeout"
        if enclosing is not None and enclosing.at < ends:
            ends, limit = enclosing.at, enclosing.describe()
        return cls(pool, metadata, config, ends, limit, in_flight if in_flight is not None else InFlight())

    @property
    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def check_time_left(self) -> None:
        """Raise RequestTimeout, naming the limit, when nothing more may be sent."""
        if self.time_left <= 0:
            raise RequestTimeout(f"{self.limit or 'the deadline'} passed before a broker could be asked")

    def request_timeout(self) -> float:
        return max(0.001, min(self.config.request_timeout_s, self.time_left))

    def backoff(self, attempt: int) -> float:
        base = min(
            self.config.retry_backoff_max_s, self.config.retry_backoff_s * (2.0 ** max(0, attempt - 1))
        )
        return base * random.uniform(0.8, 1.2)

    async def send(self, conn: BrokerConnection, plan: RequestPlan[Any]) -> Any:
        return await conn.send(plan.request, plan.version, self.request_timeout(), deadline=self.deadline)

    async def connection(self, node: int) -> BrokerConnection:
        """The connection to ``node``; waiting for it to open counts as a request (bounded alike)."""
        self.check_time_left()
        return await self.pool.get(node, timeout=self.request_timeout())

    def expect(self, request_cls: type[ApiMessage], *, next_up: bool = False) -> None:
        """This call will send ``request_cls``: its codecs may be compiled while earlier requests
        are on the wire (see :class:`~.protocol.CodecWarmup`), at the version a live connection
        speaks, else this client's highest."""
        live = self.pool.live()
        warmup.want(request_cls, live[0].version_for(request_cls) if live else None, next_up=next_up)

    async def any_connection(self, exclude: Iterable[int] = ()) -> BrokerConnection:
        """A connection to any broker but ``exclude``, each one tried for at most a request timeout."""
        self.check_time_left()
        return await self.pool.any(timeout=self.request_timeout(), exclude=exclude)


# -- one handler over many keys ----------------------------------------------------------------


async def run(call: Call, handler: Handler[K, V], keys: Iterable[K]) -> KeyedResults[K, V]:
    """Run ``handler`` over ``keys`` until each has a value or a failure, or the call's deadline."""
    call.expect(handler.request_class)
    driver = Driver(handler, keys, backoff=call.backoff)
    tasks: dict[asyncio.Task[None], Dispatch[K]] = {}
    try:
        while True:
            for dispatch in driver.poll(time.monotonic()):
                tasks[asyncio.ensure_future(_send(call, driver, dispatch))] = dispatch
            if driver.finished:
                break
            wait_for = call.time_left
            wake = driver.next_wakeup()
            if wake is not None:
                wait_for = min(wait_for, wake - time.monotonic())
            if call.time_left <= 0:
                driver.expire(call.limit)
                break
            if not tasks:
                await asyncio.sleep(max(0.0, wait_for))
                continue
            done, _ = await asyncio.wait(
                tasks, timeout=max(0.0, wait_for), return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                dispatch = tasks.pop(task)
                error = task.exception()
                if error is not None:
                    driver.fail(dispatch, error, time.monotonic())
                else:
                    driver.complete(dispatch, time.monotonic())
    finally:
        for task in tasks:
            task.cancel()
    return driver.results()


async def _send(call: Call, driver: Driver[Any, Any], dispatch: Dispatch[Any]) -> None:
    if dispatch.stage == LOOKUP:
        await _share_lookup(call, driver, dispatch)
        return
    conn = await call.connection(dispatch.node)
    await _pipeline(
        call,
        driver,
        dispatch,
        conn,
        driver.build(dispatch, conn.version_for(driver.fulfiller().request_class)),
    )


async def _pipeline(
    call: Call,
    driver: Driver[Any, Any],
    dispatch: Dispatch[Any],
    conn: BrokerConnection,
    plans: list[RequestPlan[Any]],
) -> None:
    """Send ``plans`` at once on ``conn`` and feed back each answer, then any requests the driver
    asks for instead (the halves of a response too large), until none is left."""
    while plans:
        sent, plans = plans, []
        responses = await asyncio.gather(*(call.send(conn, plan) for plan in sent), return_exceptions=True)
        for plan, response in zip(sent, responses):
            if isinstance(response, BaseException):
                plans += driver.on_failure(dispatch, plan, response)
            else:
                plans += driver.on_response(dispatch, plan, response)


# -- lookups -------------------------------------------------------------------------------------


async def _share_lookup(call: Call, driver: Driver[Any, Any], dispatch: Dispatch[Any]) -> None:
    """Keys whose lookup another call has in flight (describe and OffsetFetch of the same groups,
    as the lag snapshot sends them) wait for that answer instead of asking again; the others go
    where the lookup's routing says."""
    lookup = driver.lookup
    shared = call.in_flight.lookups.setdefault(lookup, {})
    waiting = {k: shared[k] for k in dispatch.keys if k in shared}
    mine = [k for k in dispatch.keys if k not in waiting]
    if mine:
        future: asyncio.Future[Outcome[Any, int]] = asyncio.get_running_loop().create_future()
        shared.update(dict.fromkeys(mine, future))
        try:
            await _ROUTES[lookup.routing](call, driver, dispatch, mine)
            future.set_result(dispatch.outcome.only(mine))
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: nobody else may be waiting
            raise
        finally:
            for k in mine:
                if shared.get(k) is future:
                    del shared[k]
    for future in {id(f): f for f in waiting.values()}.values():
        answer = await asyncio.shield(future)
        driver.adopt(dispatch, answer.only(k for k, f in waiting.items() if f is future))


def _request_class(lookup: Lookup[Any]) -> type[ApiMessage]:
    if lookup.request_class is None:  # a FIXED lookup has none, and is never routed here
        raise RuntimeError(f"{type(lookup).__name__} sends no request: it cannot be routed to a broker")
    return lookup.request_class


async def _least_loaded(
    call: Call, driver: Driver[Any, Any], dispatch: Dispatch[Any], keys: list[Any]
) -> None:
    """:attr:`Routing.LEAST_LOADED`: one request, to the least-loaded broker that answers."""
    plan, response = await ask_any_broker(
        call, _request_class(driver.lookup), lambda version: driver.build(dispatch, version, keys)[0]
    )
    driver.on_response(dispatch, plan, response)


async def _batching(call: Call, driver: Driver[Any, Any], dispatch: Dispatch[Any], keys: list[Any]) -> None:
    """:attr:`Routing.BATCHING`. A live broker that batches answers at once, without waiting for
    the broker list (on a cold client the first Metadata is then in flight beside this lookup);
    only without one is every broker connected (to learn its versions), which a silent broker
    can slow down. No broker batching: one request per key, spread over the brokers."""
    lookup = driver.lookup
    request_class = _request_class(lookup)
    call.expect(request_class, next_up=True)
    await call.any_connection()

    def batching(conns: list[BrokerConnection]) -> list[BrokerConnection]:
        return [c for c in conns if lookup.batches(c.version_for(request_class))]

    batchers = batching(call.pool.live())
    if not batchers:
        await bootstrap(call)
        conns = await _connect_all(call, call.metadata.brokers)
        batchers = batching(conns)
    if batchers:
        conn = batchers[0]  # the least loaded (connections come in load order)
        await _pipeline(
            call, driver, dispatch, conn, driver.build(dispatch, conn.version_for(request_class), keys)
        )
        return
    # No broker batches: one request per key, spread over the brokers, all in flight at once.
    plans = [
        (conn, plan)
        for key, conn in zip(keys, itertools.cycle(conns))
        for plan in driver.build(dispatch, conn.version_for(request_class), [key])
    ]
    responses = await asyncio.gather(*(call.send(c, p) for c, p in plans), return_exceptions=True)
    for (_, plan), response in zip(plans, responses):
        if isinstance(response, BaseException):
            driver.on_failure(dispatch, plan, response)  # one key: nothing to split
        else:
            driver.on_response(dispatch, plan, response)


async def _any_broker(call: Call, driver: Driver[Any, Any], dispatch: Dispatch[Any], keys: list[Any]) -> None:
    """:attr:`Routing.ANY`: no lookup request; the keys go, all together, to the least-loaded
    broker a connection opens to (``leastLoadedNode``). Keys sent back after their broker failed
    come here again, and a broker that just failed is the pool's last choice."""
    conn = await call.any_connection()
    driver.adopt(dispatch, Outcome(completed=dict.fromkeys(keys, conn.node_id)))


_ROUTES = {Routing.LEAST_LOADED: _least_loaded, Routing.BATCHING: _batching, Routing.ANY: _any_broker}


async def _connect_all(call: Call, brokers: dict[int, Any]) -> list[BrokerConnection]:
    """Live connections to every known broker that opens one within a request timeout (a silent
    broker must not hold up the lookup of every key), bootstrap ones as a last resort."""
    results = await asyncio.gather(*(call.connection(n) for n in brokers), return_exceptions=True)
    opened = {id(r) for r in results if not isinstance(r, BaseException)}
    conns = [
        c for c in call.pool.live() if id(c) in opened
    ]  # in the pool's order: a broker that just failed last
    if not conns:
        conns = [await call.any_connection()]
    return conns


async def locate(call: Call, lookup: Lookup[K], keys: list[K]) -> None:
    """Look ``keys`` up once (filling the lookup's cache), as the first lookup of :func:`run`
    would: for several drivers about to run over the same keys."""
    driver = Driver.lookup_only(lookup, keys, backoff=call.backoff)
    for dispatch in driver.poll(time.monotonic()):
        if dispatch.stage == LOOKUP:
            await _send(call, driver, dispatch)


# -- Metadata ------------------------------------------------------------------------------------


async def ask_any_broker(
    call: Call, request_class: type[ApiMessage], build: Callable[[int | None], RequestPlan[Any]]
) -> tuple[RequestPlan[Any], Any]:
    """Send ``build(version)`` (a ``request_class``) to the least-loaded broker. One that goes silent, drops the
    connection or answers an error for the whole request is not the end of it: the next
    least-loaded broker is asked, within the same deadline, as the Java client's MetadataUpdater
    moves on to another node (NetworkClient.DefaultMetadataUpdater.maybeUpdate /
    leastLoadedNode). A broker whose version cannot carry the request is passed over, nothing sent.
    Every broker failing raises :class:`NoBrokerAvailable` naming why each did
    (:class:`UnsupportedVersion` when each one reached was too old for the request)."""
    failed: dict[int, str] = {}
    refused: set[int] = set()  # brokers whose version cannot carry the request: nothing sent
    api = request_class.__name__.removesuffix("Request")
    call.expect(request_class, next_up=True)
    while True:
        try:
            conn = await call.any_connection(exclude=failed)
        except NoBrokerAvailable as exc:
            if not failed:
                raise
            tried = "; ".join(f"broker {n}: {why}" for n, why in failed.items())
            if refused == failed.keys():  # every broker reached is too old for it: no retry helps
                raise UnsupportedVersion(f"no broker can take this {api} request ({tried})") from None
            raise NoBrokerAvailable(f"no broker answered {api} ({tried}; {exc})") from None
        try:
            plan = build(conn.version_for(request_class))
        except UnsupportedVersion as exc:  # a newer broker may take it (a rolling upgrade)
            failed[conn.node_id] = str(exc)
            refused.add(conn.node_id)
            continue
        try:
            response = await call.send(conn, plan)
            top_error = getattr(response, "error_code", 0) or 0
            if top_error:
                raise ProtocolError(f"broker {conn.address} answered {api} with {error_name(top_error)}")
        except (TransportError, ProtocolError, OSError) as exc:
            failed[conn.node_id] = str(exc)
            log.info("%s from broker %s failed (%s): asking another broker", api, conn.address, exc)
            call.check_time_left()
            continue
        return plan, response


async def refresh(call: Call, topics: Iterable[str] | None = ()) -> dict[str, int]:
    """Metadata for brokers plus ``topics`` (``None`` = every topic, ``()`` = none) from any
    broker, into the cluster metadata. Returns the error code of each topic as the response
    named it (topics it left out are absent from the mapping)."""
    names = None if topics is None else sorted(set(topics))

    def metadata_plan(version: int | None) -> RequestPlan[Any]:
        if version is None:  # ask_any_broker passes this broker over
            raise UnsupportedVersion("the broker shares no Metadata version with this client")
        return RequestPlan(call.metadata.request(names, version), version, ())

    _plan, response = await ask_any_broker(call, MetadataRequest, metadata_plan)
    return call.metadata.absorb(names, response)


async def bootstrap(call: Call) -> None:
    """The first Metadata (brokers), once: calls starting side by side share it."""
    if call.metadata.bootstrapped:
        return
    shared = call.in_flight
    if shared.bootstrap is not None:
        await asyncio.shield(shared.bootstrap)
        return
    shared.bootstrap = future = asyncio.get_running_loop().create_future()
    try:
        await refresh(call)
        future.set_result(None)
    except BaseException as exc:
        future.set_exception(exc)
        future.exception()  # retrieved: nobody else may be waiting
        raise
    finally:
        shared.bootstrap = None


async def beside_bootstrap(call: Call, work: Awaitable[T]) -> T:
    """``work`` (a call's requests), sent beside the first Metadata rather than after it.

    Nothing a call sends first needs the broker list: a FindCoordinator answer names its
    coordinator's address, a leader lookup asks Metadata itself. So on a cold client both go
    out at once, pipelined on the first connection: one round trip less on the critical
    path. A call still raises :class:`NoBrokerAvailable` when no broker answers Metadata,
    as before, and ``work`` is then cancelled."""
    if call.metadata.bootstrapped:
        return await work
    tasks = first, done = (asyncio.ensure_future(bootstrap(call)), asyncio.ensure_future(work))
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        await first  # its failure is the call's, whatever ``work`` did
        return await done
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
