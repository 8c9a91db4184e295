"""The real Connect worker down and coming back (tests/support/pytest_connect.py): while it cannot be
read, the cleanup deletes nothing (a group named by ``consumer.override.group.id`` cannot be told
from any other); while it restarts, every read either fails (so the cleanup holds) or lists every
connector: a worker that answers before it has read its config topic would make every ``connect-*``
group look deletable.

What the restarting worker answers is the worker's, not a stand-in's: connection refused while the
JVM starts, then ``404 Not Found`` (``{"message": "Not Found", "url": ..., "status": "404"}``, not
Connect's ErrorMessage) until the REST resources are registered, then the full listing; on a busy
machine a read may also get no answer within its timeout in between. ``GET /connectors?expand=...`` reads the herder's config snapshot directly
(``ConnectorsResource.listConnectors``): it never answers the 409 a rebalance gives to requests
the herder thread serves.

The test leaves the worker running for the tests after it.
"""

from __future__ import annotations

import json
import time

from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL, main
from airflow_provider_kgroups.connect import (
    ConnectClusterConfig,
    ConnectStatus,
    fetch_connect_evidence,
)
from demo.seed import wait_until


def _kind(reason: str) -> str:
    for words in ("unreachable", "HTTP 404", "HTTP 409", "HTTP 500", "HTTP 503", "no answer within"):
        if words in reason:
            return words
    return reason


def test_a_worker_down_holds_every_deletion_and_a_restarting_one_never_answers_half(
    kafka, kafka_seed, connect_worker, name_prefix, capsys, tmp_path
):
    topic, sink, override = name_prefix + "orders", name_prefix + "sink", name_prefix + "ovr"
    archive, plain, gone = name_prefix + "archive", name_prefix + "tmp", "connect-" + name_prefix + "gone"
    kafka_seed.create_topic(topic)
    kafka_seed.produce(topic, 0, 4)
    connect_worker.create_connector(sink, connect_worker.file_sink(topic, tmp_path / "sink.out"))
    connect_worker.create_connector(
        override,
        connect_worker.file_sink(topic, tmp_path / "ovr.out", **{"consumer.override.group.id": archive}),
    )
    for group in ("connect-" + sink, archive):
        wait_until(lambda group=group: kafka_seed.committed(group), 60, f"{group}'s commit")
    for name in (sink, override):  # STOPPED: the tasks leave, the groups are Empty
        connect_worker.stop_connector(name)
        connect_worker.wait_for_state(name, "STOPPED", [])
    kafka_seed.commit(plain, {(topic, 0): 1})
    kafka_seed.commit(gone, {(topic, 0): 1})
    named = [archive, plain, gone, "connect-" + sink]
    argv = [
        "-b",
        kafka.bootstrap,
        "--format",
        "json",
        "delete",
        *named,
        "--yes",
        "--connect-url",
        connect_worker.url,
        "--backup-url",
        str(tmp_path / "backups"),
        "--max-deletions-percent",
        "100",
    ]
    config = ConnectClusterConfig.create(connect_worker.url, retries=0, timeout_s=5)

    connect_worker.stop()
    try:
        code = main(argv)
        out = json.loads(capsys.readouterr().out)
        assert code == EXIT_PARTIAL and out["deleted"] == [], out
        assert sorted(out["held"]) == sorted([archive, plain]) and out["connect_unreadable"] == [
            connect_worker.url
        ]
        for group in (archive, plain):
            reason = out["decisions"][group]["reason"]
            assert reason.startswith(f"held: Kafka Connect could not be read ({connect_worker.url}: GET ")
            assert "unreachable" in reason and "Connection refused" in reason
        for group in (gone, "connect-" + sink):
            assert out["decisions"][group]["decision"] == "keep"
            assert "could not be read" in out["decisions"][group]["reason"]
        assert all(kafka_seed.committed(g) for g in named)

        # coming back: every read fails closed or lists both connectors, never a part of them
        connect_worker.start_again()
        seen: list[str] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            evidence = fetch_connect_evidence([config], timeout_s=10)
            if evidence.complete:
                names = {r.name for r in evidence.connectors}
                assert {sink, override} <= names, (
                    f"a complete listing without them after {seen}: {sorted(names)}"
                )
                assert evidence.for_group("connect-" + sink).status is ConnectStatus.KEEP
                kind = "complete"
            else:
                kind = _kind(evidence.failures[0].reason)
                assert evidence.for_group("connect-" + sink).status is ConnectStatus.UNAVAILABLE
            if not seen or seen[-1] != kind:
                seen.append(kind)
            if kind == "complete":
                break
            time.sleep(0.1)
        with capsys.disabled():  # seen with -s: what the real worker answered while it came back
            print("\na restarting worker answered, in order:", " -> ".join(seen))
        assert seen[0] == "unreachable" and seen[-1] == "complete", seen
        assert "HTTP 404" in seen and "HTTP 409" not in seen, seen
    finally:
        connect_worker.start_again()
        connect_worker.wait_ready()

    # a complete listing comes before the herder has restored each connector's target state: until
    # then the status says UNASSIGNED (kept too, "when it starts"), on a busy machine for a while
    connect_worker.wait_for_state(override, "STOPPED", [])
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and sorted(out["deleted"]) == sorted([plain, gone]), out
    assert out["held"] == [] and out["decisions"][archive]["decision"] == "keep"
    assert "is STOPPED" in out["decisions"][archive]["reason"]
