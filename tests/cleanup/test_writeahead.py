"""The reconciliation's per-group verdict (:func:`airflow_provider_kgroups.cleanup.writeahead._verdict`):
what a group's state now says about a change a dead run may have made. The kill tests
(test_kill_points.py) check it end to end on a real broker; these pin the cases a broker does not
produce on demand, Tansu's "Empty" for a group that is gone among them."""

from __future__ import annotations

from airflow_provider_kgroups.client.results import TopicPartition
from airflow_provider_kgroups.cleanup.writeahead import Verdict, _verdict

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
        Verdict.CHANGED, "2 partition(s) read the planned offset")
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
