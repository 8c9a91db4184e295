"""The change context (:mod:`airflow_provider_kgroups.cleanup.context`): the hook's keywords split
into the context and the workflow's own, a missing backup store named, credentials kept out of its
repr, and write-ahead records only for a real run with an audit store."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.cleanup.context import ChangeContext, context_from
from airflow_provider_kgroups.cleanup.restore import restore_context

CLIENT = object()  # the context only holds it


def test_a_verbs_keywords_split_into_the_context_and_the_workflows_own():
    context, rest = context_from(
        CLIENT,
        {"backup_base_url": "s3://b", "who": None, "connect_clusters": None, "now_ms": 5, "action": "x"},
    )
    assert (context.backup_base_url, context.audit_base_url, context.who) == ("s3://b", None, {})
    assert context.connect_clusters == () and context.client is CLIENT
    assert rest == {"now_ms": 5, "action": "x"}


def test_a_change_without_a_backup_store_says_so():
    with pytest.raises(TypeError, match="backup_base_url"):
        context_from(CLIENT, {"audit_base_url": "s3://a"})


def test_its_repr_leaves_the_storage_credentials_out():
    context = ChangeContext(CLIENT, "s3://b", storage_options={"secret": "hunter2"})
    assert "hunter2" not in repr(context) and "s3://b" in repr(context)


def test_write_ahead_records_only_for_a_real_run_with_an_audit_store(tmp_path):
    assert ChangeContext(CLIENT, str(tmp_path)).start_run("x", dry_run=False, started_ms=1) is None
    audited = ChangeContext(CLIENT, str(tmp_path), str(tmp_path), {"by": "test"})
    assert audited.start_run("x", dry_run=True, started_ms=1) is None
    run = audited.start_run("x", dry_run=False, started_ms=1)
    assert run is not None and run.who == {"by": "test"} and run.journal.store_url == str(tmp_path)
    run.finish(outcome_written=False)
    assert audited.note == "by=test"


def test_a_restore_keeps_its_records_in_the_backups_store():
    context = restore_context(CLIENT, "s3://b/store/_backups/20260101T000000Z-x.json", who={"by": "t"})
    assert (context.backup_base_url, context.audit_base_url) == ("s3://b/store", "s3://b/store")
