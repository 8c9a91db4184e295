"""Large batches within frame limits: chunked requests, a broker's request-size cap, responses
over the client's ``max_response_bytes``.

The fake follows Kafka's ``SocketServer`` / ``NetworkReceive.readFrom``: a request frame over
``socket.request.max.bytes`` is not read and the connection is closed
(``InvalidReceiveException``, then ``Selector.pollSelectionKeys`` closes the channel). Every
group-keyed batch (FindCoordinator v4+ after ``CoordinatorStrategy``, OffsetFetch v8+ after
``ListConsumerGroupOffsetsHandler``, DescribeGroups / ConsumerGroupDescribe after
``DescribeConsumerGroupsHandler``, DeleteGroups after ``DeleteConsumerGroupsHandler``) is cut by
the client into requests of at most ``max_groups_per_request`` groups and ``max_request_bytes``.
"""

from __future__ import annotations

import math
import random
import time

import pytest
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest
from kafka.protocol.consumer import OffsetFetchRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    ClientConfig,
    ConfigurationError,
    TopicPartition,
)
from airflow_provider_kgroups.client.chunking import RequestLimits, RequestSizer, chunk
from airflow_provider_kgroups.client.errors import CLIENT_RESPONSE_TOO_LARGE, CLIENT_TIMEOUT, ErrorCode
from airflow_provider_kgroups.client.protocol import ConsumerGroupDescribeRequest
from airflow_provider_kgroups.client.results import GroupDeletion, GroupState
from tests.support.fakekafka import FakeCluster, Member
from tests.support.fakeutil import counts

_OFG = OffsetFetchRequest.OffsetFetchRequestGroup
_MAKERS = {
    "FindCoordinator": (lambda ks: FindCoordinatorRequest(key_type=0, coordinator_keys=ks), (4, 5, 6)),
    "DescribeGroups": (
        lambda ks: DescribeGroupsRequest(groups=ks, include_authorized_operations=False),
        (0, 1, 2, 3, 4, 5),
    ),
    "ConsumerGroupDescribe": (
        lambda ks: ConsumerGroupDescribeRequest(group_ids=ks, include_authorized_operations=False),
        (0,),
    ),
    "DeleteGroups": (lambda ks: DeleteGroupsRequest(groups_names=ks), (0, 1, 2)),
    "OffsetFetch all partitions": (
        lambda ks: OffsetFetchRequest(
            groups=[_OFG(group_id=g, topics=None) for g in ks], require_stable=False
        ),
        (8, 9),
    ),
    "OffsetFetch named topics": (
        lambda ks: OffsetFetchRequest(
            groups=[
                _OFG(
                    group_id=g,
                    topics=[
                        _OFG.OffsetFetchRequestTopics(name="orders-é", partition_indexes=list(range(300)))
                    ],
                )
                for g in ks
            ],
            require_stable=True,
        ),
        (8, 9),
    ),
}


def _encoded(request, version: int, client_id: str) -> int:
    request.with_header(correlation_id=7, client_id=client_id)
    return len(request.encode(version=version, header=True))


@pytest.mark.parametrize("api", sorted(_MAKERS))
def test_request_size_is_computed_exactly_before_sending(api):
    """What the chunker counts is what goes on the wire (frame after its 4-byte length, as
    Kafka's socket.request.max.bytes counts it), for ASCII, multi-byte and long ids alike."""
    make, versions = _MAKERS[api]
    rnd = random.Random(api)
    for version in versions:
        sizer = RequestSizer(make, version, "kgroups-ü")
        for n in (0, 1, 2, 127, 128, 3000):
            keys = [
                "".join(rnd.choice("ab-é€😀 ") for _ in range(rnd.choice((1, 9, 130, 2000))))
                for _ in range(n)
            ]
            assert sizer.size(keys) == _encoded(make(keys), version, "kgroups-ü"), (version, n)


def test_chunks_respect_both_limits_and_keep_order():
    sizer = RequestSizer(_MAKERS["DescribeGroups"][0], 5, "kgroups")
    keys = [f"g{i:05d}" for i in range(2500)]  # 6 bytes + 1 length byte each
    by_count = chunk(keys, sizer, RequestLimits(max_groups=1000, max_bytes=10**9))
    assert [len(c) for c in by_count] == [1000, 1000, 500]
    max_bytes = 2048
    by_bytes = chunk(keys, sizer, RequestLimits(max_groups=1000, max_bytes=max_bytes))
    assert [k for c in by_bytes for k in c] == keys
    assert all(sizer.size(c) <= max_bytes for c in by_bytes)
    assert all(sizer.size(c + [keys[0]]) > max_bytes for c in by_bytes[:-1])  # each as full as it can be
    huge = "h" * 5000  # alone over the limit: it cannot be split, so it goes alone
    assert chunk(["a", huge, "b"], sizer, RequestLimits(max_groups=10, max_bytes=max_bytes)) == [
        ["a"],
        [huge],
        ["b"],
    ]


def _greedy_chunks(keys, sizer, limits):
    """The oracle: a key joins the current chunk when the exact size of the result allows it."""
    out, current = [], []
    for key in keys:
        if current and (len(current) >= limits.max_groups or sizer.size(current + [key]) > limits.max_bytes):
            out.append(current)
            current = []
        current.append(key)
    return out + ([current] if current else [])


@pytest.mark.parametrize("api", sorted(_MAKERS))
def test_chunks_are_as_full_as_the_exact_size_allows_for_any_key(api):
    """chunk() counts sizes inline; RequestSizer.size (checked against the wire above) is the
    oracle, byte for byte: every limit in a range, so that some chunk lands exactly on it, with
    ids whose UTF-8 length sits on either side of a one-byte varint (126/127 bytes), multi-byte
    ids, and chunks of more than 127 ids (the array length's varint grows), in every version."""
    make, versions = _MAKERS[api]
    rnd = random.Random(f"chunks-{api}")
    long_keys = ["".join(rnd.choice("ab") for _ in range(n)) for n in (126, 127, 125, 128, 126, 127)] + [
        "é" * 63,
        "é" * 64,
        "😀" * 40,
        "x",
    ] * 2
    short_keys = [f"{i:02d}" for i in range(400)]
    for version in versions:
        sizer = RequestSizer(make, version, "kgroups-ü")
        for keys, byte_limits in (
            (long_keys, range(sizer.size(long_keys[:3]) - 8, sizer.size(long_keys[:3]) + 8)),
            (short_keys, range(sizer.size(short_keys[:127]) - 6, sizer.size(short_keys[:127]) + 6)),
        ):
            for max_bytes in byte_limits:
                limits = RequestLimits(max_groups=1000, max_bytes=max_bytes)
                assert chunk(keys, sizer, limits) == _greedy_chunks(keys, sizer, limits), (version, max_bytes)
        limits = RequestLimits(max_groups=130, max_bytes=10**9)
        assert [len(c) for c in chunk(short_keys, sizer, limits)] == [130, 130, 130, 10]


@pytest.mark.parametrize(
    "option, value, fragment",
    [
        ("max_groups_per_request", 0, "at least 1 groups"),
        ("max_groups_per_request", 1.5, "whole number of groups"),
        ("max_groups_per_request", True, "whole number of groups"),
        ("max_request_bytes", 100, "at least 1024 bytes"),
        ("max_response_bytes", "big", "whole number of bytes"),
        ("max_in_flight_per_connection", 0, "at least 1 requests"),
    ],
)
def test_size_options_are_validated_before_any_connection(option, value, fragment):
    with pytest.raises(ConfigurationError, match=f"{option} must be .*{fragment}"):
        ClientConfig.create("a:1", **{option: value})


def test_receive_message_max_bytes_property_sets_max_response_bytes():
    from airflow_provider_kgroups.client.properties import config_from_kafka_properties

    config = config_from_kafka_properties(
        {"bootstrap.servers": "a:1", "receive.message.max.bytes": "5000000"}
    )
    assert config.max_response_bytes == 5_000_000
    with pytest.raises(ConfigurationError, match="receive.message.max.bytes must be a whole number"):
        config_from_kafka_properties({"bootstrap.servers": "a:1", "receive.message.max.bytes": "5MB"})


def test_connection_extras_carry_the_size_options_as_text_or_numbers():
    from airflow_provider_kgroups.hooks.connection import client_config_from_connection

    config = client_config_from_connection(
        "kgroups",
        host="k:9092",
        extra={
            "max_groups_per_request": "500",
            "max_request_bytes": 65536,
            "max_in_flight_per_connection": "2",
        },
    )
    assert (config.max_groups_per_request, config.max_request_bytes, config.max_in_flight_per_connection) == (
        500,
        65536,
        2,
    )
    with pytest.raises(ConfigurationError, match="max_response_bytes must be a whole number"):
        client_config_from_connection("kgroups", host="k:9092", extra={"max_response_bytes": "1e6"})


# ------------------------------------------------------------------------------------------- 100,000 groups

GROUPS = 100_000
BROKERS = 30
CAP = 256 * 1024  # the fake's socket.request.max.bytes, and the client's max_response_bytes


def _seed_100k(c: FakeCluster) -> list[str]:
    """Every 100th group a KIP-848 consumer group, every 100th + 1 a classic group with a member
    (DeleteGroups answers NON_EMPTY_GROUP), the rest Empty classic groups; one commit each."""
    c.add_topic("orders", 30, end_offsets=10**6)
    ids = [f"grp-{i:06d}" for i in range(GROUPS)]
    for i, g in enumerate(ids):
        if i % 100 == 0:
            c.add_group(g, offsets={("orders", i % 30): i}, group_type="consumer")
        elif i % 100 == 1:
            c.add_group(
                g,
                offsets={("orders", i % 30): i},
                members=[Member(f"m-{i}", assignment={"orders": [i % 30]})],
            )
        else:
            c.add_group(g, offsets={("orders", i % 30): i})
    return ids


def _per_coordinator(c: FakeCluster, ids, api: str) -> dict[int, int]:
    return {node: n for node in c.node_ids if (n := c.count(api, node))}


def _expected_requests(c: FakeCluster, ids, per_request: int) -> dict[int, int]:
    owners: dict[int, int] = {}
    for g in ids:
        owners[c.coordinator_of(g)] = owners.get(c.coordinator_of(g), 0) + 1
    return {node: math.ceil(n / per_request) for node, n in owners.items()}


async def test_100k_groups_over_30_brokers_stay_within_the_frame_cap(capsys):
    """Describe, fetch offsets and delete 100,000 groups: every request and response is within
    a 256 KiB cap (the fake refuses larger requests, the client larger responses), every group
    has its exact outcome, and each coordinator gets ceil(its groups / 1000) requests per API."""
    async with FakeCluster(brokers=BROKERS, max_request_bytes=CAP) as c:
        ids = _seed_100k(c)
        consumer = [g for i, g in enumerate(ids) if i % 100 == 0]
        stable = {g for i, g in enumerate(ids) if i % 100 == 1}
        config = ClientConfig.create(c.bootstrap, retry_backoff_s=0.01, max_response_bytes=CAP)
        assert (config.max_groups_per_request, config.max_request_bytes) == (1000, 1024 * 1024)  # defaults
        timings = {}
        async with AsyncGroupsClient(config) as client:
            started = time.monotonic()
            described = await client.describe_groups(ids, timeout_s=300)
            timings["describe"] = time.monotonic() - started
            assert described.failures == {}
            assert len(described.values) == GROUPS
            for i, g in enumerate(ids):
                d = described.values[g]
                expected = (
                    ("consumer", GroupState.EMPTY, 0)
                    if i % 100 == 0
                    else ("classic", GroupState.STABLE, 1)
                    if i % 100 == 1
                    else ("classic", GroupState.EMPTY, 0)
                )
                assert (d.group_type, d.state, len(d.members)) == expected, g

            started = time.monotonic()
            offsets = await client.fetch_committed_offsets(ids, timeout_s=300)
            timings["offsets"] = time.monotonic() - started
            assert offsets.failures == {}
            assert {g: v.committed() for g, v in offsets.values.items()} == {
                g: {TopicPartition("orders", i % 30): i} for i, g in enumerate(ids)
            }

            started = time.monotonic()
            deleted = await client.delete_groups(ids, timeout_s=300)
            timings["delete"] = time.monotonic() - started
            assert deleted.values == {g: GroupDeletion.DELETED for g in ids if g not in stable}
            assert {g: f.code for g, f in deleted.failures.items()} == {
                g: ErrorCode.NON_EMPTY_GROUP for g in stable
            }

        assert c.refused_requests() == []
        per_coordinator = _expected_requests(c, ids, 1000)
        consumer_per_coordinator = _expected_requests(c, consumer, 1000)
        assert len(per_coordinator) == BROKERS and min(per_coordinator.values()) >= 2  # every broker chunks
        assert counts(c) == {
            "Metadata": 1,
            "FindCoordinator": GROUPS // 1000,
            "DescribeGroups": sum(per_coordinator.values()),
            "ConsumerGroupDescribe": sum(consumer_per_coordinator.values()),
            "OffsetFetch": sum(per_coordinator.values()),
            "DeleteGroups": sum(per_coordinator.values()),
        }
        assert c.count("ApiVersions") == BROKERS + 1  # one connection per broker (+ bootstrap): none dropped
        for api in ("DescribeGroups", "OffsetFetch", "DeleteGroups"):
            assert _per_coordinator(c, ids, api) == per_coordinator, api
        assert _per_coordinator(c, consumer, "ConsumerGroupDescribe") == consumer_per_coordinator
        sizes = {
            api: (c.largest_request(api), c.largest_response(api))
            for api in (
                "FindCoordinator",
                "DescribeGroups",
                "ConsumerGroupDescribe",
                "OffsetFetch",
                "DeleteGroups",
            )
        }
        assert c.largest_request() <= CAP and c.largest_response() <= CAP
        with capsys.disabled():
            print(
                f"\n100k groups / {BROKERS} brokers: seconds { ({k: round(v, 1) for k, v in timings.items()}) }; "
                f"requests {counts(c)}; largest (request, response) bytes {sizes}"
            )


# ------------------------------------------------------------------------------------------- over the cap

SMALL_CAP = 8 * 1024


def _long_ids(n: int) -> list[str]:
    return [f"group-{i:04d}-" + "x" * 50 for i in range(n)]  # 61 bytes each


@pytest.mark.parametrize("find_coordinator, over_cap_api", [(6, "FindCoordinator"), (3, "DescribeGroups")])
async def test_without_chunking_the_over_cap_request_is_refused_and_each_group_says_why(
    find_coordinator, over_cap_api
):
    """With chunking switched off (limits far above the broker's cap), the request over the cap
    (the batched FindCoordinator, or with FindCoordinator v3 the DescribeGroups) makes the broker
    close the connection; the client retries within the deadline and then fails every group with
    CLIENT_TIMEOUT naming the request and its size. No hang, nothing else broken."""
    async with FakeCluster(
        brokers=1, max_request_bytes=SMALL_CAP, api_versions={"FindCoordinator": find_coordinator}
    ) as c:
        ids = _long_ids(200)  # about 12.6 KB of ids
        for g in ids:
            c.add_group(g)
        unbounded = ClientConfig.create(
            c.bootstrap,
            retry_backoff_s=0.05,
            max_groups_per_request=10**6,
            max_request_bytes=100 * 1024 * 1024,
        )
        async with AsyncGroupsClient(unbounded) as client:
            started = time.monotonic()
            result = await client.describe_groups(ids, timeout_s=1.5)
            assert time.monotonic() - started < 10  # bounded by the deadline, not hanging
        assert result.values == {}
        assert set(result.failures) == set(ids)
        refused = c.refused_requests()
        assert refused and all(size > SMALL_CAP for _, size in refused)
        [size] = {size for _, size in refused}  # the same request each time
        for failure in result.failures.values():
            assert failure.code == CLIENT_TIMEOUT
            assert f"closed the connection while {over_cap_api}" in failure.message
            assert f"of {size} bytes was in flight" in failure.message
        assert c.handler_errors == []

        c.reset_counts()
        bounded = ClientConfig.create(c.bootstrap, retry_backoff_s=0.05, max_request_bytes=SMALL_CAP)
        async with AsyncGroupsClient(bounded) as client:
            result = await client.describe_groups(ids, timeout_s=30)
        assert result.failures == {}
        assert {g: d.state for g, d in result.values.items()} == {g: GroupState.EMPTY for g in ids}
        assert c.refused_requests() == [] and c.largest_request() <= SMALL_CAP
        # 61-byte ids: (8192 - header and array overhead) // 62 bytes per id = 131 ids per request
        expected_find = 2 if find_coordinator >= 4 else 200
        assert counts(c) == {"Metadata": 1, "FindCoordinator": expected_find, "DescribeGroups": 2}
        assert sorted(len(e.request.groups) for e in c.requests("DescribeGroups")) == [69, 131]


# ------------------------------------------------------------------------------------------- big responses

RESPONSE_LIMIT = 4096


def _seed_wide(c: FakeCluster, groups: list[str], partitions: int) -> dict[str, dict[TopicPartition, int]]:
    topic = "t" * 40
    if topic not in c.topics:
        c.add_topic(topic, 400, end_offsets=10**6)
    out = {}
    for n, g in enumerate(groups):
        c.add_group(g, offsets={(topic, p): 1000 * n + p for p in range(partitions)})
        out[g] = {TopicPartition(topic, p): 1000 * n + p for p in range(partitions)}
    return out


async def test_a_response_over_max_response_bytes_is_split_until_it_fits_and_one_group_alone_fails():
    """OffsetFetch of 8 groups answering about 1.3 KB each with max_response_bytes 4096: the 8-group
    response (10 KB) and the 4-group ones (5 KB) are refused by the client and split, the 2-group
    ones fit: 1 + 2 + 4 requests, every offset exact, one connection throughout (the refused
    bytes are read and dropped). A group whose answer alone is over the limit fails alone with
    CLIENT_RESPONSE_TOO_LARGE naming the size."""
    async with FakeCluster(brokers=1) as c:
        seeded = _seed_wide(c, [f"wide-{i}" for i in range(8)], partitions=60)
        huge = _seed_wide(c, ["huge"], partitions=400)
        config = ClientConfig.create(c.bootstrap, retry_backoff_s=0.01, max_response_bytes=RESPONSE_LIMIT)
        async with AsyncGroupsClient(config) as client:
            result = await client.fetch_committed_offsets(list(seeded))
            assert result.failures == {}
            assert {g: v.committed() for g, v in result.values.items()} == seeded
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 1, "OffsetFetch": 7}
            assert sorted(len(e.request.groups) for e in c.requests("OffsetFetch")) == [1 * 2] * 4 + [4, 4, 8]
            assert c.count("ApiVersions") == 2  # the bootstrap connection and broker 0: none reopened

            c.reset_counts()
            alone = await client.fetch_committed_offsets(["huge"])
            assert alone.values == {}
            failure = alone.failures["huge"]
            assert failure.code == CLIENT_RESPONSE_TOO_LARGE
            size = c.largest_response("OffsetFetch")
            assert size > RESPONSE_LIMIT
            assert f"is {size} bytes, over max_response_bytes ({RESPONSE_LIMIT})" in failure.message
            assert counts(c) == {"FindCoordinator": 1, "OffsetFetch": 1}

            again = await client.fetch_committed_offsets(["wide-0"])  # the connection is still good
            assert again.values["wide-0"].committed() == seeded["wide-0"]
            assert c.count("ApiVersions") == 0
        assert huge  # seeded


# ------------------------------------------------------------------------------------------- in flight


@pytest.mark.parametrize("in_flight", [1, 100])
async def test_chunks_wait_for_an_in_flight_slot_so_each_timeout_measures_its_own_request(in_flight):
    """A broker handles a connection's requests one at a time (Kafka's SocketServer mutes the
    channel until the response is sent: the fake's ``processing_s``), and a request's timeout runs
    from when it is written. Twenty-four one-group DescribeGroups chunks of 0.1 s broker work each,
    with a 2 s request timeout: one in flight at a time, each is answered within its own 0.1 s (a
    1.9 s margin, so a loaded machine's stall does not count as a timeout), 24 requests on one
    connection. All 24 written at once, the 21st waits 2.1 s, times out, the connection is closed
    (a timed-out connection is not trusted) and the unanswered chunks go round again: more
    requests, new connections."""
    async with FakeCluster(brokers=1) as c:
        ids = [f"slow-{i}" for i in range(24)]
        for g in ids:
            c.add_group(g)
        c.set_delay(processing_s=0.1, api="DescribeGroups")
        config = ClientConfig.create(
            c.bootstrap,
            retry_backoff_s=0.01,
            request_timeout_s=2.0,
            max_groups_per_request=1,
            max_in_flight_per_connection=in_flight,
        )
        async with AsyncGroupsClient(config) as client:
            result = await client.describe_groups(ids, timeout_s=20)
        assert set(result.values) | set(result.failures) == set(ids)
        if in_flight == 1:
            assert result.failures == {}
            assert {g: d.state for g, d in result.values.items()} == {g: GroupState.EMPTY for g in ids}
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 24, "DescribeGroups": 24}  # one group each
            assert c.count("ApiVersions") == 2  # bootstrap + broker 0, never reopened
        else:
            assert c.count("DescribeGroups") > 24 and c.count("ApiVersions") > 2


async def test_a_delete_whose_response_was_too_large_is_confirmed_by_the_split_retries():
    """DeleteGroups of 300 groups with 60-byte ids: the broker deletes them all, but its 19 KB
    response is over max_response_bytes 4096, so the client never reads it. The halves (150,
    75, then 37/38 groups, the last fitting) answer GROUP_ID_NOT_FOUND, which after a response
    the client did not read means "deleted (confirmed gone after a lost response)", as for a
    dropped connection (DeleteConsumerGroupsHandler retries the same way; the confirmation is
    this client's, see handlers/delete_groups). 1 + 2 + 4 + 8 requests, and the same split for
    the batched FindCoordinator before it, whose 300 answers do not fit either."""
    async with FakeCluster(brokers=1) as c:
        ids = _long_ids(300)
        for g in ids:
            c.add_group(g)
        config = ClientConfig.create(c.bootstrap, retry_backoff_s=0.01, max_response_bytes=RESPONSE_LIMIT)
        async with AsyncGroupsClient(config) as client:
            result = await client.delete_groups(ids)
        assert result.failures == {}
        assert result.values == {g: GroupDeletion.CONFIRMED_GONE_AFTER_LOST_RESPONSE for g in ids}
        assert c.group_ids() == []
        assert counts(c) == {"Metadata": 1, "FindCoordinator": 15, "DeleteGroups": 15}
        assert sorted(len(e.request.coordinator_keys) for e in c.requests("FindCoordinator")) == [37] * 4 + [
            38
        ] * 4 + [75] * 4 + [150] * 2 + [300]
        assert sorted(len(e.request.groups_names) for e in c.requests("DeleteGroups")) == [37] * 4 + [
            38
        ] * 4 + [75] * 4 + [150] * 2 + [300]
