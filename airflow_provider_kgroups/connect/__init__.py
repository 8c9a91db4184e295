"""Kafka Connect's REST API as evidence for the dead-group cleanup. No Airflow import.

``fetch_connect_evidence(clusters, timeout_s)`` reads every configured Connect cluster and
returns a :class:`ConnectEvidence`; ``evidence.for_group(group_id, protocol_type=None)``
says whether a consumer group belongs to a sink connector (ACTIVE / KEEP), whose connector
is gone (CONNECTOR_GONE), or cannot be told (UNAVAILABLE), or ``None`` when Connect has
nothing to say about it.

The names below are loaded on first use (PEP 562): the CLI splits ``connect.*`` properties
off on every call (``config``), but only ``delete --connect-url`` needs the REST client and
requests/urllib3, whose imports a call without it should not pay.
"""

from typing import TYPE_CHECKING

from ..client.lazy import lazy_names

#: public name -> the submodule that defines it
_HOMES = {
    **dict.fromkeys(
        (
            "ConnectClusterConfig",
            "connect_configs_from_connection",
            "connect_configs_from_properties",
            "split_connect_properties",
        ),
        "config",
    ),
    **dict.fromkeys(
        (
            "ClusterReadFailure",
            "ConnectEvidence",
            "ConnectStatus",
            "ConnectVerdict",
            "fetch_connect_evidence",
        ),
        "evidence",
    ),
    **dict.fromkeys(("ConnectorRecord", "ConnectReadError", "TaskState", "read_connectors"), "rest"),
}

__all__ = [
    "ClusterReadFailure",
    "ConnectClusterConfig",
    "ConnectEvidence",
    "ConnectReadError",
    "ConnectStatus",
    "ConnectVerdict",
    "ConnectorRecord",
    "TaskState",
    "connect_configs_from_connection",
    "connect_configs_from_properties",
    "fetch_connect_evidence",
    "read_connectors",
    "split_connect_properties",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)


if TYPE_CHECKING:  # static analysis sees the eager imports
    from .config import (
        ConnectClusterConfig,
        connect_configs_from_connection,
        connect_configs_from_properties,
        split_connect_properties,
    )
    from .evidence import (
        ClusterReadFailure,
        ConnectEvidence,
        ConnectStatus,
        ConnectVerdict,
        fetch_connect_evidence,
    )
    from .rest import ConnectorRecord, ConnectReadError, TaskState, read_connectors
