"""Batched Kafka consumer-group client (asyncio, no Airflow, no Spark).

Layers, bottom up: ``transport`` (sockets, framing, auth), ``contract`` (what the engine and
what it runs share: request plans, outcomes, the lookup protocol), ``driver`` (the one batching
mechanism) and ``runner`` (the sender), ``lookup`` (which broker serves a key), ``handlers``
(one module per API), ``client`` (the verbs) and ``sync`` (a blocking facade).

The names below are loaded on first use (PEP 562): importing ``client.errors`` or
``client.results`` (what the CLI's argument parsing, the hook and the triggers need at import)
does not load the driver, the handlers and kafka-python's protocol classes (the costly part
of the import, benchmarks/RESULTS-imports.txt).
"""

from typing import TYPE_CHECKING

from ._codec_import import install as _install_codec_import
from .lazy import lazy_names

_install_codec_import()  # before the first kafka.* import anywhere below (see the module for why)

#: public name -> the submodule that defines it
_HOMES = {
    "AsyncGroupsClient": "client",
    "ClientConfig": "config",
    "GroupSelector": "selection",
    "GroupsClient": "sync",
    "RequestStats": "transport",
    **dict.fromkeys(
        ("AuthenticationError", "ConfigurationError", "Failure", "KafkaGroupsError", "NoBrokerAvailable"),
        "errors",
    ),
    **dict.fromkeys(
        (
            "CommittedOffset",
            "ConfigSource",
            "GroupDeletion",
            "GroupDescription",
            "GroupListing",
            "GroupOffsets",
            "GroupState",
            "KeyedResults",
            "ListedOffset",
            "ListGroupsResult",
            "MemberDescription",
            "ShareGroupOffsets",
            "TopicDescription",
            "TopicExistence",
            "TopicPartition",
            "TopicRetention",
        ),
        "results",
    ),
}

__all__ = [
    "AsyncGroupsClient",
    "GroupsClient",
    "ClientConfig",
    "GroupSelector",
    "RequestStats",
    "Failure",
    "KafkaGroupsError",
    "ConfigurationError",
    "NoBrokerAvailable",
    "AuthenticationError",
    "CommittedOffset",
    "ConfigSource",
    "GroupDeletion",
    "GroupDescription",
    "GroupListing",
    "GroupOffsets",
    "GroupState",
    "KeyedResults",
    "ListedOffset",
    "ListGroupsResult",
    "MemberDescription",
    "ShareGroupOffsets",
    "TopicDescription",
    "TopicExistence",
    "TopicPartition",
    "TopicRetention",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)


if TYPE_CHECKING:  # static analysis sees the eager imports
    from .client import AsyncGroupsClient
    from .config import ClientConfig
    from .errors import AuthenticationError, ConfigurationError, Failure, KafkaGroupsError, NoBrokerAvailable
    from .results import (
        CommittedOffset,
        ConfigSource,
        GroupDeletion,
        GroupDescription,
        GroupListing,
        GroupOffsets,
        GroupState,
        KeyedResults,
        ListedOffset,
        ListGroupsResult,
        MemberDescription,
        TopicDescription,
        TopicExistence,
        TopicPartition,
        TopicRetention,
    )
    from .selection import GroupSelector
    from .sync import GroupsClient
    from .transport import RequestStats
