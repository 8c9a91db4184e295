"""Batched Kafka consumer-group client (asyncio, no Airflow, no Spark).

Layers, bottom up: ``transport`` (sockets, framing, auth), ``driver`` (the one batching
mechanism), ``lookup`` (which broker serves a key), ``handlers`` (one module per API),
``client`` (the verbs) and ``sync`` (a blocking facade).
"""

from ._codec_import import install as _install_codec_import

_install_codec_import()  # before the first kafka.* import below (see the module for why)

from .client import AsyncGroupsClient  # noqa: E402
from .config import ClientConfig  # noqa: E402
from .errors import (
    AuthenticationError, ConfigurationError, Failure, KafkaGroupsError, NoBrokerAvailable,
)
from .results import (
    CommittedOffset, GroupDeletion, GroupDescription, GroupListing, GroupOffsets, GroupState, KeyedResults, ListedOffset,
    ListGroupsResult, MemberDescription, TopicDescription, TopicExistence, TopicPartition,
)
from .selection import GroupSelector
from .sync import GroupsClient
from .transport import RequestStats

__all__ = [
    "AsyncGroupsClient", "GroupsClient", "ClientConfig", "GroupSelector", "RequestStats",
    "Failure", "KafkaGroupsError", "ConfigurationError", "NoBrokerAvailable", "AuthenticationError",
    "CommittedOffset", "GroupDeletion", "GroupDescription", "GroupListing", "GroupOffsets", "GroupState", "KeyedResults",
    "ListedOffset", "ListGroupsResult", "MemberDescription", "TopicDescription", "TopicExistence",
    "TopicPartition",
]
