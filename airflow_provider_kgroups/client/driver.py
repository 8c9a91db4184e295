"""The one batching mechanism every operation runs on (after the Java admin client's driver).

Each key (a group, a partition, a broker) is in one of three stages: waiting for a
lookup (which broker serves it?), mapped to a broker, or finished with a value or a
:class:`Failure`. A :class:`Lookup` strategy maps keys to brokers; a handler
(:class:`~.handlers.base.Handler`) builds requests for the keys mapped to one broker and reads each response into an
:class:`Outcome`. The driver does the rest for every API alike: requests to different
brokers in flight at once, several requests to one broker pipelined on its connection,
a request whose response is over ``max_response_bytes`` split in two and sent again,
per-key retries with backoff, re-lookup when a broker turns out to be wrong, and one
deadline for the whole call.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, Hashable, Iterable, Protocol, TypeVar

from .config import ClientConfig
from .deadline import Deadline
from .errors import (
    CLIENT_DISCONNECTED, CLIENT_RESPONSE_TOO_LARGE, CLIENT_TIMEOUT, CLIENT_UNSUPPORTED, BrokerDisconnected,
    BrokerThrottled, Failure, KafkaGroupsError, RequestTimeout, ResponseTooLarge, response_lost,
)
from .protocol import ApiMessage, warmup
from .results import KeyedResults
from .transport import BrokerConnection, ConnectionPool

if TYPE_CHECKING:
    from .handlers.base import Handler

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class RequestPlan(Generic[K]):
    """One request to send and the keys whose fate its response decides."""

    request: ApiMessage
    version: int
    keys: tuple[K, ...]
    key_set: frozenset = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_set", frozenset(self.keys))  # responses are matched to keys in O(1)


@dataclass(slots=True)
class Outcome(Generic[K, V]):
    """How one response (or one lookup) left its keys."""

    completed: dict[K, V] = field(default_factory=dict)
    failed: dict[K, Failure] = field(default_factory=dict)
    unmapped: set[K] = field(default_factory=set)  # wrong broker: look it up again
    retry: set[K] = field(default_factory=set)  # right broker, not ready: ask it again after a backoff
    reasons: dict[K, str] = field(default_factory=dict)  # why a key is unmapped or retried (for timeouts)
    notes: dict[K, Any] = field(default_factory=dict)  # the handler's memory of a key for the rest of the run

    def merge(self, other: "Outcome[K, V]") -> None:
        self.completed.update(other.completed)
        self.failed.update(other.failed)
        self.unmapped |= other.unmapped
        self.retry |= other.retry
        self.reasons.update(other.reasons)
        self.notes.update(other.notes)

    def requeue(self, key: K, failure: Failure, *, relookup: bool) -> None:
        (self.unmapped if relookup else self.retry).add(key)
        self.reasons[key] = str(failure)


class Lookup(Protocol[K]):
    """Which broker serves a key. ``lookup`` returns key -> node id in ``completed``."""

    def cached(self, key: K) -> int | None: ...

    def forget(self, keys: Iterable[K]) -> None: ...

    async def lookup(self, keys: list[K], call: "Call") -> Outcome[K, int]: ...


@dataclass
class Call:
    """What one public call shares: the pool, the deadline, the backoff policy."""

    pool: ConnectionPool
    config: ClientConfig
    deadline: float
    limit: str = ""  # which timeout ends the call, for messages ("the 2 s deadline")

    @classmethod
    def start(cls, pool: ConnectionPool, config: ClientConfig, timeout_s: float | None,
              enclosing: Deadline | None = None) -> "Call":
        """Ends at the earlier of the call's own timeout and the ``enclosing`` deadline (a
        command's, a hook verb's, a sensor check's: see :mod:`.deadline`)."""
        own = timeout_s if timeout_s is not None else config.call_timeout_s
        ends, limit = time.monotonic() + own, f"the call's {own:g} s timeout"
        if enclosing is not None and enclosing.at < ends:
            ends, limit = enclosing.at, enclosing.describe()
        return cls(pool, config, ends, limit)

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
        base = min(self.config.retry_backoff_max_s, self.config.retry_backoff_s * (2 ** max(0, attempt - 1)))
        return base * random.uniform(0.8, 1.2)

    async def send(self, conn: BrokerConnection, plan: RequestPlan) -> Any:
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


async def send_splitting(call: Call, conn: BrokerConnection, plans: list[RequestPlan[K]],
                         rebuild: Callable[[list[K]], list[RequestPlan[K]]],
                         lost: Callable[[tuple[K, ...]], None] | None = None) -> list[tuple[RequestPlan[K], Any]]:
    """Send ``plans`` pipelined on ``conn``; each ends with its response or its exception. A
    response over ``max_response_bytes`` for several keys is not retried at the same size: its
    keys are rebuilt as two halves and sent again at once (``lost`` hears of them first: the
    broker did act on the request). One key alone keeps its :class:`ResponseTooLarge`."""
    done: list[tuple[RequestPlan[K], Any]] = []
    while plans:
        sent, plans = plans, []
        responses = await asyncio.gather(*(call.send(conn, plan) for plan in sent), return_exceptions=True)
        for plan, response in zip(sent, responses):
            if isinstance(response, ResponseTooLarge) and len(plan.keys) > 1:
                if lost is not None:
                    lost(plan.keys)
                half = len(plan.keys) // 2
                log.info("%s; splitting its %d keys in two", response, len(plan.keys))
                plans += rebuild(list(plan.keys[:half])) + rebuild(list(plan.keys[half:]))
            else:
                done.append((plan, response))
    return done


def transport_failure(keys: Iterable[K], error: BaseException) -> Outcome:
    """Where a request's keys go when it got no usable response."""
    if isinstance(error, BrokerThrottled):  # no answer can come before the deadline: say why now
        failure = Failure(CLIENT_TIMEOUT, str(error))
        return Outcome(failed={key: failure for key in keys})
    if isinstance(error, ResponseTooLarge):  # one key alone: no smaller request to try
        failure = Failure(CLIENT_RESPONSE_TOO_LARGE, f"{error}, for this key alone: raise max_response_bytes")
        return Outcome(failed={key: failure for key in keys})
    if isinstance(error, (BrokerDisconnected, RequestTimeout, ConnectionError, OSError)):
        # A dropped or silent broker: its keys go back to lookup, as in the Java client.
        return Outcome(unmapped=set(keys), reasons={key: str(error) for key in keys})
    if isinstance(error, asyncio.CancelledError):
        raise error
    failure = Failure(CLIENT_DISCONNECTED if isinstance(error, KafkaGroupsError) else CLIENT_UNSUPPORTED,
                      f"{type(error).__name__}: {error}")
    return Outcome(failed={key: failure for key in keys})


class Driver(Generic[K, V]):
    """Runs one handler over many keys until each key has a value or a failure."""

    def __init__(self, call: Call, handler: "Handler[K, V]") -> None:
        self.call = call
        self.handler = handler
        self.api = handler.api
        self.values: dict[K, V] = {}
        self.failures: dict[K, Failure] = {}
        self._notes: dict[K, Any] = {}  # what the handler remembers of each key during this run
        self._waiting_lookup: set[K] = set()
        self._mapped: dict[int, set[K]] = {}
        self._attempts: dict[K, int] = {}
        self._delayed: list[tuple[float, int, str, int, frozenset]] = []  # (ready, seq, stage, node, keys)
        self._seq = itertools.count()
        self._last_error: dict[K, str] = {}

    async def run(self, keys: Iterable[K]) -> KeyedResults[K, V]:
        self.call.expect(self.handler.request_class)
        for key in dict.fromkeys(keys):
            node = self.handler.lookup.cached(key)
            if node is None:
                self._waiting_lookup.add(key)
            else:
                self._mapped.setdefault(node, set()).add(key)
        tasks: dict[asyncio.Task, tuple[str, int, tuple]] = {}
        try:
            while True:
                self._release_delayed()
                if self._waiting_lookup:
                    batch = tuple(self._waiting_lookup)
                    self._waiting_lookup.clear()
                    tasks[asyncio.ensure_future(self.handler.lookup.lookup(list(batch), self.call))] = ("lookup", -1, batch)
                for node, node_keys in list(self._mapped.items()):
                    if node_keys:
                        batch = tuple(node_keys)
                        self._mapped[node] = set()
                        tasks[asyncio.ensure_future(self._fulfil(node, list(batch)))] = ("fulfil", node, batch)
                if not tasks and not self._delayed:
                    break
                wait_for = self.call.time_left
                if self._delayed:
                    wait_for = min(wait_for, self._delayed[0][0] - time.monotonic())
                if self.call.time_left <= 0:
                    self._expire(tasks)
                    break
                if not tasks:
                    await asyncio.sleep(max(0.0, wait_for))
                    continue
                done, _ = await asyncio.wait(tasks, timeout=max(0.0, wait_for), return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    stage, node, batch = tasks.pop(task)
                    self._absorb(stage, node, batch, task)
        finally:
            for task in tasks:
                task.cancel()
        return KeyedResults(values=self.values, failures=self.failures)

    # -- one broker's share ------------------------------------------------------------------

    async def _fulfil(self, node: int, keys: list[K]) -> Outcome[K, V]:
        """Send every request for ``keys`` to ``node`` at once (pipelined) and merge the outcomes."""
        conn = await self.call.connection(node)
        version = conn.version_for(self.handler.request_class)
        if version is None:
            return self.handler.unsupported(keys, node)
        outcome: Outcome[K, V] = Outcome(failed=self.handler.refuse(keys, version, node))  # not sent
        keys = [key for key in keys if key not in outcome.failed]
        notes = self._notes
        plans = self.handler.build(keys, version, notes) if keys else []
        answered = await send_splitting(self.call, conn, plans, lambda ks: self.handler.build(ks, version, notes),
                                        self._response_lost)
        for plan, response in answered:
            if isinstance(response, BaseException):
                if response_lost(response):
                    self._response_lost(plan.keys)
                outcome.merge(self._transport_failure(plan.keys, response))
            else:
                outcome.merge(self.handler.parse(plan, response, notes))
        return outcome

    def _response_lost(self, keys: tuple[K, ...]) -> None:
        self._notes.update(self.handler.response_lost(keys))

    def _transport_failure(self, keys: Iterable[K], error: BaseException) -> Outcome[K, V]:
        return transport_failure(keys, error)

    # -- bookkeeping -------------------------------------------------------------------------

    def _absorb(self, stage: str, node: int, batch: tuple, task: asyncio.Task) -> None:
        error = task.exception()
        if error is not None:
            outcome = self._transport_failure(batch, error)
            if stage == "lookup":  # no broker answered the lookup: try the lookup again later
                outcome = Outcome(retry=outcome.unmapped, failed=outcome.failed, reasons=outcome.reasons)
        else:
            outcome = task.result()
        self.values.update(outcome.completed if stage == "fulfil" else {})
        self.failures.update(outcome.failed)
        self._last_error.update(outcome.reasons)
        self._notes.update(outcome.notes)
        if stage == "lookup":
            for key, mapped_node in outcome.completed.items():
                self._mapped.setdefault(mapped_node, set()).add(key)
            self._delay("lookup", -1, outcome.retry | outcome.unmapped)
            return
        if outcome.unmapped:
            self.handler.lookup.forget(outcome.unmapped)
            self._delay("lookup", -1, outcome.unmapped)
        self._delay("fulfil", node, outcome.retry)

    def _delay(self, stage: str, node: int, keys: set[K]) -> None:
        if not keys:
            return
        attempt = max(self._attempts.get(k, 0) for k in keys) + 1
        for key in keys:
            self._attempts[key] = attempt
        ready = time.monotonic() + self.call.backoff(attempt)
        heapq.heappush(self._delayed, (ready, next(self._seq), stage, node, frozenset(keys)))
        log.debug("%s: %d key(s) back to %s in %.0f ms (attempt %d)", self.api, len(keys), stage,
                  (ready - time.monotonic()) * 1000, attempt)

    def _release_delayed(self) -> None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            _, _, stage, node, keys = heapq.heappop(self._delayed)
            if stage == "lookup":
                self._waiting_lookup |= keys
            else:
                self._mapped.setdefault(node, set()).update(keys)

    def _expire(self, tasks: dict) -> None:
        unfinished: set = set(self._waiting_lookup)
        for keys in self._mapped.values():
            unfinished |= keys
        for _, _, _, _, keys in self._delayed:
            unfinished |= keys
        for _, _, batch in tasks.values():
            unfinished |= set(batch)
        for key in unfinished - self.values.keys() - self.failures.keys():
            detail = self._last_error.get(key)
            self.failures[key] = Failure(CLIENT_TIMEOUT, f"{self.call.limit or 'deadline'} passed before a result"
                                         + (f"; last error: {detail}" if detail else ""))
