"""ACLs with Kafka's StandardAuthorizer: what a principal that may not see a topic or a group gets
from ``kgroups``, the lag gate and the cleanup, on the ``kafka`` fixture's SASL listener as
``alice`` (PLAIN). The fixture allows everyone where no ACL is found, so each test's own
resources get DENY ACLs for alice, written by the super user with confluent-kafka's AdminClient.

What Kafka does (``KafkaApis``): an all-topics OffsetFetch leaves a hidden topic out without a
word; a named one answers TOPIC_AUTHORIZATION_FAILED (29), as Metadata does for a named topic
whether or not it exists; a denied group answers GROUP_AUTHORIZATION_FAILED (30); ListGroups
lists every group to a principal with Describe on the cluster (here: no cluster ACL, so alice).
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from airflow_provider_kgroups.cli import main as kgroups_main
from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig, GroupsClient, TopicPartition
from airflow_provider_kgroups.client.errors import ConfigurationError, ErrorCode
from airflow_provider_kgroups.client.results import TopicExistence
from airflow_provider_kgroups.lag.gate import FailureKind, GateSpec, GateStatus, LagGate, check_gate
from tests.support.pytest_kafka import SASL_LISTENER, USERS

ALICE = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "PLAIN",
    "sasl_username": "alice",
    "sasl_password": USERS["alice"],
}


def alice_config(kafka) -> ClientConfig:
    return ClientConfig.create(kafka.address(SASL_LISTENER), call_timeout_s=30, **ALICE)


@pytest.fixture(scope="module")
def hidden(kafka, kafka_seed, tmp_path_factory):
    """Topics ``open`` and ``hidden`` (3 records each), group ``gopen`` committed on both and
    ``ghidden`` on ``open``; alice is denied everything on ``hidden`` and ``ghidden``."""
    prefix = "acl-"
    names = {k: prefix + k for k in ("open", "hidden", "gopen", "ghidden", "absent")}
    kafka_seed.create_topics({names["open"]: 1, names["hidden"]: 1})
    kafka_seed.produce(names["open"], 0, 3)
    kafka_seed.produce(names["hidden"], 0, 3)
    kafka_seed.commit(names["gopen"], {(names["open"], 0): 1, (names["hidden"], 0): 2})
    kafka_seed.commit(names["ghidden"], {(names["open"], 0): 1})
    deny = [
        AclBinding(
            kind,
            names[key],
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.ALL,
            AclPermissionType.DENY,
        )
        for kind, key in ((ResourceType.TOPIC, "hidden"), (ResourceType.GROUP, "ghidden"))
    ]
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_acls(deny).values():
        future.result(30)
    with GroupsClient(alice_config(kafka)) as client:  # ACLs reach the authorizer through the metadata log
        deadline = time.monotonic() + 30
        while names["ghidden"] not in client.describe_groups([names["ghidden"]]).failures:
            assert time.monotonic() < deadline, "the DENY ACLs never took effect"
            time.sleep(0.2)
    config = tmp_path_factory.mktemp("alice") / "alice.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="alice" password="{USERS["alice"]}";\n'
    )
    return {**names, "command_config": str(config)}


def _kgroups_as_alice(capsys, kafka, hidden, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = kgroups_main(
        [
            "-b",
            kafka.address(SASL_LISTENER),
            "--command-config",
            hidden["command_config"],
            "--format",
            "json",
            *args,
        ]
    )
    return code, json.loads(capsys.readouterr().out)


def test_what_the_client_sees_of_hidden_topics_and_groups(kafka, hidden):
    t_open, t_hidden = TopicPartition(hidden["open"], 0), TopicPartition(hidden["hidden"], 0)
    with GroupsClient(alice_config(kafka)) as client:
        listed = {g.group_id for g in client.list_groups().groups}
        described = client.describe_groups([hidden["gopen"], hidden["ghidden"]])
        all_topics = client.fetch_committed_offsets([hidden["gopen"], hidden["ghidden"]])
        named = client.fetch_committed_offsets([hidden["gopen"]], topics={hidden["hidden"]: [0]})
        existence = client.check_topics([hidden["open"], hidden["hidden"], hidden["absent"]])
        ends = client.log_end_offsets([t_open, t_hidden])
    assert {hidden["gopen"], hidden["ghidden"]} <= listed  # Describe on the cluster: a listing hides nothing
    assert {g: f.code for g, f in described.failures.items()} == {
        hidden["ghidden"]: ErrorCode.GROUP_AUTHORIZATION_FAILED
    }
    assert {g: f.code for g, f in all_topics.failures.items()} == {
        hidden["ghidden"]: ErrorCode.GROUP_AUTHORIZATION_FAILED
    }
    # all topics: the hidden topic's offset is left out, silently
    assert {tp: c.offset for tp, c in all_topics.values[hidden["gopen"]].partitions.items()} == {t_open: 1}
    [(tp, committed)] = named.values[hidden["gopen"]].partitions.items()
    assert (tp, committed.offset, committed.error.code) == (
        t_hidden,
        None,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    )
    assert existence.values == {
        hidden["open"]: TopicExistence.EXISTS,
        hidden["hidden"]: TopicExistence.NOT_VISIBLE,
        hidden["absent"]: TopicExistence.ABSENT,
    }
    assert ends.values[t_open].offset == 3
    assert ends.failures[t_hidden].code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_kgroups_lag_names_the_denied_group_and_measures_what_it_may_see(kafka, hidden, capsys):
    code, out = _kgroups_as_alice(capsys, kafka, hidden, "lag", hidden["gopen"], hidden["ghidden"])
    assert code == 1, out
    assert {g: f["error"] for g, f in out["failures"].items()} == {
        hidden["ghidden"]: "GROUP_AUTHORIZATION_FAILED"
    }
    assert [(p["topic"], p["lag"]) for p in out["groups"][hidden["gopen"]]["partitions"]] == [
        (hidden["open"], 2)
    ]


def test_the_gate_fails_at_once_on_a_denied_group_and_names_a_hidden_topic(kafka, hidden):
    async def check(spec: GateSpec):
        async with AsyncGroupsClient(alice_config(kafka)) as client:
            return await check_gate(client, LagGate.start(spec, timeout_s=30))

    denied = asyncio.run(check(GateSpec.parse(group_ids=(hidden["ghidden"],))))
    assert (denied.status, denied.kind) == (GateStatus.FAIL, FailureKind.MISSING)
    assert "GROUP_AUTHORIZATION_FAILED" in denied.message
    with pytest.raises(ConfigurationError) as raised:
        asyncio.run(check(GateSpec.parse(group_ids=(hidden["gopen"],), topics=(hidden["hidden"],))))
    # not "does not exist": Kafka hides the topic, it does not say it is gone
    assert f"'{hidden['hidden']}' are not visible to this principal (TOPIC_AUTHORIZATION_FAILED" in str(
        raised.value
    )
    with pytest.raises(ConfigurationError, match=f"'{hidden['absent']}' do not exist"):
        asyncio.run(check(GateSpec.parse(group_ids=(hidden["gopen"],), topics=(hidden["absent"],))))


def test_the_cleanup_keeps_a_group_it_may_not_read(kafka, kafka_seed, hidden, capsys, tmp_path):
    code, out = _kgroups_as_alice(
        capsys, kafka, hidden, "delete", "--yes", "--backup-url", str(tmp_path), hidden["ghidden"]
    )
    assert code == 1, out
    assert (out["deleted"], out["unjudged"], out["kept"]) == ([], [hidden["ghidden"]], {"unread": 1})
    decision = out["decisions"][hidden["ghidden"]]
    assert decision["decision"] == "keep" and "GROUP_AUTHORIZATION_FAILED" in decision["reason"]
    assert kafka_seed.committed(hidden["ghidden"]) == {(hidden["open"], 0): 1}  # still there
