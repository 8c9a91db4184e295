"""The driver's retry rules, with no socket: responses are fed to the state machine and the
requests it asks for next are checked, as Kafka's AdminApiDriverTest drives ``AdminApiDriver``
(poll / onResponse / onFailure) with a mock handler and a mock lookup strategy.

Each test follows a Kafka function, named in its docstring: the driver
(clients/.../admin/internals/AdminApiDriver.java: poll, onResponse, onFailure, retryLookup,
unmap), the coordinator lookup (CoordinatorStrategy.buildRequest / handleResponse /
handleError / disableBatch), the leader lookup (PartitionLeaderStrategy.handleResponse /
handleTopicError / handlePartitionError) and the static broker lookup (StaticBrokerStrategy).
Times are passed in (``now``), the backoff is a fixed function: nothing here waits.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from airflow_provider_kgroups.client.chunking import RequestLimits
from airflow_provider_kgroups.client.cluster import ClusterMetadata
from airflow_provider_kgroups.client.config import BrokerAddress
from airflow_provider_kgroups.client.contract import ANY_BROKER
from airflow_provider_kgroups.client.driver import FULFIL, LOOKUP, Driver
from airflow_provider_kgroups.client.errors import (
    CLIENT_INCOMPLETE_RESPONSE,
    CLIENT_PROTOCOL_ERROR,
    CLIENT_RESPONSE_TOO_LARGE,
    CLIENT_TIMEOUT,
    CLIENT_UNSUPPORTED,
    AuthenticationError,
    BrokerDisconnected,
    BrokerThrottled,
    ConfigurationError,
    ErrorCode,
    NoBrokerAvailable,
    ProtocolError,
    ResponseTooLarge,
    UnsupportedVersion,
)
from airflow_provider_kgroups.client.handlers.delete_groups import DeleteGroupsHandler
from airflow_provider_kgroups.client.handlers.describe_groups import UNAVAILABLE, ShareGroupDescribeHandler
from airflow_provider_kgroups.client.handlers.list_groups import ListGroupsHandler
from airflow_provider_kgroups.client.handlers.list_offsets import LATEST, ListOffsetsHandler
from airflow_provider_kgroups.client.handlers.offset_fetch import OffsetFetchHandler
from airflow_provider_kgroups.client.lookup import CoordinatorLookup, LeaderLookup
from airflow_provider_kgroups.client.protocol import (
    AllOffsetsFetch,
    DeleteGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    ListGroupsResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    OffsetFetchResponse,
)
from airflow_provider_kgroups.client.results import GroupDeletion, GroupOffsets, ListedOffset, TopicPartition
from airflow_provider_kgroups.client.wire import decoder_for
from tests.support.responses import found, metadata_response

BACKOFF = 0.1
tried: list[int] = []  # the attempt numbers the driver asked the backoff for, in order


def backoff(attempt: int) -> float:
    tried.append(attempt)
    return BACKOFF * attempt


def shape(dispatches) -> list[tuple[str, int, list]]:
    return sorted((d.stage, d.node, sorted(d.keys)) for d in dispatches)


def coordinator_driver(handler_class=OffsetFetchHandler, groups=("g1", "g2"), **kwargs):
    metadata = ClusterMetadata()
    lookup = CoordinatorLookup(metadata, **kwargs)
    tried.clear()
    return Driver(handler_class(lookup), list(groups), backoff=backoff), lookup, metadata


def found_one(error: int, node: int) -> FindCoordinatorResponse:
    """An answer below v4: one key per request, no key in the answer."""
    return FindCoordinatorResponse(
        throttle_time_ms=0, error_code=error, error_message=None, node_id=node, host=f"b{node}", port=9092
    )


def offsets(*groups) -> Any:
    """A batched (v8+) OffsetFetch answer: (group, group-level error code), no partitions; as the
    connection hands it over (encoded, then decoded by client/wire.py)."""
    response = OffsetFetchResponse(
        throttle_time_ms=0,
        groups=[
            OffsetFetchResponse.OffsetFetchResponseGroup(group_id=g, topics=[], error_code=error)
            for g, error in groups
        ],
    )
    header = struct.pack(">i", 1) + b"\x00"  # correlation id, no tagged fields
    return decoder_for(OffsetFetchResponse, 8)(header + response.encode(version=8))


def settle(driver, dispatch, *responses, now=0.0):
    """Feed one response per request of ``dispatch`` built at the broker's ``version``."""
    for plan, response in responses:
        assert driver.on_response(dispatch, plan, response) == []
    driver.complete(dispatch, now)


def mapped(driver, lookup_dispatch, response, now=0.0):
    [plan] = driver.build(lookup_dispatch, 4)
    settle(driver, lookup_dispatch, (plan, response), now=now)


# -- the coordinator lookup ------------------------------------------------------------------------


def test_find_coordinator_maps_groups_and_the_metadata_learns_the_coordinators_address():
    """AdminApiDriver.poll: keys without a broker go to one batched lookup (CoordinatorStrategy
    .buildRequest, KIP-699); onResponse maps them (completeLookup) and the next poll asks each
    coordinator for its own keys. The coordinator's address goes to the cluster metadata, the
    one owner of broker addresses."""
    driver, lookup, metadata = coordinator_driver(groups=("g1", "g2", "g3"))
    [dispatch] = driver.poll(0.0)
    assert shape([dispatch]) == [(LOOKUP, ANY_BROKER, ["g1", "g2", "g3"])]
    [plan] = driver.build(dispatch, 4)
    assert isinstance(plan.request, FindCoordinatorRequest) and plan.version == 4
    assert sorted(plan.request.coordinator_keys) == ["g1", "g2", "g3"] and plan.request.key_type == 0
    settle(driver, dispatch, (plan, found(("g1", 0, 1), ("g2", 0, 2), ("g3", 0, 1))))
    assert shape(driver.poll(0.0)) == [(FULFIL, 1, ["g1", "g3"]), (FULFIL, 2, ["g2"])]
    assert {g: lookup.cached(g) for g in ("g1", "g2", "g3")} == {"g1": 1, "g2": 2, "g3": 1}
    assert (metadata.address_of(1), metadata.address_of(2)) == (
        BrokerAddress("b1", 9092),
        BrokerAddress("b2", 9092),
    )
    assert driver.poll(0.0) == [] and tried == []


def test_find_coordinator_not_coordinator_and_load_in_progress_look_the_group_up_again_after_a_backoff():
    """CoordinatorStrategy.handleError: COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE
    ("Will retry") leave the key in the lookup stage; so does NOT_COORDINATOR here (the lookup
    is asked again, never a broker for the group). GROUP_AUTHORIZATION_FAILED fails the group
    for good (completeLookupExceptionally): it is never asked again. A group the answer left
    out is looked up again, never dropped."""
    driver, lookup, _ = coordinator_driver(groups=("ok", "moving", "loading", "denied", "left-out"))
    [dispatch] = driver.poll(0.0)
    mapped(
        driver,
        dispatch,
        found(
            ("ok", 0, 1),
            ("moving", ErrorCode.NOT_COORDINATOR, -1),
            ("loading", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1),
            ("denied", ErrorCode.GROUP_AUTHORIZATION_FAILED, -1),
        ),
    )
    assert shape(driver.poll(0.0)) == [(FULFIL, 1, ["ok"])]
    assert {g: f.code for g, f in driver.failures.items()} == {"denied": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    assert driver.poll(BACKOFF - 0.01) == [] and driver.next_wakeup() == BACKOFF  # not before its backoff
    [again] = driver.poll(BACKOFF)
    assert shape([again]) == [(LOOKUP, ANY_BROKER, ["left-out", "loading", "moving"])]
    # A second failure waits twice as long (attempt 2); the found group goes to its coordinator.
    mapped(
        driver,
        again,
        found(("moving", 0, 2), ("loading", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1), ("left-out", 0, 2)),
        now=BACKOFF,
    )
    assert shape(driver.poll(BACKOFF)) == [(FULFIL, 2, ["left-out", "moving"])]
    assert tried == [1, 2] and driver.next_wakeup() == BACKOFF + 2 * BACKOFF
    assert shape(driver.poll(3 * BACKOFF)) == [(LOOKUP, ANY_BROKER, ["loading"])]
    assert lookup.cached("loading") is None and lookup.cached("denied") is None


def test_find_coordinator_from_a_broker_below_v4_is_one_request_per_group():
    """CoordinatorStrategy: without batched FindCoordinator (v4, KIP-699) the strategy falls back
    to one key per request (disableBatch, LookupRequestScope per key); here the request's shape
    follows the version of the broker it goes to. Each single answer carries no key: it is the
    plan's one group's (requireSingletonAndType)."""
    driver, _lookup, _ = coordinator_driver(groups=("g1", "g2", "g3"))
    [dispatch] = driver.poll(0.0)
    plans = driver.build(dispatch, 3)
    assert [
        (p.version, p.request.key, p.request.key_type, p.keys) for p in sorted(plans, key=lambda p: p.keys)
    ] == [(3, "g1", 0, ("g1",)), (3, "g2", 0, ("g2",)), (3, "g3", 0, ("g3",))]
    by_key = {p.keys[0]: p for p in plans}
    settle(
        driver,
        dispatch,
        (by_key["g1"], found_one(0, 1)),
        (by_key["g2"], found_one(0, 2)),
        (by_key["g3"], found_one(ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)),
    )
    assert shape(driver.poll(0.0)) == [(FULFIL, 1, ["g1"]), (FULFIL, 2, ["g2"])]
    assert shape(driver.poll(BACKOFF)) == [(LOOKUP, ANY_BROKER, ["g3"])]
    # The same keys at v4 from a broker that batches: one request.
    assert [p.keys for p in driver.build(dispatch, 4, ["g1", "g2"])] == [("g1", "g2")]


def test_batched_find_coordinator_is_cut_within_the_request_limits():
    """The batched lookup is one request per chunk of ``max_groups`` (a broker closes the
    connection on a frame over socket.request.max.bytes: NetworkReceive.readFrom)."""
    driver, _, _ = coordinator_driver(groups=[f"g{i}" for i in range(5)], limits=RequestLimits(max_groups=2))
    [dispatch] = driver.poll(0.0)
    assert sorted(len(p.request.coordinator_keys) for p in driver.build(dispatch, 4)) == [1, 2, 2]


# -- the API's own answers -------------------------------------------------------------------------


def test_api_errors_retry_on_the_coordinator_look_up_again_or_fail():
    """AdminApiDriver.onResponse with the handler's ApiResult: COORDINATOR_LOAD_IN_PROGRESS asks
    the same coordinator again after a backoff (the key stays mapped); NOT_COORDINATOR unmaps
    the key (retryLookup: the cached coordinator is forgotten, a lookup goes out);
    GROUP_AUTHORIZATION_FAILED fails it (completeExceptionally); a group the response does not
    mention fails rather than vanishing. OffsetFetchHandler follows ListConsumerGroupOffsets-
    Handler.handleGroupError."""
    groups = ("done", "loading", "moved", "denied", "unmentioned")
    driver, lookup, _ = coordinator_driver(groups=groups)
    [dispatch] = driver.poll(0.0)
    mapped(driver, dispatch, found(*((g, 0, 1) for g in groups)))
    [fetch] = driver.poll(0.0)
    [plan] = driver.build(fetch, 8)
    assert isinstance(plan.request, AllOffsetsFetch) and sorted(plan.request.group_ids) == sorted(groups)
    settle(
        driver,
        fetch,
        (
            plan,
            offsets(
                ("done", 0),
                ("loading", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
                ("moved", ErrorCode.NOT_COORDINATOR),
                ("denied", ErrorCode.GROUP_AUTHORIZATION_FAILED),
            ),
        ),
    )
    assert driver.values == {"done": GroupOffsets("done", {})}
    assert {g: f.code for g, f in driver.failures.items()} == {
        "denied": ErrorCode.GROUP_AUTHORIZATION_FAILED,
        "unmentioned": CLIENT_INCOMPLETE_RESPONSE,
    }
    assert (lookup.cached("moved"), lookup.cached("loading")) == (None, 1)
    assert driver.poll(0.0) == []
    assert shape(driver.poll(BACKOFF)) == [(FULFIL, 1, ["loading"]), (LOOKUP, ANY_BROKER, ["moved"])]


def test_a_lost_connection_sends_the_keys_back_to_lookup_and_a_failed_lookup_is_retried():
    """AdminApiDriver.onFailure: after a disconnect the keys are looked up again (retryLookup:
    "a chance to find a new coordinator"). A lookup no broker answered is itself asked again
    after a backoff. Nothing is failed for it."""
    driver, lookup, _ = coordinator_driver()
    [dispatch] = driver.poll(0.0)
    mapped(driver, dispatch, found(("g1", 0, 1), ("g2", 0, 1)))
    [fetch] = driver.poll(0.0)
    driver.fail(fetch, ConnectionRefusedError("broker 1 refused"), 0.0)  # no connection at all
    assert lookup.cached("g1") is None and driver.failures == {}
    [relookup] = driver.poll(BACKOFF)
    assert shape([relookup]) == [(LOOKUP, ANY_BROKER, ["g1", "g2"])]
    driver.fail(relookup, NoBrokerAvailable("no broker reachable"), BACKOFF)
    assert driver.failures == {} and shape(driver.poll(BACKOFF + 2 * BACKOFF)) == [
        (LOOKUP, ANY_BROKER, ["g1", "g2"])
    ]


def test_transport_and_protocol_failures_are_outcomes_with_their_own_codes_anything_else_is_raised():
    """A bug is not a broker answer. A request that got no usable answer leaves its keys an
    outcome only when the transport or the protocol failed, with codes that tell them apart
    (AdminApiDriver.onFailure hands the handler only what the network client reports): a
    dropped connection is looked up again, a throttle past the deadline is a timeout, an
    undecodable answer CLIENT_PROTOCOL_ERROR, a request the broker's version cannot carry
    CLIENT_UNSUPPORTED. Anything else - a handler's own exception, a failed login, bad input -
    is raised out of the driver: retrying would run into it again."""
    driver, _, _ = coordinator_driver(groups=("a", "b", "c", "d"))
    [dispatch] = driver.poll(0.0)
    mapped(driver, dispatch, found(("a", 0, 1), ("b", 0, 2), ("c", 0, 3), ("d", 0, 4)))
    by_node = {d.node: d for d in driver.poll(0.0)}
    for node, error in {
        1: ProtocolError("cannot decode OffsetFetchResponse v9 from broker b1:9092"),
        2: BrokerThrottled("broker b2 throttles this client past the deadline"),
        3: UnsupportedVersion("broker 3 cannot carry this request"),
        4: BrokerDisconnected("broker b4 closed the connection"),
    }.items():
        [plan] = driver.build(by_node[node], 8)
        assert driver.on_failure(by_node[node], plan, error) == []
        driver.complete(by_node[node], 0.0)
    assert {g: f.code for g, f in driver.failures.items()} == {
        "a": CLIENT_PROTOCOL_ERROR,
        "b": CLIENT_TIMEOUT,
        "c": CLIENT_UNSUPPORTED,
    }
    assert "cannot decode OffsetFetchResponse" in driver.failures["a"].message
    assert shape(driver.poll(BACKOFF)) == [(LOOKUP, ANY_BROKER, ["d"])]  # the dropped one: looked up again

    for error in (
        KeyError("topics"),
        AttributeError("'NoneType' object has no attribute 'partitions'"),
        AuthenticationError("SASL PLAIN authentication as 'alice' failed"),
        ConfigurationError("topics: '' is not a topic name."),
    ):
        driver, _, _ = coordinator_driver(groups=("g",))
        [dispatch] = driver.poll(0.0)
        mapped(driver, dispatch, found(("g", 0, 1)))
        [fetch] = driver.poll(0.0)
        [plan] = driver.build(fetch, 8)
        with pytest.raises(type(error)):
            driver.on_failure(fetch, plan, error)
        with pytest.raises(type(error)):  # raised in the task that sent it: the same rule
            driver.fail(fetch, error, 0.0)
        assert driver.failures == {} and driver.values == {}


def test_a_response_lost_after_sending_is_remembered_for_the_retry():
    """AdminApiDriver.onFailure (DisconnectException: retryLookup) for a DeleteGroups whose
    response never came: the broker may have deleted the group, so the retry's GROUP_ID_NOT_FOUND
    confirms it gone (DeleteGroupsHandler, a note the driver keeps for the run). A group whose
    request did get an answer keeps GROUP_ID_NOT_FOUND as a failure."""
    driver, _, _ = coordinator_driver(DeleteGroupsHandler, groups=("lost", "answered"))
    [dispatch] = driver.poll(0.0)
    mapped(driver, dispatch, found(("lost", 0, 1), ("answered", 0, 2)))
    by_node = {d.node: d for d in driver.poll(0.0)}
    [lost_plan] = driver.build(by_node[1], 2)
    assert driver.on_failure(by_node[1], lost_plan, BrokerDisconnected("dropped", request_sent=True)) == []
    driver.complete(by_node[1], 0.0)
    [answered_plan] = driver.build(by_node[2], 2)
    settle(
        driver,
        by_node[2],
        (
            answered_plan,
            DeleteGroupsResponse(
                throttle_time_ms=0,
                results=[
                    DeleteGroupsResponse.DeletableGroupResult(
                        group_id="answered", error_code=ErrorCode.GROUP_ID_NOT_FOUND
                    )
                ],
            ),
        ),
    )
    [relookup] = driver.poll(BACKOFF)
    mapped(driver, relookup, found(("lost", 0, 1)), now=BACKOFF)
    [retry] = driver.poll(BACKOFF)
    [plan] = driver.build(retry, 2)
    settle(
        driver,
        retry,
        (
            plan,
            DeleteGroupsResponse(
                throttle_time_ms=0,
                results=[
                    DeleteGroupsResponse.DeletableGroupResult(
                        group_id="lost", error_code=ErrorCode.GROUP_ID_NOT_FOUND
                    )
                ],
            ),
        ),
    )
    assert driver.values == {"lost": GroupDeletion.CONFIRMED_GONE_AFTER_LOST_RESPONSE}
    assert {g: f.code for g, f in driver.failures.items()} == {"answered": ErrorCode.GROUP_ID_NOT_FOUND}
    assert driver.finished


def test_a_response_too_large_comes_back_as_two_requests_and_alone_it_fails():
    """A response over max_response_bytes for several keys is asked again as two halves at once
    (no backoff); for one key there is nothing smaller to ask: it fails, naming the limit."""
    driver, _, _ = coordinator_driver(groups=("a", "b", "c", "d"))
    [dispatch] = driver.poll(0.0)
    mapped(driver, dispatch, found(*((g, 0, 1) for g in "abcd")))
    [fetch] = driver.poll(0.0)
    [plan] = driver.build(fetch, 8)
    halves = driver.on_failure(fetch, plan, ResponseTooLarge("too large", size=200, limit=100))
    assert sorted(len(h.keys) for h in halves) == [2, 2] and {k for h in halves for k in h.keys} == set(
        "abcd"
    )
    assert {h.node for h in halves} == {plan.node} == {fetch.node}  # the halves go where the whole went
    small, other = halves
    assert driver.on_response(fetch, small, offsets(*((g, 0) for g in small.keys))) == []
    quarters = driver.on_failure(fetch, other, ResponseTooLarge("too large", size=200, limit=100))
    assert [len(q.keys) for q in quarters] == [1, 1]
    assert driver.on_failure(fetch, quarters[0], ResponseTooLarge("too large", size=200, limit=100)) == []
    driver.on_response(fetch, quarters[1], offsets((quarters[1].keys[0], 0)))
    driver.complete(fetch, 0.0)
    assert set(driver.values) == set(small.keys) | {quarters[1].keys[0]}
    assert {g: f.code for g, f in driver.failures.items()} == {quarters[0].keys[0]: CLIENT_RESPONSE_TOO_LARGE}
    assert driver.finished


def test_a_broker_without_the_api_or_the_version_settles_keys_unsent():
    """AdminApiHandler.handleUnsupportedVersionException: a coordinator without
    ShareGroupDescribe answers "not of this type, unavailable" for its groups; a version too old
    for what is asked (OffsetFetch for all partitions below v2) fails those keys with no request."""
    driver, _, _ = coordinator_driver(ShareGroupDescribeHandler, groups=("s",))
    [dispatch] = driver.poll(0.0)
    mapped(driver, dispatch, found(("s", 0, 1)))
    [describe] = driver.poll(0.0)
    assert driver.build(describe, None) == []
    driver.complete(describe, 0.0)
    assert driver.values == {"s": UNAVAILABLE} and driver.finished

    driver, _, _ = coordinator_driver(groups=("g",))
    [dispatch] = driver.poll(0.0)
    mapped(driver, dispatch, found(("g", 0, 1)))
    [fetch] = driver.poll(0.0)
    assert driver.build(fetch, 1) == []
    driver.complete(fetch, 0.0)
    assert {g: f.code for g, f in driver.failures.items()} == {"g": CLIENT_UNSUPPORTED} and driver.finished


def test_the_deadline_fails_every_unsettled_key_naming_its_last_error():
    """The call's deadline (KafkaAdminClient.calcDeadlineMs; the driver's deadlineMs): keys in
    flight, waiting for their backoff or for a lookup fail with a timeout that names what held
    them up; settled keys keep their answer."""
    driver, _, _ = coordinator_driver(groups=("done", "loading", "in-flight"))
    [dispatch] = driver.poll(0.0)
    mapped(
        driver,
        dispatch,
        found(("done", 0, 1), ("in-flight", 0, 2), ("loading", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1)),
    )
    by_node = {d.node: d for d in driver.poll(0.0)}
    [plan] = driver.build(by_node[1], 8)
    settle(driver, by_node[1], (plan, offsets(("done", 0))))
    driver.expire("the 2 s deadline")
    assert driver.values == {"done": GroupOffsets("done", {})}
    assert {g: f.code for g, f in driver.failures.items()} == {
        "loading": CLIENT_TIMEOUT,
        "in-flight": CLIENT_TIMEOUT,
    }
    assert driver.failures["loading"].message == (
        "the 2 s deadline passed before a result; last error: COORDINATOR_LOAD_IN_PROGRESS"
    )
    assert driver.failures["in-flight"].message == "the 2 s deadline passed before a result"


# -- the leader lookup and the static one ----------------------------------------------------------


def listed(*answers) -> ListOffsetsResponse:
    """(partition, error code, offset) for topic ``t``."""
    L = ListOffsetsResponse.ListOffsetsTopicResponse
    return ListOffsetsResponse(
        throttle_time_ms=0,
        topics=[
            L(
                name="t",
                partitions=[
                    L.ListOffsetsPartitionResponse(
                        partition_index=p, error_code=error, timestamp=-1, offset=offset, leader_epoch=0
                    )
                    for p, error, offset in answers
                ],
            )
        ],
    )


def test_leader_lookup_retries_a_partition_without_a_leader_and_relooks_after_not_leader():
    """PartitionLeaderStrategy: one Metadata for the partitions' topics; a partition with
    LEADER_NOT_AVAILABLE (handlePartitionError) stays in the lookup and is asked again after a
    backoff; a partition with a leader goes to it. ListOffsets answering NOT_LEADER_OR_FOLLOWER
    unmaps the partition: the topic's metadata is stale and the next lookup asks Metadata again
    (OffsetFetcherUtils.handleListOffsetResponse). The brokers' addresses land in the metadata."""
    metadata = ClusterMetadata()
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    tried.clear()
    driver = Driver(
        ListOffsetsHandler(LeaderLookup(metadata), {t0: LATEST, t1: LATEST}), [t0, t1], backoff=backoff
    )
    [lookup] = driver.poll(0.0)
    [plan] = driver.build(lookup, 12)
    assert isinstance(plan.request, MetadataRequest) and [t.name for t in plan.request.topics] == ["t"]
    settle(driver, lookup, (plan, metadata_response({0: (0, 1), 1: (ErrorCode.LEADER_NOT_AVAILABLE, -1)})))
    assert metadata.address_of(2) == BrokerAddress("b2", 9092)
    [fetch] = driver.poll(0.0)
    assert shape([fetch]) == [(FULFIL, 1, [t0])]
    [request] = driver.build(fetch, 9)
    assert isinstance(request.request, ListOffsetsRequest)
    settle(driver, fetch, (request, listed((0, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1))))
    assert metadata.leader_of("t", 0) is None  # stale until Metadata answers again
    [again] = driver.poll(BACKOFF)
    assert shape([again]) == [(LOOKUP, ANY_BROKER, [t0, t1])]
    [plan] = driver.build(again, 12)
    settle(driver, again, (plan, metadata_response({0: (0, 2), 1: (0, 2)})), now=BACKOFF)
    [fetch] = driver.poll(BACKOFF)
    assert shape([fetch]) == [(FULFIL, 2, [t0, t1])]
    [request] = driver.build(fetch, 9)
    settle(driver, fetch, (request, listed((0, 0, 7), (1, 0, 9))))
    assert driver.values == {t0: ListedOffset(7, -1, 0), t1: ListedOffset(9, -1, 0)} and driver.finished


def test_a_broker_keyed_api_needs_no_lookup_request():
    """StaticBrokerStrategy: the key names its broker, so no lookup request is ever sent; a
    broker whose request failed is asked again after a backoff, still without one."""
    tried.clear()
    driver = Driver(ListGroupsHandler(), [1, 2], backoff=backoff)
    dispatches = {d.node: d for d in driver.poll(0.0)}
    assert shape(dispatches.values()) == [(FULFIL, 1, [1]), (FULFIL, 2, [2])]
    driver.fail(dispatches[2], ConnectionRefusedError("refused"), 0.0)
    [plan] = driver.build(dispatches[1], 5)
    settle(driver, dispatches[1], (plan, ListGroupsResponse(throttle_time_ms=0, error_code=0, groups=[])))
    assert driver.values == {1: ()}
    assert shape(driver.poll(BACKOFF)) == [(FULFIL, 2, [2])]
