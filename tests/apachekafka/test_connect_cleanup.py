"""The cleanup's Kafka Connect evidence against a real Connect worker (tests/support/pytest_connect.py)
on the real broker, with real connectors: FileStreamSink connectors RUNNING, PAUSED, STOPPED, with a
FAILED task (its file cannot be created), deleted (its ``connect-<name>`` group stays in Kafka), with
``consumer.override.group.id``; a FileStreamSource connector; and the worker's own group (protocol
type ``connect``). Only the group of the deleted connector may go.

The connectors are made once for the module (a sink commits its group's offsets every second:
``offset.flush.interval.ms=1000`` on the test worker) and never changed by the tests.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_provider_kgroups.cli import EXIT_OK, main
from airflow_provider_kgroups.client import ClientConfig, GroupsClient
from airflow_provider_kgroups.connect import (
    ConnectClusterConfig,
    ConnectStatus,
    fetch_connect_evidence,
)
from demo.apache_kafka import KafkaCluster
from demo.kafka_connect import ConnectWorker
from demo.seed import Seeder, wait_until

RECORDS = 5  # per partition of the sinks' topic


@dataclass
class Scenario:
    prefix: str
    topic: str
    names: dict[str, str]  # role -> connector name
    override_group: str
    plain_group: str

    def group(self, role: str) -> str:
        return "connect-" + self.names[role]

    @property
    def groups(self) -> list[str]:
        return [*(self.group(role) for role in self.names), self.override_group, self.plain_group]


def _committed(seed: Seeder, group: str) -> dict[tuple[str, int], int]:
    return {(tp.topic, tp.partition): offset for tp, offset in seed.committed(group).items()}


def build_scenario(worker: ConnectWorker, seed: Seeder, workdir: Path) -> Scenario:
    prefix = f"cc-{uuid.uuid4().hex[:6]}-"
    topic, lines_topic = prefix + "orders", prefix + "lines"
    seed.create_topics({topic: 2, lines_topic: 1})
    for partition in (0, 1):
        seed.produce(topic, partition, RECORDS)
    names = {
        role: prefix + role for role in ("run", "paused", "stopped", "failed", "gone", "override", "source")
    }
    override_group = prefix + "billing-archive"
    source_file = workdir / "source.txt"
    source_file.write_text("one\ntwo\nthree\n")
    sink = {
        role: worker.file_sink(topic, workdir / f"{role}.out")
        for role in ("run", "paused", "stopped", "gone")
    }
    # a FileStreamSinkTask opens its file at start: a file under a missing folder fails the task
    sink["failed"] = worker.file_sink(topic, "/nonexistent-kgroups-dir/sub/out.txt")
    sink["override"] = worker.file_sink(
        topic, workdir / "override.out", **{"consumer.override.group.id": override_group}
    )
    for role, config in sink.items():
        worker.create_connector(names[role], config)
    worker.create_connector(names["source"], worker.file_source(lines_topic, source_file))

    everything = {(topic, 0): RECORDS, (topic, 1): RECORDS}
    for role in ("run", "paused", "stopped", "gone"):
        wait_until(
            lambda role=role: _committed(seed, "connect-" + names[role]) == everything,
            60,
            f"{names[role]} committing its offsets",
        )
    wait_until(lambda: _committed(seed, override_group) == everything, 60, "the override group's commit")
    worker.wait_for_state(names["failed"], "RUNNING", ["FAILED"])
    worker.wait_for_state(names["source"], "RUNNING", ["RUNNING"])
    worker.pause(names["paused"])
    worker.pause(names["override"])
    worker.stop_connector(names["stopped"])
    worker.delete_connector(names["gone"])
    worker.wait_for_state(names["paused"], "PAUSED", ["PAUSED"])
    worker.wait_for_state(names["override"], "PAUSED", ["PAUSED"])
    worker.wait_for_state(names["stopped"], "STOPPED", [])
    worker.wait_until_gone(names["gone"])
    # Groups no connector commits to: the failed task never consumed, a source connector has no
    # consumer group, the override connector uses another; a connect-<name> group for each is what
    # an earlier life of them could leave.
    for role in ("failed", "source", "override"):
        seed.commit("connect-" + names[role], {(topic, 0): 1})
    plain_group = prefix + "tmp"
    seed.commit(plain_group, {(topic, 0): 2})
    return Scenario(prefix, topic, names, override_group, plain_group)


@pytest.fixture(scope="module")
def scenario(connect_worker: ConnectWorker, kafka_seed: Seeder, tmp_path_factory) -> Scenario:
    return build_scenario(connect_worker, kafka_seed, tmp_path_factory.mktemp("connect-files"))


def test_the_real_worker_answers_what_each_connector_is_and_each_group_gets_its_verdict(
    connect_worker, scenario
):
    evidence = fetch_connect_evidence([ConnectClusterConfig.create(connect_worker.url)], timeout_s=30)
    assert evidence.complete, evidence.failures
    records = {r.name: r for r in evidence.connectors if r.name.startswith(scenario.prefix)}
    names = scenario.names
    got = {
        role: (
            records[n].type,
            records[n].state,
            [(t.id, t.state) for t in records[n].tasks],
            records[n].group_id,
        )
        for role, n in names.items()
        if role != "gone"
    }
    assert got == {
        "run": ("sink", "RUNNING", [(0, "RUNNING")], scenario.group("run")),
        "paused": ("sink", "PAUSED", [(0, "PAUSED")], scenario.group("paused")),
        "stopped": ("sink", "STOPPED", [], scenario.group("stopped")),
        "failed": ("sink", "RUNNING", [(0, "FAILED")], scenario.group("failed")),
        "override": ("sink", "PAUSED", [(0, "PAUSED")], scenario.override_group),
        "source": ("source", "RUNNING", [(0, "RUNNING")], None),
    }
    assert names["gone"] not in records and all(r.config_known for r in records.values())
    url = connect_worker.url
    expected = {
        scenario.group("run"): (ConnectStatus.ACTIVE, "run", "is RUNNING (1 task(s) RUNNING)"),
        scenario.group("paused"): (ConnectStatus.KEEP, "paused", "is PAUSED: it resumes from this group's"),
        scenario.group("stopped"): (
            ConnectStatus.KEEP,
            "stopped",
            f"DELETE {url}/connectors/{names['stopped']}/offsets (Kafka 3.6+, KIP-875",
        ),
        scenario.group("failed"): (ConnectStatus.KEEP, "failed", "is RUNNING but task 0 FAILED"),
        scenario.override_group: (ConnectStatus.KEEP, "override", "is PAUSED"),
        scenario.group("override"): (
            ConnectStatus.KEEP,
            "override",
            f"uses group {scenario.override_group!r} (consumer.override.group.id)",
        ),
        scenario.group("source"): (ConnectStatus.KEEP, "source", "is a source connector"),
        scenario.group("gone"): (ConnectStatus.CONNECTOR_GONE, "gone", "its connector no longer exists"),
    }
    for group, (status, role, words) in expected.items():
        verdict = evidence.for_group(group)
        assert (verdict.status, verdict.connector) == (status, names[role]), (group, verdict)
        assert words in verdict.reason, (group, verdict.reason)
    assert evidence.for_group(scenario.plain_group) is None


def test_the_workers_own_group_is_a_connect_group_kept_by_its_protocol_type(
    kafka: KafkaCluster, connect_worker, scenario
):
    """The worker rebalances its own group whenever connectors change (the tests before this one
    delete and stop some), so it is described once it has settled: Stable, its one member."""
    with GroupsClient(ClientConfig.create(kafka.bootstrap, call_timeout_s=30)) as client:

        def settled():
            group = client.describe_groups([connect_worker.group_id])[connect_worker.group_id]
            return group if group.state.value == "Stable" else None

        group = wait_until(settled, 60, f"the worker's group {connect_worker.group_id} to be Stable", 0.2)
    assert group.protocol_type == "connect" and len(group.members) == 1
    evidence = fetch_connect_evidence([ConnectClusterConfig.create(connect_worker.url)], timeout_s=30)
    verdict = evidence.for_group(connect_worker.group_id, protocol_type=group.protocol_type)
    assert verdict.status is ConnectStatus.KEEP and "a Kafka Connect worker group" in verdict.reason


def test_kgroups_delete_with_the_real_worker_deletes_only_the_deleted_connectors_group(
    kafka: KafkaCluster, kafka_seed: Seeder, connect_worker, scenario, capsys, tmp_path
):
    wanted = [*scenario.groups, connect_worker.group_id]
    before = {g: _committed(kafka_seed, g) for g in scenario.groups}
    assert all(before.values()), before
    code = main(
        [
            "-b",
            kafka.bootstrap,
            "--format",
            "json",
            "delete",
            *wanted,
            "--yes",
            "--connect-url",
            connect_worker.url,
            "--backup-url",
            str(tmp_path / "backups"),
            "--max-deletions-percent",
            "100",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK, out
    assert sorted(out["deleted"]) == sorted([scenario.group("gone"), scenario.plain_group]), out["decisions"]
    assert out["held"] == []
    for group in wanted:
        if group not in out["deleted"]:
            assert out["decisions"][group]["decision"] == "keep", (group, out["decisions"][group])
    assert "lifted by Kafka Connect evidence" in out["decisions"][scenario.group("gone")]["reason"]
    assert out["decisions"][scenario.group("paused")]["reason"].startswith("Kafka Connect: sink connector")
    assert (
        _committed(kafka_seed, scenario.group("gone")) == {}
        and _committed(kafka_seed, scenario.plain_group) == {}
    )
    for group in scenario.groups:
        if group not in out["deleted"]:
            assert _committed(kafka_seed, group) == before[group], group
