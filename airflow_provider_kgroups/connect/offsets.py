"""A sink connector's offsets through Kafka Connect's REST API (KIP-875, Kafka 3.6+), the only
sanctioned way to move them: the worker owns the group, so a commit into it from outside races
the connector's tasks and is overwritten (or worse, half applied) when they start again.

``PATCH /connectors/{name}/offsets`` (``ConnectorsResource.alterConnectorOffsets``) with a
sink connector's partitions and offsets in ``SinkUtils``' shape::

    {"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0},
                  "offset": {"kafka_offset": 42}}]}

Connect accepts it only while the connector is STOPPED (``PUT /connectors/{name}/stop``;
``AbstractHerder`` answers 400 "Connectors must be in the STOPPED state before their offsets
can be modified" otherwise) and then alters the connector's consumer group offsets itself.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from urllib.parse import quote

import requests

from ..client.results import TopicPartition
from .config import ConnectClusterConfig
from .http import open_session, request_timeout
from .rest import _error_message, _short

__all__ = ["ConnectWriteError", "alter_sink_offsets", "sink_offsets_body"]


class ConnectWriteError(Exception):
    """Kafka Connect did not alter the offsets; the message says why (never a credential)."""


def sink_offsets_body(offsets: Mapping[TopicPartition, int]) -> dict:
    """The KIP-875 request body for a sink connector."""
    return {
        "offsets": [
            {
                "partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition},
                "offset": {"kafka_offset": offset},
            }
            for tp, offset in sorted(offsets.items())
        ]
    }


def alter_sink_offsets(
    config: ConnectClusterConfig, connector: str, offsets: Mapping[TopicPartition, int], timeout_s: float
) -> str:
    """PATCH the connector's offsets; returns Connect's message. Raises :class:`ConnectWriteError`."""
    deadline = time.monotonic() + timeout_s
    url = f"{config.url}/connectors/{quote(connector, safe='')}/offsets"
    session = open_session(config, deadline)
    try:
        response = session.patch(
            url,
            json=sink_offsets_body(offsets),
            timeout=request_timeout(config, deadline),
            verify=config.verify,
        )
    except (requests.RequestException, TimeoutError) as exc:
        raise ConnectWriteError(f"PATCH {url}: {_short(exc)}") from None
    finally:
        session.close()
    if not 200 <= response.status_code < 300:
        raise ConnectWriteError(f"PATCH {url}: HTTP {response.status_code}{_error_message(response)}")
    try:
        return str(response.json().get("message", ""))
    except (ValueError, AttributeError):
        return ""
