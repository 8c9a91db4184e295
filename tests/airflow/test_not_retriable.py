"""Errors that retrying cannot fix end the task at once (the rule: ``client.errors.is_retriable``):
a wrong SASL password and an untrusted TLS certificate fail a deferrable sensor with an hour's
timeout and three retries at its first check; its trigger ends on the same errors with a
``not_retriable`` event instead of polling until the timeout. On the fake cluster (SASL
SCRAM-SHA-512 over TLS), which Tansu cannot serve. A bug in the client (a fault injected into a
handler) fails a sensor, deferrable or poking, at its first check the same way."""

from __future__ import annotations

import asyncio
import time

import pytest

from airflow_provider_kgroups.client.handlers.offset_fetch import OffsetFetchHandler
from airflow_provider_kgroups.lag.gate import GateSpec
from airflow_provider_kgroups.triggers.lag import ConsumerLagTrigger
from tests.support.airflow_env import scanned_for_secrets
from tests.support.fakekafka import FakeCluster, make_self_signed_cert, server_ssl_context

PASSWORD = "right-horse-battery"
WRONG = "wr0ng-Pa55-staple"


@pytest.fixture(scope="module")
def secure_cluster(tmp_path_factory):
    certs = make_self_signed_cert(tmp_path_factory.mktemp("tls"))
    other = make_self_signed_cert(tmp_path_factory.mktemp("other-ca"))  # a CA that did not sign the broker
    with FakeCluster.running_in_thread(
        brokers=1, sasl={"SCRAM-SHA-512": {"alice": PASSWORD}}, ssl_context=server_ssl_context(certs)
    ) as cluster:
        cluster.add_topic("orders", partitions=1, end_offsets=10)
        cluster.add_group("billing", offsets={("orders", 0): 7})
        yield cluster, certs, other


def connection(kgroups_conn, cluster, ca: str, password: str, conn_id: str) -> str:
    return kgroups_conn(
        conn_id,
        "kgroups",
        host=cluster.bootstrap,
        login="alice",
        password=password,
        extra={
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "ssl_cafile": ca,
            "call_timeout_s": "10",
        },
    )


@pytest.mark.parametrize("case", ["wrong_password", "untrusted_certificate"])
def test_a_deferrable_sensor_fails_at_its_first_check_without_retries(
    case, run_dag, kgroups_conn, secure_cluster, task_output
):
    cluster, certs, other = secure_cluster
    ca, password = (certs.cert, WRONG) if case == "wrong_password" else (other.cert, PASSWORD)
    conn_id = connection(kgroups_conn, cluster, ca, password, f"kg_{case}")
    result = run_dag("kg_sensor_not_retriable", {"conn": conn_id})
    assert result.state == "failed", result
    assert result.tasks["gate"] == "failed"  # not up_for_retry: retries=3 were not used
    assert result.seconds < 60, "must fail at the first check, not after retries or the 1 h timeout"
    text = task_output()
    assert "AuthenticationError" in text and "retrying cannot fix this" in text
    assert (
        ("authentication as 'alice'" in text)
        if case == "wrong_password"
        else ("TLS certificate verification" in text)
    )
    scanned = scanned_for_secrets(text)
    assert PASSWORD not in scanned and WRONG not in scanned  # secrets never logged


@pytest.mark.parametrize("dag_id", ["kg_sensor_bug", "kg_sensor_bug_poke"])
def test_a_bug_in_a_handler_fails_the_sensor_at_its_first_check(
    dag_id, run_dag, kgroups_conn, monkeypatch, task_output
):
    """A fault injected into the OffsetFetch handler's ``parse`` used to become a per-key
    CLIENT_UNSUPPORTED failure, which the gate read as a transient failure and waited out the
    sensor's timeout: now it propagates out of the client and the task fails, without its
    retries (``AirflowFailException``, which says so)."""

    def broken(self, plan, response, notes):
        raise ZeroDivisionError("injected fault in OffsetFetchHandler.parse")

    monkeypatch.setattr(OffsetFetchHandler, "parse", broken)
    with FakeCluster.running_in_thread(brokers=2) as cluster:
        cluster.add_topic("orders", partitions=1, end_offsets=10)
        cluster.add_group("billing", offsets={("orders", 0): 7})
        conn_id = kgroups_conn(
            f"kg_bug_{dag_id}", "kgroups", host=cluster.bootstrap, extra={"call_timeout_s": "10"}
        )
        result = run_dag(dag_id, {"conn": conn_id})
        assert cluster.count("OffsetFetch") >= 1  # the fault was reached, after a real answer
    assert result.state == "failed", result
    assert result.tasks["gate"] == "failed"  # not up_for_retry: retries=3 were not used
    assert result.seconds < 60, "must fail at the first check, not after retries or the 1 h timeout"
    text = task_output()
    assert "injected fault in OffsetFetchHandler.parse" in text
    assert "a bug, ZeroDivisionError" in text and "retrying cannot fix this" in text
    assert "check failed, will retry" not in text


async def test_the_trigger_ends_on_an_error_retrying_cannot_fix(kgroups_conn, secure_cluster):
    cluster, certs, _ = secure_cluster
    conn_id = connection(kgroups_conn, cluster, certs.cert, WRONG, "kg_trigger_wrong")
    spec = GateSpec.parse(group_ids=("billing",), topics=("orders",)).to_dict()
    trigger = ConsumerLagTrigger(
        kafka_groups_conn_id=conn_id,
        spec=spec,
        state={"started_ms": 0},
        deadline_ms=int(time.time() * 1000) + 3_600_000,
        poll_interval=0.1,
    )

    async def first_event():
        async for event in trigger.run():
            return event.payload

    started = time.monotonic()
    payload = await asyncio.wait_for(first_event(), 30)
    assert payload["status"] == "fail" and payload["kind"] == "not_retriable", payload
    assert "AuthenticationError" in payload["message"] and WRONG not in payload["message"]
    assert time.monotonic() - started < 15  # one check, not an hour of polling


async def test_the_triggers_first_check_comes_one_poll_interval_after_the_workers(
    kgroups_conn, secure_cluster, monkeypatch
):
    """The worker checks right before deferring; checking again at once would double the load
    for nothing (and count a check the interval never allowed)."""
    from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook

    cluster, certs, _ = secure_cluster
    conn_id = connection(kgroups_conn, cluster, certs.cert, WRONG, "kg_trigger_first_check")
    checked_at: list[float] = []
    real = KafkaGroupsHook.acheck_gate

    async def spy(self, gate):
        checked_at.append(time.monotonic())
        return await real(self, gate)

    monkeypatch.setattr(KafkaGroupsHook, "acheck_gate", spy)
    spec = GateSpec.parse(group_ids=("billing",), topics=("orders",)).to_dict()
    trigger = ConsumerLagTrigger(
        kafka_groups_conn_id=conn_id,
        spec=spec,
        state={"started_ms": 0},
        deadline_ms=int(time.time() * 1000) + 3_600_000,
        poll_interval=1.0,
    )

    async def first_event():
        async for event in trigger.run():
            return event.payload

    started = time.monotonic()
    await asyncio.wait_for(first_event(), 30)
    assert len(checked_at) == 1 and checked_at[0] - started >= 0.95
