"""Bounded requests: many groups of one coordinator go out as several requests, each within
a number of groups and a number of bytes.

Kafka's broker closes the connection on a request frame larger than its
``socket.request.max.bytes`` (``NetworkReceive.readFrom`` throws ``InvalidReceiveException``,
the ``Selector`` closes the channel), so one request carrying every group of a coordinator
turns into a disconnect for every group once the batch is large enough. The size of a request
is known before it is sent: :class:`RequestSizer` computes it exactly from two sample
encodings, since in every group-keyed request the group id is the only part that varies per
group. Responses cannot be sized in advance; the number of groups per request bounds them,
and a response over the client's ``max_response_bytes`` is split further by the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from .config import ClientConfig
from .protocol import ApiMessage

_SAMPLE_KEY = "x"
_CONFIG_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(ClientConfig)}


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """At most ``max_groups`` groups and ``max_bytes`` bytes per request. The client id is part
    of every request header, so of every request's size."""

    max_groups: int = _CONFIG_DEFAULTS["max_groups_per_request"]  # one home for the defaults: ClientConfig
    max_bytes: int = _CONFIG_DEFAULTS["max_request_bytes"]
    client_id: str = _CONFIG_DEFAULTS["client_id"]

    @classmethod
    def of(cls, config: ClientConfig) -> RequestLimits:
        return cls(config.max_groups_per_request, config.max_request_bytes, config.client_id)


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _varint_len(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


class RequestSizer:
    """The exact size of a request frame (without its 4-byte length prefix, as Kafka's
    ``socket.request.max.bytes`` counts it) as a function of its keys.

    ``make(keys)`` builds the request; the key must appear in it exactly once, as a string,
    and nothing else may depend on the key (true of FindCoordinator, OffsetFetch v8+,
    DescribeGroups, ConsumerGroupDescribe and DeleteGroups).
    """

    def __init__(self, make: Callable[[list[str]], ApiMessage], version: int, client_id: str) -> None:
        empty = make([])
        self.flexible = bool(empty.flexible_version_q(version))
        base = _frame_size(empty, version, client_id)
        one = _frame_size(make([_SAMPLE_KEY]), version, client_id)
        # What one key costs besides its own bytes (and, in flexible versions, its length varint).
        self._per_key = (
            one - base - len(_SAMPLE_KEY) - (_varint_len(len(_SAMPLE_KEY) + 1) if self.flexible else 0)
        )
        self._base = base - (1 if self.flexible else 0)  # a compact array's length is a varint of n + 1

    def key_bytes(self, key: str) -> int:
        size = _utf8_len(key)
        return self._per_key + size + (_varint_len(size + 1) if self.flexible else 0)

    def base_bytes(self, count: int) -> int:
        return self._base + (_varint_len(count + 1) if self.flexible else 0)

    def size(self, keys: Sequence[str]) -> int:
        return self.base_bytes(len(keys)) + sum(self.key_bytes(k) for k in keys)


def _frame_size(request: ApiMessage, version: int, client_id: str) -> int:
    request.with_header(correlation_id=0, client_id=client_id)
    return len(request.encode(version=version, header=True))


def chunk(keys: Sequence[str], sizer: RequestSizer, limits: RequestLimits) -> list[list[str]]:
    """``keys`` in order, cut into runs of at most ``limits.max_groups`` keys whose request is at
    most ``limits.max_bytes`` (a key too large for any request goes alone: it cannot be split).
    (:meth:`RequestSizer.key_bytes` and ``base_bytes`` inlined: 100,000 groups go through here
    three times in a big snapshot, for FindCoordinator, DescribeGroups and OffsetFetch.)"""
    out: list[list[str]] = []
    current: list[str] = []
    used = 0  # bytes of the keys in ``current``
    max_groups, max_bytes = limits.max_groups, limits.max_bytes
    per_key, base, flexible = sizer._per_key, sizer._base, sizer.flexible
    for key in keys:
        n = len(key) if key.isascii() else len(key.encode("utf-8", "surrogatepass"))
        size = per_key + n + ((1 if n < 127 else _varint_len(n + 1)) if flexible else 0)
        count = len(current)
        if current:
            # the request with this key: base_bytes(count + 1), a compact array of count + 1 keys
            array = (1 if count < 126 else _varint_len(count + 2)) if flexible else 0
            if count >= max_groups or base + array + used + size > max_bytes:
                out.append(current)
                current, used = [], 0
        current.append(key)
        used += size
    if current:
        out.append(current)
    return out


class Chunker:
    """What a group-keyed handler's ``build`` uses: one sizer per version, then :func:`chunk`."""

    def __init__(self, limits: RequestLimits, make: Callable[[list[str], int], ApiMessage]) -> None:
        self.limits = limits
        self._make = make
        self._sizers: dict[int, RequestSizer] = {}

    def chunks(self, keys: Sequence[str], version: int) -> list[list[str]]:
        sizer = self._sizers.get(version)
        if sizer is None:
            sizer = self._sizers[version] = RequestSizer(
                lambda ks: self._make(ks, version), version, self.limits.client_id
            )
        return chunk(keys, sizer, self.limits)
