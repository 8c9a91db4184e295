"""Three real brokers (``kafka3``): a quota throttling the client (KIP-219) and a broker stopped
under the lag gate, the lag snapshot and the cleanup (its group coordinators and partition
leaders move to the others), with no wrong answer on the way."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from airflow_provider_kgroups.cli import main as kgroups_main
from airflow_provider_kgroups.client import (
    AsyncGroupsClient,
    ClientConfig,
    GroupsClient,
    GroupState,
    TopicPartition,
)
from airflow_provider_kgroups.client.transport import connection as connection_module
from airflow_provider_kgroups.lag.gate import GateSpec, GateStatus, LagGate, check_gate
from airflow_provider_kgroups.lag.snapshot import take_snapshot
from demo.seed import BASE_TIMESTAMP_MS, Seeder

QUOTA_CLIENT = "kg-quota"


def test_a_byte_rate_quota_is_waited_out_and_no_fetch_fails(kafka3, monkeypatch):
    """consumer_byte_rate 4 KB/s on the client id, set with kafka-configs: Kafka answers a fetch
    over it with the throttle time and no records; the client writes nothing more to that broker
    until the throttle ends, asks again, and reads every record."""
    topic = "quota-t"
    with Seeder(kafka3.bootstrap) as seed:
        seed.create_topic(topic, partitions=1)  # one replica: the seeder's acks=1 loses nothing
        seed.produce(
            topic, 0, 6, value=lambda i: bytes([65 + i]) * 2000, first_timestamp_ms=BASE_TIMESTAMP_MS
        )
    done = kafka3.run_tool(
        "org.apache.kafka.tools.ConfigCommand",
        "--bootstrap-server",
        kafka3.bootstrap,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        QUOTA_CLIENT,
        "--add-config",
        "consumer_byte_rate=4096",
    )
    assert done.returncode == 0, done.stderr
    waits: list[float] = []
    original = connection_module.BrokerConnection._wait_out_throttle

    async def spy(self, *args, **kwargs):
        if (left := self._throttled_until - time.monotonic()) > 0:
            waits.append(left)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(connection_module.BrokerConnection, "_wait_out_throttle", spy)
    tp = TopicPartition(topic, 0)

    async def read_all() -> list[tuple[int, bytes]]:
        read, position = [], 0
        async with AsyncGroupsClient(
            ClientConfig.create(kafka3.bootstrap, client_id=QUOTA_CLIENT, call_timeout_s=60)
        ) as client:
            while position < 6:
                result = await client.fetch_records({tp: position}, page_bytes=4096)
                assert result.failures == {}, result.failures
                page = result.values[tp]
                assert not page.out_of_range and page.next_offset > position, page
                read += [(r.offset, r.value) for r in page.records]
                position = page.next_offset
        return read

    deadline = time.monotonic() + 60
    while not waits:  # the quota reaches the brokers through the metadata log: read until it bites
        assert asyncio.run(read_all()) == [(i, bytes([65 + i]) * 2000) for i in range(6)]
        assert time.monotonic() < deadline, "no throttle within 60 s: was the quota applied?"
    assert max(waits) > 0.5  # 12 KB at 4 KB/s: seconds, waited out before the next request


@pytest.fixture
def moving(kafka3, request):
    """A topic replicated on all 3 nodes, 6 Empty groups committed at 2 of its 4 records per
    partition; yields, then starts any stopped node again (the next test finds 3 nodes)."""
    prefix = "move-"
    topic = prefix + "t"
    groups = [f"{prefix}g{i}" for i in range(6)]
    with Seeder(kafka3.bootstrap) as seed:
        seed.create_topic(topic, partitions=3, replication=3)
        for partition in range(3):
            seed.produce(topic, partition, 4, first_timestamp_ms=BASE_TIMESTAMP_MS)
        seed.commit_many({g: {(topic, p): 2 for p in range(3)} for g in groups})
    yield {"topic": topic, "groups": groups}
    for node in kafka3.node_list:
        if not node.process.running:
            kafka3.start_node(node.node_id, timeout=120)


def test_a_broker_stopped_under_the_gate_the_snapshot_and_the_cleanup(kafka3, moving, capsys, tmp_path):
    topic, groups = moving["topic"], moving["groups"]
    config = ClientConfig.create(kafka3.bootstrap, call_timeout_s=60, retry_backoff_s=0.2)
    with GroupsClient(config) as client:
        before = client.describe_groups(groups)
    coordinators = {g: d.coordinator_id for g, d in before.values.items()}
    # stop the node coordinating the most groups (not node 1: the test's bootstrap list keeps it)
    victim = max((n for n in (2, 3)), key=lambda n: sum(c == n for c in coordinators.values()))
    moved = [g for g, c in coordinators.items() if c == victim]
    assert moved, coordinators

    gate_group = groups[0]
    decisions: list = []
    errors: list[BaseException] = []
    stop_checking = threading.Event()

    async def keep_checking():
        async with AsyncGroupsClient(config) as aclient:
            gate = LagGate.start(GateSpec.parse(group_ids=(gate_group,), topics=(topic,)), timeout_s=120)
            while not stop_checking.is_set():
                decisions.append(await check_gate(aclient, gate))
                await asyncio.sleep(0.2)

    def checker():
        try:
            asyncio.run(keep_checking())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=checker, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not decisions:
            assert time.monotonic() < deadline and not errors, errors
            time.sleep(0.1)
        kafka3.stop_node(victim)  # a controlled shutdown: leaders and coordinators move
        with GroupsClient(config) as client:
            after = client.describe_groups(groups)
            snap = client.run(take_snapshot(client.aclient, groups))
        checked_while_down = len(decisions)
        time.sleep(1.0)
    finally:
        stop_checking.set()
        thread.join(60)
    assert not errors, errors
    assert after.failures == {}
    assert all(d.state is GroupState.EMPTY for d in after.values.values())
    assert all(after.values[g].coordinator_id != victim for g in groups)
    assert snap.failures == {}
    assert {
        g: [(p.tp.partition, p.committed, p.log_end, p.lag) for p in snap.groups[g].partitions]
        for g in groups
    } == {g: [(p, 2, 4, 2) for p in range(3)] for g in groups}
    # every check, before, during and after the move: waiting, with the same 6 offsets to go
    assert len(decisions) > checked_while_down >= 1
    assert {(d.status, "6 offsets remaining" in d.message) for d in decisions} == {(GateStatus.WAIT, True)}, [
        d.message for d in decisions if d.status is not GateStatus.WAIT
    ]

    # the cleanup, with a node down: a named Empty group whose coordinator moved is deleted after
    # its backup, the others are left alone
    target = moved[0]
    capsys.readouterr()
    code = kgroups_main(
        ["-b", kafka3.bootstrap, "--format", "json", "delete", "--yes", "--backup-url", str(tmp_path), target]
    )
    out = json.loads(capsys.readouterr().out)
    assert (code, out["deleted"], out["failed"]) == (0, [target], []), out
    with open(out["backup_url"]) as backup_file:
        backup = json.load(backup_file)
    assert {p: v["offset"] for p, v in backup["groups"][target][topic].items()} == {"0": 2, "1": 2, "2": 2}
    with GroupsClient(config) as client:
        left = client.describe_groups(groups)
    assert {g: d.state for g, d in left.values.items()} == {
        g: GroupState.DEAD if g == target else GroupState.EMPTY for g in groups
    }
