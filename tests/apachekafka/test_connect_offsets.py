"""KIP-875 for real: ``kgroups reset-offsets --via-connect`` and the offset-reset operator against a
real Connect worker's ``GET/PATCH/DELETE /connectors/{name}/offsets`` (tests/support/pytest_connect.py).

A sink connector's group is never committed to directly; Connect alters it only while the
connector is STOPPED (``PUT /connectors/{name}/stop``), and what the group reads after Connect
answered is what the audit records. Resumed, the connector re-delivers from the offsets set.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import tests.support.airflow_env
from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL, main
from airflow_provider_kgroups.client import TopicPartition
from airflow_provider_kgroups.connect.offsets import sink_offsets_body
from demo.kafka_connect import ConnectWorker
from demo.seed import Seeder, wait_until

RECORDS = 10  # per partition


def _committed(seed: Seeder, group: str) -> dict[int, int]:
    return {tp.partition: offset for tp, offset in seed.committed(group).items()}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def running_sink(worker: ConnectWorker, seed: Seeder, prefix: str, out: Path) -> tuple[str, str]:
    """A FileStreamSink on a new two-partition topic of RECORDS each, once it has committed them all."""
    name, topic = prefix + "sink", prefix + "orders"
    seed.create_topic(topic, partitions=2)
    for partition in (0, 1):
        seed.produce(topic, partition, RECORDS)
    worker.create_connector(name, worker.file_sink(topic, out))
    wait_until(
        lambda: _committed(seed, "connect-" + name) == {0: RECORDS, 1: RECORDS}, 60, f"{name}'s commit"
    )
    wait_until(lambda: _lines(out) == 2 * RECORDS, 30, f"{name} writing its file")
    return name, topic


def offsets_of(worker: ConnectWorker, name: str) -> dict[int, int]:
    """GET /connectors/{name}/offsets (KIP-875): a sink's partitions and offsets, SinkUtils' shape."""
    status, body = worker.rest("GET", f"/connectors/{name}/offsets")
    assert status == 200, body
    got = {}
    for entry in body["offsets"]:
        assert set(entry) == {"partition", "offset"} and set(entry["offset"]) == {"kafka_offset"}, entry
        got[entry["partition"]["kafka_partition"]] = entry["offset"]["kafka_offset"]
    return got


def reset_cli(
    capsys, bootstrap: str, worker: ConnectWorker, group: str, topic: str, offset: int, backups: Path
):
    code = main(
        [
            "-b",
            bootstrap,
            "--format",
            "json",
            "reset-offsets",
            group,
            "--topic",
            topic,
            "--to-offset",
            str(offset),
            "--execute",
            "--via-connect",
            "--connect-url",
            worker.url,
            "--backup-url",
            str(backups),
        ]
    )
    return code, json.loads(capsys.readouterr().out)


def test_reset_offsets_via_connect_against_the_real_worker(
    kafka, kafka_seed, connect_worker, name_prefix, capsys, tmp_path
):
    out = tmp_path / "sink.out"
    name, topic = running_sink(connect_worker, kafka_seed, name_prefix, out)
    group = "connect-" + name
    # GET .../offsets answers what the group holds, in the shape our PATCH body has
    status, body = connect_worker.rest("GET", f"/connectors/{name}/offsets")
    assert status == 200
    expected = sink_offsets_body({TopicPartition(topic, p): RECORDS for p in (0, 1)})

    def key(entry):
        return entry["partition"]["kafka_partition"]

    assert sorted(body["offsets"], key=key) == sorted(expected["offsets"], key=key)

    # RUNNING: refused before Connect is asked, naming the stop call; Connect itself would say 400
    code, result = reset_cli(capsys, kafka.bootstrap, connect_worker, group, topic, 3, tmp_path / "b")
    decision = result["decisions"][group]
    assert code == EXIT_PARTIAL and decision["decision"] == "refused", decision
    assert f"stop it first (PUT {connect_worker.url}/connectors/{name}/stop)" in decision["reason"]
    status, answer = connect_worker.rest(
        "PATCH", f"/connectors/{name}/offsets", sink_offsets_body({TopicPartition(topic, 0): 3})
    )
    assert (
        status == 400
        and set(answer) == {"error_code", "message"}
        and answer["message"].startswith(
            "Connectors must be in the STOPPED state before their offsets can be modified"
        )
    ), answer
    assert _committed(kafka_seed, group) == {0: RECORDS, 1: RECORDS}

    # STOPPED: PATCHed through Connect, read back from the group
    connect_worker.stop_connector(name)
    connect_worker.wait_for_state(name, "STOPPED", [])
    code, result = reset_cli(capsys, kafka.bootstrap, connect_worker, group, topic, 3, tmp_path / "b")
    decision = result["decisions"][group]
    assert code == EXIT_OK and decision["decision"] == "done" and decision["via"] == "connect", decision
    assert decision["reason"] == (
        f"reset through Kafka Connect (connector {name!r}): The offsets for this connector "
        "have been altered successfully; read back"
    )
    assert _committed(kafka_seed, group) == {0: 3, 1: 3} and offsets_of(connect_worker, name) == {0: 3, 1: 3}
    assert result["backup_url"]

    # resumed, the connector re-delivers from offset 3 of each partition
    connect_worker.resume(name)
    wait_until(lambda: _lines(out) == 2 * RECORDS + 2 * (RECORDS - 3), 60, "the re-delivery")
    wait_until(
        lambda: _committed(kafka_seed, group) == {0: RECORDS, 1: RECORDS}, 60, "the commit after resuming"
    )

    # the sanctioned start-over the cleanup's STOPPED verdict names: DELETE .../offsets
    connect_worker.stop_connector(name)
    connect_worker.wait_for_state(name, "STOPPED", [])
    status, answer = connect_worker.rest("DELETE", f"/connectors/{name}/offsets")
    assert (status, answer) == (
        200,
        {"message": "The offsets for this connector have been reset successfully"},
    )
    assert _committed(kafka_seed, group) == {} and offsets_of(connect_worker, name) == {}


def test_the_reset_operator_goes_through_the_real_worker(
    kafka, kafka_seed, connect_worker, name_prefix, monkeypatch, tmp_path
):
    from airflow_provider_kgroups.operators.reset import (
        ConsumerGroupOffsetResetOperator,
    )

    name, topic = running_sink(connect_worker, kafka_seed, name_prefix, tmp_path / "sink.out")
    group = "connect-" + name
    connect_worker.stop_connector(name)
    connect_worker.wait_for_state(name, "STOPPED", [])
    host, port = connect_worker.url.removeprefix("http://").split(":")
    for conn_id, conn in {
        "kg_real": {"conn_type": "kgroups", "host": kafka.bootstrap},
        "connect_real": {"conn_type": "kgroups_connect", "host": host, "port": int(port), "schema": "http"},
    }.items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    operator = ConsumerGroupOffsetResetOperator(
        task_id="rewind",
        group_ids=[group],
        strategy="to_earliest",
        topics=[topic],
        dry_run=False,
        via_connect=True,
        connect_conn_ids=["connect_real"],
        backup_url=str(tmp_path / "backups"),
        kafka_groups_conn_id="kg_real",
    )
    pushed = []
    ti = SimpleNamespace(
        dag_id="d", run_id="r", task_id="rewind", try_number=1, xcom_push=lambda **kw: pushed.append(kw)
    )
    out = operator.execute({"ti": ti})
    decision = out["decisions"][group]
    assert decision["decision"] == "done" and decision["via"] == "connect", decision
    assert decision["reason"].endswith("; read back")
    assert _committed(kafka_seed, group) == {0: 0, 1: 0} and offsets_of(connect_worker, name) == {0: 0, 1: 0}
    assert out["restore"] and pushed == []


def test_a_paused_connector_is_refused_by_us_and_by_connect(
    kafka, kafka_seed, connect_worker, name_prefix, capsys, tmp_path
):
    state = "PAUSED"
    name, topic = running_sink(connect_worker, kafka_seed, name_prefix, tmp_path / "sink.out")
    connect_worker.pause(name)
    connect_worker.wait_for_state(name, state, [state])
    code, result = reset_cli(
        capsys, kafka.bootstrap, connect_worker, "connect-" + name, topic, 0, tmp_path / "b"
    )
    decision = result["decisions"]["connect-" + name]
    assert code == EXIT_PARTIAL and decision["refusal"] == "connect_sink", decision
    assert f"its connector is {state}, not STOPPED" in decision["reason"]
    status, answer = connect_worker.rest("DELETE", f"/connectors/{name}/offsets")
    assert status == 400 and "STOPPED" in answer["message"], answer
    assert _committed(kafka_seed, "connect-" + name) == {0: RECORDS, 1: RECORDS}
