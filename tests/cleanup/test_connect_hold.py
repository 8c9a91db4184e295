"""Kafka Connect unreadable means hold (issue 18 item 7): with a Connect cluster configured but
unreadable, a group named only by a connector's ``consumer.override.group.id`` cannot be
recognised as Connect's - the group of a PAUSED connector was deleted, and the connector
re-delivered its topics when resumed. Such a run deletes nothing, each group that would have gone
names the unreadable cluster, unless the user passes ``delete_despite_unreadable_connect``
(``--delete-despite-unreadable-connect``).

Connect answers are ConnectorsResource's (GET /connectors?expand=status&expand=info); a sink's
group is ``consumer.override.group.id`` when set (DistributedHerder.validateSinkConnectorGroupId,
Worker.baseConsumerConfigs), served by requests-mock and over real HTTP by demo/connectserver.py.
"""

from __future__ import annotations

import json
import time

import pytest
import requests

from airflow_provider_kgroups.cleanup import ChangeContext, CleanupPolicy, Outcome, run_cleanup
from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL, main
from airflow_provider_kgroups.client.selection import GroupSelector
from airflow_provider_kgroups.connect import ConnectClusterConfig
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from demo.connectserver import Connector, ConnectServer, expanded
from tests.support.builders import HOUR, group, partition, seed_history, snapshot
from tests.support.fakekafka import FakeCluster
from tests.support.fakeworld import on_fake_cluster

NOW = 1_700_000_000_000 + 400 * HOUR
RULES = DeadGroupRules(idle_hours=48)
OVERRIDE = Connector(
    "archive-sink", "PAUSED", ("PAUSED",), config={"consumer.override.group.id": "billing-archive"}
)
URL = "http://connect:8083"
EXPAND = URL + "/connectors?expand=status&expand=info"
GROUPS = ("billing-archive", "tmp-a")


def history(ids, since_ms):
    """Both groups Empty, 50 records behind, no commit for 100 h: dead by the idle rule."""
    return [
        snapshot(
            NOW - h * HOUR,
            *(group(g, partition("orders", 0, 50, 100), state="Empty", members=0) for g in GROUPS),
        )
        for h in (100, 50, 10)
    ]


async def run(policy: CleanupPolicy, clusters, tmp_path):
    async def body(client, cluster):
        result = await run_cleanup(
            ChangeContext(client, str(tmp_path), connect_clusters=tuple(clusters), connect_timeout_s=10),
            policy,
            history=history,
            now_ms=NOW,
        )
        return result, {g: cluster.has_group(g) for g in GROUPS}

    return await on_fake_cluster(GROUPS, body)


def policy(**kwargs) -> CleanupPolicy:
    return CleanupPolicy(
        rules=RULES,
        selector=GroupSelector(patterns=("*",)),
        max_deletions_percent=100,
        dry_run=False,
        **kwargs,
    )


async def test_readable_connect_keeps_the_override_group_of_a_paused_connector(requests_mock, tmp_path):
    requests_mock.get(EXPAND, json=expanded([OVERRIDE]))
    result, exists = await run(policy(), [ConnectClusterConfig.create(URL)], tmp_path)
    assert result.decisions["billing-archive"].outcome is Outcome.KEEP
    assert (
        "'archive-sink'" in result.decisions["billing-archive"].reason
        and "is PAUSED" in result.decisions["billing-archive"].reason
    )
    assert result.ids(Outcome.DELETED) == ["tmp-a"] and exists == {"billing-archive": True, "tmp-a": False}
    assert result.held == () and result.ok


@pytest.mark.parametrize(
    "answer, words",
    [({"status_code": 401}, "HTTP 401"), ({"json": {"not": "connectors"}}, "lacks status/info")],
)
async def test_unreadable_connect_holds_every_deletion_naming_the_cluster(
    requests_mock, tmp_path, answer, words
):
    """The old plan deleted billing-archive (nothing marked it as Connect's) and tmp-a."""
    requests_mock.get(EXPAND, **answer)
    result, exists = await run(policy(), [ConnectClusterConfig.create(URL, retries=0)], tmp_path)
    assert exists == {"billing-archive": True, "tmp-a": True} and result.ids(Outcome.DELETED) == []
    assert result.held == GROUPS and result.connect_unreadable == (URL,) and not result.ok
    for g in GROUPS:
        decision = result.decisions[g]
        assert decision.outcome is Outcome.KEEP and decision.health == "dead"
        assert (
            decision.reason.startswith(f"held: Kafka Connect could not be read ({URL}: ")
            and words in decision.reason
        )
        assert "--delete-despite-unreadable-connect" in decision.reason
    assert result.summary()["held"] == list(GROUPS) and result.summary()["connect_unreadable"] == [URL]


async def test_the_explicit_option_deletes_despite_unreadable_connect(requests_mock, tmp_path):
    requests_mock.get(EXPAND, status_code=503)
    result, exists = await run(
        policy(delete_despite_unreadable_connect=True),
        [ConnectClusterConfig.create(URL, retries=0)],
        tmp_path,
    )
    assert result.ids(Outcome.DELETED) == list(GROUPS) and exists == {
        "billing-archive": False,
        "tmp-a": False,
    }
    assert result.held == () and result.connect_unreadable == (URL,)
    assert all(
        "deleted anyway (delete_despite_unreadable_connect)" in result.decisions[g].reason for g in GROUPS
    )


async def test_one_unreadable_cluster_of_two_holds_the_run(requests_mock, tmp_path):
    other = "http://connect-b:8083"
    requests_mock.get(EXPAND, json=expanded([]))
    requests_mock.get(
        other + "/connectors?expand=status&expand=info", exc=requests.exceptions.ConnectionError("refused")
    )
    result, _ = await run(
        policy(), [ConnectClusterConfig.create(URL), ConnectClusterConfig.create(other, retries=0)], tmp_path
    )
    assert result.held == GROUPS and result.connect_unreadable == (other,)
    assert all(
        f"({other}: " in result.decisions[g].reason and URL + ":" not in result.decisions[g].reason
        for g in GROUPS
    )


def test_cli_over_real_http_holds_then_deletes_with_the_flag(tmp_path, capsys):
    """``kgroups delete`` against the tests' Connect REST server refusing the credentials (401):
    exit 1, nothing deleted, the URL named; with --delete-despite-unreadable-connect it deletes."""
    with (
        FakeCluster.running_in_thread(brokers=1) as cluster,
        ConnectServer([OVERRIDE], auth=("ops", "right")) as server,
    ):
        cluster.add_topic("orders", 1, end_offsets=[100])
        for g in GROUPS:
            cluster.add_group(g, offsets={("orders", 0): 50})
        store = str(tmp_path / "history")
        seed_history(store, {g: [(300, 50, 100)] for g in GROUPS})
        props = tmp_path / "client.properties"
        props.write_text(
            f"bootstrap.servers={cluster.bootstrap}\nconnect.basic.auth.user=ops\n"
            "connect.basic.auth.password=wrong\n"
        )
        argv = [
            "--command-config",
            str(props),
            "--format",
            "json",
            "delete",
            "-p",
            "*",
            "--yes",
            "--history-url",
            store,
            "--connect-url",
            server.url,
            "--backup-url",
            str(tmp_path / "b"),
            "--max-deletions-percent",
            "100",
        ]
        code = main(argv)
        out = json.loads(capsys.readouterr().out)
        assert code == EXIT_PARTIAL and out["deleted"] == [] and out["held"] == list(GROUPS)
        assert all(
            out["decisions"][g]["reason"].startswith(f"held: Kafka Connect could not be read ({server.url}: ")
            and "HTTP 401" in out["decisions"][g]["reason"]
            for g in GROUPS
        )
        assert all(cluster.has_group(g) for g in GROUPS) and cluster.count("DeleteGroups") == 0
        started = time.monotonic()
        code = main([*argv, "--delete-despite-unreadable-connect"])
        out = json.loads(capsys.readouterr().out)
        assert code == EXIT_OK and out["deleted"] == list(GROUPS), out
        assert not any(cluster.has_group(g) for g in GROUPS)
        assert time.monotonic() - started < 20
        assert all(r.authorization for r in server.requests)
