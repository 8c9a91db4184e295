"""Every group type on the real Apache Kafka broker, with live members written by librdkafka: a
classic group, a KIP-848 consumer group (``group.protocol=consumer``, described with
ConsumerGroupDescribe) and a KIP-932 share group (DescribeShareGroupOffsets for ``kgroups
share-lag`` and ``kgroups lag``, AlterShareGroupOffsets). What ``kgroups`` lists, describes, measures, and what
DeleteGroups and ``kgroups delete`` do with each (live, Empty, missing).

Streams groups (KIP-1071), made by a real Kafka Streams application and judged against
``kafka-streams-groups.sh``, are in tests/apachekafka/test_streams_groups.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from airflow_provider_kgroups.cli import main as kgroups_main
from airflow_provider_kgroups.client import ClientConfig, GroupsClient, GroupState, TopicPartition
from airflow_provider_kgroups.client.errors import ErrorCode
from tests.support.librdkafka_members import (
    classic_member,
    consume_share,
    consumer_member,
    poll_until,
    share_member,
)


def _kgroups(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = kgroups_main(["--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def live_groups(kafka, kafka_seed, request):
    """A topic with 4 records per partition; a classic and a KIP-848 member that committed 3 on
    partition 0 and 4 on partition 1; a share member; an Empty group (commits, no member)."""
    prefix = "gt-" + request.node.name[:20] + "-"
    topic = prefix + "t"
    kafka_seed.create_topic(topic, partitions=2)
    for partition in (0, 1):
        kafka_seed.produce(topic, partition, 4)
    ids = {kind: prefix + kind for kind in ("classic", "kip848", "share", "empty", "absent")}
    kafka_seed.commit(ids["empty"], {(topic, 0): 2, (topic, 1): 4})
    bootstrap = kafka.bootstrap
    with (
        classic_member(bootstrap, ids["classic"], [topic]) as classic,
        consumer_member(bootstrap, ids["kip848"], [topic]) as kip848,
        share_member(bootstrap, ids["share"], [topic]) as share,
    ):
        for member in (classic, kip848):
            poll_until(member, lambda m=member: len(m.assignment()) == 2, "both partitions assigned")
            member.commit(offsets=[_ck_tp(topic, 0, 3), _ck_tp(topic, 1, 4)], asynchronous=False)
        # a share member joins at its first poll: wait until the broker lists it Stable
        with GroupsClient(ClientConfig.create(bootstrap)) as client:
            poll_share_until_assigned(client, share, ids["share"])
        yield {"topic": topic, "ids": ids, "bootstrap": bootstrap, "share": share}
    _delete_share_groups(bootstrap, [ids["share"], ids["share"] + "-fresh"])


def _delete_share_groups(bootstrap: str, group_ids: list[str], timeout: float = 30.0) -> None:
    """Leave no share group behind: kafka-consumer-groups.sh --list (tests/apachekafka/test_launcher.py)
    lists classic and consumer groups only, ``kgroups groups`` every type."""
    deadline = time.monotonic() + timeout
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        while True:  # a closed member leaves at once; the group is Empty, then deletable
            result = client.delete_groups(group_ids)
            left = {g: f for g, f in result.failures.items() if f.code != ErrorCode.GROUP_ID_NOT_FOUND}
            if not left:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"share groups not deleted within {timeout:.0f} s: {left}")
            group_ids = list(left)
            time.sleep(0.3)


def _ck_tp(topic: str, partition: int, offset: int):
    from confluent_kafka import TopicPartition as CkTopicPartition

    return CkTopicPartition(topic, partition, offset)


def poll_share_until_assigned(client: GroupsClient, share, group_id: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        described = client.describe_groups([group_id]).values.get(group_id)
        if (
            described is not None
            and described.state is GroupState.STABLE
            and [len(m.assignment) for m in described.members] == [2]
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"share group {group_id} not Stable and assigned within {timeout:.0f} s: {described}"
            )
        for message in share.poll(0.3):
            if message.error() is None:  # none expected: a new share group starts at the log end
                share.acknowledge(message)
        share.commit_sync(10)


def test_each_type_is_listed_and_described_with_its_members(live_groups):
    ids, topic = live_groups["ids"], live_groups["topic"]
    both = (TopicPartition(topic, 0), TopicPartition(topic, 1))
    with GroupsClient(ClientConfig.create(live_groups["bootstrap"])) as client:
        listed = {
            g.group_id: (g.group_type, g.state)
            for g in client.list_groups().groups
            if g.group_id in ids.values()
        }
        described = client.describe_groups(list(ids.values()))
    assert listed == {
        ids["classic"]: ("classic", GroupState.STABLE),
        ids["kip848"]: ("consumer", GroupState.STABLE),
        ids["share"]: ("share", GroupState.STABLE),
        ids["empty"]: ("classic", GroupState.EMPTY),
    }
    assert described.failures == {}
    kinds = {g: (d.group_type, d.state, d.protocol_type, d.protocol) for g, d in described.values.items()}
    assert kinds == {
        ids["classic"]: ("classic", GroupState.STABLE, "consumer", "range"),  # librdkafka's first assignor
        ids["kip848"]: (
            "consumer",
            GroupState.STABLE,
            "consumer",
            "uniform",
        ),  # the broker's default assignor
        ids["share"]: ("share", GroupState.STABLE, "share", "simple"),
        ids["empty"]: ("classic", GroupState.EMPTY, "", ""),  # created by a commit: never joined
        ids["absent"]: ("classic", GroupState.DEAD, "", ""),
    }
    for kind in ("classic", "kip848", "share"):
        [member] = described.values[ids[kind]].members
        assert (member.client_id, tuple(sorted(member.assignment))) == (f"live-{ids[kind]}", both), kind


def test_lag_of_the_live_groups_and_of_the_share_group(live_groups, capsys):
    ids, bootstrap = live_groups["ids"], live_groups["bootstrap"]
    code, out = _kgroups(capsys, "-b", bootstrap, "lag", ids["classic"], ids["kip848"], ids["empty"])
    assert code == 0, out
    rows = {
        (g["group_id"], p["partition"]): p["lag"] for g in out["groups"].values() for p in g["partitions"]
    }
    assert rows == {
        (ids["classic"], 0): 1,
        (ids["kip848"], 0): 1,
        (ids["empty"], 0): 2,
        (ids["classic"], 1): 0,
        (ids["kip848"], 1): 0,
        (ids["empty"], 1): 0,
    }
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        offsets = client.fetch_committed_offsets([ids["share"]])
    assert offsets.values[ids["share"]].partitions == {}, "OffsetFetch answers a share group empty, no error"


def _share_starts_once_listed(client: GroupsClient, group_id: str, timeout: float = 30.0) -> dict:
    """Start offsets per share-partition, once the coordinator has one for each of the 2 assigned."""
    deadline = time.monotonic() + timeout
    while True:
        described = client.describe_share_group_offsets([group_id])
        starts = {tp: c.offset for tp, c in described.values[group_id].partitions.items()}
        if len(starts) == 2:
            return starts
        if time.monotonic() > deadline:
            raise TimeoutError(f"share-partitions of {group_id} not listed in {timeout:.0f} s: {described}")
        time.sleep(0.2)


def test_share_group_start_offsets_lag_and_alter(live_groups, capsys):
    """A live share group's share-partitions (share.auto.offset.reset=latest, nothing acknowledged)
    have no start offset: ``share-lag`` says unknown and exits 1. AlterShareGroupOffsets is refused
    while the member is there (68), accepted on a new group, and a member of that group is handed
    the records from there; ``share-lag`` reads DescribeShareGroupOffsets (v1: the exact lag) and
    ListOffsets."""
    ids, topic, bootstrap = live_groups["ids"], live_groups["topic"], live_groups["bootstrap"]
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        live = client.alter_share_group_offsets({ids["share"]: {tp0: 0}})
        assert {g: f.code for g, f in live.failures.items()} == {ids["share"]: ErrorCode.NON_EMPTY_GROUP}
        # Assigned share-partitions whose reset is "latest" and that nothing was acknowledged on
        # have no start offset yet (-1): their lag is unknown, never 0.
        assert _share_starts_once_listed(client, ids["share"]) == {tp0: None, tp1: None}
        fresh = ids["share"] + "-fresh"
        altered = client.alter_share_group_offsets({fresh: {tp0: 1, tp1: 0}})
        assert altered.failures == {} and altered.values[fresh] == {tp0: None, tp1: None}
        not_share = client.alter_share_group_offsets({ids["empty"]: {tp0: 0}})
        assert {g: f.code for g, f in not_share.failures.items()} == {
            ids["empty"]: ErrorCode.GROUP_ID_NOT_FOUND
        }
    code, out = _kgroups(capsys, "-b", bootstrap, "share-lag", ids["share"], fresh)
    assert code == 1, out  # unknown is never fine
    lag = {
        g: (
            [
                (p["partition"], p["start_offset"], p["log_end"], p["lag"], p["lag_kind"], p["lag_at_most"])
                for p in v["partitions"]
            ],
            (v["total_lag"], v["total_lag_kind"], v["total_lag_at_most"]),
        )
        for g, v in out["groups"].items()
    }
    # Kafka 4.4 answers v1: the exact lag; set by AlterShareGroupOffsets, nothing is delivered yet
    assert lag == {
        ids["share"]: ([(0, None, 4, None, None, None), (1, None, 4, None, None, None)], (None, None, None)),
        fresh: ([(0, 1, 4, 3, "exact", 3), (1, 0, 4, 4, "exact", 4)], (7, "exact", 7)),
    }
    # kgroups lag says the same: the start offset as CURRENT-OFFSET, the exact lag; unknown, never 0
    code, out = _kgroups(capsys, "-b", bootstrap, "lag", ids["share"], fresh)
    assert code == 1, out
    assert {
        g: ([(p["partition"], p["committed"], p["lag"], p["flags"]) for p in v["partitions"]], v["total_lag"])
        for g, v in out["groups"].items()
    } == {
        ids["share"]: ([(0, None, None, ["no_commit"]), (1, None, None, ["no_commit"])], None),
        fresh: ([(0, 1, 3, []), (1, 0, 4, [])], 7),
    }

    # A member of the fresh group is handed the records from the altered start offsets on.
    with share_member(bootstrap, fresh, [topic]) as member:
        records = consume_share(member, 7)
    assert sorted((m.partition(), m.offset()) for m in records) == [(0, 1), (0, 2), (0, 3)] + [
        (1, o) for o in range(4)
    ]


#: the records a share consumer accepts per partition; it releases every other (KIP-932)
_ACCEPTED = {0: {2, 3, 4}, 1: {0, 1, 2}}


def _ack_some_release_the_rest(member, topic: str, per_partition: int, timeout: float = 30.0) -> None:
    """Poll until every record of the topic came at least once: accept those in ``_ACCEPTED``,
    release the others (they stay to deliver), and commit the acknowledgements."""
    from confluent_kafka import AcknowledgeType

    wanted = {(p, o) for p in _ACCEPTED for o in range(per_partition)}
    seen: set[tuple[int, int]] = set()
    deadline = time.monotonic() + timeout
    while seen != wanted:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: a share consumer got {sorted(seen)} of {len(wanted)} records")
        for message in member.poll(0.5):
            if message.error() is None:
                key = (message.partition(), message.offset())
                seen.add(key)
                accept = key[1] in _ACCEPTED[key[0]]
                member.acknowledge(message, AcknowledgeType.ACCEPT if accept else AcknowledgeType.RELEASE)
        member.commit_sync(10)


def _share_lag_until(
    bootstrap: str, group_id: str, expected: dict | Callable[[dict], bool], timeout: float = 30.0
) -> dict:
    """``kgroups share-lag`` per partition (start offset, lag, kind), once it shows ``expected`` (or
    ``expected(seen)`` holds): the share coordinator persists the acknowledgements a moment later."""
    from airflow_provider_kgroups.offsets.share import share_group_lag

    deadline = time.monotonic() + timeout
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        while True:
            result = client.run(share_group_lag(client.aclient, [group_id]))
            seen = {
                p.tp.partition: (p.start_offset, p.lag, p.lag_kind and p.lag_kind.value)
                for p in result.groups.get(group_id, ())
            }
            if seen == expected or (callable(expected) and expected(seen)):
                return seen
            if time.monotonic() > deadline:
                raise TimeoutError(f"share-lag of {group_id} in {timeout:.0f} s: {seen}, not {expected}")
            time.sleep(0.2)


def test_share_lag_is_exact_and_agrees_with_kafka_share_groups_tool(kafka, kafka_seed, capsys):
    """Kafka 4.4 answers DescribeShareGroupOffsets v1 (KIP-1226): the exact lag, records not yet
    delivered completely. 10 records per partition from start offset 0; a share consumer accepts 2,
    3, 4 of partition 0 (released 0, 1: the start offset stays 0) and 0, 1, 2 of partition 1, and
    releases the rest. The exact lag is 7 on each, where the upper bound says 10 on partition 0.
    Partition 1's start offset as the share coordinator persisted it is 3, or still 0 (seen both
    ways on Kafka 4.4: the persisted state can trail the share-partition's own); either way its lag
    is 7 (10 - 3 - 0, or 10 - 0 - 3 delivered).
    kafka-share-groups.sh --describe prints the same start offsets and LAG."""
    from demo.apache_kafka import SHARE_GROUPS_TOOL
    from tests.support.consumer_groups_tool import parse_blocks

    topic, group, per_partition = "gt-share-exact-t", "gt-share-exact", 10
    bootstrap = kafka.bootstrap
    kafka_seed.create_topic(topic, partitions=2)
    for partition in (0, 1):
        kafka_seed.produce(topic, partition, per_partition)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    try:
        with GroupsClient(ClientConfig.create(bootstrap)) as client:
            assert client.alter_share_group_offsets({group: {tp0: 0, tp1: 0}}).failures == {}
        # initialized by AlterShareGroupOffsets, nothing delivered: every record is still to deliver
        assert _share_lag_until(bootstrap, group, {0: (0, 10, "exact"), 1: (0, 10, "exact")})

        with share_member(bootstrap, group, [topic]) as member:
            _ack_some_release_the_rest(member, topic, per_partition)
        expected = _share_lag_until(
            bootstrap,
            group,
            lambda seen: seen.get(0) == (0, 7, "exact") and seen.get(1) in ((3, 7, "exact"), (0, 7, "exact")),
        )
        start1 = expected[1][0]

        code, out = _kgroups(capsys, "-b", bootstrap, "share-lag", group)
        assert code == 0, out
        doc = out["groups"][group]
        assert [(p["partition"], p["lag"], p["lag_kind"], p["lag_at_most"]) for p in doc["partitions"]] == [
            (0, 7, "exact", 10),
            (1, 7, "exact", 10 - start1),
        ]
        assert (doc["total_lag"], doc["total_lag_kind"], doc["total_lag_at_most"]) == (
            14,
            "exact",
            20 - start1,
        )
        # kgroups lag agrees: the start offsets, the exact lag (never 0 with records pending), exit 0
        code, out = _kgroups(capsys, "-b", bootstrap, "lag", group)
        assert code == 0, out
        lag = out["groups"][group]
        assert [(p["partition"], p["committed"], p["lag"]) for p in lag["partitions"]] == [
            (0, 0, 7),
            (1, start1, 7),
        ]
        assert (lag["protocol_type"], lag["total_lag"]) == ("share", doc["total_lag"])

        tool = kafka.run_tool(
            SHARE_GROUPS_TOOL,
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            group,
            "--timeout",
            "60000",
        )
        assert tool.returncode == 0, tool.stderr
        blocks, _ = parse_blocks(tool.stdout)
        printed = {
            int(row["PARTITION"]): (int(row["START-OFFSET"]), int(row["LAG"]))
            for block in blocks
            for row in block
            if row["TOPIC"] == topic
        }
        assert printed == {p: (start, lag) for p, (start, lag, _) in expected.items()}, tool.stdout
    finally:
        _delete_share_groups(bootstrap, [group])


def test_delete_groups_of_every_type_and_state(live_groups, kafka_seed, capsys, tmp_path):
    """DeleteGroups: a live group of any type is NON_EMPTY_GROUP (68), a missing one
    GROUP_ID_NOT_FOUND (69); ``kgroups delete`` keeps the live ones as active and reports the
    missing one as not found, and deletes only the Empty one (after backing its offsets up)."""
    ids, topic, bootstrap = live_groups["ids"], live_groups["topic"], live_groups["bootstrap"]
    live = [ids["classic"], ids["kip848"], ids["share"]]
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        refused = client.delete_groups([*live, ids["absent"]])
    assert refused.values == {}
    assert {g: f.code for g, f in refused.failures.items()} == {
        **dict.fromkeys(live, ErrorCode.NON_EMPTY_GROUP),
        ids["absent"]: ErrorCode.GROUP_ID_NOT_FOUND,
    }

    empty = ids["empty"] + "-2"
    kafka_seed.commit(empty, {(topic, 1): 3})
    code, out = _kgroups(
        capsys, "-b", bootstrap, "delete", "--yes", "--backup-url", str(tmp_path), *live, empty, ids["absent"]
    )
    assert code == 0, out
    assert (out["deleted"], out["not_found"], out["kept"]) == ([empty], [ids["absent"]], {"active": 3})
    assert {g: out["decisions"][g]["decision"] for g in live} == dict.fromkeys(live, "keep")
    assert kafka_seed.committed(empty) == {}
    with GroupsClient(ClientConfig.create(bootstrap)) as client:
        gone = client.describe_groups([empty])
    assert gone.values[empty].state is GroupState.DEAD
