"""Topic retention settings (DescribeConfigs) and partition sizes (DescribeLogDirs) on Apache Kafka
itself, and the fake cluster answering as it does for the same topics.

Topics are created with their own settings by confluent-kafka's AdminClient (``NewTopic(config=)``,
as CreateTopics carries them): one overriding ``retention.ms``, one compacted, one keeping records
forever (``retention.ms=-1``), one compacted and deleted by log-append time, one with Kafka's
settings. The session's brokers set ``log.retention.ms=-1`` in server.properties (demo/apache_kafka.py:
the seeded records are from 2023), so a topic without an override reports that, from
STATIC_BROKER_CONFIG; the settings nobody sets (``segment.ms``'s 604800000, ``retention.bytes``'s -1)
come from DEFAULT_CONFIG. Kafka's own ``retention.ms`` default (604800000, DEFAULT_CONFIG) is the
fake's answer on brokers without that line (tests/client/test_fake_topic_retention.py).
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from airflow_provider_kgroups.client import (
    ClientConfig,
    ConfigSource,
    GroupsClient,
    TopicPartition,
    TopicRetention,
)
from airflow_provider_kgroups.client.errors import ErrorCode
from airflow_provider_kgroups.client.handlers.describe_configs import CONFIG_KEYS
from airflow_provider_kgroups.client.protocol import DescribeConfigsRequest, DescribeLogDirsRequest
from demo.seed import BASE_TIMESTAMP_MS, Seeder
from tests.support.fakekafka import FakeCluster, roundtrip
from tests.support.fakekafka.handlers.configs import TOPIC_CONFIGS
from tests.support.pytest_kafka import KEEP_RECORDS, SASL_LISTENER, USERS

TAG = uuid.uuid4().hex[:6]
DEFAULT, STATIC, OVERRIDE = (
    ConfigSource.DEFAULT_CONFIG,
    ConfigSource.STATIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_TOPIC_CONFIG,
)
#: name -> (partitions, the topic's own settings)
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "hour": (2, {"retention.ms": "3600000"}),
    "compacted": (1, {"cleanup.policy": "compact"}),
    "forever": (1, {"retention.ms": "-1"}),
    "both": (1, {"cleanup.policy": "delete,compact", "message.timestamp.type": "LogAppendTime"}),
    "plain": (1, {}),
}
#: records each topic gets, one per batch (Seeder.produce): 61 bytes of batch header and 9 of record
#: (length, attributes, timestamp and offset deltas, null key, value length: 1 byte each; headers
#: count 1; the value b"v0", 2), so 70 bytes each on disk
RECORDS = {"hour": 3, "plain": 2}
BATCH_BYTES = 70


def _names(prefix: str) -> dict[str, str]:
    return {key: f"{prefix}{key}-{TAG}" for key in TOPICS}


def _create(bootstrap: str, names: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(names[key], partitions, 1, config=config) for key, (partitions, config) in TOPICS.items()]
    )
    for future in futures.values():
        future.result(30)
    with Seeder(bootstrap) as seeder:
        seeder.admin.wait_for_topics(list(names.values()), timeout_ms=30_000)
        for key, count in RECORDS.items():
            seeder.produce(names[key], 0, count, first_timestamp_ms=BASE_TIMESTAMP_MS)


@pytest.fixture(scope="module")
def topics(kafka) -> dict[str, str]:
    names = _names("ret-")
    _create(kafka.bootstrap, names)
    return names


def _sources(retention: TopicRetention, *names: str) -> dict[str, ConfigSource]:
    return {name: retention.sources[name] for name in names}


def test_retention_settings_say_which_the_topic_overrides(kafka, topics):
    with GroupsClient(ClientConfig.create(kafka.bootstrap)) as client:
        result = client.describe_topic_retention([*topics.values(), f"absent-{TAG}"])
        sent = dict(client.stats.by_api)
    hour, compacted, forever = (result.values[topics[k]] for k in ("hour", "compacted", "forever"))
    both, plain = result.values[topics["both"]], result.values[topics["plain"]]

    assert (hour.retention_ms, hour.retention_bytes, hour.cleanup_policy) == (3_600_000, None, ("delete",))
    assert hour.deletes and hour.overrides() == {"retention.ms"}
    assert _sources(hour, "retention.ms", "retention.bytes") == {
        "retention.ms": OVERRIDE,
        "retention.bytes": DEFAULT,
    }
    # compacted only: nothing is deleted by age, whatever retention.ms says (the broker's -1 here)
    assert compacted.cleanup_policy == ("compact",) and not compacted.deletes
    assert compacted.overrides() == {"cleanup.policy"}
    assert _sources(compacted, "retention.ms") == {"retention.ms": STATIC}
    # -1 set on the topic: no time limit, and the topic says so itself
    assert forever.retention_ms is None and forever.deletes
    assert _sources(forever, "retention.ms") == {"retention.ms": OVERRIDE}
    assert both.cleanup_policy == ("compact", "delete") and both.message_timestamp_type == "LogAppendTime"
    assert both.overrides() == {"cleanup.policy", "message.timestamp.type"}
    # nothing set on the topic: server.properties' log.retention.ms=-1, else Kafka's defaults
    assert plain.overrides() == frozenset()
    assert (plain.retention_ms, plain.retention_bytes, plain.cleanup_policy) == (None, None, ("delete",))
    assert (plain.message_timestamp_type, plain.segment_ms, plain.segment_bytes) == (
        "CreateTime",
        604_800_000,
        1_073_741_824,
    )
    assert _sources(plain, "retention.ms", "retention.bytes", "segment.ms", "cleanup.policy") == {
        "retention.ms": STATIC,
        "retention.bytes": DEFAULT,
        "segment.ms": DEFAULT,
        "cleanup.policy": DEFAULT,
    }
    # no tiered storage: local retention is retention
    assert (plain.remote_storage, plain.local_retention_ms, hour.local_retention_ms) == (
        False,
        None,
        3_600_000,
    )
    assert set(plain.sources) == set(CONFIG_KEYS)  # Kafka 4 knows every setting asked for

    assert {t: (f.code, f.message) for t, f in result.failures.items()} == {
        f"absent-{TAG}": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
    }
    assert sent.get("DescribeConfigs") == 1  # every topic in one request, to one broker


def test_partition_sizes_on_their_leaders(kafka, topics):
    hour0, hour1, plain = (
        TopicPartition(topics["hour"], 0),
        TopicPartition(topics["hour"], 1),
        TopicPartition(topics["plain"], 0),
    )
    absent, no_such_partition = TopicPartition(f"absent-{TAG}", 0), TopicPartition(topics["plain"], 5)
    with GroupsClient(ClientConfig.create(kafka.bootstrap, call_timeout_s=20)) as client:
        result = client.describe_log_dir_sizes([hour0, hour1, plain, absent, no_such_partition])
        sent = client.stats.by_api["DescribeLogDirs"]
    assert dict(result.values) == {hour0: 3 * BATCH_BYTES, hour1: 0, plain: 2 * BATCH_BYTES}
    assert {tp: f.code for tp, f in result.failures.items()} == {
        absent: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # from the leader lookup: nothing is sent for it
        no_such_partition: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert sent == 1  # one leader, one request


def test_a_topic_the_principal_may_not_describe_configs_of_fails_alone(kafka):
    """KafkaApis.handleDescribeConfigsRequest: a topic without DescribeConfigs for the principal answers
    TOPIC_AUTHORIZATION_FAILED with Errors' message, beside the topics it may describe."""
    open_topic, denied = f"ret-acl-open-{TAG}", f"ret-acl-denied-{TAG}"
    with Seeder(kafka.bootstrap) as seeder:
        seeder.create_topics({open_topic: 1, denied: 1})
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    deny = AclBinding(
        ResourceType.TOPIC,
        denied,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.DESCRIBE_CONFIGS,
        AclPermissionType.DENY,
    )
    for future in admin.create_acls([deny]).values():
        future.result(30)
    alice = ClientConfig.create(
        kafka.address(SASL_LISTENER),
        call_timeout_s=30,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="alice",
        sasl_password=USERS["alice"],
    )
    with GroupsClient(alice) as client:
        deadline = time.monotonic() + 30  # ACLs reach the authorizer through the metadata log
        while denied not in (result := client.describe_topic_retention([open_topic, denied])).failures:
            assert time.monotonic() < deadline, "the DENY ACL never took effect"
            time.sleep(0.2)
    assert list(result.values) == [open_topic]
    assert (result.failures[denied].code, result.failures[denied].message) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "Topic authorization failed.",
    )


@pytest.mark.parametrize(
    "fixture, configs_version, log_dirs_version, knows_local",
    [
        pytest.param("kafka_old", 4, 2, False, id="2.8.2"),
        pytest.param("kafka_3x", 4, 4, True, id="3.9.1"),
    ],
)
def test_older_brokers_answer_the_same(request, fixture, configs_version, log_dirs_version, knows_local):
    """Kafka 2.8 answers DescribeConfigs v4 (no local.retention.* nor remote.storage.enable: they
    are 3.6's, KIP-405) and DescribeLogDirs v2 (no top-level error); 3.9, v4 both."""
    cluster = request.getfixturevalue(fixture)
    names = _names(f"ret-{fixture}-")
    _create(cluster.bootstrap, names)
    with GroupsClient(ClientConfig.create(cluster.bootstrap, call_timeout_s=30)) as client:
        retention = client.describe_topic_retention(list(names.values()))
        sizes = client.describe_log_dir_sizes(
            [TopicPartition(names["hour"], 0), TopicPartition(names["plain"], 0)]
        )
        [conn] = [c for c in client.aclient.pool.live() if c.node_id >= 0]
        versions = (conn.version_for(DescribeConfigsRequest), conn.version_for(DescribeLogDirsRequest))
    assert versions == (configs_version, log_dirs_version)
    assert retention.failures == {}
    hour, plain = retention.values[names["hour"]], retention.values[names["plain"]]
    assert (hour.retention_ms, hour.sources["retention.ms"]) == (3_600_000, OVERRIDE)
    assert retention.values[names["compacted"]].cleanup_policy == ("compact",)
    assert retention.values[names["forever"]].retention_ms is None
    assert (plain.retention_ms, plain.sources["retention.ms"]) == (None, STATIC)
    assert ("local.retention.ms" in plain.sources) is knows_local
    assert plain.local_retention_ms is None and hour.local_retention_ms == 3_600_000
    assert dict(sizes.values) == {
        TopicPartition(names["hour"], 0): 3 * BATCH_BYTES,
        TopicPartition(names["plain"], 0): 2 * BATCH_BYTES,
    }


# -- the fake cluster answers as Kafka does -------------------------------------------------------


def _fake_like(names: dict[str, str]) -> FakeCluster:
    """A one-broker fake holding the same topics, settings and records as the ``kafka`` fixture."""
    cluster = FakeCluster.running_in_thread(brokers=[1])
    cluster.set_broker_config(KEEP_RECORDS)  # the fixture's server.properties
    for key, (partitions, config) in TOPICS.items():
        cluster.add_topic(names[key], partitions, config=config)
    for key, count in RECORDS.items():  # as Seeder.produce sends them: one record per batch
        for i in range(count):
            cluster.append_batch(names[key], 0, [b"v%d" % i], timestamp_ms=BASE_TIMESTAMP_MS + i * 1000)
    return cluster


def _describe_configs(names: list[str]) -> DescribeConfigsRequest:
    resource = DescribeConfigsRequest.DescribeConfigsResource
    return DescribeConfigsRequest(
        resources=[
            resource(resource_type=2, resource_name=name, configuration_keys=sorted(TOPIC_CONFIGS))
            for name in names
        ],
        include_synonyms=False,
        include_documentation=False,
    )


def _configs_answer(response) -> list:
    return [
        (
            r.resource_name,
            r.error_code,
            r.error_message,
            sorted(
                (c.name, c.value, c.read_only, c.config_source, c.is_sensitive, c.config_type)
                for c in r.configs
            ),
        )
        for r in response.results
    ]


def _log_dirs_answer(response) -> list:
    return [
        (
            d.error_code,
            sorted(
                (t.name, p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                for t in d.topics
                for p in t.partitions
            ),
        )
        for d in response.results
    ]


def _ask(bootstrap: str, request, version: int):
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return asyncio.run(roundtrip(host, int(port), request, version))


def test_the_fake_answers_describe_configs_and_describe_log_dirs_as_kafka_does(kafka, topics):
    asked = [*topics.values(), f"absent-{TAG}", "bad name!"]
    configs = _describe_configs(asked)
    partitions = [(topics["hour"], [0, 1]), (topics["plain"], [0, 5]), (f"absent-{TAG}", [0])]
    log_dirs = DescribeLogDirsRequest(
        topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic=t, partitions=ps) for t, ps in partitions]
    )
    with _fake_like(topics) as fake:
        for version in (1, 4):
            assert _configs_answer(_ask(fake.bootstrap, configs, version)) == _configs_answer(
                _ask(kafka.bootstrap, configs, version)
            ), f"DescribeConfigs v{version}"
        for version in (1, 3, 4):
            real, faked = _ask(kafka.bootstrap, log_dirs, version), _ask(fake.bootstrap, log_dirs, version)
            assert _log_dirs_answer(faked) == _log_dirs_answer(real), f"DescribeLogDirs v{version}"
            assert faked.error_code == real.error_code
        with GroupsClient(ClientConfig.create(fake.bootstrap)) as client:
            from_fake = client.describe_topic_retention(asked)
            sizes_fake = client.describe_log_dir_sizes(
                [TopicPartition(t, p) for t, ps in partitions for p in ps]
            )
    with GroupsClient(ClientConfig.create(kafka.bootstrap)) as client:
        from_kafka = client.describe_topic_retention(asked)
        sizes_kafka = client.describe_log_dir_sizes(
            [TopicPartition(t, p) for t, ps in partitions for p in ps]
        )
    assert from_fake.to_dict() == from_kafka.to_dict()
    assert sizes_fake.values == sizes_kafka.values
    assert {tp: f.code for tp, f in sizes_fake.failures.items()} == {
        tp: f.code for tp, f in sizes_kafka.failures.items()
    }
