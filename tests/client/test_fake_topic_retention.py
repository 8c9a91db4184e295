"""describe_topic_retention (DescribeConfigs, one request to any broker) and describe_log_dir_sizes
(DescribeLogDirs, one request per partition leader) on the fake cluster, which answers as Apache
Kafka does (tests/apachekafka/test_topic_retention.py compares the two for the same topics).

Kafka's own defaults are the fake's when its brokers set nothing: ``retention.ms`` 604800000
(``log.retention.hours=168``) from DEFAULT_CONFIG; a broker setting (server.properties) is
STATIC_BROKER_CONFIG; the topic's own is DYNAMIC_TOPIC_CONFIG."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    ConfigSource,
    ConfigurationError,
    GroupsClient,
    TopicPartition,
    TopicRetention,
)
from airflow_provider_kgroups.client.contract import ANY_BROKER, RequestPlan
from airflow_provider_kgroups.client.driver import LOOKUP, Driver
from airflow_provider_kgroups.client.errors import (
    CLIENT_INCOMPLETE_RESPONSE,
    CLIENT_PROTOCOL_ERROR,
    CLIENT_UNSUPPORTED,
    ErrorCode,
)
from airflow_provider_kgroups.client.handlers.describe_configs import CONFIG_KEYS, DescribeConfigsHandler
from airflow_provider_kgroups.client.protocol import DescribeConfigsResponse
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakekafka.handlers.log_dirs import log_dir, partition_size
from tests.support.fakeutil import config, counts

WEEK_MS = 604_800_000


def fake_with_topics(c: FakeCluster) -> None:
    c.add_topic("plain", 3)
    c.add_topic("hour", 1, config={"retention.ms": 3_600_000})
    c.add_topic("compacted", 1, config={"cleanup.policy": "compact"})
    c.add_topic("forever", 1, config={"retention.ms": -1, "retention.bytes": 1 << 30})
    c.add_topic(
        "both", 1, config={"cleanup.policy": "delete,compact", "message.timestamp.type": "LogAppendTime"}
    )


async def test_kafkas_defaults_the_brokers_settings_and_the_topics_own_each_with_its_source():
    async with FakeCluster(brokers=3) as c:
        fake_with_topics(c)
        async with AsyncGroupsClient(config(c)) as client:
            before = await client.describe_topic_retention(["plain", "hour"])
            c.set_broker_config({"log.retention.hours": 24, "log.cleanup.policy": "compact,delete"})
            after = await client.describe_topic_retention(
                ["plain", "hour", "compacted", "forever", "both", "absent", "plain"]
            )
        assert counts(c) == {"Metadata": 1, "DescribeConfigs": 2}  # the bootstrap, then one request a call
        [first, second] = c.requests("DescribeConfigs")
        asked = second.request
        assert [r.resource_name for r in asked.resources] == [  # once each, sorted
            "absent",
            "both",
            "compacted",
            "forever",
            "hour",
            "plain",
        ]
        assert {tuple(r.configuration_keys) for r in asked.resources} == {CONFIG_KEYS}
        assert {r.resource_type for r in asked.resources} == {2}
        assert (asked.include_synonyms, asked.include_documentation) == (False, False)
        assert (first.api_version, second.api_version) == (4, 4)

    plain = before.values["plain"]
    assert plain == TopicRetention(
        topic="plain",
        retention_ms=WEEK_MS,
        retention_bytes=None,
        cleanup_policy=("delete",),
        message_timestamp_type="CreateTime",
        segment_ms=WEEK_MS,
        segment_bytes=1 << 30,
        local_retention_ms=WEEK_MS,
        local_retention_bytes=None,
        remote_storage=False,
        sources=dict.fromkeys(CONFIG_KEYS, ConfigSource.DEFAULT_CONFIG),
    )
    assert before.values["hour"].sources["retention.ms"] is ConfigSource.DYNAMIC_TOPIC_CONFIG

    values = after.values
    assert (values["plain"].retention_ms, values["plain"].sources["retention.ms"]) == (
        24 * 3_600_000,
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert values["plain"].cleanup_policy == ("compact", "delete")
    assert (values["hour"].retention_ms, values["hour"].overrides()) == (3_600_000, {"retention.ms"})
    assert values["compacted"].cleanup_policy == ("compact",) and not values["compacted"].deletes
    assert (values["forever"].retention_ms, values["forever"].retention_bytes) == (None, 1 << 30)
    assert values["both"].message_timestamp_type == "LogAppendTime"
    assert values["both"].overrides() == {"cleanup.policy", "message.timestamp.type"}
    assert {t: (f.code, f.message) for t, f in after.failures.items()} == {
        "absent": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
    }
    assert values["hour"].to_dict()["sources"]["retention.ms"] == "DYNAMIC_TOPIC_CONFIG"


async def test_a_setting_altered_on_the_topic_or_removed_from_it_is_answered_so():
    async with FakeCluster(brokers=1) as c:
        c.add_topic("orders", 1, config={"retention.ms": 3_600_000})
        c.set_broker_config({"log.retention.ms": -1})
        async with AsyncGroupsClient(config(c)) as client:
            c.set_topic_config("orders", {"retention.bytes": 1 << 20})
            altered = (await client.describe_topic_retention(["orders"])).values["orders"]
            c.set_topic_config("orders", {"retention.ms": None})
            removed = (await client.describe_topic_retention(["orders"])).values["orders"]
    assert (altered.retention_ms, altered.retention_bytes) == (3_600_000, 1 << 20)
    assert altered.overrides() == {"retention.ms", "retention.bytes"}
    assert (removed.retention_ms, removed.sources["retention.ms"]) == (
        None,
        ConfigSource.STATIC_BROKER_CONFIG,
    )


async def test_local_retention_applies_only_with_remote_storage():
    """UnifiedLog: ``local.retention.*`` bound the brokers' disks only for a topic with remote
    storage (KIP-405); -2 (the default) is ``retention.*``, -1 no limit."""
    async with FakeCluster(brokers=1) as c:
        c.add_topic("tiered", 1, config={"remote.storage.enable": True, "local.retention.ms": 60_000})
        c.add_topic("tiered-default", 1, config={"remote.storage.enable": "true", "retention.ms": 86_400_000})
        c.add_topic(
            "tiered-unbounded", 1, config={"remote.storage.enable": True, "local.retention.bytes": -1}
        )
        c.add_topic("local-only", 1, config={"local.retention.ms": 60_000})
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_topic_retention(
                ["tiered", "tiered-default", "tiered-unbounded", "local-only"]
            )
    local = {
        t: (v.remote_storage, v.local_retention_ms, v.local_retention_bytes) for t, v in result.values.items()
    }
    assert local == {
        "tiered": (True, 60_000, None),
        "tiered-default": (True, 86_400_000, None),
        "tiered-unbounded": (True, WEEK_MS, None),
        "local-only": (False, WEEK_MS, None),
    }


async def test_each_topic_fails_alone_and_is_never_asked_again():
    """Java's describeConfigs completes each resource's future with its error: no retry. The fake
    answers TOPIC_AUTHORIZATION_FAILED with Errors' message, after the others, as Kafka does."""
    async with FakeCluster(brokers=3) as c:
        fake_with_topics(c)
        c.allow("ANONYMOUS", "topic", "plain", "DescribeConfigs")
        c.allow("ANONYMOUS", "topic", "bad name", "All")
        c.allow("ANONYMOUS", "topic", "broken", "All")
        c.add_topic("broken", 1)
        c.inject_error("DescribeConfigs", Err.KAFKA_STORAGE_ERROR, key="broken", message="disk gone")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_topic_retention(["hour", "plain", "bad name", "absent", "broken"])
        assert list(result.values) == ["plain"]
        assert {t: (f.code, f.message) for t, f in result.failures.items()} == {
            "hour": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
            "absent": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
            "bad name": (
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                "Topic name is invalid: 'bad name' contains one or more characters other than ASCII "
                "alphanumerics, '.', '_' and '-'",
            ),
            "broken": (ErrorCode.KAFKA_STORAGE_ERROR, "disk gone"),
        }
        assert counts(c) == {"Metadata": 1, "DescribeConfigs": 1}


async def test_a_silent_broker_is_left_for_another_within_the_call():
    """The keys of a request that timed out go back to the sender, which picks the least-loaded
    broker again: the silent one comes last (a Java Call retries on another node alike)."""
    async with FakeCluster(brokers=3) as c:
        fake_with_topics(c)
        async with AsyncGroupsClient(config(c, request_timeout_s=0.3, call_timeout_s=10)) as client:
            first = await client.describe_topic_retention(["hour"])
            [answered_by] = {r.node for r in c.requests("DescribeConfigs")}
            c.blackhole(answered_by, api="DescribeConfigs")
            second = await client.describe_topic_retention(["hour", "plain"])
        assert first.ok and second.ok and set(second.values) == {"hour", "plain"}
        nodes = [r.node for r in c.requests("DescribeConfigs")]
        assert nodes[:2] == [answered_by, answered_by] and len(nodes) == 3 and nodes[2] != answered_by


async def test_a_broker_without_describe_configs_fails_each_topic_unsupported():
    async with FakeCluster(brokers=1, api_versions={"DescribeConfigs": None}) as c:
        fake_with_topics(c)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_topic_retention(["plain", "hour"])
        assert {t: f.code for t, f in result.failures.items()} == dict.fromkeys(
            ["plain", "hour"], CLIENT_UNSUPPORTED
        )
        assert "does not support DescribeConfigs" in result.failures["plain"].message
        assert counts(c) == {"Metadata": 1}


def test_an_answer_without_a_setting_or_with_a_bad_number_fails_that_topic_alone():
    handler = DescribeConfigsHandler()
    [plan] = handler.build(["ok", "short", "odd", "unanswered"], 4, {})
    R = DescribeConfigsResponse.DescribeConfigsResult
    C = R.DescribeConfigsResourceResult

    def answer(name: str, **values: str) -> R:
        settings = {"retention.ms": "1000", "retention.bytes": "-1", "cleanup.policy": "delete"}
        settings |= {"message.timestamp.type": "CreateTime"} | values
        configs = [
            C(name=k, value=v, read_only=False, config_source=5, is_sensitive=False, synonyms=[])
            for k, v in settings.items()
            if v is not None
        ]
        return R(error_code=0, error_message=None, resource_type=2, resource_name=name, configs=configs)

    response = DescribeConfigsResponse(
        throttle_time_ms=0,
        results=[
            answer("ok"),
            answer("short", **{"retention.ms": None}),
            answer("odd", **{"retention.bytes": "lots"}),
            answer("not-asked"),
        ],
    )
    outcome = handler.parse(RequestPlan(plan.request, 4, plan.keys, node=1), response, {})
    assert set(outcome.completed) == {"ok"}
    assert {t: f.code for t, f in outcome.failed.items()} == {
        "short": CLIENT_INCOMPLETE_RESPONSE,
        "odd": CLIENT_PROTOCOL_ERROR,
        "unanswered": CLIENT_INCOMPLETE_RESPONSE,
    }
    assert outcome.failed["short"].message == "DescribeConfigs answered no retention.ms"
    assert outcome.failed["odd"].message == "DescribeConfigs: retention.bytes is 'lots', not a number"


def test_topics_any_broker_serves_wait_for_the_sender_not_for_a_lookup_request():
    """Routing.ANY: the driver hands the keys to the sender (one dispatch, no lookup request
    built) and never caches where they went."""
    handler = DescribeConfigsHandler()
    driver = Driver(handler, ["a", "b"], backoff=lambda attempt: 0.1)
    [dispatch] = driver.poll(0.0)
    assert (dispatch.stage, dispatch.node, sorted(dispatch.keys)) == (LOOKUP, ANY_BROKER, ["a", "b"])
    assert handler.lookup.cached("a") is None and handler.lookup.request_class is None
    with pytest.raises(NotImplementedError, match="the sender picks it"):
        handler.lookup.build(["a"], 0)


async def test_topic_input_is_checked_before_any_request_and_empty_sends_nothing():
    async with FakeCluster(brokers=1) as c:
        async with AsyncGroupsClient(config(c)) as client:
            with pytest.raises(ConfigurationError, match="single string"):
                await client.describe_topic_retention("orders")
            with pytest.raises(ConfigurationError, match="not a topic name"):
                await client.describe_topic_retention(["orders", ""])
            with pytest.raises(ConfigurationError, match="not a TopicPartition"):
                await client.describe_log_dir_sizes([("orders", 0)])
            assert len(await client.describe_topic_retention([])) == 0
            assert len(await client.describe_log_dir_sizes([])) == 0
        assert counts(c) == {}


# -- DescribeLogDirs --------------------------------------------------------------------------------


async def test_log_dir_sizes_one_request_per_leader_with_each_partitions_bytes():
    async with FakeCluster(brokers=3) as c:
        c.add_topic("orders", 3, leaders=[0, 1, 1])
        c.add_topic("empty", 1, leaders=[2])
        for i in range(4):
            c.append_batch("orders", 0, [b"value-%d" % i, (b"key", b"v")], timestamp_ms=1_700_000_000_000)
        c.append("orders", 1, 5, value=b"x" * 100)
        tps = [TopicPartition("orders", p) for p in range(3)] + [TopicPartition("empty", 0)]
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_log_dir_sizes([*tps, TopicPartition("absent", 0)])
        expected = {tp: partition_size(c.topics[tp.topic].partitions[tp.partition]) for tp in tps}
        assert dict(result.values) == expected
        assert expected[tps[0]] > 0 and expected[tps[1]] > 500 and expected[tps[2]] == expected[tps[3]] == 0
        assert {tp: f.code for tp, f in result.failures.items()} == {
            TopicPartition("absent", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        }
        assert {r.node for r in c.requests("DescribeLogDirs")} == {0, 1, 2}
        assert counts(c)["DescribeLogDirs"] == 3
        [on_1] = c.requests("DescribeLogDirs", node=1)
        assert [(t.topic, list(t.partitions)) for t in on_1.request.topics] == [("orders", [1, 2])]


async def test_a_partition_its_old_leader_no_longer_holds_is_asked_of_the_new_one():
    async with FakeCluster(brokers=2) as c:
        c.add_topic("orders", 1, leaders=[0])
        c.append("orders", 0, 3)
        tp = TopicPartition("orders", 0)
        async with AsyncGroupsClient(config(c)) as client:
            first = await client.describe_log_dir_sizes([tp])
            c.move_leader("orders", 0, 1)  # the client's metadata still names broker 0
            second = await client.describe_log_dir_sizes([tp])
        assert first.values == second.values == {tp: partition_size(c.topics["orders"].partitions[0])}
        assert [r.node for r in c.requests("DescribeLogDirs")] == [0, 0, 1]


async def test_an_offline_log_dir_fails_the_partitions_it_did_not_list():
    """ReplicaManager.describeLogDirs lists an offline directory with KAFKA_STORAGE_ERROR and no
    topics: its partitions cannot be told apart from ones the broker does not hold, so they fail
    with the directory's error rather than being looked up again."""
    async with FakeCluster(brokers=2) as c:
        c.add_topic("orders", 2, leaders=[0, 1])
        c.inject_error("DescribeLogDirs", Err.KAFKA_STORAGE_ERROR, node=1)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_log_dir_sizes(
                [TopicPartition("orders", 0), TopicPartition("orders", 1)]
            )
        assert dict(result.values) == {TopicPartition("orders", 0): 0}
        failure = result.failures[TopicPartition("orders", 1)]
        assert failure.code == ErrorCode.KAFKA_STORAGE_ERROR and log_dir(1) in failure.message
        assert counts(c)["DescribeLogDirs"] == 2


@pytest.mark.parametrize("version", [2, 5])
async def test_log_dirs_need_describe_on_the_cluster(version):
    """KafkaApis.handleDescribeLogDirsRequest: without Describe on the cluster, no directory; from
    v3 with CLUSTER_AUTHORIZATION_FAILED, below it with nothing to say why."""
    async with FakeCluster(brokers=1, api_versions={"DescribeLogDirs": version}) as c:
        c.add_topic("orders", 2)
        c.allow("ANONYMOUS", "topic", "*", "Describe")
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.describe_log_dir_sizes(
                [TopicPartition("orders", 0), TopicPartition("orders", 1)]
            )
        assert {f.code for f in result.failures.values()} == {ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        assert len(result.failures) == 2 and counts(c)["DescribeLogDirs"] == 1
        if version < 3:
            assert "listed no log directory" in result.failures[TopicPartition("orders", 0)].message


def test_both_verbs_are_verbs_of_the_sync_client():
    with FakeCluster.running_in_thread(brokers=1) as c:
        c.add_topic("orders", 1, config={"retention.ms": 1000})
        c.append("orders", 0, 2)
        with GroupsClient(config(c)) as client:
            retention = client.describe_topic_retention(["orders"])
            sizes = client.describe_log_dir_sizes([TopicPartition("orders", 0)])
    assert retention.values["orders"].retention_ms == 1000
    assert sizes.values[TopicPartition("orders", 0)] > 0
