"""The contract between the client's engine and what it runs: the types a handler and a lookup
speak, apart from the driver that runs them.

After the Java admin client, which nests these in ``AdminApiHandler`` and
``AdminApiLookupStrategy`` and lets each lookup declare where its requests go
(``ApiRequestScope.destinationBrokerId``; clients/.../admin/internals/). The driver
(:mod:`.driver`), the sender (:mod:`.runner`), the handlers (:mod:`.handlers`) and the lookups
(:mod:`.lookup`) import this module; it imports none of them.

* :class:`RequestPlan` - one request to send and the keys whose fate its response decides.
* :class:`Outcome` - how one response (or one lookup) left its keys: completed, failed,
  unmapped (look the broker up again), retry (same broker, after a backoff).
* :class:`Lookup` - which broker serves a key, and :class:`Routing`, where its own requests go.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

from .errors import Failure
from .protocol import ApiMessage

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

ANY_BROKER = -1  # a lookup's destination: whichever broker its routing picks (leastLoadedNode)


@dataclass(frozen=True, slots=True)
class RequestPlan(Generic[K]):
    """One request to send and the keys whose fate its response decides."""

    request: ApiMessage
    version: int
    keys: tuple[K, ...]
    node: int = (
        ANY_BROKER  # the broker it goes to: set by the driver (AdminApiHandler.handleResponse's broker)
    )
    key_set: frozenset[K] = field(init=False, repr=False, compare=False)

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

    def merge(self, other: Outcome[K, V]) -> None:
        self.completed.update(other.completed)
        self.failed.update(other.failed)
        self.unmapped |= other.unmapped
        self.retry |= other.retry
        self.reasons.update(other.reasons)
        self.notes.update(other.notes)

    def requeue(self, key: K, failure: Failure, *, relookup: bool) -> None:
        (self.unmapped if relookup else self.retry).add(key)
        self.reasons[key] = str(failure)

    def only(self, keys: Iterable[K]) -> Outcome[K, V]:
        """A copy that says only what it says of ``keys``."""
        keep = set(keys)
        return Outcome(
            {k: v for k, v in self.completed.items() if k in keep},
            {k: v for k, v in self.failed.items() if k in keep},
            self.unmapped & keep,
            self.retry & keep,
            {k: v for k, v in self.reasons.items() if k in keep},
            {k: v for k, v in self.notes.items() if k in keep},
        )


class Routing(Enum):
    """Where a lookup's own requests go (Java: ``ApiRequestScope.destinationBrokerId`` empty or
    set, and ``NetworkClient.leastLoadedNode``). The sender reads it; it never looks at a
    lookup's request class."""

    #: the key names its broker (``StaticBrokerStrategy``): no request, :meth:`Lookup.resolve` answers
    FIXED = "fixed"
    #: the least-loaded broker, the next one at once when it fails or answers an error for the
    #: whole request (``NetworkClient.DefaultMetadataUpdater``): Metadata
    LEAST_LOADED = "least-loaded"
    #: a live broker whose version takes many keys in one request (:meth:`Lookup.batches`); without
    #: one, every known broker is connected and, if none batches, one request per key is spread
    #: over them (``CoordinatorStrategy``'s fallback): FindCoordinator
    BATCHING = "batching"
    #: any broker can answer for the keys: no request, the sender maps them all to the
    #: least-loaded broker (one that just failed comes last), as a Java ``Call`` with a
    #: ``LeastLoadedNodeProvider`` (``LeastLoadedBrokerOrActiveKController``) is sent:
    #: DescribeConfigs of topics
    ANY = "any"


class Lookup(Protocol[K]):
    """Which broker serves a key (``AdminApiLookupStrategy``): ``parse`` puts key -> node id in
    ``completed``. ``routing`` says where its requests go; with :attr:`Routing.FIXED` no request
    is sent (``request_class`` is None) and :meth:`resolve` answers at once; with
    :attr:`Routing.ANY` no request is sent either and the sender picks the broker. A lookup subclasses
    this protocol to inherit the defaults of what its routing does not use."""

    request_class: type[ApiMessage] | None
    routing: Routing

    def cached(self, key: K) -> int | None:
        """The broker known to serve ``key``, if any (no request)."""
        raise NotImplementedError

    def forget(self, keys: Iterable[K]) -> None:
        """``keys``' brokers turned out wrong: look them up again next time."""
        raise NotImplementedError

    def resolve(self, keys: list[K]) -> Outcome[K, int]:
        """:attr:`Routing.FIXED`: the brokers of ``keys``, with no request."""
        # A default the request-sending lookups inherit, not an abstract member: a body of more than
        # one `raise NotImplementedError` keeps mypy from taking it for one.
        message = f"{type(self).__name__} looks its keys up with requests ({self.routing})"
        raise NotImplementedError(message)

    def batches(self, version: int | None) -> bool:
        """:attr:`Routing.BATCHING`: whether a broker up to ``version`` takes many keys in one request."""
        return False

    def build(self, keys: list[K], version: int) -> list[RequestPlan[K]]:
        """The requests that look ``keys`` up from a broker up to ``version``."""
        raise NotImplementedError

    def parse(self, plan: RequestPlan[K], response: Any) -> Outcome[K, int]:
        """What ``response`` (to ``plan``) says of each of its keys' brokers."""
        raise NotImplementedError
