"""A real Kafka Connect worker for the tests (loaded by tests/conftest.py): one session worker
(demo/kafka_connect.py, :data:`~demo.kafka_connect.CONNECT_VERSION` in distributed mode) on the
``kafka`` broker, with the connect-file plugin (FileStreamSink/Source) in its plugin.path and
``connector.client.config.override.policy=All``. Tests share it: each names its connectors with
``name_prefix``. A test that stops the worker starts it again before it ends (``restart()``, or
``start_again()`` then ``wait_ready()``), so the next test finds it running.

Like the broker, a worker that cannot be had fails the tests that need it with the launcher's
error (never a skip); tests using it get the ``apachekafka`` marker (through ``kafka``). On a
failing test the tail of the worker's log is attached to the report.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from demo.apache_kafka import KafkaCluster
from demo.kafka_connect import ConnectWorker

_STARTED: dict[str, ConnectWorker] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]  # pluggy wrapper
    report = yield
    worker = _STARTED.get("connect_worker")
    if (
        report.failed
        and call.when == "call"
        and worker is not None
        and "connect_worker" in getattr(item, "fixturenames", ())
    ):
        report.sections.append(("Kafka Connect worker log", worker.log_tail(lines=40)))
    return report


@pytest.fixture(scope="session")
def connect_worker(kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectWorker]:
    with ConnectWorker(bootstrap=kafka.bootstrap, workdir=tmp_path_factory.mktemp("connect")) as worker:
        _STARTED["connect_worker"] = worker
        try:
            yield worker
        finally:
            _STARTED.pop("connect_worker", None)
