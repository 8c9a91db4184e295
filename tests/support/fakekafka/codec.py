"""Wire codec glue: which kafka.protocol classes serve which API, default versions, framing.

Everything the fake knows about kafka-python's ``kafka.protocol`` lives here, so the rest of
the package speaks in API names, requests and response objects.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from kafka.protocol.admin import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

__all__ = [
    "ApiKey",
    "ApiRef",
    "Err",
    "API_CLASSES",
    "DEFAULT_MAX_VERSIONS",
    "api_key_of",
    "api_name",
    "codec_range",
    "parse_request_prefix",
    "encode_response_frame",
    "RequestPrefix",
]

INT32 = struct.Struct(">i")
PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id

ApiRef = str | int | ApiKey


class Err(IntEnum):
    """The Kafka error codes the fake answers with (Kafka's numeric codes)."""

    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REPLICA_NOT_AVAILABLE = 9
    INVALID_TOPIC_EXCEPTION = 17
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    KAFKA_STORAGE_ERROR = 56
    SASL_AUTHENTICATION_FAILED = 58
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    OFFSET_NOT_AVAILABLE = 78
    UNSTABLE_OFFSET_COMMIT = 88
    UNKNOWN_TOPIC_ID = 100
    STALE_MEMBER_EPOCH = 113


def _schema_classes(api_key: int, name: str) -> tuple[type, type]:
    """Codec classes for an API kafka-python lacks (ConsumerGroupDescribe 69, ShareGroupDescribe
    77, StreamsGroupDescribe 89), from the schemas in :mod:`.schemas` (Kafka's message specs).
    Declaring a response class registers it in kafka-python's global response registry; the
    previous entry is put back so that the fake never changes how other code in the process
    decodes that API."""
    from kafka.protocol.api_header import ResponseClassRegistry
    from kafka.protocol.api_message import ApiMessage

    from . import schemas

    registry = ResponseClassRegistry._response_class_registry
    previous = registry.get(api_key)
    request = type(f"{name}Request", (ApiMessage,), {}, load_json=schemas)
    response = type(f"{name}Response", (ApiMessage,), {}, load_json=schemas)
    if previous is None:
        registry.pop(api_key, None)
    else:
        registry[api_key] = previous
    return request, response


#: api key -> (request class, response class) for every API the fake implements
API_CLASSES: dict[int, tuple[type, type]] = {
    ApiKey.ApiVersions: (ApiVersionsRequest, ApiVersionsResponse),
    ApiKey.SaslHandshake: (SaslHandshakeRequest, SaslHandshakeResponse),
    ApiKey.SaslAuthenticate: (SaslAuthenticateRequest, SaslAuthenticateResponse),
    ApiKey.Metadata: (MetadataRequest, MetadataResponse),
    ApiKey.FindCoordinator: (FindCoordinatorRequest, FindCoordinatorResponse),
    ApiKey.OffsetFetch: (OffsetFetchRequest, OffsetFetchResponse),
    ApiKey.OffsetCommit: (OffsetCommitRequest, OffsetCommitResponse),
    ApiKey.DescribeGroups: (DescribeGroupsRequest, DescribeGroupsResponse),
    ApiKey.ListGroups: (ListGroupsRequest, ListGroupsResponse),
    ApiKey.DeleteGroups: (DeleteGroupsRequest, DeleteGroupsResponse),
    ApiKey.ListOffsets: (ListOffsetsRequest, ListOffsetsResponse),
    ApiKey.Fetch: (FetchRequest, FetchResponse),
    ApiKey.Produce: (ProduceRequest, ProduceResponse),
    ApiKey.OffsetDelete: (OffsetDeleteRequest, OffsetDeleteResponse),
    ApiKey.DescribeConfigs: (DescribeConfigsRequest, DescribeConfigsResponse),
    ApiKey.DescribeLogDirs: (DescribeLogDirsRequest, DescribeLogDirsResponse),
}
API_CLASSES[ApiKey.ConsumerGroupDescribe] = _schema_classes(
    ApiKey.ConsumerGroupDescribe, "ConsumerGroupDescribe"
)
API_CLASSES[ApiKey.ShareGroupDescribe] = _schema_classes(ApiKey.ShareGroupDescribe, "ShareGroupDescribe")
API_CLASSES[ApiKey.StreamsGroupDescribe] = _schema_classes(
    ApiKey.StreamsGroupDescribe, "StreamsGroupDescribe"
)
API_CLASSES[ApiKey.DescribeShareGroupOffsets] = _schema_classes(
    ApiKey.DescribeShareGroupOffsets, "DescribeShareGroupOffsets"
)
API_CLASSES[ApiKey.AlterShareGroupOffsets] = _schema_classes(
    ApiKey.AlterShareGroupOffsets, "AlterShareGroupOffsets"
)


def codec_range(api_key: int) -> tuple[int, int]:
    """(min, max) version of an API as its schema declares (Kafka 4 dropped old versions)."""
    request_cls = API_CLASSES[api_key][0]
    low, _, high = request_cls.json["validVersions"].partition("-")
    return int(low), int(high or low)


#: Kafka 4.3's maxima, capped to what the codec and the fake can serve.
_KAFKA_43_MAX: dict[int, int] = {
    ApiKey.ApiVersions: 3,
    ApiKey.SaslHandshake: 1,
    ApiKey.SaslAuthenticate: 2,
    ApiKey.Metadata: 13,
    ApiKey.FindCoordinator: 6,
    ApiKey.OffsetFetch: 9,  # v10 needs topic ids in OffsetFetch: not advertised
    ApiKey.OffsetCommit: 10,
    ApiKey.DescribeGroups: 6,
    ApiKey.ListGroups: 5,
    ApiKey.DeleteGroups: 2,
    ApiKey.ListOffsets: 11,
    ApiKey.Fetch: 18,
    ApiKey.Produce: 13,
    ApiKey.ConsumerGroupDescribe: 1,
    ApiKey.ShareGroupDescribe: 1,  # Kafka 4.1+: v1 (v0 was 4.0's early access)
    ApiKey.StreamsGroupDescribe: 1,  # Kafka 4.4's v1 (AssignorName); 4.3 had v0 only
    ApiKey.OffsetDelete: 0,
    ApiKey.DescribeShareGroupOffsets: 1,  # Kafka 4.1+ (KIP-932); v1 (4.2+, KIP-1226): Lag
    ApiKey.AlterShareGroupOffsets: 0,
    ApiKey.DescribeConfigs: 4,
    ApiKey.DescribeLogDirs: 5,  # v4 (3.3+): TotalBytes, UsableBytes; v5: IsCordoned
}

#: api key -> (min, max) advertised by a default broker
DEFAULT_MAX_VERSIONS: dict[int, tuple[int, int]] = {
    key: (codec_range(key)[0], min(codec_range(key)[1], _KAFKA_43_MAX[key])) for key in API_CLASSES
}


def api_key_of(api: ApiRef) -> int:
    """Accept ``"OffsetFetch"``, ``ApiKey.OffsetFetch`` or ``9``."""
    if isinstance(api, str):
        try:
            return int(ApiKey[api])
        except KeyError:
            raise ValueError(f"unknown Kafka API name {api!r}") from None
    return int(api)


def api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api{api_key}"


@dataclass(frozen=True, slots=True)
class RequestPrefix:
    api_key: int
    api_version: int
    correlation_id: int


def parse_request_prefix(body: bytes) -> RequestPrefix:
    """The fixed first 8 bytes of every request header (no decoding of the rest)."""
    if len(body) < PREFIX.size:
        raise ValueError(f"request too short ({len(body)} bytes)")
    return RequestPrefix(*PREFIX.unpack_from(body, 0))


def decode_request(api_key: int, version: int, body: bytes) -> Any:
    request_cls = API_CLASSES[api_key][0]
    return request_cls.decode(body, version=version, header=True)


def response_class(api_key: int) -> type:
    return API_CLASSES[api_key][1]


def encode_response_frame(api_key: int, version: int, correlation_id: int, response: Any) -> bytes:
    """Frame = int32 size + response header + body.

    The header is the correlation id, plus an empty tagged-fields byte when the response
    version is flexible, except for ApiVersions whose response header is never flexible.
    """
    body = response.encode(version=version)
    flexible = api_key != ApiKey.ApiVersions and response.flexible_version_q(version)
    header = INT32.pack(correlation_id) + (b"\x00" if flexible else b"")
    return INT32.pack(len(header) + len(body)) + header + bytes(body)


def decode_response(api_key: int, version: int, frame_body: bytes) -> Any:
    """Decode a response frame body (header included) with the codec, for the test client."""
    return response_class(api_key).decode(bytes(frame_body), version=version, header=True)
