"""Hand-written decoders for the three responses that carry one entry per group: OffsetFetch
v8-v9 (every committed offset of up to 1,000 groups), DescribeGroups v5-v6 and ListGroups v4-v5
(every group of a broker), and the encoder
of the request that names one group per entry, OffsetFetch v8-v9 for every committed offset
(:class:`AllOffsetsFetch`). Every other message, and these in other versions or shapes, is
encoded and decoded by kafka-python (:mod:`.protocol`).

Why: these are the responses whose size grows with the number of groups, and decoding them is
a large part of a big snapshot's CPU. kafka-python's generated decoders build a slotted
container per group, topic and partition, and turn every group's unused
``AuthorizedOperations`` into a set bit by bit; the decoders here build none of that, and fewer
objects also leave the collector less to scan. A partition without metadata and tagged fields,
which is nearly all of them, is read with one ``struct`` call; a topic of only such partitions,
all of them with one. No maintained library decodes
these bytes faster: aiokafka's codec builds objects as kafka-python's does, and confluent-kafka
(librdkafka) is a whole client with its own connections, not a decoder of frames. What they save
(each decoder against kafka-python's, and the whole ``take_snapshot`` process with and without
them) is measured in docs/performance.rst, "Where the time went, and what changed".

DescribeGroups and ListGroups return named tuples with kafka-python's field names, so the
handlers read either alike. OffsetFetch goes one step further (:func:`decode_offset_fetch`):
each group's partitions come out as the values the handler keeps (``{TopicPartition:
CommittedOffset}``), made in the same pass over the bytes, with no container per topic and
partition in between (less CPU again than decoding to named tuples and converting them after:
the same section). Exact against kafka-python's decode of the same bytes
(tests/client/test_wire.py: error codes, null and non-empty metadata, null error messages and
instance ids, members, leader epochs, unknown tagged fields at every level, every version
decoded here; OffsetFetch against kafka-python's containers converted by the handler's own
rule, :func:`~.results.committed_offset`). Tagged fields are skipped: neither response
defines any in these versions (Kafka's OffsetFetchResponse.json, DescribeGroupsResponse.json).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from .results import CommittedOffset, TopicPartition, committed_offset, topic_partition

_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from
_UINT32 = struct.Struct(">I").unpack_from
_PARTITION = struct.Struct(">iqi").unpack_from
# index, offset, leader epoch, metadata "" (compact length 1), error code, no tagged fields (0)
_PLAIN_PARTITION = struct.Struct(">iqiBhB").unpack_from
_PLAIN_PARTITIONS = struct.Struct(">iqiBhB").iter_unpack
_PLAIN_PARTITION_SIZE = 20

OFFSET_FETCH, DESCRIBE_GROUPS, LIST_GROUPS = 9, 15, 16


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7


def _skip_tags(data: bytes, pos: int) -> int:
    if data[pos] == 0:
        return pos + 1
    count, pos = _uvarint(data, pos)
    for _ in range(count):
        _, pos = _uvarint(data, pos)
        size, pos = _uvarint(data, pos)
        pos += size
    return pos


def _string(data: bytes, pos: int) -> tuple[str | None, int]:
    """A compact (nullable) string: its length + 1 as an unsigned varint, 0 for null."""
    size = data[pos]
    if size < 0x80:  # a one-byte length, as nearly every one is: no call for it
        pos += 1
    else:
        size, pos = _uvarint(data, pos)
    if size == 0:
        return None, pos
    end = pos + size - 1
    return data[pos:end].decode("utf-8"), end


def _bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    size, pos = _uvarint(data, pos)
    if size == 0:
        return None, pos
    end = pos + size - 1
    return data[pos:end], end


def _array_size(data: bytes, pos: int) -> tuple[int, int]:
    """A compact array's length (-1 for null)."""
    size = data[pos]
    if size < 0x80:
        return size - 1, pos + 1
    size, pos = _uvarint(data, pos)
    return size - 1, pos


def _body_start(data: bytes) -> int:
    """After the flexible response header: correlation id, tagged fields."""
    return _skip_tags(data, 4)


# -- OffsetFetch v8-v9 ----------------------------------------------------------------------


# -- OffsetFetch v8-v9 request, every committed offset (topics null) --------------------------


_REQUEST_HEAD = struct.Struct(">hhi").pack
_INT16_PACK = struct.Struct(">h").pack
#: per group, after its id: v8 topics null + no tagged fields; v9 member id null, member epoch
#: -1, topics null, no tagged fields
_GROUP_TAIL = {8: b"\x00\x00", 9: b"\x00\xff\xff\xff\xff\x00\x00"}


def _uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class AllOffsetsFetch:
    """OffsetFetchRequest v8-v9 asking every committed offset of each of ``group_ids`` (topics
    null, the member id null and epoch -1 of an administrator), encoded here: kafka-python's
    generated encoder builds and walks a container per group (100,000 groups: ~40 % of the
    requests' CPU in a big snapshot). It is what the connection needs of a request (``API_KEY``,
    ``name``, ``with_header``, ``encode``) and nothing more; its bytes equal kafka-python's for
    the same request (tests/client/test_wire.py)."""

    API_KEY = OFFSET_FETCH
    name = "OffsetFetchRequest"
    VERSIONS = frozenset(_GROUP_TAIL)

    def __init__(self, group_ids: list[str], require_stable: bool) -> None:
        self.group_ids = group_ids
        self.require_stable = require_stable
        self._header: tuple[int, str | None] = (0, None)

    def with_header(self, correlation_id: int, client_id: str | None) -> None:
        self._header = (correlation_id, client_id)

    def encode(self, version: int, header: bool = False, framed: bool = False) -> bytes:
        tail = _GROUP_TAIL[version]
        parts = []
        if header:
            correlation_id, client_id = self._header
            parts.append(_REQUEST_HEAD(OFFSET_FETCH, version, correlation_id))
            if client_id is None:
                parts.append(_INT16_PACK(-1))
            else:
                raw = client_id.encode("utf-8")
                parts += (_INT16_PACK(len(raw)), raw)
            parts.append(b"\x00")  # the request header's tagged fields
        parts.append(_uvarint_bytes(len(self.group_ids) + 1))
        for group_id in self.group_ids:
            raw = group_id.encode("utf-8")
            size = len(raw) + 1
            parts += (bytes((size,)) if size < 0x80 else _uvarint_bytes(size), raw, tail)
        parts.append(b"\x01\x00" if self.require_stable else b"\x00\x00")  # require_stable, tagged fields
        body = b"".join(parts)
        return struct.pack(">i", len(body)) + body if framed else body


class CommittedGroup(NamedTuple):
    """One group of an OffsetFetch v8-v9 answer, its partitions already the values the handler
    keeps (:func:`~.results.committed_offset` of each, keyed by the shared
    :func:`~.results.topic_partition`): one pass over the bytes, no container per topic and
    partition in between."""

    group_id: str | None
    error_code: int
    partitions: dict[TopicPartition, CommittedOffset]
    errors: bool  # some partition carries an error code


class CommittedGroups(NamedTuple):
    throttle_time_ms: int
    groups: list[CommittedGroup]


def _not_null(count: int, what: str) -> int:
    if count < 0:
        raise ValueError(f"OffsetFetchResponse: {what} is null, which the message spec does not allow")
    return count


def decode_offset_fetch(data: bytes) -> CommittedGroups:
    """OffsetFetchResponse v8-v9 with its header (the frame after the size), straight into
    values. Kafka's spec (OffsetFetchResponse.json) makes none of its arrays nullable: a null
    one is an undecodable answer (the request fails), as it failed the handler before."""
    pos = _body_start(data)
    throttle = _INT32(data, pos)[0]
    count, pos = _array_size(data, pos + 4)
    groups: list[CommittedGroup] = []
    # per topic name: its str and its partitions (one str and one TopicPartition each, the same
    # few in every group)
    topics: dict[bytes | None, tuple[str | None, dict[int, TopicPartition]]] = {}
    new, plain, plains, value, commit = (
        tuple.__new__,
        _PLAIN_PARTITION,
        _PLAIN_PARTITIONS,
        committed_offset,
        CommittedOffset,
    )
    size_of = _PLAIN_PARTITION_SIZE
    for _ in range(_not_null(count, "the groups array")):
        group_id, pos = _string(data, pos)
        topic_count, pos = _array_size(data, pos)
        partitions: dict[TopicPartition, CommittedOffset] = {}
        errors = False
        if topic_count < 0:  # the message named only then: not formatted for every group
            _not_null(topic_count, f"group {group_id!r}'s topics array")
        for _ in range(topic_count):
            size, pos = _uvarint(data, pos)
            raw = data[pos : pos + size - 1] if size else None
            known = topics.get(raw)
            if known is None:
                known = topics[raw] = (None if raw is None else raw.decode("utf-8"), {})
            name, by_index = known
            pos += max(size - 1, 0)
            partition_count, pos = _array_size(data, pos)
            if partition_count < 0:
                _not_null(partition_count, f"topic {name!r}'s partitions array")
            block = data[pos : pos + partition_count * size_of]
            if (
                len(block) == partition_count * size_of
                and block[16::size_of].count(1) == partition_count
                and block[19::size_of].count(0) == partition_count
            ):
                # every partition of the topic plain (metadata "", no tagged fields: the first is,
                # so the second starts 20 bytes on, and so on): one unpack for all of them, and
                # committed_offset's rule inline for those without an error
                for index, offset, epoch, _, error, _ in plains(block):
                    tp = by_index.get(index)
                    if tp is None:
                        tp = by_index[index] = topic_partition(name, index)  # a null name as sent
                    if error:
                        errors = True
                        partitions[tp] = value(offset, "", epoch, error)
                    else:
                        partitions[tp] = commit(
                            None if offset == -1 else offset, "", epoch if epoch >= 0 else None
                        )
                pos = _skip_tags(data, pos + len(block))
                continue
            for _ in range(partition_count):
                if data[pos + 16] == 1 and data[pos + 19] == 0:  # metadata "", no tagged fields
                    index, offset, epoch, _, error, _ = plain(data, pos)
                    metadata: str | None = ""
                    pos += _PLAIN_PARTITION_SIZE
                else:
                    index, offset, epoch = _PARTITION(data, pos)
                    metadata, pos = _string(data, pos + 16)
                    error = _INT16(data, pos)[0]
                    pos = _skip_tags(data, pos + 2)
                tp = by_index.get(index)
                if tp is None:
                    tp = by_index[index] = topic_partition(name, index)  # a null name as sent
                partitions[tp] = value(offset, metadata, epoch, error)
                if error:
                    errors = True
            pos = _skip_tags(data, pos)
        error = _INT16(data, pos)[0]
        pos = _skip_tags(data, pos + 2)
        groups.append(new(CommittedGroup, (group_id, error, partitions, errors)))
    return CommittedGroups(throttle, groups)


# -- DescribeGroups v5-v6 -------------------------------------------------------------------


class DescribedGroupMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes | None
    member_assignment: bytes | None


class DescribedGroup(NamedTuple):
    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedGroupMember] | None
    authorized_operations: int  # the raw bits, unsigned (kafka-python makes a set of them; unused here)


class DescribedGroups(NamedTuple):
    throttle_time_ms: int
    groups: list[DescribedGroup] | None


def _decode_describe_groups(data: bytes, version: int) -> DescribedGroups:
    new = tuple.__new__
    pos = _body_start(data)
    throttle = _INT32(data, pos)[0]
    count, pos = _array_size(data, pos + 4)
    groups: list[DescribedGroup] = []  # a null array (count -1) is None in the answer
    for _ in range(count):
        error = _INT16(data, pos)[0]
        message = None
        if version >= 6:
            message, pos = _string(data, pos + 2)
        else:
            pos += 2
        group_id, pos = _string(data, pos)
        state, pos = _string(data, pos)
        protocol_type, pos = _string(data, pos)
        protocol, pos = _string(data, pos)
        member_count, pos = _array_size(data, pos)
        members: list[DescribedGroupMember] = []  # a null array (count -1) is None in the group
        for _ in range(member_count):
            member_id, pos = _string(data, pos)
            instance_id, pos = _string(data, pos)
            client_id, pos = _string(data, pos)
            client_host, pos = _string(data, pos)
            metadata, pos = _bytes(data, pos)
            assignment, pos = _bytes(data, pos)
            pos = _skip_tags(data, pos)
            members.append(
                new(
                    DescribedGroupMember,
                    (member_id, instance_id, client_id, client_host, metadata, assignment),
                )
            )
        operations = _UINT32(data, pos)[0]
        pos = _skip_tags(data, pos + 4)
        groups.append(
            new(
                DescribedGroup,
                (
                    error,
                    message,
                    group_id,
                    state,
                    protocol_type,
                    protocol,
                    members if member_count >= 0 else None,
                    operations,
                ),
            )
        )
    return DescribedGroups(throttle, groups if count >= 0 else None)


#: (api key, version) -> decoder of the response frame (header included)
# -- ListGroups v4-v5 -----------------------------------------------------------------------


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str  # "" below v5, as kafka-python's default for a field the version lacks


class ListedGroups(NamedTuple):
    throttle_time_ms: int
    error_code: int
    groups: list[ListedGroup] | None


def _decode_list_groups(data: bytes, version: int) -> ListedGroups:
    """ListGroupsResponse v4-v5 with its header: a broker's every group (100,000 in a big
    listing). The protocol type, state and type are a few distinct strings: one str each."""
    new = tuple.__new__
    pos = _body_start(data)
    throttle, error = _INT32(data, pos)[0], _INT16(data, pos + 4)[0]
    count, pos = _array_size(data, pos + 6)
    groups: list[ListedGroup] = []  # a null array (count -1) is None in the answer
    words: dict[bytes, str] = {}

    def word(pos: int) -> tuple[str, int]:
        size = data[pos]
        if size < 0x80:  # a one-byte length, as every state and type has (null or "" alike: "")
            raw = data[pos + 1 : pos + size]
            pos += size or 1
        else:
            size, pos = _uvarint(data, pos)
            raw = data[pos : pos + size - 1]
            pos += size - 1
        text = words.get(raw)
        if text is None:
            text = words[raw] = raw.decode("utf-8")
        return text, pos

    for _ in range(count):
        size = data[pos]
        if 0 < size < 0x80:  # a group id shorter than 127 bytes: nearly every one
            group_id: str | None = data[pos + 1 : pos + size].decode("utf-8")
            pos += size
        else:
            group_id, pos = _string(data, pos)
        protocol_type, pos = word(pos)
        state, pos = word(pos)
        group_type = ""
        if version >= 5:
            group_type, pos = word(pos)
        pos = pos + 1 if data[pos] == 0 else _skip_tags(data, pos)
        groups.append(new(ListedGroup, (group_id, protocol_type, state, group_type)))
    return ListedGroups(throttle, error, groups if count >= 0 else None)


DECODERS: dict[tuple[int, int], Callable[[bytes], Any]] = {
    (OFFSET_FETCH, 8): decode_offset_fetch,
    (OFFSET_FETCH, 9): decode_offset_fetch,
    (DESCRIBE_GROUPS, 5): lambda data: _decode_describe_groups(data, 5),
    (DESCRIBE_GROUPS, 6): lambda data: _decode_describe_groups(data, 6),
    (LIST_GROUPS, 4): lambda data: _decode_list_groups(data, 4),
    (LIST_GROUPS, 5): lambda data: _decode_list_groups(data, 5),
}


class Response(Protocol):
    """What :func:`decoder_for` reads of a response class (kafka-python's, which ships no types):
    its API key and its own decoder of a frame, header included."""

    API_KEY: int

    @classmethod
    def decode(cls, data: bytes, version: int, header: bool) -> Any: ...


def decoder_for(response_cls: type[Response], version: int) -> Callable[[bytes], Any]:
    """The decoder of ``response_cls`` at ``version``: a hand-written one above, else kafka-python's."""
    fast = DECODERS.get((response_cls.API_KEY, version))
    if fast is not None:
        return fast
    return lambda data: response_cls.decode(data, version=version, header=True)
