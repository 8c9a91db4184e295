"""The reconciliation's per-group verdict (:func:`airflow_provider_kgroups.cleanup.writeahead._verdict`):
what a group's state now says about a change a dead run may have made. The kill tests
(test_kill_points.py) check it end to end on a real broker; these pin the cases a broker does not
produce on demand, Tansu's "Empty" for a group that is gone among them."""

from __future__ import annotations

from airflow_provider_kgroups.cleanup.writeahead import Verdict, _verdict
from airflow_provider_kgroups.client.results import TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
COMMIT = {"kind": "commit", "partitions": ["t:0", "t:1"], "targets": {"t:0": 0, "t:1": 0}}


def test_deletion_verdicts():
    delete = {"kind": "delete-group"}
    assert _verdict("delete-group", delete, {T0: 5}, {}, "Dead")[0] == Verdict.CHANGED
    assert _verdict("delete-group", delete, {T0: 5}, {}, "Empty")[0] == Verdict.CHANGED  # offsets gone
    assert _verdict("delete-group", delete, {T0: 5}, {T0: 5}, "Empty")[0] == Verdict.NOT_CHANGED
    # no offsets before, none now, "Empty": Tansu says that of a group that is gone as well
    assert _verdict("delete-group", delete, {}, {}, "Empty")[0] == Verdict.CANNOT_TELL
    assert _verdict("delete-group", delete, {T0: 5}, {T0: 7}, "Stable")[0] == Verdict.CANNOT_TELL
    assert _verdict("delete-group", delete, None, {T0: 5}, "Empty")[0] == Verdict.CANNOT_TELL
    assert _verdict("delete-group", delete, {T0: 5}, None, None)[0] == Verdict.CANNOT_TELL


def test_commit_verdicts_per_partition():
    before = {T0: 4, T1: 3}
    assert _verdict("commit", COMMIT, before, {T0: 0, T1: 0}, "Empty") == (
        Verdict.CHANGED,
        "2 partition(s) read the planned offset",
    )
    assert _verdict("commit", COMMIT, before, {T0: 0, T1: 3}, "Empty")[0] == Verdict.CHANGED  # half
    assert _verdict("commit", COMMIT, before, before, "Empty")[0] == Verdict.NOT_CHANGED
    verdict, why = _verdict("commit", COMMIT, before, {T0: 9, T1: 3}, "Empty")
    assert verdict == Verdict.CANNOT_TELL and "t:0 reads 9" in why  # someone else committed since
    # a partition without a commit before (the backup's no_commit): still none is "not changed"
    assert _verdict("commit", COMMIT, {T0: 4}, {T0: 4}, "Empty")[0] == Verdict.NOT_CHANGED


def test_offset_deletion_verdicts():
    plan = {"kind": "delete-offsets", "partitions": ["t:0"]}
    assert _verdict("delete-offsets", plan, {T0: 4}, {}, "Empty")[0] == Verdict.CHANGED
    assert _verdict("delete-offsets", plan, {T0: 4}, {T0: 4}, "Empty")[0] == Verdict.NOT_CHANGED


def test_a_lease_of_another_host_holds_until_it_expires_and_a_dead_runs_open_intent_keeps_it(tmp_path):
    from airflow_provider_kgroups.cleanup.writeahead import ChangeRun
    from airflow_provider_kgroups.history.journal import Journal, Owner
    from airflow_provider_kgroups.lag.snapshot import now_ms

    store = str(tmp_path / "store")
    journal = Journal(store)
    elsewhere = Owner("worker-elsewhere", 4242, "run-elsewhere")
    journal.take_lease("held", elsewhere, "i-held", expires_ms=now_ms() + 60_000)
    journal.take_lease("expired", elsewhere, "i-expired", expires_ms=now_ms() - 1)
    journal.write_intent("20260101T000000Z-0123456789ab.json", {"run_id": "run-dead"})
    journal.take_lease(
        "open",
        Owner("worker-elsewhere", 1, "run-dead"),
        "20260101T000000Z-0123456789ab.json",
        expires_ms=now_ms() - 1,
    )
    run = ChangeRun(store, "reset-offsets")
    refused = run.lease(["held", "expired", "open", "free"])
    assert set(refused) == {"held", "open"} and run.leased == ["expired", "free"]
    assert "(process 4242 on worker-elsewhere) holds its lease until" in refused["held"]
    assert "its intent 20260101T000000Z-0123456789ab.json has no outcome yet" in refused["open"]
    run.finish(outcome_written=False)  # no intent written: the leases go
    assert sorted(lease["group_id"] for lease in journal.leases()) == ["held", "open"]
