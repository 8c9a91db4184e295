"""Offsets backups: write, read back, restore with one call (OffsetCommit as an administrator)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import fsspec
import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.results import CommittedOffset, TopicPartition
from airflow_provider_kgroups.history.backup import backup_offsets, list_backups, load_backup, restore_offsets
from tests.support.builders import T0
from tests.support.fakekafka import Err, Member
from tests.support.fakeworld import with_fake_cluster

A, B = TopicPartition("orders", 0), TopicPartition("orders", 1)


@pytest.fixture(params=["local", "memory"])
def store_url(request, tmp_path):
    if request.param == "local":
        yield str(tmp_path / "history")
        return
    root = f"/kgroups-backup-{uuid.uuid4().hex}"
    yield f"memory://{root}"
    memory = fsspec.filesystem("memory")
    if memory.exists(root):
        memory.rm(root, recursive=True)


def test_backup_round_trip_keeps_offsets_metadata_and_epochs(store_url):
    url = backup_offsets(
        store_url,
        {"billing": {A: CommittedOffset(90, "m", 4), B: 20}, "other": {A: CommittedOffset(None)}},
        note="cleanup",
        now_ms=T0,
    )
    assert url.startswith(store_url + "/_backups/20231114T221320Z-") and list_backups(store_url) == [url]
    backup = load_backup(url)
    assert backup.groups == {"billing": {A: CommittedOffset(90, "m", 4), B: CommittedOffset(20)}, "other": {}}
    assert backup.note == "cleanup" and backup.created_ms == T0


def test_backup_is_readable_json(tmp_path):
    url = backup_offsets(str(tmp_path), {"g": {A: 5}}, now_ms=T0)
    data = json.loads(Path(url).read_text())
    assert data["format"] == "kgroups-offsets-backup" and data["groups"]["g"]["orders"]["0"]["offset"] == 5


def test_bad_backups_are_configuration_errors(tmp_path):
    with pytest.raises(ConfigurationError, match="nothing to back up"):
        backup_offsets(str(tmp_path), {})
    with pytest.raises(ConfigurationError, match="no offsets backup at"):
        load_backup(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "kgroups-offsets-backup", "version": 1, "created_ms": 1, "groups": {"g": 3}}')
    with pytest.raises(ConfigurationError, match="malformed"):
        load_backup(str(bad))
    bad.write_text("{nope")
    with pytest.raises(ConfigurationError, match="is not JSON"):
        load_backup(str(bad))


def seed(cluster):
    cluster.add_topic("orders", partitions=2, end_offsets=100)
    cluster.add_group("billing", offsets={("orders", 0): 90, ("orders", 1): (20, "meta")})
    cluster.add_group("busy", offsets={("orders", 0): 1}, members=[Member("m", assignment={"orders": [0]})])


async def test_backup_delete_restore(tmp_path):
    async def body(cluster, client):
        committed = await client.fetch_committed_offsets(["billing", "busy"])
        url = backup_offsets(str(tmp_path), committed.values)
        await client.delete_groups(["billing"])
        assert not cluster.has_group("billing")
        cluster.reset_counts()
        restored = await restore_offsets(client, url)
        return restored, cluster.committed("billing"), cluster.requests_by_api()

    restored, committed, requests = await with_fake_cluster(body, setup=seed)
    assert restored["billing"].values == {A: 90, B: 20} and restored["billing"].ok
    assert committed == {("orders", 0): 90, ("orders", 1): 20}
    assert restored["busy"].failures[A].code == Err.UNKNOWN_MEMBER_ID  # has members: refused, per partition
    assert "only while the group is Empty" in restored["busy"].failures[A].message
    assert requests.get("OffsetCommit") == 2


async def test_restore_a_subset_and_unknown_groups(tmp_path):
    async def body(cluster, client):
        url = backup_offsets(str(tmp_path), {"billing": {A: 7}})
        with pytest.raises(ConfigurationError, match="'nope' are not in the backup"):
            await restore_offsets(client, url, ["nope"])
        return await restore_offsets(client, load_backup(url), ["billing"])

    assert (await with_fake_cluster(body, setup=seed))["billing"].values == {A: 7}


async def test_commit_offsets_retries_a_coordinator_that_is_loading():
    def setup(cluster):
        seed(cluster)
        cluster.inject_error("OffsetCommit", Err.COORDINATOR_LOAD_IN_PROGRESS, key="billing", times=2)

    async def body(cluster, client):
        result = await client.commit_offsets("billing", {A: 3})
        return result, cluster.count("OffsetCommit")

    result, commits = await with_fake_cluster(body, setup=setup)
    assert result.values == {A: 3} and commits == 3


async def test_commit_offsets_bad_input():
    async def body(cluster, client):
        with pytest.raises(ConfigurationError, match="must be >= 0"):
            await client.commit_offsets("billing", {A: -1})
        with pytest.raises(ConfigurationError, match="no offsets to commit"):
            await client.commit_offsets("billing", {})

    await with_fake_cluster(body, setup=seed)
