"""Differently configured Apache Kafka clusters for the tests in tests/apachekafka/ (loaded by
tests/apachekafka/conftest.py; the shared ones are in tests/support/pytest_kafka.py).

- ``kafka_short``: Kafka :data:`~demo.apache_kafka.NEWEST`, one node, whose SASL_PLAINTEXT
  listener takes OAUTHBEARER JWTs checked against the JWKS of the tests' identity provider
  (:mod:`tests.support.oidc`, started with the cluster: ``kafka_short.idp``) and SCRAM-SHA-256
  for ``alice``; sessions last at most :data:`REAUTH_MS` (KIP-368: a client must re-authenticate
  on its connection), and an Empty group's offsets expire after one minute (KIP-211), checked
  every :data:`RETENTION_CHECK_MS`. One cluster for all three so the suite pays one start-up.
  :data:`EXPIRING_GROUP` commits one offset as the cluster starts (``kafka_short.expiring_since``,
  epoch ms), so the minute it takes to expire passes while other tests run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from demo.apache_kafka import NEWEST, KafkaCluster
from demo.seed import Seeder
from tests.support.oidc import IdentityProvider
from tests.support.pytest_kafka import KEEP_RECORDS

SASL_LISTENER = "SASL_PLAINTEXT"
REAUTH_MS = 3000
RETENTION_CHECK_MS = 1000
OIDC_CLIENTS = {"svc": "svc-secret-never-print"}
SCRAM_ALICE = ("SCRAM-SHA-256", "alice", "alice-short-secret")
EXPIRING_GROUP, EXPIRING_TOPIC = "expiring-g", "expiring-t"
FIXTURES = ("kafka_short",)
STARTED: dict[str, KafkaCluster] = {}  # for the log tail in a failing test's report


def _oidc_properties(idp: IdentityProvider) -> dict[str, object]:
    prefix = f"listener.name.{SASL_LISTENER.lower()}"
    return {
        "sasl.enabled.mechanisms": "OAUTHBEARER,SCRAM-SHA-256",
        f"{prefix}.oauthbearer.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        f"{prefix}.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        f"{prefix}.scram-sha-256.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "sasl.oauthbearer.jwks.endpoint.url": idp.jwks_url,
        "sasl.oauthbearer.expected.audience": idp.audience,
        "sasl.oauthbearer.expected.issuer": idp.issuer,
        "connections.max.reauth.ms": REAUTH_MS,
        "offsets.retention.minutes": 1,
        "offsets.retention.check.interval.ms": RETENTION_CHECK_MS,
        **KEEP_RECORDS,
    }


@pytest.fixture(scope="session")
def kafka_short(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with IdentityProvider(OIDC_CLIENTS) as idp:
        cluster = KafkaCluster(
            version=NEWEST,
            nodes=1,
            listeners={SASL_LISTENER: SASL_LISTENER},
            properties=_oidc_properties(idp),
            scram_users=(SCRAM_ALICE,),
            # Kafka 4 refuses to fetch a JWKS from a URL not on this list (CVE-2025-27817)
            jvm_flags=(f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={idp.jwks_url}",),
            workdir=tmp_path_factory.mktemp("kafka-short"),
        )
        cluster.idp = idp  # type: ignore[attr-defined]  # the tests ask it for tokens
        with cluster:
            with Seeder(cluster.bootstrap) as seed:
                seed.create_topic(EXPIRING_TOPIC, partitions=1)
                seed.produce(EXPIRING_TOPIC, 0, 2)
                cluster.expiring_since = int(time.time() * 1000)  # type: ignore[attr-defined]
                seed.commit(EXPIRING_GROUP, {(EXPIRING_TOPIC, 0): 1})
            STARTED["kafka_short"] = cluster
            try:
                yield cluster
            finally:
                STARTED.pop("kafka_short", None)
