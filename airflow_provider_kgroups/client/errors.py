"""Errors: per-key failures are values (:class:`Failure`); exceptions are for a call as a whole."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import kafka.errors as _kafka_errors


class ErrorCode(IntEnum):
    """The Kafka error codes this client reacts to by name (others are reported by number)."""

    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    REPLICA_NOT_AVAILABLE = 9
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    ILLEGAL_GENERATION = 22
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    REBALANCE_IN_PROGRESS = 27
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    UNSTABLE_OFFSET_COMMIT = 88
    KAFKA_STORAGE_ERROR = 56
    SASL_AUTHENTICATION_FAILED = 58
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    GROUP_SUBSCRIBED_TO_TOPIC = 86  # OffsetDelete (KIP-496): a member still subscribes to the topic
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    OFFSET_NOT_AVAILABLE = 78
    UNKNOWN_TOPIC_ID = 100
    STALE_MEMBER_EPOCH = 113


#: Errors after which the same coordinator is asked again, after a backoff.
RETRY_SAME_BROKER = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
#: Errors after which the cached coordinator is dropped and looked up again.
RELOOKUP = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
#: Broker answers that no retry fixes: the principal lacks a permission or failed to authenticate.
NOT_RETRIABLE_CODES = frozenset(
    {
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.SASL_AUTHENTICATION_FAILED,
    }
)
#: Errors of a partition's leader (ListOffsets, Fetch) after which partition metadata is
#: refreshed and the leader asked again, until the deadline: a leader election is under way
#: or a new leader is catching up. As the Java consumer's OffsetFetcherUtils.handleListOffsetResponse
#: (the broker side: ReplicaManager.fetchOffset; OFFSET_NOT_AVAILABLE from v5, LEADER_NOT_AVAILABLE
#: below, while Partition.fetchOffsetForTimestamp finds the high watermark behind the epoch start).
REFRESH_LEADER = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
    }
)

# Codes that are not broker errors but outcomes of this client itself (a broker code, even -1
# UNKNOWN_SERVER_ERROR, would claim the broker said so).
CLIENT_TIMEOUT = -100
CLIENT_DISCONNECTED = -101
CLIENT_UNSUPPORTED = -102
CLIENT_INCOMPLETE_RESPONSE = -103  # a response without an answer for this key
CLIENT_RESPONSE_TOO_LARGE = -104
CLIENT_NOT_READ = -105  # a value this result is computed from was not read (its own read failed)
#: read back from the history store, which keeps that an error occurred, not which
CLIENT_RECORDED_ERROR = -106
#: a record batch this client cannot decode (its codec's library failed, or the bytes are not a v2 batch):
#: the message names the codec, the library and the partition
CLIENT_UNDECODABLE = -107
#: a broker's answer this client cannot read (an undecodable or malformed response)
CLIENT_PROTOCOL_ERROR = -108
#: a change the safety path kept before any request (the group leased by another run, live, unreadable):
#: nothing was sent for it
CLIENT_NOT_SENT = -109
CLIENT_CODES = {
    code: name for name, code in globals().items() if name.startswith("CLIENT_") and isinstance(code, int)
}


def error_name(code: int) -> str:
    if code in CLIENT_CODES:
        return CLIENT_CODES[code]
    cls = _kafka_errors.for_code(code)
    name = getattr(cls, "message", None)
    if not name or cls.__name__ == "UnrecognizedBrokerError":
        return f"UNKNOWN_ERROR_{code}"
    return str(name)


@dataclass(frozen=True, slots=True)
class Failure:
    """Why one key (a group, a partition, a broker) has no result. A value, not an exception."""

    code: int
    message: str = ""

    @property
    def name(self) -> str:
        return error_name(self.code)

    def __str__(self) -> str:
        return f"{self.name}: {self.message}" if self.message else self.name

    def to_dict(self) -> dict[str, Any]:
        return {"error_code": self.code, "error": self.name, "message": self.message}


@dataclass(frozen=True, slots=True)
class UndecodableFailure(Failure):
    """``CLIENT_UNDECODABLE``, with what could not be decoded as values (the message says the same
    in words): ``codec`` (``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``, or ``id N`` / ``unknown``),
    the ``library`` that failed (``none`` when no library was involved: a corrupt batch, an old
    message format) and the ``offset`` the read started at."""

    codec: str = "unknown"
    library: str = "none"
    offset: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**Failure.to_dict(self), "codec": self.codec, "library": self.library, "offset": self.offset}


class KafkaGroupsError(Exception):
    """Base class of the exceptions this package raises."""


class ConfigurationError(KafkaGroupsError, ValueError):
    """Bad input: raised before anything is sent. The message names the input and the fix."""


class NoBrokerAvailable(KafkaGroupsError, ConnectionError):
    """None of the bootstrap servers (or known brokers) could be reached."""


class AuthenticationError(KafkaGroupsError):
    """SASL or TLS authentication failed. Never carries the secret itself."""


class TokenUnavailable(NoBrokerAvailable):
    """No OAUTHBEARER token could be had in time (a token endpoint answering 5xx or not at all), so
    no broker can be reached: retrying later may fix it. The message names the endpoint, never a
    secret."""


class IncompleteListingError(KafkaGroupsError):
    """A pattern selection needs every broker's listing and some broker's failed: matching
    against what the others listed would silently leave that broker's groups out.
    ``failures``: broker node id -> why its listing failed."""

    def __init__(self, failures: dict[int, Failure]) -> None:
        self.failures = dict(failures)
        brokers = ", ".join(f"broker {node}: {failure}" for node, failure in sorted(self.failures.items()))
        super().__init__(
            f"cannot list groups on every broker ({brokers}); a pattern would miss that broker's "
            "groups, so nothing was selected: retry, or name the groups exactly."
        )


class ProtocolError(KafkaGroupsError):
    """A broker answered with something this client cannot read."""


class UnsupportedVersion(KafkaGroupsError):
    """A request cannot be sent at the version the broker offers (Java's
    ``UnsupportedVersionException`` from a request builder): nothing was sent."""


class TransportError(KafkaGroupsError):
    """A request got no response. ``request_sent`` is True when it had already been written to
    the broker: the broker may have carried it out, so a retry's answer may reflect it."""

    def __init__(self, message: str = "", *, request_sent: bool = False) -> None:
        super().__init__(message)
        self.request_sent = request_sent


def is_retriable(error: BaseException) -> bool:
    """Whether waiting and trying again can fix ``error``: one rule for the sensor (poke and
    deferrable), the trigger and the operators. Not retriable: bad input, authentication (a SASL
    password, a TLS certificate not trusted) and authorization answers anywhere in the error's
    per-key ``failures``; a missing topic is bad input already (``ConfigurationError``)."""
    if isinstance(error, (ConfigurationError, AuthenticationError)):
        return False
    failures = getattr(error, "failures", None) or {}
    return not any(f.code in NOT_RETRIABLE_CODES for f in failures.values())


class RequestTimeout(TransportError, TimeoutError):
    """One request got no response within its timeout."""


class BrokerDisconnected(TransportError, ConnectionError):
    """The connection to a broker closed while requests were in flight."""


class BrokerThrottled(RequestTimeout):
    """The broker throttles this client (quota, KIP-219) until after the call's deadline, so the
    request was not sent: no answer can come in time."""


class ResponseTooLarge(TransportError):
    """The response frame is larger than ``max_response_bytes``: it was read and thrown away
    (the connection stays usable). The broker did act on the request."""

    def __init__(self, message: str, *, size: int, limit: int) -> None:
        super().__init__(message, request_sent=True)
        self.size = size
        self.limit = limit


def response_lost(error: BaseException) -> bool:
    """True when ``error`` means a request was sent and its response never came."""
    return isinstance(error, TransportError) and error.request_sent
