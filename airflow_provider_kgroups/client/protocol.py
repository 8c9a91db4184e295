"""The wire codec: kafka-python 3's schema-generated message classes, plus what it lacks.

Everything that touches ``kafka.protocol`` goes through this module, so the rest of the
client names messages by what they are and a codec upgrade is a one-file change.
"""

from __future__ import annotations

from ._codec_import import lazy_package

lazy_package("kafka.protocol.admin")  # its __init__ builds every admin API's classes: see _codec_import

from kafka.protocol.admin.groups import (  # noqa: E402
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsRequest, ListGroupsResponse,
)
from kafka.protocol.api_message import ApiMessage  # noqa: E402
from kafka.protocol.consumer import (  # noqa: E402
    FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse,
)
from kafka.protocol.metadata import (  # noqa: E402
    ApiVersionsRequest, ApiVersionsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    MetadataRequest, MetadataResponse,
)
from kafka.protocol.sasl import (  # noqa: E402
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
)

from . import schemas as _schemas  # noqa: E402


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_schemas):
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_schemas):
    pass


class ShareGroupDescribeRequest(ApiMessage, load_json=_schemas):
    pass


class ShareGroupDescribeResponse(ApiMessage, load_json=_schemas):
    pass


class StreamsGroupDescribeRequest(ApiMessage, load_json=_schemas):
    pass


class StreamsGroupDescribeResponse(ApiMessage, load_json=_schemas):
    pass


#: Kafka's generated message classes refuse a string of more UTF-8 bytes than this, in every
#: version, flexible or not (MessageDataGenerator: "field is too long to be serialized" when
#: writing, "string field ... had invalid length" when reading).
MAX_STRING_BYTES = 0x7FFF


def too_long(text: str) -> int | None:
    """The UTF-8 length of ``text`` when Kafka's protocol cannot carry it, else None."""
    if len(text) * 4 <= MAX_STRING_BYTES:  # cheap: at most 4 UTF-8 bytes per code point
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > MAX_STRING_BYTES else None


#: request class -> (response class, the highest version this client implements)
CLIENT_MAX_VERSIONS: dict[type, int] = {
    ApiVersionsRequest: 3,
    SaslHandshakeRequest: 1,
    SaslAuthenticateRequest: 2,
    MetadataRequest: 12,
    FindCoordinatorRequest: 6,
    OffsetFetchRequest: 9,  # v10 replaces topic names with topic ids
    DescribeGroupsRequest: 6,  # v6: 69 with "not a classic group" / "not found" instead of a bare Dead
    ConsumerGroupDescribeRequest: 0,
    ShareGroupDescribeRequest: 1,  # v1 = Kafka 4.1's stable v0 (same fields)
    StreamsGroupDescribeRequest: 0,
    ListGroupsRequest: 5,
    DeleteGroupsRequest: 2,
    ListOffsetsRequest: 9,
    FetchRequest: 12,  # v13 replaces topic names with topic ids
    OffsetCommitRequest: 9,  # v10 replaces topic names with topic ids
}

RESPONSE_FOR: dict[int, type] = {
    req.API_KEY: resp for req, resp in [
        (ApiVersionsRequest, ApiVersionsResponse),
        (SaslHandshakeRequest, SaslHandshakeResponse),
        (SaslAuthenticateRequest, SaslAuthenticateResponse),
        (MetadataRequest, MetadataResponse),
        (FindCoordinatorRequest, FindCoordinatorResponse),
        (OffsetFetchRequest, OffsetFetchResponse),
        (DescribeGroupsRequest, DescribeGroupsResponse),
        (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
        (ShareGroupDescribeRequest, ShareGroupDescribeResponse),
        (StreamsGroupDescribeRequest, StreamsGroupDescribeResponse),
        (ListGroupsRequest, ListGroupsResponse),
        (DeleteGroupsRequest, DeleteGroupsResponse),
        (ListOffsetsRequest, ListOffsetsResponse),
        (FetchRequest, FetchResponse),
        (OffsetCommitRequest, OffsetCommitResponse),
    ]
}

__all__ = [name for name in dir() if name.endswith(("Request", "Response"))] + [
    "ApiMessage", "CLIENT_MAX_VERSIONS", "MAX_STRING_BYTES", "RESPONSE_FOR", "too_long",
]
