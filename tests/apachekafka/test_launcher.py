"""The launcher itself (demo/apache_kafka.py): each release starts, answers as that release does, and
Kafka's own kafka-consumer-groups.sh of that release sees the same groups as ``kgroups``."""

from __future__ import annotations

import json
import uuid

import pytest

from airflow_provider_kgroups.cli import main as kgroups_main
from airflow_provider_kgroups.client import ClientConfig, GroupsClient
from demo import apache_kafka
from demo.apache_kafka import JarResolutionError, resolve_jars
from demo.seed import Seeder
from demo.tansu import probe_api_versions

FIND_COORDINATOR, OFFSET_FETCH = 10, 9


def _host_port(address: str) -> tuple[str, int]:
    host, port = address.split(",")[0].rsplit(":", 1)
    return host, int(port)


def _kgroups_list(capsys: pytest.CaptureFixture[str], bootstrap: str) -> set[str]:
    """The groups ``kgroups groups`` lists that kafka-consumer-groups.sh --list lists too: consumer
    groups (protocol type "consumer" or "", classic or KIP-848). Deliberate: kgroups lists every
    group, Kafka Connect's and share groups included (the cleanup judges them); the tool's
    listConsumerGroups leaves them out (docs/cli.rst, "kgroups vs kafka-consumer-groups.sh")."""
    capsys.readouterr()
    assert kgroups_main(["-b", bootstrap, "--format", "json", "groups"]) == 0
    return {
        row["group_id"]
        for row in json.loads(capsys.readouterr().out)["groups"]
        if row.get("protocol_type") in ("consumer", "", None)
        and row.get("group_type") not in ("share", "streams")
    }


@pytest.mark.parametrize("fixture, batching", [("kafka", True), ("kafka_3x", True), ("kafka_old", False)])
def test_each_release_lists_the_groups_kafka_consumer_groups_lists(
    request, capsys, name_prefix, fixture, batching
):
    cluster = request.getfixturevalue(fixture)
    versions = probe_api_versions(*_host_port(cluster.bootstrap))
    # KIP-699 (FindCoordinator v4) and KIP-709 (OffsetFetch v8) arrived together in 3.0.
    assert (versions[FIND_COORDINATOR][1] >= 4) is batching
    assert (versions[OFFSET_FETCH][1] >= 8) is batching
    topic = name_prefix + "t"
    groups = {f"{name_prefix}g{i}" for i in range(3)}
    with Seeder(cluster.bootstrap) as seed:
        seed.create_topic(topic, partitions=2)
        seed.produce(topic, 0, 3)
        seed.commit_many({group: {(topic, 0): 2} for group in groups})
    tool = cluster.run_tool(cluster.consumer_groups_tool, "--bootstrap-server", cluster.bootstrap, "--list")
    assert tool.returncode == 0, tool.stderr
    theirs = {line.strip() for line in tool.stdout.splitlines() if line.strip()}
    ours = _kgroups_list(capsys, cluster.bootstrap)
    assert groups <= theirs
    assert ours == theirs, (sorted(ours - theirs), sorted(theirs - ours))


def test_three_nodes_spread_group_coordinators(kafka3, name_prefix):
    topic = name_prefix + "t"
    groups = [f"{name_prefix}g{i}" for i in range(12)]
    with Seeder(kafka3.bootstrap) as seed:
        seed.create_topic(topic, partitions=3, replication=3)
        seed.commit_many({group: {(topic, 0): 1} for group in groups})
    with GroupsClient(ClientConfig.create(kafka3.bootstrap, call_timeout_s=30)) as client:
        described = client.describe_groups(groups)
    assert described.failures == {}
    assert len({described[g].coordinator_id for g in groups}) > 1, (
        "12 groups on 6 offsets partitions, 3 nodes"
    )


def test_an_unresolvable_version_fails_with_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KGROUPS_JAR_CACHE", str(tmp_path))
    with pytest.raises(JarResolutionError, match="Maven could not resolve kafka-0.0.1"):
        resolve_jars([("org.apache.kafka", "kafka_2.13", "0.0.1")], name="kafka-0.0.1")


def test_a_cluster_id_never_holds_a_dash(monkeypatch):
    """kafka-storage format read a cluster id starting with "-" as an option (CI: Kafka 3.9.1's
    format refused one); ids are drawn again as Kafka's Uuid.randomUuid() draws them."""
    drawn = iter([b"\xf8" + bytes(15), bytes(3) + b"\xfb" + bytes(12), bytes(range(16))])
    monkeypatch.setattr(apache_kafka.uuid, "uuid4", lambda: uuid.UUID(bytes=next(drawn)))
    cluster_id = apache_kafka.random_cluster_id()
    assert cluster_id == "AAECAwQFBgcICQoLDA0ODw"
    assert "-" not in cluster_id and len(cluster_id) == 22
