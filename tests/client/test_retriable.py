"""One rule for what retrying can fix (``is_retriable``), used by the sensor, the trigger and the
operators: bad input, authentication and authorization end a task at once."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client.errors import (
    AuthenticationError,
    BrokerDisconnected,
    ConfigurationError,
    Failure,
    KafkaGroupsError,
    NoBrokerAvailable,
    RequestTimeout,
    is_retriable,
)
from airflow_provider_kgroups.client.results import TopicPartition
from airflow_provider_kgroups.lag.barrier import TargetUnavailable

TP = TopicPartition("orders", 0)


@pytest.mark.parametrize(
    "error, retriable",
    [
        (ConfigurationError("topics=[] is empty"), False),
        (AuthenticationError("SASL PLAIN authentication failed"), False),
        (AuthenticationError("TLS certificate verification of broker b:9093 failed"), False),
        (TargetUnavailable("log-end offsets", {TP: Failure(29)}), False),  # TOPIC_AUTHORIZATION_FAILED
        (TargetUnavailable("committed offsets", {"g": Failure(30)}), False),  # GROUP_AUTHORIZATION_FAILED
        (TargetUnavailable("log-end offsets", {TP: Failure(31)}), False),  # CLUSTER_AUTHORIZATION_FAILED
        (TargetUnavailable("log-end offsets", {TP: Failure(6)}), True),  # NOT_LEADER_OR_FOLLOWER: an election
        (TargetUnavailable("log-end offsets", {TP: Failure(-100, "deadline passed")}), True),
        (NoBrokerAvailable("no broker reachable"), True),
        (RequestTimeout("no answer"), True),
        (BrokerDisconnected("closed"), True),
        (KafkaGroupsError("anything else"), True),
    ],
)
def test_what_retrying_can_fix(error, retriable):
    assert is_retriable(error) is retriable
