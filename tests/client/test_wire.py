"""client/wire.py's hand-written decoders against kafka-python's: the same bytes decoded both
ways give the same fields, for every version wire.py decodes (OffsetFetch v8, v9;
DescribeGroups v5, v6).

The bytes come two ways: kafka-python's own encoder (error codes, null and non-empty metadata,
null error messages and instance ids, members with their assignments), and a small writer
below that follows Kafka's message specs (clients/src/main/resources/common/message/
OffsetFetchResponse.json, DescribeGroupsResponse.json; flexible versions: compact strings and
arrays, a tagged-field section after every struct) and puts unknown tagged fields at every
level, which kafka-python's encoder cannot write and both decoders must skip alike.
"""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.schemas.fields.codecs.types import BitField

from airflow_provider_kgroups.client.errors import Failure
from airflow_provider_kgroups.client.handlers.offset_fetch import committed_of
from airflow_provider_kgroups.client.protocol import (
    DescribeGroupsResponse,
    ListGroupsResponse,
    OffsetFetchResponse,
)
from airflow_provider_kgroups.client.results import CommittedOffset, TopicPartition
from airflow_provider_kgroups.client.wire import DECODERS, decoder_for

HEADER = struct.pack(">i", 42) + b"\x00"  # correlation id, no tagged fields (flexible response header)


def kp_decode(cls, data: bytes, version: int):
    return cls.decode(data, version=version, header=True)


# -- a spec-following writer for the tagged-field cases ---------------------------------------


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def cstr(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def cbytes(raw: bytes) -> bytes:
    return uvarint(len(raw) + 1) + raw


def carray(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def tags(*fields: tuple[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in fields)


SOME_TAGS = tags((7, b"\x01\x02\x03"), (300, b"x" * 200))  # a two-byte tag number and a two-byte size


# -- comparing -------------------------------------------------------------------------------


def offset_fetch_fields(response) -> tuple:
    """What wire.py's OffsetFetch decoder gives, in order (partitions in the answer's order)."""
    return (
        response.throttle_time_ms,
        [(g.group_id, g.error_code, list(g.partitions.items()), g.errors) for g in response.groups],
    )


def kp_offset_fetch_fields(response) -> tuple:
    """kafka-python's decode of the same bytes, each group's containers converted by the handler's
    own rule for the answers kafka-python decodes (v0-v7: ``committed_of``)."""
    out = []
    for g in response.groups:
        partitions, errors = committed_of(g.topics)
        out.append((g.group_id, g.error_code, list(partitions.items()), errors))
    return response.throttle_time_ms, out


def describe_fields(response, version: int, *, raw_operations: bool) -> tuple:
    def operations(value):
        if not raw_operations:
            return value
        bits = BitField.from_32_bit_field(value)  # what kafka-python makes of the same raw bits
        return None if bits == {31} else bits

    return (
        response.throttle_time_ms,
        [
            (
                g.error_code,
                g.error_message if version >= 6 else None,
                g.group_id,
                g.group_state,
                g.protocol_type,
                g.protocol_data,
                [
                    (
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.client_host,
                        bytes(m.member_metadata),
                        bytes(m.member_assignment),
                    )
                    for m in g.members
                ],
                operations(g.authorized_operations),
            )
            for g in response.groups
        ],
    )


def assert_offset_fetch_same(data: bytes, version: int) -> None:
    ours = decoder_for(OffsetFetchResponse, version)(data)
    theirs = kp_decode(OffsetFetchResponse, data, version)
    assert offset_fetch_fields(ours) == kp_offset_fetch_fields(theirs)
    # and field for field against kafka-python's containers, unconverted
    for group, kp_group in zip(ours.groups, theirs.groups, strict=True):
        kp_partitions = [(t.name, p) for t in kp_group.topics for p in t.partitions]
        assert len(group.partitions) == len(kp_partitions)
        for (tp, value), (name, p) in zip(group.partitions.items(), kp_partitions):
            assert (tp.topic, tp.partition) == (name, p.partition_index)
            assert value.offset == (None if p.committed_offset == -1 else p.committed_offset)
            assert value.metadata == (p.metadata or "")
            assert value.leader_epoch == (None if p.committed_leader_epoch < 0 else p.committed_leader_epoch)
            assert (value.error.code if value.error else 0) == p.error_code


def assert_describe_same(data: bytes, version: int) -> None:
    ours = decoder_for(DescribeGroupsResponse, version)(data)
    theirs = kp_decode(DescribeGroupsResponse, data, version)
    assert describe_fields(ours, version, raw_operations=True) == describe_fields(
        theirs, version, raw_operations=False
    )


def test_the_hand_written_decoders_are_exactly_these_versions():
    assert sorted(DECODERS) == [(9, 8), (9, 9), (15, 5), (15, 6), (16, 4), (16, 5)]
    # any other version: kafka-python's own decoder and message class
    data = HEADER[:4] + OffsetFetchResponse(throttle_time_ms=0, topics=[], error_code=0).encode(version=5)
    assert isinstance(decoder_for(OffsetFetchResponse, 5)(data), OffsetFetchResponse)


# -- OffsetFetch v8, v9 ----------------------------------------------------------------------


def kp_offset_fetch(version: int) -> bytes:
    R = OffsetFetchResponse
    G = R.OffsetFetchResponseGroup
    T = G.OffsetFetchResponseTopics
    P = T.OffsetFetchResponsePartitions
    groups = [
        G(
            group_id="orders",
            error_code=0,
            topics=[
                T(
                    name="orders",
                    partitions=[
                        P(
                            partition_index=0,
                            committed_offset=1_234_567_890_123,
                            committed_leader_epoch=7,
                            metadata="",
                            error_code=0,
                        ),
                        P(
                            partition_index=1,
                            committed_offset=-1,
                            committed_leader_epoch=-1,
                            metadata=None,
                            error_code=0,
                        ),
                        P(
                            partition_index=2,
                            committed_offset=5,
                            committed_leader_epoch=-1,
                            metadata="résumé ✓",
                            error_code=0,
                        ),
                        P(
                            partition_index=3,
                            committed_offset=-1,
                            committed_leader_epoch=-1,
                            metadata="",
                            error_code=88,
                        ),
                    ],
                ),
                T(
                    name="payments",
                    partitions=[
                        P(
                            partition_index=70000,
                            committed_offset=0,
                            committed_leader_epoch=2**31 - 1,
                            metadata="m" * 300,
                            error_code=29,
                        )
                    ],
                ),
            ],
        ),
        G(group_id="no-topics", error_code=0, topics=[]),
        G(group_id="denied", error_code=30, topics=[]),
        G(group_id="loading", error_code=14, topics=[]),
        G(
            group_id="grüße " + "g" * 200,
            error_code=0,
            topics=[
                T(
                    name="orders",
                    partitions=[
                        P(
                            partition_index=0,
                            committed_offset=9,
                            committed_leader_epoch=-1,
                            metadata="",
                            error_code=0,
                        )
                    ],
                )
            ],
        ),
    ]
    return HEADER + R(throttle_time_ms=1500, groups=groups).encode(version=version)


@pytest.mark.parametrize("version", [8, 9])
def test_offset_fetch_matches_kafka_python(version):
    data = kp_offset_fetch(version)
    assert_offset_fetch_same(data, version)
    ours = decoder_for(OffsetFetchResponse, version)(data)
    orders = list(ours.groups[0].partitions.values())
    assert orders[0] == CommittedOffset(1_234_567_890_123, "", 7, None)
    assert orders[1] == CommittedOffset(None, "", None, None)  # -1: no commit; null metadata: ""
    assert orders[2].metadata == "résumé ✓"
    assert orders[3].error == Failure(88)
    assert ours.groups[0].errors and not ours.groups[1].errors
    assert [g.error_code for g in ours.groups] == [0, 0, 30, 14, 0]
    assert ours.throttle_time_ms == 1500


@pytest.mark.parametrize("version", [8, 9])
def test_offset_fetch_skips_unknown_tagged_fields_at_every_level(version):
    def partition(index, offset, metadata, error, tagged=b"\x00"):
        return struct.pack(">iqi", index, offset, -1) + cstr(metadata) + struct.pack(">h", error) + tagged

    body = (
        struct.pack(">i", 0)
        + carray(
            [
                cstr("g1")
                + carray(
                    [
                        cstr("orders")
                        + carray(
                            [
                                partition(
                                    0, 10, "", 0, SOME_TAGS
                                ),  # the plain shape, but tagged: not the one-call path
                                partition(1, 11, "", 0),
                                partition(2, 12, None, 3, SOME_TAGS),
                            ]
                        )
                        + SOME_TAGS,
                    ]
                )
                + struct.pack(">h", 0)
                + SOME_TAGS,
                cstr("g2") + carray([]) + struct.pack(">h", 16) + b"\x00",
            ]
        )
        + SOME_TAGS
    )
    data = struct.pack(">i", 42) + SOME_TAGS + body  # tagged fields in the response header too
    assert_offset_fetch_same(data, version)
    ours = decoder_for(OffsetFetchResponse, version)(data)
    orders = [TopicPartition("orders", p) for p in range(3)]
    assert offset_fetch_fields(ours) == (
        0,
        [
            (
                "g1",
                0,
                [
                    (orders[0], CommittedOffset(10, "", None, None)),
                    (orders[1], CommittedOffset(11, "", None, None)),
                    (orders[2], CommittedOffset(12, "", None, Failure(3))),
                ],
                True,
            ),
            ("g2", 16, [], False),
        ],
    )


@pytest.mark.parametrize("version", [8, 9])
def test_offset_fetch_topics_of_plain_partitions_and_of_mixed_ones(version):
    """A topic whose partitions all have the plain shape (read with one unpack: no commit, an
    unknown epoch, an error among them) and one whose plain partitions come before one that is
    not (read partition by partition), in the same group."""

    def partition(index, offset, epoch, metadata, error):
        return struct.pack(">iqi", index, offset, epoch) + cstr(metadata) + struct.pack(">h", error) + b"\x00"

    plain = [partition(0, -1, -1, "", 0), partition(1, 7, 2, "", 0), partition(2, 8, -1, "", 3)]
    mixed = [partition(0, 5, 0, "", 0), partition(1, 6, 0, "", 0), partition(2, 9, 1, "meta", 0)]
    body = (
        struct.pack(">i", 0)
        + carray(
            [
                cstr("g1")
                + carray([cstr("plain") + carray(plain) + b"\x00", cstr("mixed") + carray(mixed) + b"\x00"])
                + struct.pack(">h", 0)
                + b"\x00",
            ]
        )
        + b"\x00"
    )
    data = struct.pack(">i", 42) + b"\x00" + body
    assert_offset_fetch_same(data, version)
    ours = decoder_for(OffsetFetchResponse, version)(data)
    assert [(tp.topic, tp.partition, c) for tp, c in ours.groups[0].partitions.items()] == [
        ("plain", 0, CommittedOffset(None, "", None, None)),
        ("plain", 1, CommittedOffset(7, "", 2, None)),
        ("plain", 2, CommittedOffset(8, "", None, Failure(3))),
        ("mixed", 0, CommittedOffset(5, "", 0, None)),
        ("mixed", 1, CommittedOffset(6, "", 0, None)),
        ("mixed", 2, CommittedOffset(9, "meta", 1, None)),
    ]
    assert ours.groups[0].errors


def test_offset_fetch_of_many_groups_matches_kafka_python():
    """A response as big as one chunk (1,000 groups of 4 partitions), varint lengths past one byte."""
    R = OffsetFetchResponse
    G = R.OffsetFetchResponseGroup
    T = G.OffsetFetchResponseTopics
    P = T.OffsetFetchResponsePartitions
    groups = [
        G(
            group_id=f"acc-g{g:06d}",
            error_code=0,
            topics=[
                T(
                    name=f"acc-topic-{g % 30:03d}",
                    partitions=[
                        P(
                            partition_index=p,
                            committed_offset=9_000 + g,
                            committed_leader_epoch=g % 3 - 1,
                            metadata=("" if g % 7 else None) if g % 5 else f"m{g}",
                            error_code=0 if g % 11 else 3,
                        )
                        for p in range(4)
                    ],
                )
            ],
        )
        for g in range(1000)
    ]
    data = HEADER + R(throttle_time_ms=0, groups=groups).encode(version=9)
    assert_offset_fetch_same(data, 9)


@pytest.mark.parametrize(
    ("where", "body"),
    [
        ("the groups array", struct.pack(">i", 0) + b"\x00" + b"\x00"),
        (
            "'g1''s topics array",
            struct.pack(">i", 0) + carray([cstr("g1") + b"\x00" + struct.pack(">h", 0) + b"\x00"]) + b"\x00",
        ),
        (
            "'orders''s partitions array",
            struct.pack(">i", 0)
            + carray(
                [cstr("g1") + carray([cstr("orders") + b"\x00" + b"\x00"]) + struct.pack(">h", 0) + b"\x00"]
            )
            + b"\x00",
        ),
    ],
)
def test_offset_fetch_refuses_a_null_array(where, body):
    """OffsetFetchResponse.json makes none of these arrays nullable: a null one is not read as
    "no commits" (an unknown read as nothing) but refused, so the request fails as undecodable."""
    with pytest.raises(ValueError, match="is null"):
        decoder_for(OffsetFetchResponse, 8)(HEADER + body)


# -- DescribeGroups v5, v6 -------------------------------------------------------------------


def kp_describe(version: int) -> bytes:
    R = DescribeGroupsResponse
    G = R.DescribedGroup
    M = G.DescribedGroupMember
    groups = [
        G(
            error_code=0,
            error_message=None,
            group_id="orders",
            group_state="Stable",
            protocol_type="consumer",
            protocol_data="range",
            authorized_operations=None,
            members=[
                M(
                    member_id="m-1",
                    group_instance_id=None,
                    client_id="c1",
                    client_host="/10.0.0.1",
                    member_metadata=b"\x00\x01sub",
                    member_assignment=b"\x00\x01assign",
                ),
                M(
                    member_id="m-2",
                    group_instance_id="static-2",
                    client_id="c2",
                    client_host="/10.0.0.2",
                    member_metadata=b"",
                    member_assignment=b"",
                ),
            ],
        ),
        G(
            error_code=0,
            error_message=None,
            group_id="empty",
            group_state="Empty",
            protocol_type="",
            protocol_data="",
            authorized_operations={3, 4, 5},
            members=[],
        ),
        G(
            error_code=69,
            error_message="Group gone not found.",
            group_id="gone",
            group_state="Dead",
            protocol_type="",
            protocol_data="",
            authorized_operations=None,
            members=[],
        ),
        G(
            error_code=30,
            error_message=None,
            group_id="denied",
            group_state="",
            protocol_type="",
            protocol_data="",
            authorized_operations=None,
            members=[],
        ),
    ]
    return HEADER + R(throttle_time_ms=7, groups=groups).encode(version=version)


@pytest.mark.parametrize("version", [5, 6])
def test_describe_groups_matches_kafka_python(version):
    data = kp_describe(version)
    assert_describe_same(data, version)
    ours = decoder_for(DescribeGroupsResponse, version)(data)
    assert [m.group_instance_id for m in ours.groups[0].members] == [None, "static-2"]
    assert ours.groups[0].members[0].member_assignment == b"\x00\x01assign"
    assert [g.error_code for g in ours.groups] == [0, 0, 69, 30]
    if version >= 6:
        assert ours.groups[2].error_message == "Group gone not found."


@pytest.mark.parametrize("version", [5, 6])
def test_describe_groups_skips_unknown_tagged_fields_at_every_level(version):
    message = cstr("no") if version >= 6 else b""
    member = cstr("m") + cstr(None) + cstr("c") + cstr("h") + cbytes(b"md") + cbytes(b"as") + SOME_TAGS
    group = (
        struct.pack(">h", 0)
        + message
        + cstr("g")
        + cstr("Stable")
        + cstr("consumer")
        + cstr("range")
        + carray([member, member])
        + struct.pack(">I", 0x80000000)
        + SOME_TAGS
    )
    data = struct.pack(">i", 1) + SOME_TAGS + struct.pack(">i", 0) + carray([group, group]) + SOME_TAGS
    assert_describe_same(data, version)
    ours = decoder_for(DescribeGroupsResponse, version)(data)
    assert [(m.member_id, m.member_metadata, m.member_assignment) for m in ours.groups[1].members] == [
        ("m", b"md", b"as")
    ] * 2


# -- the OffsetFetch request encoded here (AllOffsetsFetch) -------------------------------------


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize("require_stable", [False, True])
@pytest.mark.parametrize("client_id", ["kgroups-cli", "", None, "klient-ü"])
def test_the_every_offset_request_is_byte_for_byte_kafka_pythons(version, require_stable, client_id):
    """Group ids of every length class (empty, one byte, 126/127/128 bytes around the varint's
    one-byte limit, non-ASCII, thousands of bytes) and group counts around it: the frames equal
    kafka-python's encoding of the same OffsetFetchRequest."""
    from airflow_provider_kgroups.client.protocol import AllOffsetsFetch, OffsetFetchRequest

    ids_sets = [
        [],
        ["g"],
        ["", "x" * 126, "y" * 127, "z" * 128, "grüppe-ñ", "w" * 5000],
        [f"acc-g{i:06d}" for i in range(130)],
    ]
    for ids in ids_sets:
        ours = AllOffsetsFetch(ids, require_stable)
        theirs = OffsetFetchRequest(
            groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None) for g in ids],
            require_stable=require_stable,
        )
        for request in (ours, theirs):
            request.with_header(correlation_id=2**31 - 7, client_id=client_id)
        assert ours.encode(version=version, header=True, framed=True) == theirs.encode(
            version=version, header=True, framed=True
        ), ids[:3]
        assert ours.encode(version=version) == theirs.encode(version=version)
    assert AllOffsetsFetch.API_KEY == OffsetFetchRequest.API_KEY and AllOffsetsFetch.name == theirs.name


# -- ListGroups v4, v5 -----------------------------------------------------------------------


def list_groups_fields(response) -> tuple:
    return (
        response.throttle_time_ms,
        response.error_code,
        [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in response.groups],
    )


@pytest.mark.parametrize("version", [4, 5])
@pytest.mark.parametrize("error_code", [0, 14])
def test_list_groups_matches_kafka_python(version, error_code):
    """Every group of a broker: ids of every length class and non-ASCII, empty protocol types
    (groups made by commits alone), every state and type, the same few strings many times."""
    R = ListGroupsResponse
    groups = [
        R.ListedGroup(group_id=gid, protocol_type=ptype, group_state=state, group_type=gtype)
        for gid, ptype, state, gtype in [
            ("g", "consumer", "Empty", "classic"),
            ("grüppe-ñ", "", "Stable", "consumer"),
            ("x" * 200, "connect", "PreparingRebalance", "classic"),
            ("share-1", "share", "Empty", "share"),
            *((f"acc-g{i:06d}", "consumer", "Stable", "classic") for i in range(300)),
        ]
    ]
    data = HEADER + R(throttle_time_ms=250, error_code=error_code, groups=groups).encode(version=version)
    ours, theirs = decoder_for(R, version)(data), kp_decode(R, data, version)
    assert list_groups_fields(ours) == list_groups_fields(theirs)
    empty = HEADER + R(throttle_time_ms=0, error_code=error_code, groups=[]).encode(version=version)
    assert list_groups_fields(decoder_for(R, version)(empty)) == list_groups_fields(
        kp_decode(R, empty, version)
    )


@pytest.mark.parametrize("version", [4, 5])
def test_list_groups_skips_unknown_tagged_fields_at_every_level(version):
    """Written by the spec (ListGroupsResponse.json, flexible from v3) with tagged fields after
    each group and after the body: both decoders skip them alike."""
    group = cstr("g-1") + cstr("consumer") + cstr("Stable") + (cstr("classic") if version >= 5 else b"")
    body = struct.pack(">ih", 9, 0) + carray([group + SOME_TAGS, group + b"\x00"]) + SOME_TAGS
    data = HEADER + body
    ours, theirs = (
        decoder_for(ListGroupsResponse, version)(data),
        kp_decode(ListGroupsResponse, data, version),
    )
    assert list_groups_fields(ours) == list_groups_fields(theirs)
    assert [g.group_id for g in ours.groups] == ["g-1", "g-1"]


@pytest.mark.parametrize("version", [4, 5])
def test_list_groups_null_groups_array_is_none_as_kafka_pythons(version):
    """A null groups array (compact length 0) is None, not an empty list, as kafka-python decodes it."""
    data = HEADER + struct.pack(">ih", 0, 0) + b"\x00" + b"\x00"  # throttle, error, null groups, no tags
    ours, theirs = (
        decoder_for(ListGroupsResponse, version)(data),
        kp_decode(ListGroupsResponse, data, version),
    )
    assert ours.groups is None and theirs.groups is None


@pytest.mark.parametrize("version", [5, 6])
def test_describe_groups_null_arrays_are_none_as_kafka_pythons(version):
    """A null groups array, and a group's null members array, are None, not empty lists, as
    kafka-python decodes them."""
    null_groups = HEADER + struct.pack(">i", 0) + b"\x00" + b"\x00"
    ours = decoder_for(DescribeGroupsResponse, version)(null_groups)
    assert ours.groups is None and kp_decode(DescribeGroupsResponse, null_groups, version).groups is None
    message = cstr(None) if version >= 6 else b""
    group = struct.pack(">h", 0) + message + cstr("g") + cstr("Dead") + cstr("") + cstr("")
    group += b"\x00" + struct.pack(">I", 0) + b"\x00"  # null members, operations, no tags
    data = HEADER + struct.pack(">i", 0) + carray([group, group]) + b"\x00"
    members = [g.members for g in decoder_for(DescribeGroupsResponse, version)(data).groups]
    theirs = [g.members for g in kp_decode(DescribeGroupsResponse, data, version).groups]
    assert members == theirs == [None, None]
