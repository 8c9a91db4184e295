"""May the patterns delete a group (cleanup/permission.py): the precedence, the default deny
patterns for system groups, the Kafka Streams heuristic, and the run's overrides (rule sets of
CleanupPolicy). Pure."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.cleanup import CleanupPolicy
from airflow_provider_kgroups.cleanup.permission import Permission, PermissionReason, denied_by, permission
from airflow_provider_kgroups.client.selection import GroupSelector
from airflow_provider_kgroups.lag.deadgroups import DeadGroupRules
from tests.support.deadgroups import idle_history, report

P = PermissionReason


@pytest.mark.parametrize(
    "group_id, pattern",
    [
        ("connect-s3-sink", "connect-*"),
        ("_confluent-ksql-default", "_confluent*"),
        ("__internal", "__*"),
        ("schema-registry", "schema-registry*"),
    ],
)
def test_system_groups_are_denied_by_default(group_id, pattern):
    assert permission(group_id, DeadGroupRules(), None) == Permission(P.DEFAULT_DENY, pattern)
    dead = report(group_id=group_id, history=idle_history(72))
    assert dead.health.value == "dead" and not dead.deletable and not dead.permitted


def test_streams_application_ids_are_denied_by_default():
    topics = {"orders", "wordcount-counts-store-changelog"}
    assert permission("wordcount", DeadGroupRules(), topics) == Permission(
        P.STREAMS_APP, topics=("wordcount-counts-store-changelog",)
    )
    assert permission("wordcount", DeadGroupRules(deny_streams_apps=False), topics) == Permission(P.NO_DENY)
    assert permission("wordcount", DeadGroupRules(), None) == Permission(
        P.NO_DENY
    )  # no listing: nothing to see


def test_user_allow_overrides_default_deny_and_user_deny_wins():
    allow = DeadGroupRules(allow=("connect-old-*",))
    assert permission("connect-old-1", allow, None) == Permission(P.ALLOW, "connect-old-*")
    assert permission("app", allow, None) == Permission(P.NOT_ALLOWED)  # not in the allow list
    both = DeadGroupRules(allow=("re:.*",), deny=("keep-*",))
    assert permission("keep-me", both, None) == Permission(P.DENY, "keep-*")
    assert report(
        group_id="connect-old-1",
        history=idle_history(72),
        rules=DeadGroupRules(idle_hours=48, allow=("connect-old-*",)),
    ).deletable


def test_the_overrides_rule_sets_go_through_the_same_precedence():
    rules = DeadGroupRules(deny=("keep-*",), allow=("keep-*", "connect-*"))
    policy = CleanupPolicy(rules=rules, selector=GroupSelector(patterns=("*",)))
    assert permission("keep-1", rules, None) == Permission(P.DENY, "keep-*")
    assert permission("keep-1", policy.rules_overridden(), None) == Permission(P.ALLOW, "keep-*")
    assert permission("other", policy.rules_overridden(), None) == Permission(
        P.NOT_ALLOWED
    )  # allow still restricts
    plain = CleanupPolicy(selector=GroupSelector(patterns=("*",)), rules=DeadGroupRules(deny=("tmp-*",)))
    assert permission("connect-x", plain.rules_connector_gone(), None) == Permission(P.NO_DENY)
    assert permission("schema-registry", plain.rules_connector_gone(), None) == Permission(
        P.DEFAULT_DENY, "schema-registry*"
    )
    assert permission("tmp-1", plain.rules_connector_gone(), None) == Permission(P.DENY, "tmp-*")
    assert denied_by("tmp-1", plain.rules) == Permission(P.DENY, "tmp-*")
    assert denied_by("schema-registry", plain.rules) == Permission(P.DEFAULT_DENY, "schema-registry*")
    assert denied_by("app", plain.rules) is None


def test_permission_is_a_plain_value():
    assert Permission(P.STREAMS_APP, topics=("a-changelog",)).to_dict() == {
        "reason": "streams_app",
        "permitted": False,
        "pattern": None,
        "topics": ["a-changelog"],
    }
