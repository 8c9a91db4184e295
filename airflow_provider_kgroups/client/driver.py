"""The one batching mechanism every operation runs on: a state machine with no I/O.

After the Java admin client's ``AdminApiDriver`` (clients/.../admin/internals/AdminApiDriver.java):
each key (a group, a partition, a broker) is in one of three stages: waiting for a lookup
(which broker serves it?), mapped to a broker, or finished with a value or a
:class:`Failure`. A :class:`~.contract.Lookup` maps keys to brokers (``AdminApiLookupStrategy``); a
handler (:class:`~.handlers.base.Handler`, ``AdminApiHandler``) builds the requests for the
keys mapped to one broker and reads each response into an :class:`~.contract.Outcome`. Both have the
same two functions, ``build`` and ``parse``.

The driver never sends anything, never waits, never reads a clock: as ``AdminApiDriver.poll``
/ ``onResponse`` / ``onFailure``, :meth:`Driver.poll` says which dispatches (:class:`Dispatch`) to send
now, :meth:`Driver.build` turns one into requests once the broker's API version is known,
:meth:`Driver.on_response` / :meth:`Driver.on_failure` read what came back (a response over
``max_response_bytes`` for several keys comes back as two smaller requests to send at once),
and :meth:`Driver.complete` / :meth:`Driver.fail` settle the dispatch: values, failures,
per-key retries after a backoff, re-lookups when a broker turned out to be wrong. The sending
(connections, pipelining, deadline) is :mod:`.runner`'s alone (``KafkaAdminClient.invokeDriver``),
so every retry rule here can be tested by feeding responses, with no socket.

The types it shares with handlers and lookups (:class:`~.contract.RequestPlan`,
:class:`~.contract.Outcome`, :class:`~.contract.Lookup`) are the contract's (:mod:`.contract`):
nothing the driver runs imports the driver.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .contract import ANY_BROKER, Lookup, Outcome, RequestPlan, Routing
from .errors import (
    CLIENT_DISCONNECTED,
    CLIENT_PROTOCOL_ERROR,
    CLIENT_RESPONSE_TOO_LARGE,
    CLIENT_TIMEOUT,
    CLIENT_UNSUPPORTED,
    AuthenticationError,
    BrokerDisconnected,
    BrokerThrottled,
    ConfigurationError,
    Failure,
    KafkaGroupsError,
    ProtocolError,
    RequestTimeout,
    ResponseTooLarge,
    UnsupportedVersion,
    response_lost,
)
from .results import KeyedResults

if TYPE_CHECKING:
    from .handlers.base import Handler

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

LOOKUP, FULFIL = "lookup", "fulfil"


@dataclass(eq=False)
class Dispatch(Generic[K]):
    """Keys to send now: to their lookup (``node`` is :data:`ANY_BROKER`) or to ``node``. What
    its responses said so far collects in ``outcome`` until :meth:`Driver.complete`."""

    stage: str
    node: int
    keys: tuple[K, ...]
    outcome: Outcome[K, Any] = field(default_factory=Outcome)  # values: node ids (lookup) or the API's


def transport_failure(keys: Iterable[K], error: BaseException) -> Outcome[K, Any]:
    """Where a request's keys go when it got no usable response: only what the transport or the
    protocol failed at becomes an outcome per key, each with a code of its own. Anything else (a
    bug in a handler's ``build`` or ``parse``, a failed login, bad input) is raised: it is no
    answer of the broker's, and asking again would run into it again."""
    if isinstance(error, (AuthenticationError, ConfigurationError)) or not isinstance(
        error, (KafkaGroupsError, OSError)
    ):
        raise error
    if isinstance(error, BrokerThrottled):  # no answer can come before the deadline: say why now
        failure = Failure(CLIENT_TIMEOUT, str(error))
        return Outcome(failed={key: failure for key in keys})
    if isinstance(error, ResponseTooLarge):  # one key alone: no smaller request to try
        failure = Failure(CLIENT_RESPONSE_TOO_LARGE, f"{error}, for this key alone: raise max_response_bytes")
        return Outcome(failed={key: failure for key in keys})
    if isinstance(error, (BrokerDisconnected, RequestTimeout, ConnectionError, OSError)):
        # A dropped or silent broker: its keys go back to lookup, as in the Java client.
        return Outcome(unmapped=set(keys), reasons={key: str(error) for key in keys})
    if isinstance(error, UnsupportedVersion):
        code = CLIENT_UNSUPPORTED
    else:
        code = CLIENT_PROTOCOL_ERROR if isinstance(error, ProtocolError) else CLIENT_DISCONNECTED
    failure = Failure(code, f"{type(error).__name__}: {error}")
    return Outcome(failed={key: failure for key in keys})


class Driver(Generic[K, V]):
    """One handler over many keys, until each key has a value or a failure.

    ``backoff(attempt)`` is how long a key waits before its ``attempt``-th retry; times
    (``now``) are the caller's monotonic clock. The handler's notes on a key (a lost
    response, a grown byte budget) are kept for this run and handed back to it.
    """

    def __init__(
        self,
        handler: Handler[K, V] | None,
        keys: Iterable[K],
        *,
        backoff: Callable[[int], float],
        lookup: Lookup[K] | None = None,
    ) -> None:
        if lookup is None:
            if handler is None:
                raise ValueError("a Driver needs a handler, a lookup or both")
            lookup = handler.lookup
        self.handler = handler
        self.lookup: Lookup[K] = lookup
        self.api = handler.api if handler is not None else f"{type(self.lookup).__name__} only"
        self.values: dict[K, V] = {}
        self.failures: dict[K, Failure] = {}
        self._notes: dict[K, Any] = {}  # what the handler remembers of each key during this run
        self._backoff = backoff
        self._waiting_lookup: set[K] = set()
        self._mapped: dict[int, set[K]] = {}
        self._in_flight: list[Dispatch[K]] = []
        self._attempts: dict[K, int] = {}
        self._delayed: list[tuple[float, int, str, int, frozenset[K]]] = []  # (ready, seq, stage, node, keys)
        self._seq = itertools.count()
        self._last_error: dict[K, str] = {}
        for key in dict.fromkeys(keys):
            node = self.lookup.cached(key)
            if node is None:
                self._waiting_lookup.add(key)
            else:
                self._mapped.setdefault(node, set()).add(key)

    @classmethod
    def lookup_only(
        cls, lookup: Lookup[K], keys: Iterable[K], *, backoff: Callable[[int], float]
    ) -> Driver[K, int]:
        """A driver that only looks ``keys`` up (filling ``lookup``'s cache): its lookup
        dispatches are the ones to send; it has no API to fulfil."""
        return Driver[K, int](None, keys, backoff=backoff, lookup=lookup)

    # -- what to send ------------------------------------------------------------------------

    def poll(self, now: float) -> list[Dispatch[K]]:
        """The dispatches to send now: one lookup for every key waiting for one, one dispatch
        per broker for the keys mapped to it (sent beside any still in flight there)."""
        self._release_delayed(now)
        out: list[Dispatch[K]] = []
        if self._waiting_lookup:
            batch = tuple(self._waiting_lookup)
            self._waiting_lookup.clear()
            if self.lookup.routing is Routing.FIXED:
                self._absorb(LOOKUP, ANY_BROKER, self.lookup.resolve(list(batch)), now)
            else:
                out.append(Dispatch(LOOKUP, ANY_BROKER, batch))
        for node, node_keys in list(self._mapped.items()):
            if node_keys:
                out.append(Dispatch(FULFIL, node, tuple(node_keys)))
                self._mapped[node] = set()
        self._in_flight += out
        return out

    def build(
        self, dispatch: Dispatch[K], version: int | None, keys: Iterable[K] | None = None
    ) -> list[RequestPlan[K]]:
        """The requests for ``dispatch`` (or for its ``keys`` only) to a broker whose newest
        version of the API is ``version`` (None: it lacks the API). Keys its version cannot
        carry are settled here, unsent."""
        keys = list(dispatch.keys if keys is None else keys)
        if dispatch.stage == LOOKUP:
            if version is None:  # every broker has FindCoordinator and Metadata: not met in practice
                sent = self.lookup.request_class
                what = sent.__name__.removesuffix("Request") if sent is not None else "lookup"
                raise UnsupportedVersion(f"a broker shares no {what} version with this client")
            return self.lookup.build(keys, version)
        handler = self.fulfiller()
        if version is None:
            dispatch.outcome.merge(handler.unsupported(keys, dispatch.node))
            return []
        refused = handler.refuse(keys, version, dispatch.node)
        dispatch.outcome.failed.update(refused)
        keys = [key for key in keys if key not in refused]
        if not keys:
            return []
        return [replace(plan, node=dispatch.node) for plan in handler.build(keys, version, self._notes)]

    # -- what came back ----------------------------------------------------------------------

    def on_response(self, dispatch: Dispatch[K], plan: RequestPlan[K], response: Any) -> list[RequestPlan[K]]:
        if dispatch.stage == LOOKUP:
            dispatch.outcome.merge(self.lookup.parse(plan, response))
        else:
            dispatch.outcome.merge(self.fulfiller().parse(plan, response, self._notes))
        return []

    def on_failure(
        self, dispatch: Dispatch[K], plan: RequestPlan[K], error: BaseException
    ) -> list[RequestPlan[K]]:
        """``plan`` got no usable response. Returns the requests to send at once instead: a
        response over ``max_response_bytes`` for several keys is not asked again at that size
        but as two halves (the broker did act on it: ``response_lost`` hears of it). One key
        alone keeps its :class:`ResponseTooLarge`."""
        fulfil = dispatch.stage == FULFIL
        if isinstance(error, ResponseTooLarge) and len(plan.keys) > 1:
            if fulfil:
                self._notes.update(self.fulfiller().response_lost(plan.keys))
            half = len(plan.keys) // 2
            log.info("%s; splitting its %d keys in two", error, len(plan.keys))
            return self.build(dispatch, plan.version, plan.keys[:half]) + self.build(
                dispatch, plan.version, plan.keys[half:]
            )
        if fulfil and response_lost(error):
            self._notes.update(self.fulfiller().response_lost(plan.keys))
        dispatch.outcome.merge(transport_failure(plan.keys, error))
        return []

    def adopt(self, dispatch: Dispatch[K], outcome: Outcome[K, Any]) -> None:
        """An outcome read by someone else for some of ``dispatch``'s keys (a lookup another call
        had in flight for them)."""
        dispatch.outcome.merge(outcome)

    def complete(self, dispatch: Dispatch[K], now: float) -> None:
        """Every request of ``dispatch`` has its answer: settle its keys."""
        self._in_flight.remove(dispatch)
        self._absorb(dispatch.stage, dispatch.node, dispatch.outcome, now)

    def fail(self, dispatch: Dispatch[K], error: BaseException, now: float) -> None:
        """``dispatch`` could not be sent at all (no connection, no broker for its lookup)."""
        self._in_flight.remove(dispatch)
        outcome = transport_failure(dispatch.keys, error)
        if dispatch.stage == LOOKUP:  # no broker answered the lookup: try the lookup again later
            outcome = Outcome(retry=outcome.unmapped, failed=outcome.failed, reasons=outcome.reasons)
        self._absorb(dispatch.stage, dispatch.node, outcome, now)

    # -- where things stand ------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """Nothing in flight, nothing waiting for its backoff (after a :meth:`poll`)."""
        return not self._in_flight and not self._delayed

    def next_wakeup(self) -> float | None:
        """When the earliest key waiting for its backoff may go again."""
        return self._delayed[0][0] if self._delayed else None

    def expire(self, limit: str) -> None:
        """The deadline passed: every key without an answer fails, naming its last error."""
        unfinished: set[K] = set(self._waiting_lookup)
        for keys in self._mapped.values():
            unfinished |= keys
        for _, _, _, _, delayed_keys in self._delayed:
            unfinished |= delayed_keys
        for dispatch in self._in_flight:
            unfinished |= set(dispatch.keys)
        for key in unfinished - self.values.keys() - self.failures.keys():
            detail = self._last_error.get(key)
            self.failures[key] = Failure(
                CLIENT_TIMEOUT,
                f"{limit or 'deadline'} passed before a result"
                + (f"; last error: {detail}" if detail else ""),
            )

    def results(self) -> KeyedResults[K, V]:
        return KeyedResults(values=self.values, failures=self.failures)

    # -- bookkeeping -------------------------------------------------------------------------

    def fulfiller(self) -> Handler[K, V]:
        """The handler that sends the API's own requests (a lookup-only driver has none)."""
        if self.handler is None:  # lookup_only's driver: the caller sends its lookups only
            raise RuntimeError(f"{self.api}: this driver only looks keys up, it has no API to send")
        return self.handler

    def _absorb(self, stage: str, node: int, outcome: Outcome[K, Any], now: float) -> None:
        self.values.update(outcome.completed if stage == FULFIL else {})
        self.failures.update(outcome.failed)
        self._last_error.update(outcome.reasons)
        self._notes.update(outcome.notes)
        if stage == LOOKUP:
            for key, mapped_node in outcome.completed.items():
                self._mapped.setdefault(mapped_node, set()).add(key)
            self._delay(LOOKUP, ANY_BROKER, outcome.retry | outcome.unmapped, now)
            return
        if outcome.unmapped:
            self.lookup.forget(outcome.unmapped)
            self._delay(LOOKUP, ANY_BROKER, outcome.unmapped, now)
        self._delay(FULFIL, node, outcome.retry, now)

    def _delay(self, stage: str, node: int, keys: set[K], now: float) -> None:
        if not keys:
            return
        attempt = max(self._attempts.get(k, 0) for k in keys) + 1
        for key in keys:
            self._attempts[key] = attempt
        wait = self._backoff(attempt)
        heapq.heappush(self._delayed, (now + wait, next(self._seq), stage, node, frozenset(keys)))
        log.debug(
            "%s: %d key(s) back to %s in %.0f ms (attempt %d)",
            self.api,
            len(keys),
            stage,
            wait * 1000,
            attempt,
        )

    def _release_delayed(self, now: float) -> None:
        while self._delayed and self._delayed[0][0] <= now:
            _, _, stage, node, keys = heapq.heappop(self._delayed)
            if stage == LOOKUP:
                self._waiting_lookup |= keys
            else:
                self._mapped.setdefault(node, set()).update(keys)
