"""The write-ahead records' store (:mod:`airflow_provider_kgroups.history.journal`): intents written
whole and read back, open until an outcome of the same name exists, leases taken by exactly one
run and released only by their holder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from airflow_provider_kgroups.client.errors import KafkaGroupsError
from airflow_provider_kgroups.history.audit import write_audit
from airflow_provider_kgroups.history.journal import ACTIVE_RUNS, Journal, Owner, lease_name
from airflow_provider_kgroups.history.records import put_new


@pytest.fixture(params=["local", "memory"])
def store(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "store")
    return f"memory://journal-{os.urandom(4).hex()}"


def test_an_intent_is_open_until_its_outcome_is_written_then_moves_out_of_open(store):
    journal = Journal(store)
    name = "20260101T000000Z-0123456789ab.json"
    url = journal.write_intent(name, {"run_id": "r1", "groups": {"g": {"kind": "delete-group"}}})
    assert url.endswith(f"/_intents/open/{name}")
    assert [(n, i["run_id"]) for n, i in journal.open_intents()] == [(name, "r1")]
    with pytest.raises(KafkaGroupsError, match="already exists"):
        journal.write_intent(name, {"run_id": "r2"})  # never over another
    write_audit(store, {"run_id": "r1"}, started_ms=0, name=name)
    with pytest.raises(FileExistsError):  # an outcome is written once: a second reconciler loses
        write_audit(store, {"run_id": "r1", "again": True}, started_ms=0, name=name)
    assert journal.open_intents() == []  # closed on the way: moved to _intents/
    assert journal.fs.exists(f"{journal.root}/_intents/{name}")
    assert not journal.fs.exists(f"{journal.root}/_intents/open/{name}")


def test_a_lease_is_taken_by_one_run_and_released_only_by_it(store):
    journal = Journal(store)
    a, b = Owner.me("run-a"), Owner.me("run-b")
    assert journal.take_lease("orders/eu 1", a, "i-a", expires_ms=10**13) is None
    held = journal.take_lease("orders/eu 1", b, "i-b", expires_ms=10**13)
    assert held["owner"]["run_id"] == "run-a" and held["intent"] == "i-a"
    assert journal.release_lease("orders/eu 1", "run-b") is False  # not b's
    assert journal.lease("orders/eu 1")["owner"]["run_id"] == "run-a"  # still there, unchanged
    assert journal.release_lease("orders/eu 1", "run-a") is True
    assert journal.leases() == [] and journal.take_lease("orders/eu 1", b, "i-b", 10**13) is None
    assert lease_name("a/b") != lease_name("a_b")  # names never collide on the readable part


def test_put_new_never_shows_half_a_file_and_only_one_writer_wins(tmp_path):
    import fsspec

    fs = fsspec.filesystem("file")
    path = str(tmp_path / "d" / "x.json")
    assert put_new(fs, path, b'{"a": 1}') is True
    assert put_new(fs, path, b'{"a": 2}') is False
    with open(path) as written:
        assert json.loads(written.read()) == {"a": 1}
    assert [p for p in os.listdir(tmp_path / "d")] == ["x.json"]  # no temporary left behind


def test_who_is_gone():
    me = Owner.me("r")
    assert me.gone(expires_ms=0, now_ms=1) == "its lease expired"
    ACTIVE_RUNS.add("r")
    try:
        assert me.gone(expires_ms=10, now_ms=1) is None  # this process, a run still running
    finally:
        ACTIVE_RUNS.discard("r")
    assert "ended in this process" in me.gone(expires_ms=10, now_ms=1)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    assert Owner(me.host, pid, "x").gone(10, 1) == f"its process {pid} on this host is gone"
    assert Owner("another-host", pid, "x").gone(10, 1) is None  # elsewhere only the expiry tells
