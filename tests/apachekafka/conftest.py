"""The clusters of tests/support/kafka_clusters.py, for the tests in this folder; a test that uses
one gets the ``apachekafka`` marker and, when it fails, the tail of the cluster's node logs in its
report, as the shared clusters' tests do."""

from __future__ import annotations

import pytest

from tests.support.kafka_clusters import FIXTURES, STARTED, kafka_short


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in FIXTURES):
            item.add_marker(pytest.mark.apachekafka)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]  # pluggy wrapper
    report = yield
    if report.failed and call.when == "call":
        for name in FIXTURES:
            if name in getattr(item, "fixturenames", ()) and name in STARTED:
                report.sections.append((f"Apache Kafka ({name}) node logs", STARTED[name].log_tail(lines=25)))
    return report
