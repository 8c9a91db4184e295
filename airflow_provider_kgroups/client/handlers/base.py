"""The handler contract: what the driver asks of every API (after the Java admin client's
``AdminApiHandler``, clients/src/main/java/org/apache/kafka/clients/admin/internals/AdminApiHandler.java).

A handler names its request class and lookup, and implements two functions: ``build`` the
requests for the keys mapped to one broker, ``parse`` a response into an :class:`Outcome`.
Everything else has a default here, so the driver calls it on every handler alike:

- ``needs``: the versions the API must reach, declared (:class:`VersionNeed`), never raised
  inside ``build``. :meth:`Handler.refuse` applies them to the version a broker offers; the keys
  it refuses fail with :data:`CLIENT_UNSUPPORTED` and are not sent.
- :meth:`Handler.unsupported`: the keys of a broker that lacks the API (Java's
  ``handleUnsupportedVersionException``: every key fails, by default).
- :meth:`Handler.response_lost`: a request was sent but its response never came (the broker
  may have acted on it); what to remember about its keys for the rest of the run.

Handlers are stateless: what one run learns about a key (a grown byte budget, a lost
response) is a *note* the handler returns in ``Outcome.notes`` (or from ``response_lost``);
the driver keeps the notes for that run and hands them back to ``build`` and ``parse``. A
handler instance can therefore serve any number of runs, and all it found is in the results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from ..contract import Lookup, Outcome, RequestPlan
from ..errors import CLIENT_UNSUPPORTED, Failure
from ..protocol import ApiMessage, KafkaApi

K = TypeVar("K")
V = TypeVar("V")

#: what the driver remembers of each key for the rest of a run, on the handler's word
Notes = Mapping[Any, Any]


@dataclass(frozen=True, slots=True)
class VersionNeed:
    """``what`` needs version ``version`` or later of the handler's API: every key, or only the
    keys ``applies(handler, key)`` picks (ListOffsets' max_timestamp partitions, say)."""

    version: int
    what: str
    applies: Callable[[Any, Any], bool] | None = None


class Handler(Generic[K, V]):
    """One Kafka API: build requests for a broker's keys, read responses into outcomes."""

    #: the API it speaks (request and response classes, the highest version this client implements)
    kafka_api: ClassVar[KafkaApi]
    request_class: ClassVar[type[ApiMessage]]  # kafka_api.request, set from it
    needs: ClassVar[tuple[VersionNeed, ...]] = ()
    lookup: Lookup[K]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kafka_api" in vars(cls):
            cls.request_class = cls.kafka_api.request

    @property
    def api(self) -> str:
        return self.request_class.__name__.removesuffix("Request")

    def build(self, keys: list[K], version: int, notes: Notes) -> list[RequestPlan[K]]:
        """The requests for ``keys`` (all mapped to one broker) at ``version``."""
        raise NotImplementedError

    def parse(self, plan: RequestPlan[K], response: Any, notes: Notes) -> Outcome[K, V]:
        """What ``response`` (to ``plan``) says of each of the plan's keys."""
        raise NotImplementedError

    def unsupported(self, keys: list[K], node: int) -> Outcome[K, V]:
        """Broker ``node`` lacks the API (or shares no version with this client)."""
        failure = Failure(CLIENT_UNSUPPORTED, f"broker {node} does not support {self.api}")
        return Outcome(failed={key: failure for key in keys})

    def refuse(self, keys: Iterable[K], version: int, node: int) -> dict[K, Failure]:
        """The keys that ``version`` (the highest broker ``node`` and this client share) cannot
        carry, by the declared :attr:`needs`: each fails, and is not sent."""
        refused: dict[K, Failure] = {}
        for need in self.needs:
            if version >= need.version:
                continue
            failure = Failure(
                CLIENT_UNSUPPORTED,
                f"broker {node} has {self.api} up to v{version}; {need.what} needs v{need.version}",
            )
            for key in keys:
                if key not in refused and (need.applies is None or need.applies(self, key)):
                    refused[key] = failure
        return refused

    def response_lost(self, keys: Iterable[K]) -> dict[K, Any]:
        """A request for ``keys`` was sent and its response never came: notes to keep about them
        for the rest of the run. By default nothing: most retries do not depend on it."""
        return {}
