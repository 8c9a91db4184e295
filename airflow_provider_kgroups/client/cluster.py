"""What the client knows about the cluster: brokers, their addresses and partition leaders.

:class:`ClusterMetadata` is the one owner of broker addresses (node id -> host and port): the
bootstrap servers (negative node ids, -1, -2, ..., as the Java client's bootstrap ``Node``s),
the brokers each Metadata response lists, and a coordinator a FindCoordinator response names
before any Metadata did. The connection pool reads them from here
(:class:`~.transport.pool.AddressBook`); nothing else writes them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Iterable, Mapping, Sequence, TypeVar

from .config import BrokerAddress
from .driver import Call
from .errors import ErrorCode, NoBrokerAvailable, ProtocolError, TransportError, error_name
from .protocol import MetadataRequest
from .results import TopicDescription

log = logging.getLogger(__name__)

T = TypeVar("T")


class ClusterMetadata:
    """Brokers and topics as last seen; refreshed on demand (a leader moved, a topic is new)."""

    def __init__(self, bootstrap_servers: Sequence[BrokerAddress] = ()) -> None:
        #: every address ever learnt, by node id (a broker Metadata stops listing keeps its address)
        self._addresses: dict[int, BrokerAddress] = {-(i + 1): a for i, a in enumerate(bootstrap_servers)}
        #: the brokers the last Metadata response listed
        self.brokers: dict[int, BrokerAddress] = {}
        self.topics: dict[str, TopicDescription] = {}
        self.topic_errors: dict[str, int] = {}
        self._stale_topics: set[str] = set()
        self.bootstrapped = False
        self._bootstrapping: asyncio.Future[None] | None = None

    # -- addresses (read by the connection pool) ---------------------------------------------

    def address_of(self, node_id: int) -> BrokerAddress | None:
        return self._addresses.get(node_id)

    @property
    def known_nodes(self) -> list[int]:
        """Real brokers (node id >= 0) with a known address, by id."""
        return sorted(n for n in self._addresses if n >= 0)

    @property
    def bootstrap_nodes(self) -> list[int]:
        return [n for n in self._addresses if n < 0]

    def learn_brokers(self, brokers: Mapping[int, BrokerAddress]) -> None:
        """Addresses named by a response (Metadata's broker list, a FindCoordinator answer);
        a broker at a new address is reached there from now on."""
        self._addresses.update(brokers)

    # -- partitions --------------------------------------------------------------------------

    def leader_of(self, topic: str, partition: int) -> int | None:
        if topic in self._stale_topics:
            return None
        description = self.topics.get(topic)
        if description is None:
            return None
        leader = description.partitions.get(partition, -1)
        return leader if leader >= 0 else None

    def mark_stale(self, topics: Iterable[str]) -> None:
        self._stale_topics.update(topics)

    async def bootstrap(self, call: Call) -> None:
        """The first Metadata (brokers), once: calls starting side by side share it."""
        if self.bootstrapped:
            return
        if self._bootstrapping is not None:
            await asyncio.shield(self._bootstrapping)
            return
        self._bootstrapping = future = asyncio.get_running_loop().create_future()
        try:
            await self.refresh(call)
            future.set_result(None)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: nobody else may be waiting
            raise
        finally:
            self._bootstrapping = None

    async def beside_bootstrap(self, call: Call, work: Awaitable[T]) -> T:
        """``work`` (a call's requests), sent beside the first Metadata rather than after it.

        Nothing a call sends first needs the broker list: a FindCoordinator answer names its
        coordinator's address, a leader lookup asks Metadata itself. So on a cold client both go
        out at once, pipelined on the first connection: one round trip less on the critical
        path. A call still raises :class:`NoBrokerAvailable` when no broker answers Metadata,
        as before, and ``work`` is then cancelled."""
        if self.bootstrapped:
            return await work
        tasks = bootstrap, done = (asyncio.ensure_future(self.bootstrap(call)), asyncio.ensure_future(work))
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            await bootstrap  # its failure is the call's, whatever ``work`` did
            return await done
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def refresh(self, call: Call, topics: Iterable[str] | None = ()) -> dict[str, int]:
        """Ask any broker for brokers plus ``topics`` (``None`` = every topic, ``()`` = none).
        Returns the error code of each topic as the response named it (topics it left out are
        absent from the mapping).

        A broker that goes silent, drops the connection or answers an error for the whole
        request is not the end of it: the next least-loaded broker is asked, within the same
        deadline, as the Java client's MetadataUpdater moves on to another node
        (NetworkClient.DefaultMetadataUpdater.maybeUpdate / leastLoadedNode). Every broker
        failing raises :class:`NoBrokerAvailable` naming why each one did.
        """
        failed: dict[int, str] = {}
        call.expect(MetadataRequest, next_up=True)
        while True:
            try:
                conn = await call.any_connection(exclude=failed)
            except NoBrokerAvailable as exc:
                if not failed:
                    raise
                tried = "; ".join(f"broker {n}: {why}" for n, why in failed.items())
                raise NoBrokerAvailable(f"no broker answered Metadata ({tried}; {exc})") from None
            try:
                response = await self._ask(call, conn, topics)
            except (TransportError, ProtocolError, OSError) as exc:
                failed[conn.node_id] = str(exc)
                log.info("metadata from broker %s failed (%s): asking another broker", conn.address, exc)
                call.check_time_left()
                continue
            return self._absorb(call, topics, response)

    async def _ask(self, call: Call, conn, topics: Iterable[str] | None):
        version = conn.version_for(MetadataRequest)
        names = None if topics is None else sorted(set(topics))
        if names is None and version == 0:
            names = []  # v0 has no "all topics" null; an empty list means all there
        request = MetadataRequest(
            topics=None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names],
            allow_auto_topic_creation=False,
        )
        response = await conn.send(request, version, call.request_timeout(), deadline=call.deadline)
        top_error = getattr(response, "error_code", 0) or 0
        if top_error:
            raise ProtocolError(f"broker {conn.address} answered Metadata with {error_name(top_error)}")
        return response

    def _absorb(self, call: Call, topics: Iterable[str] | None, response) -> dict[str, int]:
        names = None if topics is None else sorted(set(topics))
        self.brokers = {b.node_id: BrokerAddress(b.host, b.port) for b in response.brokers}
        self.learn_brokers(self.brokers)
        self.bootstrapped = True
        answered: dict[str, int] = {}
        for topic in response.topics:
            answered[topic.name] = topic.error_code
            self._stale_topics.discard(topic.name)
            if topic.error_code and topic.error_code != ErrorCode.LEADER_NOT_AVAILABLE:
                self.topics.pop(topic.name, None)
                self.topic_errors[topic.name] = topic.error_code
                continue
            self.topic_errors.pop(topic.name, None)
            if topic.error_code == ErrorCode.LEADER_NOT_AVAILABLE:  # being created or electing: ask again
                self.topic_errors[topic.name] = topic.error_code
            self.topics[topic.name] = TopicDescription(
                name=topic.name,
                partitions={p.partition_index: (p.leader_id if not p.error_code or p.leader_id >= 0 else -1)
                            for p in topic.partitions},
                is_internal=bool(topic.is_internal),
            )
        if names:
            for missing in set(names) - {t.name for t in response.topics}:
                self.topics.pop(missing, None)
                self.topic_errors[missing] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        log.debug("metadata: %d brokers, %d topics (%s)", len(self.brokers), len(response.topics),
                  ", ".join(f"{t}: {error_name(c)}" for t, c in self.topic_errors.items()) or "no topic errors")
        return answered
