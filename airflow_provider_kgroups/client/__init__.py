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

#: The one list of the package's public names: name -> the submodule that defines it. ``__all__``,
#: ``__getattr__`` and ``__dir__`` are derived from it; the imports for type checkers below cannot
#: be (a checker reads them, it does not run code), so tests/client/test_exports.py holds them to it.
_HOMES = {
    "AsyncGroupsClient": "client",
    "GroupsClient": "sync",
    "ClientConfig": "config",
    "GroupSelector": "selection",
    "RequestStats": "transport",
    **dict.fromkeys(
        ("Failure", "KafkaGroupsError", "ConfigurationError", "NoBrokerAvailable", "AuthenticationError"),
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

__all__ = list(_HOMES)

__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)


# Type checkers see eager imports; ``X as X`` exports a name to mypy (``no_implicit_reexport``),
# which cannot read a computed ``__all__``.
if TYPE_CHECKING:
    from .client import AsyncGroupsClient as AsyncGroupsClient
    from .config import ClientConfig as ClientConfig
    from .errors import AuthenticationError as AuthenticationError
    from .errors import ConfigurationError as ConfigurationError
    from .errors import Failure as Failure
    from .errors import KafkaGroupsError as KafkaGroupsError
    from .errors import NoBrokerAvailable as NoBrokerAvailable
    from .results import CommittedOffset as CommittedOffset
    from .results import ConfigSource as ConfigSource
    from .results import GroupDeletion as GroupDeletion
    from .results import GroupDescription as GroupDescription
    from .results import GroupListing as GroupListing
    from .results import GroupOffsets as GroupOffsets
    from .results import GroupState as GroupState
    from .results import KeyedResults as KeyedResults
    from .results import ListedOffset as ListedOffset
    from .results import ListGroupsResult as ListGroupsResult
    from .results import MemberDescription as MemberDescription
    from .results import ShareGroupOffsets as ShareGroupOffsets
    from .results import TopicDescription as TopicDescription
    from .results import TopicExistence as TopicExistence
    from .results import TopicPartition as TopicPartition
    from .results import TopicRetention as TopicRetention
    from .selection import GroupSelector as GroupSelector
    from .sync import GroupsClient as GroupsClient
    from .transport import RequestStats as RequestStats
