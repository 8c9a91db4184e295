"""``kgroups reset-offsets`` / ``delete-offsets`` / ``restore`` against a real Kafka-protocol
broker (Tansu): the reset is committed over the wire, read back by a different client
(kafka-python), undone by the printed restore; a live group is refused; a broker without
OffsetDelete (Tansu 0.6.0 advertises none) refuses delete-offsets by name."""

from __future__ import annotations

import json

from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL, main


def cli(capsys, tansu, *argv):
    code = main(["-b", tansu.bootstrap, "--format", "json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def test_reset_is_committed_read_back_by_another_client_and_undone(
    capsys, tansu, tansu_seed, name_prefix, tmp_path
):
    topic, group = name_prefix + "orders", name_prefix + "landing"
    tansu_seed.create_topic(topic, partitions=2)
    for p in range(2):
        tansu_seed.produce(topic, p, 6)  # one record per batch: Tansu reports exact log ends then
    tansu_seed.commit(group, {(topic, 0): 6, (topic, 1): 4})

    code, dry = cli(capsys, tansu, "reset-offsets", group, "--topic", topic, "--to-offset", "2")
    assert code == EXIT_OK and dry["would_do"] == 1
    assert tansu_seed.committed(group) == {(topic, 0): 6, (topic, 1): 4}  # a dry run commits nothing

    code, real = cli(
        capsys,
        tansu,
        "reset-offsets",
        group,
        "--topic",
        topic,
        "--to-offset",
        "2",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_OK and real["done"] == 1
    assert real["decisions"][group]["partitions"] == dry["decisions"][group]["partitions"]
    assert {(tp.topic, tp.partition): o for tp, o in tansu_seed.committed(group).items()} == {
        (topic, 0): 2,
        (topic, 1): 2,
    }

    code, shifted = cli(
        capsys,
        tansu,
        "reset-offsets",
        group,
        "--all-topics",
        "--shift-by",
        "10",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_OK
    assert {r["partition"]: (r["new"], r["finding"]) for r in shifted["decisions"][group]["partitions"]} == {
        0: (6, "clamped_to_log_end"),
        1: (6, "clamped_to_log_end"),
    }
    assert {tp.partition: o for tp, o in tansu_seed.committed(group).items()} == {0: 6, 1: 6}

    undo = real["undo_command"].split()
    assert main(["-b", tansu.bootstrap, *undo[undo.index("restore") :]]) == EXIT_OK
    capsys.readouterr()
    assert {tp.partition: o for tp, o in tansu_seed.committed(group).items()} == {
        0: 6,
        1: 4,
    }  # back before the first reset


def test_a_live_group_is_refused_and_keeps_its_offsets(capsys, tansu, tansu_live_group, tmp_path):
    before = dict(tansu_live_group.committed)
    code, doc = cli(
        capsys,
        tansu,
        "reset-offsets",
        tansu_live_group.group_id,
        "--topic",
        tansu_live_group.topic,
        "--to-earliest",
        "--execute",
        "--backup-url",
        str(tmp_path),
    )
    assert code == EXIT_PARTIAL
    assert doc["decisions"][tansu_live_group.group_id]["refusal"] == "has_members"
    assert doc["backup_url"] is None
    from airflow_provider_kgroups.client import ClientConfig, GroupsClient

    with GroupsClient(ClientConfig.create(tansu.bootstrap)) as client:
        committed = client.fetch_committed_offsets([tansu_live_group.group_id])[
            tansu_live_group.group_id
        ].committed()
    assert {tp.partition: o for tp, o in committed.items()} == before


def test_delete_offsets_on_a_broker_without_offset_delete_is_refused_by_name(
    capsys, tansu, tansu_seed, name_prefix, tmp_path
):
    topic, group = name_prefix + "old", name_prefix + "idle"
    tansu_seed.create_topic(topic, partitions=1)
    tansu_seed.produce(topic, 0, 1)
    tansu_seed.commit(group, {(topic, 0): 1})
    code, doc = cli(
        capsys, tansu, "delete-offsets", group, "--topic", topic, "--execute", "--backup-url", str(tmp_path)
    )
    assert code == EXIT_PARTIAL
    assert "does not support OffsetDelete" in doc["decisions"][group]["reason"]
    assert {tp.partition: o for tp, o in tansu_seed.committed(group).items()} == {0: 1}


def test_share_group_offsets_are_refused_by_name_on_a_broker_without_kip_932(capsys, tansu, name_prefix):
    """Tansu 0.6.0 advertises neither DescribeShareGroupOffsets nor AlterShareGroupOffsets."""
    code, doc = cli(capsys, tansu, "share-lag", name_prefix + "workers")
    assert code == EXIT_PARTIAL
    failure = doc["failures"][name_prefix + "workers"]
    assert failure["error"] == "CLIENT_UNSUPPORTED"
    assert "does not support DescribeShareGroupOffsets" in failure["message"]


def test_a_restore_into_a_live_group_is_failed_and_changes_nothing(capsys, tansu, tansu_live_group, tmp_path):
    """Issue 29: a restore into a group with a live member is failed and exits 1, and nothing is
    committed: the write-ahead safety path keeps the group before any OffsetCommit (the broker would
    refuse one per partition with UNKNOWN_MEMBER_ID, as Apache Kafka does)."""
    from airflow_provider_kgroups.client import TopicPartition
    from airflow_provider_kgroups.history.backup import backup_offsets

    before = dict(tansu_live_group.committed)
    assert before, "the live group committed nothing to restore"
    url = backup_offsets(
        str(tmp_path),
        {tansu_live_group.group_id: {TopicPartition(tansu_live_group.topic, p): 0 for p in before}},
    )
    code, doc = cli(capsys, tansu, "restore", url, tansu_live_group.group_id)
    assert code == EXIT_PARTIAL
    assert (
        doc[tansu_live_group.group_id]["outcome"] == "failed"
        and doc[tansu_live_group.group_id]["results"] == {}
    )
    errors = doc[tansu_live_group.group_id]["errors"].values()
    assert errors and all("CLIENT_NOT_SENT" in str(e) or "UNKNOWN_MEMBER_ID" in str(e) for e in errors), (
        errors
    )
    from airflow_provider_kgroups.client import ClientConfig, GroupsClient

    with GroupsClient(ClientConfig.create(tansu.bootstrap)) as client:
        committed = client.fetch_committed_offsets([tansu_live_group.group_id])[
            tansu_live_group.group_id
        ].committed()
    assert {tp.partition: o for tp, o in committed.items()} == before
