"""The cleanup's opt-in stale-offsets rule against the fake cluster: a live group loses the
offsets of a topic no member subscribes to and of a topic proved deleted, keeps everything it
cannot judge, and the run has the same dry run, cap, backup and audit as every change."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.cleanup import ChangeContext
from airflow_provider_kgroups.cleanup.offset_deletion import DeletionOptions
from airflow_provider_kgroups.cleanup.offset_results import ChangeOutcome
from airflow_provider_kgroups.cleanup.stale import run_stale_offsets
from airflow_provider_kgroups.client import AsyncGroupsClient
from airflow_provider_kgroups.history.audit import load_audit
from tests.support.fakekafka import FakeCluster, Member
from tests.support.fakeutil import config


@pytest.fixture
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 2, end_offsets=100)
        c.add_topic("old", 1, end_offsets=100)
        c.add_topic("doomed", 1, end_offsets=100)
        c.add_group(
            "live",
            offsets={("orders", 0): 50, ("old", 0): 3, ("doomed", 0): 8},
            members=[Member("m-1", {"orders": [0, 1]})],
        )
        c.add_group("idle", offsets={("old", 0): 7})
        c.add_group("connect-sink", offsets={("old", 0): 2}, members=[Member("t-0", {"orders": [0]})])
        c.delete_topic("doomed")
        yield c


async def stale(c, ids, options, tmp_path, **kw):
    async with AsyncGroupsClient(config(c)) as client:
        return await run_stale_offsets(
            ChangeContext(client, str(tmp_path), str(tmp_path)), ids, options, **kw
        )


async def test_dry_run_names_the_stale_topics_and_why_and_changes_nothing(cluster, tmp_path):
    result = await stale(cluster, ["live", "idle"], DeletionOptions(), tmp_path)
    live = result.decisions["live"]
    assert live.outcome is ChangeOutcome.WOULD_DO
    assert {r["topic"] for r in live.rows} == {"old", "doomed"}  # orders is subscribed: not stale
    assert result.plan["stale_topics"] == {
        "live/old": "no member subscribes to it",
        "live/doomed": "deleted (Metadata names it UNKNOWN_TOPIC_OR_PARTITION)",
    }
    assert result.decisions["idle"].outcome is ChangeOutcome.REFUSED  # Empty: the dead-group rules' business
    assert cluster.committed("live") == {("orders", 0): 50, ("old", 0): 3, ("doomed", 0): 8}


async def test_a_real_run_removes_the_unsubscribed_topic_and_reports_the_brokers_answer_for_the_deleted_one(
    cluster, tmp_path
):
    """Apache Kafka answers OffsetDelete for a topic it no longer knows with
    UNKNOWN_TOPIC_OR_PARTITION (KafkaApis.handleOffsetDeleteRequest): reported, never hidden."""
    result = await stale(cluster, ["live"], DeletionOptions(dry_run=False), tmp_path)
    live = result.decisions["live"]
    assert live.outcome is ChangeOutcome.PARTIAL
    assert [f"{tp}" for tp in live.changed] == ["old[0]"]
    assert "UNKNOWN_TOPIC_OR_PARTITION" in next(iter(live.failed.values()))
    assert cluster.committed("live") == {("orders", 0): 50, ("doomed", 0): 8}
    record = load_audit(result.audit_url)
    assert record["action"] == "stale-offsets" and record["decisions"]["live"]["changed"] == {"old:0": None}
    assert result.backup_url is not None


async def test_deny_patterns_unknown_subscriptions_and_the_cap_keep_groups(cluster, tmp_path):
    cluster.add_group(
        "rebalancing",
        offsets={("old", 0): 1},
        state="PreparingRebalance",
        members=[Member("m-1", {"orders": [0]})],
    )
    cluster.add_group(
        "live-2", offsets={("orders", 1): 9, ("old", 0): 4}, members=[Member("m-2", {"orders": [1]})]
    )
    result = await stale(
        cluster,
        ["connect-sink", "rebalancing", "live", "live-2"],
        DeletionOptions(dry_run=False, max_groups=1),
        tmp_path,
        denied=lambda g: "connect-*" if g.startswith("connect-") else None,
    )
    d = result.decisions
    assert (
        d["connect-sink"].outcome is ChangeOutcome.REFUSED
        and "deny pattern 'connect-*'" in d["connect-sink"].reason
    )
    assert (
        d["rebalancing"].outcome is ChangeOutcome.REFUSED
        and "subscriptions are unknown" in d["rebalancing"].reason
    )
    assert d["live"].outcome is ChangeOutcome.PARTIAL  # first in order, under the cap of one group
    assert d["live-2"].outcome is ChangeOutcome.SKIPPED and "max_groups" in d["live-2"].reason
    assert cluster.committed("live-2") == {("orders", 1): 9, ("old", 0): 4}
    assert cluster.committed("connect-sink") == {("old", 0): 2}
