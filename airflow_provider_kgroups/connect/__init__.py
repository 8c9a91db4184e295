"""Kafka Connect's REST API as evidence for the dead-group cleanup. No Airflow import.

``fetch_connect_evidence(clusters, timeout_s)`` reads every configured Connect cluster and
returns a :class:`ConnectEvidence`; ``evidence.for_group(group_id, protocol_type=None)``
says whether a consumer group belongs to a sink connector (ACTIVE / KEEP), whose connector
is gone (CONNECTOR_GONE), or cannot be told (UNAVAILABLE), or ``None`` when Connect has
nothing to say about it.
"""

from .config import (
    ConnectClusterConfig,
    connect_configs_from_connection,
    connect_configs_from_properties,
    split_connect_properties,
)
from .evidence import ClusterReadFailure, ConnectEvidence, ConnectStatus, ConnectVerdict, fetch_connect_evidence
from .rest import ConnectorRecord, ConnectReadError, TaskState, read_connectors

__all__ = [
    "ClusterReadFailure", "ConnectClusterConfig", "ConnectEvidence", "ConnectReadError", "ConnectStatus",
    "ConnectVerdict", "ConnectorRecord", "TaskState", "connect_configs_from_connection",
    "connect_configs_from_properties", "fetch_connect_evidence", "read_connectors", "split_connect_properties",
]
