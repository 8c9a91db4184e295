"""The wire codec: kafka-python 3's schema-generated message classes, plus what it lacks.

Everything that touches ``kafka.protocol`` goes through this module, so the rest of the
client names messages by what they are and a codec upgrade is a one-file change.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ._codec_import import lazy_package

# Their __init__s build every message class of their modules (admin: every admin API; consumer:
# Fetch, the group membership APIs, ...): see _codec_import. Only the modules used are imported.
lazy_package("kafka.protocol.admin")
lazy_package("kafka.protocol.consumer")

from kafka.protocol.admin.groups import (  # noqa: E402 - after lazy_package() above
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.api_message import ApiMessage  # noqa: E402 - after lazy_package() above
from kafka.protocol.consumer.group import (  # noqa: E402 - after lazy_package() above
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.consumer.offsets import (  # noqa: E402 - after lazy_package() above
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from kafka.protocol.metadata import (  # noqa: E402 - after lazy_package() above
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)

from . import schemas as _schemas  # noqa: E402 - after lazy_package() above
from .wire import DECODERS as HAND_WRITTEN  # noqa: E402 - after lazy_package() above
from .wire import AllOffsetsFetch  # noqa: E402 - the hand-written encoder, named here with the codec


# kafka-python ships no type information, so ApiMessage is Any to mypy (misc: subclassing Any) and its
# load_json class keyword is unknown to object.__init_subclass__ (call-arg): each class ignores those two.
class ConsumerGroupDescribeRequest(ApiMessage, load_json=_schemas):  # type: ignore[misc, call-arg]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_schemas):  # type: ignore[misc, call-arg]
    pass


class ShareGroupDescribeRequest(ApiMessage, load_json=_schemas):  # type: ignore[misc, call-arg]
    pass


class ShareGroupDescribeResponse(ApiMessage, load_json=_schemas):  # type: ignore[misc, call-arg]
    pass


class StreamsGroupDescribeRequest(ApiMessage, load_json=_schemas):  # type: ignore[misc, call-arg]
    pass


class StreamsGroupDescribeResponse(ApiMessage, load_json=_schemas):  # type: ignore[misc, call-arg]
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


@dataclass(frozen=True, slots=True)
class KafkaApi:
    """One Kafka API as this client speaks it: its request and response classes and the highest
    version this client implements. Declared once, beside the code that builds its requests (a
    handler's ``kafka_api``, a lookup's, the connection's own below); :data:`CLIENT_MAX_VERSIONS`
    and :data:`RESPONSE_FOR` are read from the declarations, so nothing repeats them."""

    request: type[ApiMessage]
    response: type[ApiMessage]
    max_version: int

    def __post_init__(self) -> None:
        request, response = self.request, self.response
        if not request.is_request() or response.is_request() or request.API_KEY != response.API_KEY:
            raise TypeError(
                f"KafkaApi({request.__name__}, {response.__name__}): give a request class and the "
                "response class of the same API key"
            )
        if not 0 <= self.max_version <= request.max_version:
            raise ValueError(
                f"KafkaApi({request.__name__}): max_version {self.max_version} is outside the codec's "
                f"0-{request.max_version}"
            )
        _declare(self)

    @property
    def key(self) -> int:
        return int(self.request.API_KEY)

    @property
    def name(self) -> str:
        return self.request.__name__.removesuffix("Request")

    def __repr__(self) -> str:
        return f"KafkaApi({self.name}, key {self.key}, up to v{self.max_version})"


_DECLARED: dict[int, KafkaApi] = {}
_MAX_VERSIONS: dict[type[ApiMessage], int] = {}
_RESPONSES_BY_KEY: dict[int, type[ApiMessage]] = {}


def _declare(api: KafkaApi) -> None:
    known = _DECLARED.get(api.key)
    if known is not None:
        if known == api:
            return
        raise ValueError(f"{api!r} declared twice, differently ({known!r}): declare it once and import it")
    _DECLARED[api.key] = api
    _MAX_VERSIONS[api.request] = api.max_version
    _RESPONSES_BY_KEY[api.key] = api.response


K = TypeVar("K")
V = TypeVar("V")


class _Declared(Mapping[K, V]):
    """A read-only view of what the :class:`KafkaApi` declarations say, by request class or API
    key; a miss says which declaration is missing."""

    def __init__(self, entries: dict[K, V]) -> None:
        self._entries = entries

    def __getitem__(self, key: K) -> V:
        try:
            return self._entries[key]
        except KeyError:
            what = key.__name__ if isinstance(key, type) else f"API key {key}"
            raise KeyError(
                f"no KafkaApi declares {what}: declare it beside the handler that sends it "
                "(its kafka_api), and import that module before sending"
            ) from None

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


#: request class -> the highest version this client implements (from the declarations)
CLIENT_MAX_VERSIONS: Mapping[type[ApiMessage], int] = _Declared(_MAX_VERSIONS)
#: API key -> response class, for decoding (from the declarations)
RESPONSE_FOR: Mapping[int, type[ApiMessage]] = _Declared(_RESPONSES_BY_KEY)


def declared_apis() -> tuple[KafkaApi, ...]:
    """Every API declared so far, by key (all of them once the client's verbs are imported)."""
    return tuple(api for _key, api in sorted(_DECLARED.items()))


# The connection's own APIs (its handshake and SASL): the transport is their handler. SASL's are
# declared on first use, below (a connection without SASL never builds their classes).
API_VERSIONS = KafkaApi(ApiVersionsRequest, ApiVersionsResponse, max_version=3)


def _kafka_messages(module: str, api: str) -> tuple[Any, Any]:
    loaded = importlib.import_module(module)
    return getattr(loaded, f"{api}Request"), getattr(loaded, f"{api}Response")


def _message(name: str, schemas: types.ModuleType | None = None) -> Callable[[], Any]:
    """``class <name>(ApiMessage): pass`` from kafka-python's copy of Kafka's schema (a class is
    found by its name, as kafka.protocol.admin.configs and .cluster build theirs: importing those
    modules would build every message class they define, tests/client/test_codec_import.py), or
    from ours (``schemas``: APIs kafka-python lacks)."""
    keywords = {} if schemas is None else {"load_json": schemas}
    return lambda: types.new_class(name, (ApiMessage,), keywords, lambda ns: ns.update(__module__=__name__))


#: What only some verbs send (records, SASL, share-group offsets, topic settings): built on first
#: use (PEP 562), so a call that never sends them never builds their classes.
_ON_FIRST_USE: dict[str, Callable[[], Any]] = {
    "FetchRequest": lambda: _kafka_messages("kafka.protocol.consumer.fetch", "Fetch")[0],
    "FetchResponse": lambda: _kafka_messages("kafka.protocol.consumer.fetch", "Fetch")[1],
    # SASL's classes come with their declaration: a connection asks the versions of what is declared
    "SASL_HANDSHAKE": lambda: KafkaApi(
        *_kafka_messages("kafka.protocol.sasl", "SaslHandshake"), max_version=1
    ),
    "SASL_AUTHENTICATE": lambda: KafkaApi(
        *_kafka_messages("kafka.protocol.sasl", "SaslAuthenticate"), max_version=2
    ),
    "SaslHandshakeRequest": lambda: _first_use("SASL_HANDSHAKE").request,
    "SaslHandshakeResponse": lambda: _first_use("SASL_HANDSHAKE").response,
    "SaslAuthenticateRequest": lambda: _first_use("SASL_AUTHENTICATE").request,
    "SaslAuthenticateResponse": lambda: _first_use("SASL_AUTHENTICATE").response,
    **{
        f"{api}{kind}": _message(f"{api}{kind}", _schemas)
        for api in ("DescribeShareGroupOffsets", "AlterShareGroupOffsets")
        for kind in ("Request", "Response")
    },
    **{
        f"{api}{kind}": _message(f"{api}{kind}")
        for api in ("DescribeConfigs", "DescribeLogDirs")
        for kind in ("Request", "Response")
    },
}
if TYPE_CHECKING:  # what mypy sees of the names above (ApiMessage is Any: kafka-python ships no types)
    FetchRequest: type[ApiMessage]
    FetchResponse: type[ApiMessage]
    SASL_HANDSHAKE: KafkaApi
    SASL_AUTHENTICATE: KafkaApi
    SaslHandshakeRequest: type[ApiMessage]
    SaslHandshakeResponse: type[ApiMessage]
    SaslAuthenticateRequest: type[ApiMessage]
    SaslAuthenticateResponse: type[ApiMessage]
    DescribeShareGroupOffsetsRequest: type[ApiMessage]
    DescribeShareGroupOffsetsResponse: type[ApiMessage]
    AlterShareGroupOffsetsRequest: type[ApiMessage]
    AlterShareGroupOffsetsResponse: type[ApiMessage]
    DescribeConfigsRequest: type[ApiMessage]
    DescribeConfigsResponse: type[ApiMessage]
    DescribeLogDirsRequest: type[ApiMessage]
    DescribeLogDirsResponse: type[ApiMessage]

_first_use_lock = threading.RLock()  # one class per name, whichever thread asks first


def _first_use(name: str) -> Any:
    with _first_use_lock:
        value = globals().get(name)
        if value is None:
            value = globals()[name] = _ON_FIRST_USE[name]()
        return value


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _first_use(name)


class CodecWarmup:
    """Compiles codecs a call is about to need while its first requests are on the wire.

    kafka-python generates each message's encoder and decoder (per version) on first use, which
    for a cold lag call's APIs is on the critical path when paid as each request is built or each
    answer read. A call names what it will send (:meth:`want`); each time a request has been
    written (:meth:`written`), the wanted codecs are compiled one per event-loop step (a
    request's encoder, then its response's decoder), so a response that arrives meanwhile waits
    for one compile at most.
    A wrong version guess costs an unused compile, nothing else.
    """

    def __init__(self, compile_one: Callable[[type[ApiMessage], int], None] | None = None) -> None:
        self._compile = compile_one or compile_codec
        self._wanted: dict[
            tuple[type[ApiMessage], int], None
        ] = {}  # (message class, version), ordered, no duplicates
        self._done: set[tuple[type[ApiMessage], int]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None  # where the next step is scheduled

    def want(
        self, request_cls: type[ApiMessage], version: int | None = None, *, next_up: bool = False
    ) -> None:
        """``next_up``: needed before what was wanted so far (a connection's handshake, a lookup
        ahead of the call's own requests): compiled first."""
        version = CLIENT_MAX_VERSIONS.get(request_cls) if version is None else version
        if version is None:
            return
        keys = {
            k: None
            for k in ((request_cls, version), (RESPONSE_FOR[request_cls.API_KEY], version))
            if k not in self._done
        }
        if (request_cls.API_KEY, version) in HAND_WRITTEN:  # its response never meets kafka-python's decoder
            keys.pop((RESPONSE_FOR[request_cls.API_KEY], version), None)
        if next_up:
            self._wanted = {**keys, **self._wanted}
        else:
            self._wanted.update(keys)

    def written(self) -> None:
        if not self._wanted:
            return
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # (a step left on a loop that closed is not waited for)
            self._loop = loop
            loop.call_soon(self._step)

    def _step(self) -> None:
        self._loop = None
        try:
            key = next(iter(self._wanted))
            del self._wanted[key]
        except (StopIteration, KeyError, RuntimeError):  # emptied meanwhile (another thread's loop)
            return
        self._done.add(key)
        self._compile(*key)
        self.written()


def compile_codec(message_cls: type[ApiMessage], version: int) -> None:
    """A request's encoder or a response's decoder at ``version``, compiled now (kafka-python
    caches it by the same key its ``encode``/``decode`` use). Only an optimisation: a codec
    without these hooks is compiled on first use as before."""
    try:
        flexible = message_cls.flexible_version_q(version)
        if not message_cls.is_request():
            message_cls._struct.compiled_decode_from(
                version, compact=flexible, tagged=flexible, data_class=message_cls[None]
            )
        else:
            message_cls._struct.compiled_encode_into(version, compact=flexible, tagged=flexible)
    except (AttributeError, KeyError, TypeError, ValueError):
        pass


def compile_codecs(request_cls: type[ApiMessage], version: int) -> None:
    """The request's encoder and its response's decoder at ``version``, compiled now."""
    compile_codec(request_cls, version)
    compile_codec(RESPONSE_FOR[request_cls.API_KEY], version)


#: one per process: the codecs it compiled are the process's
warmup = CodecWarmup()

__all__ = [
    "AllOffsetsFetch",
    # the messages, by API
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "MetadataRequest",
    "MetadataResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "StreamsGroupDescribeRequest",
    "StreamsGroupDescribeResponse",
    # the codec and its helpers
    "API_VERSIONS",
    "ApiMessage",
    "CLIENT_MAX_VERSIONS",
    "CodecWarmup",
    "KafkaApi",
    "MAX_STRING_BYTES",
    "RESPONSE_FOR",
    "compile_codec",
    "compile_codecs",
    "declared_apis",
    "too_long",
    "warmup",
    # built on first use (see _ON_FIRST_USE)
    *_ON_FIRST_USE,
]
