"""Apache Kafka itself for the tests (loaded by tests/conftest.py): session fixtures that start real
brokers from Maven Central's jars (demo/apache_kafka.py) once per test session and stop them after.

- ``kafka``: Kafka :data:`~demo.apache_kafka.NEWEST`, one node. Listeners: PLAINTEXT (a super user,
  for seeding and most tests) and SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER
  (unsecured JWS) for :data:`USERS`. ACLs are on (``StandardAuthorizer``): a resource without ACLs is
  open to everyone, so an ACL test names its own resources (``name_prefix``) and grants or denies
  there. Share and streams groups enabled at format time.
- ``kafka3``: the same release, three nodes, PLAINTEXT only (coordinator moves, leader elections).
- ``kafka_old``: :data:`~demo.apache_kafka.OLD_PRE_BATCHING` with its ZooKeeper (no KIP-699/709).
- ``kafka_3x``: :data:`~demo.apache_kafka.RELEASE_3X`, one node.

A broker that cannot be had (no Maven, Maven Central unreachable, Java missing) fails the tests
that need it with the launcher's error: the real broker is never skipped. Tests that use one of
these fixtures get the ``apachekafka`` marker, so ``-m "not apachekafka"`` runs everything else.
On a failing test, the tail of each node's log is attached to the report.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from demo.apache_kafka import NEWEST, OLD_PRE_BATCHING, RELEASE_3X, KafkaCluster
from demo.seed import Seeder

#: SASL users of the ``kafka`` fixture's SASL_PLAINTEXT listener (test-only secrets).
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SASL_LISTENER = "SASL_PLAINTEXT"

FIXTURES = ("kafka", "kafka3", "kafka_old", "kafka_3x")  # kafka_seed needs kafka
_STARTED: dict[str, KafkaCluster] = {}
#: Records seeded with the demo's 2023 timestamps (demo.seed.BASE_TIMESTAMP_MS) are past the default
#: 7-day retention: without this, the first retention check (30 s after start, then every 5 min)
#: deletes them from under a test and moves the log start.
KEEP_RECORDS = {"log.retention.ms": -1}


#: A Kafka Streams member heartbeats every 5 s by default, and a new streams group needs a second
#: heartbeat after the broker created its internal topics before it is Stable: 1 s makes the test
#: application's group ready seconds sooner (test_streams_groups.py).
STREAMS_HEARTBEAT = {
    "group.streams.heartbeat.interval.ms": 1000,
    "group.streams.min.heartbeat.interval.ms": 1000,
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "apachekafka: needs a real Apache Kafka broker started from Maven Central's jars "
        "(tests/support/pytest_kafka.py)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in FIXTURES):
            item.add_marker(pytest.mark.apachekafka)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]  # pluggy wrapper
    report = yield
    if report.failed and call.when == "call":
        for name in FIXTURES:
            if name in getattr(item, "fixturenames", ()) and name in _STARTED:
                report.sections.append(
                    (f"Apache Kafka ({name}) node logs", _STARTED[name].log_tail(lines=25))
                )
    return report


def _sasl_properties() -> dict[str, object]:
    plain_users = " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
    prefix = f"listener.name.{SASL_LISTENER.lower()}"
    return {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        f"{prefix}.plain.sasl.jaas.config": f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
        f"{prefix}.scram-sha-256.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        f"{prefix}.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        # No server callback handler: Kafka's default validates unsecured JWS (OAuthBearerUnsecuredJws).
        f"{prefix}.oauthbearer.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        # PLAINTEXT (seeding, the controller listener) acts as ANONYMOUS: a super user.
        "super.users": "User:ANONYMOUS;User:admin",
    }


def _start(name: str, cluster: KafkaCluster) -> Iterator[KafkaCluster]:
    with cluster:
        _STARTED[name] = cluster
        try:
            yield cluster
        finally:
            _STARTED.pop(name, None)


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    scram = tuple(
        (mechanism, name, password)
        for name, password in USERS.items()
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
    )
    cluster = KafkaCluster(
        version=NEWEST,
        nodes=1,
        listeners={SASL_LISTENER: SASL_LISTENER},
        properties={**_sasl_properties(), **KEEP_RECORDS, **STREAMS_HEARTBEAT},
        scram_users=scram,
        features=("share.version=1", "streams.version=1"),
        workdir=tmp_path_factory.mktemp("kafka"),
    )
    yield from _start("kafka", cluster)


@pytest.fixture(scope="session")
def kafka_seed(kafka: KafkaCluster) -> Iterator[Seeder]:
    """A kafka-python Seeder on ``kafka``'s PLAINTEXT listener (a different client than ours)."""
    with Seeder(kafka.bootstrap) as seeder:
        yield seeder


@pytest.fixture(scope="session")
def kafka3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(
        version=NEWEST,
        nodes=3,
        workdir=tmp_path_factory.mktemp("kafka3"),
        properties={"default.replication.factor": 3, "min.insync.replicas": 1, **KEEP_RECORDS},
    )
    yield from _start("kafka3", cluster)


@pytest.fixture(scope="session")
def kafka_old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(version=OLD_PRE_BATCHING, nodes=1, workdir=tmp_path_factory.mktemp("kafka-old"))
    yield from _start("kafka_old", cluster)


@pytest.fixture(scope="session")
def kafka_3x(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(version=RELEASE_3X, nodes=1, workdir=tmp_path_factory.mktemp("kafka-3x"))
    yield from _start("kafka_3x", cluster)
