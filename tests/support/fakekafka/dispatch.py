"""From a request frame to a response frame: version checks, SASL gate, logging, handler.

Split in two steps so the connection can stall between them (blackhole):
:func:`receive` decodes and logs a request; :func:`respond` runs its handler under the
cluster lock and frames the answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey

from . import handler_errors
from .codec import (
    API_CLASSES,
    Err,
    RequestPrefix,
    api_name,
    decode_request,
    encode_response_frame,
    parse_request_prefix,
)
from .faults import Injection, Throttle
from .handlers import HANDLERS
from .handlers.cluster_info import api_versions_body
from .reqlog import LoggedRequest, RequestLog

if TYPE_CHECKING:
    from .broker import FakeBroker
    from .cluster import FakeCluster
    from .handlers.sasl import SaslSession

__all__ = ["RequestContext", "Incoming", "Reply", "receive", "respond", "session_expired"]

log = logging.getLogger(__name__)

#: what a client may send before it has authenticated
PRE_AUTH_APIS = frozenset({ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate})


@dataclass
class RequestContext:
    """What a handler sees of one request."""

    cluster: FakeCluster
    broker: FakeBroker
    session: SaslSession
    api_key: int
    version: int
    request: Any
    used: set[int] = field(default_factory=set)
    extra_delay_s: float = 0.0  # extra broker-side work before answering (e.g. Fetch long poll)
    close_after: bool = False  # close the connection once the answer is written
    no_response: bool = False  # the API expects no answer (Produce with acks=0)

    @property
    def node(self) -> int:
        return self.broker.node_id

    def injected(self, key: Hashable | None, *, wildcard: bool = True) -> Injection | None:
        """The scripted error for ``key`` in this request, if any (see :mod:`.faults`)."""
        return self.cluster.faults.match(self.api_key, self.node, key, self.used, wildcard=wildcard)

    @property
    def principal(self) -> str:
        """The SASL user this connection authenticated as, else the cluster's default principal."""
        return self.session.principal or self.cluster.default_principal

    def authorized(self, resource_type: str, name: str, operation: str) -> bool:
        """Kafka's ``authHelper.authorize`` for this request's principal (see :mod:`.acl`)."""
        return self.cluster.acls.authorized(self.principal, resource_type, name, operation)

    def is_coordinator(self, group_id: str) -> bool:
        return self.cluster.coordinator_of(group_id) == self.node


@dataclass
class Incoming:
    prefix: RequestPrefix
    request: Any  # decoded request, None when not decodable
    verdict: str  # "handle", "negotiate" (ApiVersions above max) or "reject" (close)


@dataclass
class Reply:
    frame: bytes | None  # None: send nothing and close the connection (unless no_response)
    close_after: bool = False
    extra_delay_s: float = 0.0
    no_response: bool = False  # send nothing, keep the connection
    throttle: Throttle | None = None  # a quota throttle: mute the connection once this is queued


def receive(
    broker: FakeBroker, body: bytes, request_log: RequestLog, arrived: float | None = None
) -> Incoming:
    """Decode and log one request frame body (header included); ``arrived``: when it reached
    the broker, if that was before now (a request held unread during a quota mute)."""
    prefix = parse_request_prefix(body)
    supported = broker.versions.get(prefix.api_key)
    request = None
    if prefix.api_key == ApiKey.ApiVersions and (supported is None or prefix.api_version > supported[1]):
        verdict = "negotiate"
    elif (
        supported is None
        or prefix.api_key not in API_CLASSES
        or not supported[0] <= prefix.api_version <= supported[1]
    ):
        verdict = "reject"  # Kafka closes the connection on a version it does not support
    else:
        try:
            request = decode_request(prefix.api_key, prefix.api_version, body)
            verdict = "handle"
        except Exception:
            log.exception(
                "fakekafka node %s: cannot decode %s v%s",
                broker.node_id,
                api_name(prefix.api_key),
                prefix.api_version,
            )
            verdict = "reject"
    header = getattr(request, "header", None)
    request_log.record(
        LoggedRequest(
            node=broker.node_id,
            api=api_name(prefix.api_key),
            api_key=prefix.api_key,
            api_version=prefix.api_version,
            correlation_id=prefix.correlation_id,
            client_id=getattr(header, "client_id", None),
            request=request,
            at=RequestLog.now(),
            arrived=arrived,
            size=len(body),
        )
    )
    return Incoming(prefix, request, verdict)


def session_expired(
    cluster: FakeCluster, broker: FakeBroker, session: SaslSession, incoming: Incoming
) -> bool:
    """SocketServer.processCompletedReceives, as a request is received (before any processing):
    on a session past its end anything but a SaslHandshake closes the connection, unprocessed
    ("Disconnecting expired channel", expiredConnectionsKilledCount)."""
    if incoming.prefix.api_key == ApiKey.SaslHandshake or not session.expired(time.monotonic()):
        return False
    log.info(
        "fakekafka node %s: %s on an expired SASL session: closing",
        broker.node_id,
        api_name(incoming.prefix.api_key),
    )
    cluster.expired_closes += 1
    return True


def respond(cluster: FakeCluster, broker: FakeBroker, session: SaslSession, incoming: Incoming) -> Reply:
    """Run the handler and frame its answer."""
    prefix = incoming.prefix
    if incoming.verdict == "negotiate":
        body = api_versions_body(broker.versions, error=Err.UNSUPPORTED_VERSION)
        return Reply(encode_response_frame(ApiKey.ApiVersions, 0, prefix.correlation_id, body))
    if incoming.verdict == "reject":
        return Reply(None)
    if session.required and prefix.api_key not in PRE_AUTH_APIS:
        log.info(
            "fakekafka node %s: %s before authentication: closing", broker.node_id, api_name(prefix.api_key)
        )
        return Reply(None)
    ctx = RequestContext(
        cluster=cluster,
        broker=broker,
        session=session,
        api_key=prefix.api_key,
        version=prefix.api_version,
        request=incoming.request,
    )
    try:
        with cluster.lock:
            response = HANDLERS[prefix.api_key](ctx)
        if ctx.no_response:
            return Reply(None, no_response=True)
        throttle = cluster.faults.take_throttle(prefix.api_key, broker.node_id)
        if throttle is not None and hasattr(response, "throttle_time_ms"):
            response.throttle_time_ms = throttle.throttle_ms
            if prefix.api_key == ApiKey.Fetch:
                # Apache Kafka answers a fetch over its quota with no partitions at all
                # (FetchContext.getThrottledResponse): seen on 4.4 with consumer_byte_rate
                response.responses = []
        frame = encode_response_frame(prefix.api_key, prefix.api_version, prefix.correlation_id, response)
    except Exception as exc:
        log.exception(
            "fakekafka node %s: handler for %s v%s failed",
            broker.node_id,
            api_name(prefix.api_key),
            prefix.api_version,
        )
        handler_errors.record(cluster, broker.node_id, api_name(prefix.api_key), prefix.api_version, exc)
        return Reply(None)
    return Reply(frame, ctx.close_after, ctx.extra_delay_s, throttle=throttle)
