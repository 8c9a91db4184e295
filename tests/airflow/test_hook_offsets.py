"""The hook's offset-changing verbs come in twins, sync and async (issue 20): the same signature,
the same safety path. ``aclean_stale_offsets`` runs the cleanup's stale-offsets rule on the
caller's loop (a triggerer's, a deferrable operator's) without the sync connection lookup, and
removes what the sync verb's dry run planned."""

from __future__ import annotations

import asyncio
import inspect

from airflow_provider_kgroups.cleanup.offset_deletion import DeletionOptions
from airflow_provider_kgroups.cleanup.offset_results import ChangeOutcome
from airflow_provider_kgroups.history.audit import load_audit
from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from tests.support.fakekafka import FakeCluster, Member

OFFSET_VERBS = (
    "reset_offsets",
    "delete_offsets",
    "clean_stale_offsets",
    "commit_progress",
    "progress_offsets",
    "share_lag",
)


async def test_clean_stale_offsets_has_an_async_twin_that_removes_what_the_sync_dry_run_planned(
    kgroups_conn, monkeypatch, tmp_path
):
    for verb in OFFSET_VERBS:
        sync, twin = getattr(KafkaGroupsHook, verb), getattr(KafkaGroupsHook, f"a{verb}")
        assert inspect.iscoroutinefunction(twin) and not inspect.iscoroutinefunction(sync), verb
        assert inspect.signature(twin) == inspect.signature(sync), verb

    with FakeCluster.running_in_thread(brokers=3) as cluster:
        cluster.add_topic("orders", 2, end_offsets=100)
        cluster.add_topic("old", 1, end_offsets=100)
        cluster.add_group(
            "live", offsets={("orders", 0): 50, ("old", 0): 3}, members=[Member("m-1", {"orders": [0, 1]})]
        )
        conn_id = kgroups_conn("kg_stale", host=cluster.bootstrap, extra={"retry_backoff_s": "0.01"})
        run = {"backup_base_url": str(tmp_path / "backups"), "audit_base_url": str(tmp_path / "audit")}

        hook = KafkaGroupsHook(conn_id)  # the sync verb as a worker runs it: off the loop
        try:
            dry = await asyncio.to_thread(hook.clean_stale_offsets, ["live"], DeletionOptions(), **run)
        finally:
            hook.close()
        assert dry.decisions["live"].outcome is ChangeOutcome.WOULD_DO
        assert dry.plan["stale_topics"] == {"live/old": "no member subscribes to it"}

        def forbidden(*args, **kwargs):
            raise AssertionError("synchronous connection lookup on the event loop")

        monkeypatch.setattr(KafkaGroupsHook, "get_connection", classmethod(forbidden))
        ahook = KafkaGroupsHook(conn_id)
        try:
            real = await ahook.aclean_stale_offsets(["live"], DeletionOptions(dry_run=False), **run)
        finally:
            await ahook.aclose()
        live = real.decisions["live"]
        assert live.outcome is ChangeOutcome.DONE and live.rows == dry.decisions["live"].rows
        assert [f"{tp}" for tp in live.changed] == ["old[0]"]
        assert cluster.committed("live") == {("orders", 0): 50}
        assert load_audit(real.audit_url)["action"] == "stale-offsets" and real.backup_url is not None
