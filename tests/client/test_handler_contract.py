"""The handler contract (client/handlers/base.py), after the Java admin client's
``AdminApiHandler`` (clients/src/main/java/org/apache/kafka/clients/admin/internals/AdminApiHandler.java):
the optional methods have defaults on the base class (``handleUnsupportedVersionException``
fails every key by default); version limits are declared and applied before a request is
built, so a broker too old for a key fails that key, unsent; handlers keep no state between
runs (what a run learns of a key is a note the driver keeps for that run only)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import SimpleNamespace

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, GroupDeletion, TopicPartition
from airflow_provider_kgroups.client import handlers as handlers_package
from airflow_provider_kgroups.client.contract import Outcome, RequestPlan
from airflow_provider_kgroups.client.errors import CLIENT_UNSUPPORTED, Failure
from airflow_provider_kgroups.client.handlers.base import Handler, VersionNeed
from airflow_provider_kgroups.client.handlers.delete_groups import DeleteGroupsHandler
from airflow_provider_kgroups.client.handlers.fetch import FetchTimestampHandler
from airflow_provider_kgroups.client.handlers.fetch_records import FetchRecordsHandler
from airflow_provider_kgroups.client.handlers.offset_commit import OffsetCommitHandler, OffsetToCommit
from airflow_provider_kgroups.client.handlers.offset_fetch import OffsetFetchHandler
from airflow_provider_kgroups.client.protocol import DescribeGroupsRequest, OffsetFetchRequest
from airflow_provider_kgroups.client.results import RecordPosition, TimestampPage
from tests.support.batches import batch
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakeutil import config, counts, on_node, seed

TP = TopicPartition("t", 0)


async def run(client: AsyncGroupsClient, handler: Handler, keys: list) -> object:
    """One driver run of ``handler`` over ``keys``, as the client's verbs run theirs."""
    return await client._run(client._call(None), handler, keys)


class Bare(Handler[str, int]):
    request_class = DescribeGroupsRequest


class Needy(Bare):
    needs = (VersionNeed(5, "anything"), VersionNeed(7, "a y-key", lambda handler, key: key.startswith("y")))


# -- the base class --------------------------------------------------------------------------------


def test_every_handler_subclasses_the_base_class():
    found = {}
    for info in pkgutil.iter_modules(handlers_package.__path__):
        module = importlib.import_module(f"{handlers_package.__name__}.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and name.endswith("Handler"):
                found[name] = cls
    assert {
        "DeleteGroupsHandler",
        "DescribeGroupsHandler",
        "ConsumerGroupDescribeHandler",
        "ShareGroupDescribeHandler",
        "StreamsGroupDescribeHandler",
        "FetchTimestampHandler",
        "FetchRecordsHandler",
        "ListGroupsHandler",
        "ListOffsetsHandler",
        "OffsetCommitHandler",
        "OffsetFetchHandler",
    } <= set(found)
    assert [name for name, cls in found.items() if not issubclass(cls, Handler)] == []


def test_every_handler_declares_at_least_the_oldest_version_the_codec_can_encode():
    """The codec (kafka-python 3, Kafka 4's schemas) has no request below an API's
    ``validVersions`` minimum (ListOffsets v0, OffsetFetch v0, OffsetCommit v0-1, Fetch v0-3):
    each handler declares a need for every key at least that high, so a broker older than the
    codec gets a CLIENT_UNSUPPORTED per key, never an encoding error (which, as a bug, would end
    the call)."""
    handlers = [
        cls
        for info in pkgutil.iter_modules(handlers_package.__path__)
        for _, cls in inspect.getmembers(
            importlib.import_module(f"{handlers_package.__name__}.{info.name}"), inspect.isclass
        )
        if issubclass(cls, Handler) and cls is not Handler and hasattr(cls, "request_class")
    ]
    short = {}
    for cls in handlers:
        codec_min = int(cls.request_class.json["validVersions"].partition("-")[0])
        declared = max((n.version for n in cls.needs if n.applies is None), default=0)
        if declared < codec_min:
            short[cls.__name__] = (declared, codec_min)
    assert short == {}
    assert {cls.__name__ for cls in handlers} >= {
        "ListOffsetsHandler",
        "OffsetFetchHandler",
        "OffsetCommitHandler",
    }


def test_the_optional_methods_have_defaults():
    handler = Bare()
    assert handler.api == "DescribeGroups"
    unsupported = handler.unsupported(["a", "b"], 3)
    gone = Failure(CLIENT_UNSUPPORTED, "broker 3 does not support DescribeGroups")
    assert unsupported == Outcome(failed={"a": gone, "b": gone})
    assert handler.refuse(["a", "b"], 0, 3) == {}  # nothing declared: every version serves every key
    assert handler.response_lost(["a"]) == {}  # nothing to remember
    with pytest.raises(NotImplementedError):
        handler.build(["a"], 0, {})
    with pytest.raises(NotImplementedError):
        handler.parse(RequestPlan(DescribeGroupsRequest(groups=["a"]), 0, ("a",)), None, {})


def test_declared_needs_refuse_by_version_and_by_key():
    handler = Needy()
    assert handler.refuse(["a", "y1"], 7, 2) == {}
    assert handler.refuse(["a", "y1"], 6, 2) == {
        "y1": Failure(CLIENT_UNSUPPORTED, "broker 2 has DescribeGroups up to v6; a y-key needs v7")
    }
    old = Failure(CLIENT_UNSUPPORTED, "broker 2 has DescribeGroups up to v4; anything needs v5")
    assert handler.refuse(["a", "y1"], 4, 2) == {"a": old, "y1": old}  # the first unmet need names it


def test_the_version_floors_once_raised_in_build_are_declared():
    """Fetch below v4 (record batches v2, isolation levels), OffsetCommit below v2 (v0-v1 are
    deprecated: OffsetCommitRequest.json) and an all-partitions OffsetFetch below v2
    (OffsetFetchRequest.json: "Topics" nullable from v2) used to raise ValueError in ``build``.
    The fake cluster serves none of those versions (its codec starts at Fetch v4, OffsetCommit
    v2), so the declarations are checked here; the driver applies them (next tests)."""
    tps = [TP, TopicPartition("t", 1)]
    fetch_handlers = (
        FetchTimestampHandler(None, {tp: [0] for tp in tps}),
        FetchRecordsHandler(None, {tp: 0 for tp in tps}, 0, {tp: 1024 for tp in tps}),
    )
    for fetch in fetch_handlers:
        too_old = Failure(
            CLIENT_UNSUPPORTED,
            "broker 1 has Fetch up to v3; reading record batches v2 with an isolation level needs v4",
        )
        assert fetch.refuse(tps, 3, 1) == {tp: too_old for tp in tps}
        assert fetch.refuse(tps, 4, 1) == {}
    commit = OffsetCommitHandler(None, {"g": {TP: OffsetToCommit(5)}})
    assert commit.refuse(["g"], 1, 0) == {
        "g": Failure(
            CLIENT_UNSUPPORTED,
            "broker 0 has OffsetCommit up to v1; "
            "committing without a per-partition commit timestamp needs v2",
        )
    }
    assert commit.refuse(["g"], 2, 0) == {}
    assert OffsetFetchHandler(None, None).refuse(["g"], 1, 0) == {
        "g": Failure(
            CLIENT_UNSUPPORTED,
            "broker 0 has OffsetFetch up to v1; asking for all partitions (no topics named) needs v2",
        )
    }
    assert OffsetFetchHandler(None, {"t": [0]}).refuse(["g"], 1, 0) == {}  # named topics: v1 will do


# -- declared limits through the driver, on the fake cluster ---------------------------------------


async def test_a_declared_need_fails_the_keys_it_applies_to_unsent_and_spares_the_rest():
    """One coordinator speaks only OffsetFetch v1 (FakeCluster broker_api_versions): asking it for
    every partition of its groups fails them, with no OffsetFetch sent to it; naming the topics
    it can carry, and does, one request per group below v8 (KafkaApis.handleOffsetFetchRequest)."""
    async with FakeCluster(brokers=3, broker_api_versions={1: {"OffsetFetch": (1, 1)}}) as c:
        seeded = seed(c, 12)
        on_old = sorted(g for g in seeded if c.coordinator_of(g) == 1)
        assert len(on_old) >= 2
        async with AsyncGroupsClient(config(c)) as client:
            every = await client.fetch_committed_offsets(on_old)
            assert counts(c) == {"Metadata": 1, "FindCoordinator": 1}  # looked up, never sent
            c.reset_counts()
            named = await client.fetch_committed_offsets(on_old, topics={"orders": [0, 1, 2]})
        too_old = Failure(
            CLIENT_UNSUPPORTED,
            "broker 1 has OffsetFetch up to v1; asking for all partitions (no topics named) needs v2",
        )
        assert every.values == {} and every.failures == {g: too_old for g in on_old}
        assert named.failures == {}
        assert {g: named.values[g].committed() for g in on_old} == {g: seeded[g] for g in on_old}
        assert counts(c) == {"OffsetFetch": len(on_old)} and c.count("OffsetFetch", 1) == len(on_old)


async def test_a_need_no_broker_meets_fails_every_key_and_nothing_is_built_or_sent():
    """Any handler's declaration is applied by the driver before ``build``: a need above every
    broker's OffsetFetch fails each group with the message, and build is never called."""
    built = []

    class NeedsTheFuture(OffsetFetchHandler):
        needs = (VersionNeed(99, "the future"),)

        def build(self, group_ids, version, notes):
            built.append(group_ids)
            return super().build(group_ids, version, notes)

    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 6)
        async with AsyncGroupsClient(config(c)) as client:
            result = await run(client, NeedsTheFuture(client._coordinators), list(seeded))
        assert result.values == {}
        assert {g: (f.code, f.message.split(";")[1]) for g, f in result.failures.items()} == {
            g: (CLIENT_UNSUPPORTED, " the future needs v99") for g in seeded
        }
        assert all(
            f.message.startswith(f"broker {c.coordinator_of(g)} has OffsetFetch up to v")
            for g, f in result.failures.items()
        )
        assert built == [] and c.count("OffsetFetch") == 0


# -- stateless handlers ----------------------------------------------------------------------------


def test_a_grown_budget_is_a_note_of_the_run_not_a_change_to_the_handler():
    """A first batch that does not fit the budget (KIP-74, FetchResponse: a partial batch) asks
    again with four times the budget: the handler returns that as a note for the driver to keep,
    and builds the retry from the note; without the note (a new run) it builds as before."""
    handler = FetchTimestampHandler(None, {TP: [0]}, partition_bytes=1024)
    (plan,) = handler.build([TP], 12, {})
    data = batch(0, list(range(50)))
    partial = SimpleNamespace(
        partition_index=0,
        error_code=0,
        high_watermark=50,
        log_start_offset=0,
        last_stable_offset=50,
        records=data[: len(data) // 2],
        aborted_transactions=None,
    )
    response = SimpleNamespace(error_code=0, responses=[SimpleNamespace(topic="t", partitions=[partial])])
    outcome = handler.parse(plan, response, {})
    assert (outcome.completed, outcome.failed, outcome.retry, outcome.notes) == ({}, {}, {TP}, {TP: 4096})

    def budget(plan):
        return [p.partition_max_bytes for t in plan.request.topics for p in t.partitions]

    assert budget(handler.build([TP], 12, outcome.notes)[0]) == [4096]
    assert budget(handler.build([TP], 12, {})[0]) == [1024] == budget(plan)


async def test_a_timestamp_handler_reused_for_two_runs_answers_the_same_with_the_same_requests():
    """Everything a page found and left for the next one is in its value (TimestampPage): two runs
    of one handler instance give identical results at identical cost (one Fetch per leader)."""
    async with FakeCluster(brokers=2) as c:
        c.add_topic("t", 2, leaders=[0, 1])
        for p in range(2):
            c.append("t", p, 40, timestamp_ms=lambda offset, p=p: 1000 * p + offset, value=b"x" * 100)
        wanted = {TopicPartition("t", 0): [1, 35], TopicPartition("t", 1): [2]}
        async with AsyncGroupsClient(config(c)) as client:
            await client.describe_topics(["t"])  # leaders cached: both runs cost the same
            handler = FetchTimestampHandler(client._leaders, wanted, partition_bytes=1024)
            c.reset_counts()
            first = await run(client, handler, list(wanted))
            first_counts = counts(c)
            c.reset_counts()
            second = await run(client, handler, list(wanted))
            second_counts = counts(c)
        assert first == second and first.failures == {}
        assert first_counts == second_counts == {"Fetch": 2}
        page0 = first.values[TopicPartition("t", 0)]
        assert isinstance(page0, TimestampPage) and page0.budget_bytes == 1024
        assert page0.found[1].position is RecordPosition.AT_OFFSET and page0.found[1].timestamp_ms == 1
        assert page0.unresolved == (35,) and page0.next_start is not None and 1 < page0.next_start <= 35
        assert first.values[TopicPartition("t", 1)].found[2].timestamp_ms == 1002


async def test_a_lost_delete_response_is_remembered_for_its_run_only():
    """DeleteGroups' one piece of run memory (a response lost: the retry's GROUP_ID_NOT_FOUND
    confirms the delete, GroupMetadataManager.deleteGroups) is a note of that run: the same
    handler's next run, with no response lost, reports 69 as the failure it is."""
    async with FakeCluster(brokers=3) as c:
        groups = on_node(c, 1, 2, "e")
        for g in groups:
            c.add_group(g)
        c.drop_mid_response("DeleteGroups", node=1, times=1)
        async with AsyncGroupsClient(config(c)) as client:
            handler = DeleteGroupsHandler(client._coordinators)
            first = await run(client, handler, groups)
            c.reset_counts()
            second = await run(client, handler, groups)
        assert first.values == {g: GroupDeletion.CONFIRMED_GONE_AFTER_LOST_RESPONSE for g in groups}
        assert first.failures == {}
        assert second.values == {} and {g: f.code for g, f in second.failures.items()} == {
            g: Err.GROUP_ID_NOT_FOUND for g in groups
        }
        assert counts(c) == {"DeleteGroups": 1}  # coordinator cached: one request for both groups
