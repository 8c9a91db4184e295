"""The reset's safety path (cleanup.reset over cleanup.guard) against the fake cluster: a group
that changes between plan and commit is left alone, a partition whose commit fails is reported
exactly (in the result and the audit), a backup that does not read back stops everything, and
a Kafka Connect sink group is never committed to directly (KIP-875 through Connect on request)."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.cleanup import ChangeContext
from airflow_provider_kgroups.cleanup import reset as reset_module
from airflow_provider_kgroups.cleanup.offset_results import ChangeOutcome
from airflow_provider_kgroups.cleanup.reset import ResetOptions, run_reset
from airflow_provider_kgroups.client import AsyncGroupsClient, TopicPartition
from airflow_provider_kgroups.connect import ConnectClusterConfig
from airflow_provider_kgroups.history import backup as backup_module
from airflow_provider_kgroups.history.audit import load_audit
from airflow_provider_kgroups.offsets.spec import reset_spec
from demo.connectserver import Connector, ConnectServer
from tests.support.fakekafka import Err, FakeCluster, Member
from tests.support.fakeutil import config

REAL = ResetOptions(dry_run=False)


@pytest.fixture
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("events", 2, end_offsets=100)
        c.add_group("g", offsets={("events", 0): 50, ("events", 1): 60})
        yield c


async def reset(c, spec, ids=("g",), options=REAL, tmp_path=None, connect_clusters=()):
    async with AsyncGroupsClient(config(c)) as client:
        context = ChangeContext(
            client, str(tmp_path), str(tmp_path), connect_clusters=tuple(connect_clusters)
        )
        return await run_reset(context, spec, list(ids), options)


def after_plan(monkeypatch, action):
    """Run ``action`` right after the plan is made (before the second describe)."""
    original = reset_module.plan_reset

    async def planned(*args, **kwargs):
        plan = await original(*args, **kwargs)
        action()
        return plan

    monkeypatch.setattr(reset_module, "plan_reset", planned)


TO_EARLIEST = reset_spec("to_earliest", topics=["events"])


async def test_members_appearing_between_plan_and_commit_leave_the_group_alone(
    cluster, monkeypatch, tmp_path
):
    after_plan(
        monkeypatch, lambda: cluster.set_members("g", [Member("m-1", {"events": [0, 1]})], state="Stable")
    )
    result = await reset(cluster, TO_EARLIEST, tmp_path=tmp_path)
    d = result.decisions["g"]
    assert d.outcome is ChangeOutcome.SKIPPED and "now Stable with 1 member(s); not reset" in d.reason
    assert cluster.committed("g") == {("events", 0): 50, ("events", 1): 60}
    assert result.backup_url is None and not result.ok
    assert load_audit(result.audit_url)["decisions"]["g"]["decision"] == "skipped"


async def test_offsets_moving_between_plan_and_commit_leave_the_group_alone(cluster, monkeypatch, tmp_path):
    """A standalone consumer (assign + commitSync) commits into an Empty group without joining."""
    after_plan(monkeypatch, lambda: cluster.add_group("g", offsets={("events", 0): 55, ("events", 1): 60}))
    d = (await reset(cluster, reset_spec("shift_by", "-10", topics=["events"]), tmp_path=tmp_path)).decisions[
        "g"
    ]
    assert d.outcome is ChangeOutcome.SKIPPED and "events[0]: 50 -> 55" in d.reason
    assert cluster.committed("g") == {("events", 0): 55, ("events", 1): 60}


async def test_a_member_joining_at_the_commit_is_refused_by_the_broker_and_reported(
    cluster, monkeypatch, tmp_path
):
    original = AsyncGroupsClient.commit_group_offsets

    async def joins_first(self, offsets, timeout_s=None):
        cluster.set_members("g", [Member("m-1", {"events": [0, 1]})], state="Stable")
        return await original(self, offsets, timeout_s)

    monkeypatch.setattr(AsyncGroupsClient, "commit_group_offsets", joins_first)
    d = (await reset(cluster, TO_EARLIEST, tmp_path=tmp_path)).decisions["g"]
    assert d.outcome is ChangeOutcome.FAILED and "UNKNOWN_MEMBER_ID" in d.reason and d.changed == {}
    assert set(d.failed) == {TopicPartition("events", 0), TopicPartition("events", 1)}
    assert cluster.committed("g") == {("events", 0): 50, ("events", 1): 60}


async def test_a_failed_partition_commit_is_partial_and_the_audit_says_exactly_what_was_committed(
    cluster, tmp_path
):
    cluster.inject_error("OffsetCommit", Err.TOPIC_AUTHORIZATION_FAILED, key=("g", "events", 1))
    result = await reset(cluster, TO_EARLIEST, tmp_path=tmp_path)
    d = result.decisions["g"]
    assert d.outcome is ChangeOutcome.PARTIAL and not result.ok
    assert (
        d.changed == {TopicPartition("events", 0): 0}
        and "TOPIC_AUTHORIZATION_FAILED" in d.failed[TopicPartition("events", 1)]
    )
    assert cluster.committed("g") == {("events", 0): 0, ("events", 1): 60}
    record = load_audit(result.audit_url)["decisions"]["g"]
    assert record["decision"] == "partial" and record["changed"] == {"events:0": 0}
    assert list(record["failed"]) == ["events:1"]


async def test_no_backup_no_commit(cluster, monkeypatch, tmp_path):
    monkeypatch.setattr(backup_module, "load_backup", lambda url, **kw: backup_module.OffsetsBackup(0, {}))
    d = (await reset(cluster, TO_EARLIEST, tmp_path=tmp_path)).decisions["g"]
    assert d.outcome is ChangeOutcome.FAILED and "does not read back the same" in d.reason
    assert cluster.committed("g") == {("events", 0): 50, ("events", 1): 60}


async def test_dry_run_plans_exactly_what_the_real_run_commits_and_changes_nothing(cluster, tmp_path):
    spec = reset_spec("to_offset", "500", topics=["events"])
    dry = await reset(cluster, spec, options=ResetOptions(), tmp_path=tmp_path)
    assert dry.decisions["g"].outcome is ChangeOutcome.WOULD_DO and dry.backup_url is None
    assert cluster.committed("g") == {("events", 0): 50, ("events", 1): 60}
    real = await reset(cluster, spec, tmp_path=tmp_path)
    assert real.decisions["g"].rows == dry.decisions["g"].rows
    assert cluster.committed("g") == {("events", 0): 100, ("events", 1): 100}


async def test_a_connect_sink_group_is_never_committed_to_directly(cluster, tmp_path):
    # a PAUSED sink task keeps its consumer in the group (the real worker's group is Stable): the
    # refusal still names Connect's way, not only "has members"
    cluster.add_group(
        "connect-orders-sink",
        offsets={("events", 0): 5},
        members=[Member("connector-consumer-orders-sink-0", {"events": [0, 1]})],
    )
    cluster.add_group("connect-stopped", offsets={("events", 0): 5})
    with ConnectServer(
        [
            Connector("orders-sink", state="PAUSED", tasks=("PAUSED",)),
            Connector("stopped", state="STOPPED", tasks=()),
        ]
    ) as server:
        clusters = [ConnectClusterConfig.create(server.url)]
        result = await reset(
            cluster,
            TO_EARLIEST,
            ids=("connect-orders-sink", "connect-stopped"),
            tmp_path=tmp_path,
            connect_clusters=clusters,
        )
        paused, stopped = result.decisions["connect-orders-sink"], result.decisions["connect-stopped"]
        assert paused.outcome is ChangeOutcome.REFUSED and paused.refusal == "connect_sink"
        assert (
            f"PATCH {server.url}/connectors/orders-sink/offsets while the connector is STOPPED"
            in paused.reason
        )
        assert stopped.refusal == "connect_sink" and "--via-connect" in stopped.reason
        assert server.altered == []
        assert cluster.committed("connect-stopped") == {("events", 0): 5}

        # asked to go through Connect: the STOPPED connector's offsets are PATCHed, the PAUSED one still refused
        server.on_alter = lambda name, body: cluster.add_group(
            "connect-stopped",
            offsets={
                (o["partition"]["kafka_topic"], o["partition"]["kafka_partition"]): o["offset"][
                    "kafka_offset"
                ]
                for o in body["offsets"]
            },
        )
        result = await reset(
            cluster,
            TO_EARLIEST,
            ids=("connect-orders-sink", "connect-stopped"),
            tmp_path=tmp_path,
            connect_clusters=clusters,
            options=ResetOptions(dry_run=False, via_connect=True),
        )
        assert result.decisions["connect-orders-sink"].refusal == "connect_sink"
        assert (
            "PUT" in result.decisions["connect-orders-sink"].reason
            and "/stop" in result.decisions["connect-orders-sink"].reason
        )
        stopped = result.decisions["connect-stopped"]
        assert stopped.outcome is ChangeOutcome.DONE and stopped.via == "connect"
        assert server.altered == [
            (
                "stopped",
                {
                    "offsets": [
                        {
                            "partition": {"kafka_topic": "events", "kafka_partition": 0},
                            "offset": {"kafka_offset": 0},
                        },
                        {
                            "partition": {"kafka_topic": "events", "kafka_partition": 1},
                            "offset": {"kafka_offset": 0},
                        },
                    ]
                },
            )
        ]
        assert cluster.committed("connect-stopped") == {("events", 0): 0, ("events", 1): 0}
        assert stopped.reason.endswith("; read back")
        assert result.backup_url is not None  # backed up before Connect was asked, as for a direct commit


async def test_a_connect_reset_is_what_the_group_reads_after_it_not_what_connect_answered(cluster, tmp_path):
    """Connect answers 200 but only one of the two partitions moved: the decision is partial and names
    the partition that reads otherwise, instead of repeating Connect's success."""
    cluster.add_group("connect-stopped", offsets={("events", 0): 5, ("events", 1): 7})
    with ConnectServer([Connector("stopped", state="STOPPED", tasks=())]) as server:
        server.on_alter = lambda name, body: cluster.add_group(
            "connect-stopped", offsets={("events", 0): 0, ("events", 1): 7}
        )
        result = await reset(
            cluster,
            TO_EARLIEST,
            ids=("connect-stopped",),
            tmp_path=tmp_path,
            connect_clusters=[ConnectClusterConfig.create(server.url)],
            options=ResetOptions(dry_run=False, via_connect=True),
        )
    decision = result.decisions["connect-stopped"]
    assert decision.outcome is ChangeOutcome.PARTIAL and decision.via == "connect"
    assert "events[1]: Kafka Connect answered success but the group reads 7, not 0" in decision.reason


async def test_a_connect_looking_group_without_connect_evidence_is_refused(cluster, tmp_path):
    cluster.add_group("connect-mystery", offsets={("events", 0): 5})
    d = (await reset(cluster, TO_EARLIEST, ids=("connect-mystery",), tmp_path=tmp_path)).decisions[
        "connect-mystery"
    ]
    assert d.outcome is ChangeOutcome.REFUSED and d.refusal == "connect_unknown"
    assert cluster.committed("connect-mystery") == {("events", 0): 5}


async def test_a_progress_commit_the_broker_refuses_in_part_or_whole_is_not_done(cluster, tmp_path):
    """Issue 29: a progress group's commit says partial or failed, never done, when the broker
    refused some or every partition (the progress operator raises on it)."""
    from airflow_provider_kgroups.cleanup.progress import commit_progress

    cluster.inject_error("OffsetCommit", Err.TOPIC_AUTHORIZATION_FAILED, key=("progress", "events", 1))
    ending = {TopicPartition("events", 0): 70, TopicPartition("events", 1): 80}
    async with AsyncGroupsClient(config(cluster)) as client:
        partial = await commit_progress(ChangeContext(client, str(tmp_path)), "progress", ending)
        cluster.inject_error("OffsetCommit", Err.TOPIC_AUTHORIZATION_FAILED, key=("progress", "events", 0))
        failed = await commit_progress(
            ChangeContext(client, str(tmp_path)), "progress", {TopicPartition("events", 0): 90}
        )
    assert partial.decisions["progress"].outcome is ChangeOutcome.PARTIAL and not partial.ok
    assert partial.summary()["done"] == 0 and partial.summary()["partial"] == 1
    assert failed.decisions["progress"].outcome is ChangeOutcome.FAILED and not failed.ok
    assert cluster.committed("progress") == {("events", 0): 70}
