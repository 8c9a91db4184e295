"""The fake cluster's "old versions" tests, for real: Kafka 2.8.2 (ZooKeeper; the last release
before KIP-699 / KIP-709 batching: FindCoordinator v3, OffsetFetch v7, ListGroups v4) and 3.9.1
(batching, ListGroups v5), each with its own kafka-consumer-groups.sh as the oracle.

Twins of: tests/client/test_fake_batching.py (``test_no_batched_request_is_ever_encoded_below_its_
batching_version``), tests/client/test_fake_listings.py (``test_a_listing_names_each_groups_
coordinator_so_no_find_coordinator_follows``), tests/client/test_fake_groups.py (``test_list_groups_on_an_old_broker_applies_
the_filters_on_the_client``), tests/cli/test_cli_real_clusters.py (``test_a_group_that_does_not_
exist_is_not_found_not_dead_with_total_0``) and the describe / lag tests.

What the real 2.8.2 showed against the fake's model (docs/real-clusters.rst, "Old brokers"):
ListGroups is v4 there (KIP-518, Kafka 2.6), so the *state* filter is the broker's and only the
*type* filter (v5, Kafka 3.8) is applied by the client; a group that does not exist is described
as Dead with no error (DescribeGroups v5), as the fake answers below v6.

Not twinned here: tests/client/test_fake_old_versions.py's ListOffsets v0, OffsetFetch v0-v1 and
Metadata below v4 are older than any release that runs here (2.8.2 answers ListOffsets v6,
OffsetFetch v7, Metadata v11); the listings of loading or moving coordinators need several
nodes (the ``kafka3`` fixture's tests).
"""

from __future__ import annotations

import json
import logging
import re
import uuid

import pytest
from kafka.admin import NewTopic

from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL
from airflow_provider_kgroups.cli import main as kgroups_main
from airflow_provider_kgroups.client import ClientConfig, GroupsClient, TopicPartition
from demo.seed import BASE_TIMESTAMP_MS, Seeder
from demo.tansu import probe_api_versions
from tests.support.consumer_groups_tool import (
    ConsumerGroupsTool,
    LiveMember,
    kgroups_members_view,
    kgroups_offsets_view,
    kgroups_state_view,
    tool_members_view,
    tool_offsets_view,
    tool_state_view,
    wait_for_leaders,
)

RELEASES = [pytest.param("kafka_old", False, id="2.8.2"), pytest.param("kafka_3x", True, id="3.9.1")]
FIND_COORDINATOR, OFFSET_FETCH, LIST_GROUPS = 10, 9, 16
REQUEST_LINE = re.compile(r"^(\w+) v(\d+) -> broker (-?\d+)")


def _requests(caplog) -> list[tuple[str, int]]:
    """(API, version) of every request the client logged (its ``--verbose`` log)."""
    found = []
    for record in caplog.records:
        if record.name == "airflow_provider_kgroups.client.requests":
            match = REQUEST_LINE.match(record.getMessage())
            if match:
                found.append((match.group(1), int(match.group(2))))
    return found


def _host_port(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


def _seed(cluster, p: str) -> dict[str, dict[tuple[str, int], int]]:
    """orders (3 partitions: 10, 5, 0 records), audit (4 records); five groups with commits only.
    The topics keep their 2023 timestamps (retention.ms=-1)."""
    orders, audit = p + "orders", p + "audit"
    commits = {
        p + "empty-a": {(orders, 0): 4, (orders, 1): 5, (audit, 0): 1},
        p + "empty-b": {(orders, 0): 10},
        p + "live": {(orders, 0): 7, (orders, 1): 2},
        **{f"{p}g{i}": {(orders, 0): i, (audit, 0): i} for i in range(3)},
    }
    with Seeder(cluster.bootstrap) as seed:
        result = seed.admin.create_topics(
            [
                NewTopic(orders, 3, 1, topic_configs={"retention.ms": "-1"}),
                NewTopic(audit, 1, 1, topic_configs={"retention.ms": "-1"}),
            ],
            raise_errors=False,
        )
        assert all(t["error_code"] == 0 for t in result["topics"]), result
        seed.admin.wait_for_topics([orders, audit], timeout_ms=30_000)
        wait_for_leaders(seed, {orders: 3, audit: 1})
        seed.produce(orders, 0, 10, first_timestamp_ms=BASE_TIMESTAMP_MS)
        seed.produce(orders, 1, 5, first_timestamp_ms=BASE_TIMESTAMP_MS)
        seed.produce(audit, 0, 4, first_timestamp_ms=BASE_TIMESTAMP_MS)
        seed.commit_many(commits)
    return commits


def _kgroups(capsys, bootstrap: str, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = kgroups_main(["-b", bootstrap, "--format", "json", *argv])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("fixture, batching", RELEASES)
def test_committed_offsets_batch_only_where_the_broker_can(request, caplog, fixture, batching):
    """2.8.2: one FindCoordinator (v3, one key) and one OffsetFetch (v7, one group) per group;
    3.9.1: one of each for all groups (v4+, v8+). The offsets are what kafka-python committed."""
    cluster = request.getfixturevalue(fixture)
    versions = probe_api_versions(*_host_port(cluster.bootstrap))
    assert (versions[FIND_COORDINATOR][1] >= 4, versions[OFFSET_FETCH][1] >= 8) == (batching, batching)
    p = f"old-{uuid.uuid4().hex[:6]}-"
    commits = _seed(cluster, p)
    caplog.set_level(logging.DEBUG, logger="airflow_provider_kgroups.client.requests")
    with GroupsClient(ClientConfig.create(cluster.bootstrap, call_timeout_s=30)) as client:
        caplog.clear()
        result = client.fetch_committed_offsets(list(commits))
        sent = _requests(caplog)
        assert result.failures == {}
        assert {
            g: {(tp.topic, tp.partition): o for tp, o in result[g].committed().items()} for g in commits
        } == commits
        caplog.clear()
        described = client.describe_groups(list(commits))
        assert described.failures == {} and {d.state.value for d in described.values.values()} == {"Empty"}
        assert [api for api, _ in _requests(caplog)] == ["DescribeGroups"]  # one coordinator: one request
    finds = [v for api, v in sent if api == "FindCoordinator"]
    fetches = [v for api, v in sent if api == "OffsetFetch"]
    if batching:
        assert len(finds) == 1 and finds[0] >= 4
        assert len(fetches) == 1 and fetches[0] >= 8
    else:
        assert finds == [3] * len(commits)
        assert fetches == [7] * len(commits)

    # test_fake_listings' twin: the broker that lists a group is its coordinator, so the fetch
    # after a listing looks nothing up.
    with GroupsClient(ClientConfig.create(cluster.bootstrap, call_timeout_s=30)) as client:
        assert set(commits) <= {g.group_id for g in client.list_groups().groups}
        caplog.clear()
        again = client.fetch_committed_offsets(list(commits))
        assert again.failures == {} and len(again.values) == len(commits)
        apis = [api for api, _ in _requests(caplog)]
        assert "FindCoordinator" not in apis
        assert apis.count("OffsetFetch") == (1 if batching else len(commits))


@pytest.mark.parametrize("fixture, batching", RELEASES)
def test_listing_filters_by_state_and_type_as_the_tool_does(request, caplog, capsys, fixture, batching):
    """State filter: the broker's on both (ListGroups v4+). Type filter: the broker's from v5
    (3.9.1); on 2.8.2 (v4) the client describes the groups and filters them itself, so a classic
    group is ``classic`` and no group is ``consumer`` on either."""
    cluster = request.getfixturevalue(fixture)
    p = f"old-{uuid.uuid4().hex[:6]}-"
    commits = _seed(cluster, p)
    member = LiveMember(cluster.bootstrap, p + "live", [p + "orders"], client_id="old-live")
    try:
        member.wait_assigned(3)
        tool = ConsumerGroupsTool(cluster)
        theirs = {r["GROUP"]: r["STATE"] for r in tool.list_groups("--state") if r["GROUP"].startswith(p)}
        assert theirs == {g: "Stable" if g == p + "live" else "Empty" for g in commits}
        caplog.set_level(logging.DEBUG, logger="airflow_provider_kgroups.client.requests")
        with GroupsClient(ClientConfig.create(cluster.bootstrap, call_timeout_s=30)) as client:

            def mine(**filters):
                return {
                    g.group_id: (g.state.value, g.group_type)
                    for g in client.list_groups(**filters).groups
                    if g.group_id.startswith(p)
                }

            caplog.clear()
            stable = mine(states=["Stable"])
            assert _requests(caplog)[-1] == ("ListGroups", 5 if batching else 4)
            empty = mine(states=["Empty"])
            classic = mine(types=["classic"])
            consumer = mine(types=["consumer"])
            both = mine(states=["Empty"], types=["classic"])
        assert set(stable) == {g for g, s in theirs.items() if s == "Stable"}
        assert set(empty) == {g for g, s in theirs.items() if s == "Empty"}
        assert set(classic) == set(commits) and {t for _, t in classic.values()} == {"classic"}
        assert consumer == {}
        assert set(both) == set(empty)
        code, ours = _kgroups(capsys, cluster.bootstrap, "groups", "--state", "Stable")
        assert code == EXIT_OK
        assert {g["group_id"] for g in ours["groups"] if g["group_id"].startswith(p)} == {p + "live"}
    finally:
        member.stop()


@pytest.mark.parametrize("fixture, batching", RELEASES)
def test_describe_and_lag_match_the_tool(request, capsys, fixture, batching):
    """--describe --offsets / --members / --state of the release's own tool against kgroups lag and
    describe, a live member included; and a group that does not exist: not found (exit 1), never
    Dead with a total of 0."""
    cluster = request.getfixturevalue(fixture)
    p = f"old-{uuid.uuid4().hex[:6]}-"
    _seed(cluster, p)
    groups = [p + "empty-a", p + "empty-b", p + "live"]
    member = LiveMember(cluster.bootstrap, p + "live", [p + "orders"], client_id="old-live")
    try:
        member.wait_assigned(3)
        tool = ConsumerGroupsTool(cluster)
        selection = [a for g in groups for a in ("--group", g)]
        offsets = tool.run("--describe", *selection).check()
        members = tool.run("--describe", *selection, "--members", "--verbose").check()
        states = tool.run("--describe", *selection, "--state").check()
        code, lag = _kgroups(capsys, cluster.bootstrap, "lag", *groups)
        assert code == EXIT_PARTIAL  # the live group's orders 2 has no commit: its total is unknown
        code, described = _kgroups(capsys, cluster.bootstrap, "describe", *groups)
        assert code == EXIT_OK
    finally:
        member.stop()
    described = described["results"]
    theirs = tool_offsets_view(offsets.rows)
    assert kgroups_offsets_view(lag, described) == theirs
    assert theirs[(p + "empty-a", p + "orders", 0)] == ("4", "10", "6", "-", "-", "-")
    assert theirs[(p + "live", p + "orders", 2)][:3] == ("-", "0", "-")
    assert lag["groups"][p + "empty-a"]["total_lag"] == 9
    ours = kgroups_members_view(described)
    if batching:
        # Kafka 3.9.1's tool prints a member's assignment without its topic names ("(0,1,2)": the
        # 3.7-3.9 Java port of printMembers drops them); the partitions are compared.
        ours = {k: (*v[:3], {"": [n for ns in v[3].values() for n in ns]}) for k, v in ours.items()}
    assert ours == tool_members_view(members.rows) and len(ours) == 1
    assert kgroups_state_view(described) == tool_state_view(states.rows)

    ghost = p + "ghost"
    run = tool.run("--describe", "--group", ghost, "--state")
    assert run.returncode == 0 and run.rows == [], run.stdout
    assert f"Consumer group '{ghost}' does not exist." in run.stdout + run.stderr
    code, found = _kgroups(capsys, cluster.bootstrap, "lag", ghost)
    assert code == EXIT_PARTIAL
    assert (found["groups"][ghost]["not_found"], found["groups"][ghost]["total_lag"]) == (True, None)
    code, found = _kgroups(capsys, cluster.bootstrap, "describe", ghost)
    assert (code, found["not_found"]) == (EXIT_PARTIAL, [ghost])
    with GroupsClient(ClientConfig.create(cluster.bootstrap, call_timeout_s=30)) as client:
        assert client.fetch_committed_offsets([ghost])[ghost].partitions == {}
        assert (
            client.log_end_offsets([TopicPartition(p + "orders", 0)])
            .values[TopicPartition(p + "orders", 0)]
            .offset
            == 10
        )
