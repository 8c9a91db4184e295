"""Quota throttling (KIP-219): how long a response asks the client to stay quiet.

A broker over a quota answers at once with ``throttle_time_ms`` and then mutes the connection
for that long (KafkaApis / RequestHandlerHelper.sendResponseMaybeThrottle,
ClientQuotaManager.throttle): requests written meanwhile sit unread in its socket buffer.
The Java client therefore sends nothing more to that broker until the time elapses
(NetworkClient.maybeThrottle, ClusterConnectionStates.throttle) and does not count the
throttle against the timeout of requests already in flight (InFlightRequests.incrementThrottleTime).
"""

from __future__ import annotations

from typing import Any

#: API key -> first version whose responses the client throttles on (each response class's
#: ``shouldClientThrottle``); older versions come from brokers that delayed the response instead.
CLIENT_THROTTLES_FROM = {
    1: 8,  # Fetch
    2: 3,  # ListOffsets
    3: 6,  # Metadata
    8: 4,  # OffsetCommit
    9: 4,  # OffsetFetch
    10: 2,  # FindCoordinator
    15: 2,  # DescribeGroups
    16: 2,  # ListGroups
    18: 2,  # ApiVersions
    42: 1,  # DeleteGroups
}


def throttle_seconds(api_key: int, version: int, response: Any) -> float:
    """The mute a response announces, in seconds (0 when none). APIs newer than KIP-219 have
    no pre-KIP-219 versions, so any throttle time they carry is honoured."""
    ms = getattr(response, "throttle_time_ms", None) or 0
    if ms <= 0 or version < CLIENT_THROTTLES_FROM.get(api_key, 0):
        return 0.0
    return ms / 1000.0
