"""What the client knows about the cluster: brokers, their addresses and partition leaders.

:class:`ClusterMetadata` is the one owner of broker addresses (node id -> host and port): the
bootstrap servers (negative node ids, -1, -2, ..., as the Java client's bootstrap ``Node``s),
the brokers each Metadata response lists, and a coordinator a FindCoordinator response names
before any Metadata did. The connection pool reads them from here
(:class:`~.transport.pool.AddressBook`); nothing else writes them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .config import BrokerAddress
from .errors import ErrorCode, UnsupportedVersion, error_name
from .protocol import KafkaApi, MetadataRequest, MetadataResponse
from .results import TopicDescription

log = logging.getLogger(__name__)

#: built by :meth:`ClusterMetadata.request`, read by :meth:`ClusterMetadata.absorb`
METADATA = KafkaApi(MetadataRequest, MetadataResponse, max_version=12)
NO_AUTO_CREATE_VERSION = 4  # the first Metadata version that can say AllowAutoTopicCreation=false


class ClusterMetadata:
    """Brokers and topics as last seen; refreshed on demand (a leader moved, a topic is new).
    No I/O here: :func:`.runner.refresh` asks a broker and hands the response to :meth:`absorb`."""

    def __init__(self, bootstrap_servers: Sequence[BrokerAddress] = ()) -> None:
        #: every address ever learnt, by node id (a broker Metadata stops listing keeps its address)
        self._addresses: dict[int, BrokerAddress] = {-(i + 1): a for i, a in enumerate(bootstrap_servers)}
        #: the brokers the last Metadata response listed
        self.brokers: dict[int, BrokerAddress] = {}
        self.topics: dict[str, TopicDescription] = {}
        self.topic_errors: dict[str, int] = {}
        self._stale_topics: set[str] = set()
        self.bootstrapped = False

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

    def request(self, topics: Iterable[str] | None, version: int) -> MetadataRequest:
        """Metadata for brokers plus ``topics`` (``None`` = every topic, ``()`` = none).

        Below v4 a request has no AllowAutoTopicCreation (MetadataRequest.json: "Version 4 adds
        AllowAutoTopicCreation", default true): naming a topic there lets a broker with
        ``auto.create.topics.enable`` create it. So, as the Java client's
        ``MetadataRequest.Builder.build`` refuses such a request, topics are never named below
        v4: :class:`UnsupportedVersion`, nothing sent."""
        names = None if topics is None else sorted(set(topics))
        if names and version < NO_AUTO_CREATE_VERSION:
            raise UnsupportedVersion(
                f"Metadata up to v{version} cannot name topics without letting the broker create them "
                f"(AllowAutoTopicCreation=false needs v{NO_AUTO_CREATE_VERSION}); not sent"
            )
        if names is None and version == 0:
            names = []  # v0 has no "all topics" null; an empty list means all there
        return MetadataRequest(
            topics=None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names],
            allow_auto_topic_creation=False,
        )

    def absorb(self, topics: Iterable[str] | None, response: Any) -> dict[str, int]:
        """Read a Metadata response asked for ``topics``: the brokers and their addresses, the
        topics' partitions and leaders. Returns the error code of each topic as the response
        named it (topics it left out are absent from the mapping)."""
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
                partitions={
                    p.partition_index: (p.leader_id if not p.error_code or p.leader_id >= 0 else -1)
                    for p in topic.partitions
                },
                is_internal=bool(topic.is_internal),
            )
        if names:
            for missing in set(names) - {t.name for t in response.topics}:
                self.topics.pop(missing, None)
                self.topic_errors[missing] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        log.debug(
            "metadata: %d brokers, %d topics (%s)",
            len(self.brokers),
            len(response.topics),
            ", ".join(f"{t}: {error_name(c)}" for t, c in self.topic_errors.items()) or "no topic errors",
        )
        return answered
