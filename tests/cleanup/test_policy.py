"""CleanupPolicy: every input checked before anything is sent; the cap arithmetic; the rule
sets the overrides use. Pure (no cluster)."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.cleanup import CleanupPolicy
from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.selection import GroupSelector
from airflow_provider_kgroups.lag.deadgroups import DEFAULT_DENY_PATTERNS, DeadGroupRules


@pytest.mark.parametrize(
    "candidates, max_deletions, percent, cap",
    [
        (0, 10, 50, 0),
        (1, 10, 50, 1),
        (3, 10, 50, 2),
        (4, 3, 50, 2),
        (8, 10, 75, 6),
        (6, 3, 100, 3),
        (5, 0, 100, 0),
        (100, 10, 1, 1),
        (7, 10, 0, 0),
    ],
)
def test_cap_is_the_smaller_of_the_absolute_and_the_rounded_up_percent(
    candidates, max_deletions, percent, cap
):
    policy = CleanupPolicy(named=("a",), max_deletions=max_deletions, max_deletions_percent=percent)
    assert policy.cap(candidates) == cap


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({}, "nothing selected"),
        ({"named": "orders"}, "not the single string 'orders'"),
        ({"named": ("a", "")}, "every group id must be a non-empty string"),
        ({"named": ("a",), "override_deny": "schema-registry"}, "not the single string 'schema-registry'"),
        ({"named": ("a",), "max_deletions": -1}, "max_deletions must be a whole number >= 0"),
        ({"named": ("a",), "max_deletions": 2.5}, "max_deletions must be a whole number >= 0"),
        ({"named": ("a",), "max_deletions": True}, "max_deletions must be a whole number >= 0"),
        ({"named": ("a",), "max_deletions_percent": 101}, "between 0 and 100"),
        ({"named": ("a",), "max_deletions_percent": float("nan")}, "between 0 and 100"),
        ({"named": ("a",), "dry_run": "no"}, "dry_run must be True or False"),
        ({"named": ("a",), "rules": {"idle_hours": 1}}, "rules must be DeadGroupRules"),
    ],
)
def test_bad_policies_are_refused_naming_the_input(kwargs, fragment):
    with pytest.raises(ConfigurationError, match=None) as info:
        CleanupPolicy(**kwargs)
    assert fragment in str(info.value)


def test_a_space_is_a_valid_group_id_and_duplicates_collapse():
    policy = CleanupPolicy(named=(" ", "a", "a"), override_deny=("b", "b"))
    assert policy.named == (" ", "a") and policy.override_deny == ("b",)


def test_override_lifts_every_deny_and_connect_evidence_only_the_connect_pattern():
    rules = DeadGroupRules(deny=("keep-*",), allow=("keep-*", "connect-*"))
    policy = CleanupPolicy(rules=rules, selector=GroupSelector(patterns=("*",)))
    overridden = policy.rules_overridden()
    assert overridden.deny == () and overridden.default_deny == () and overridden.deny_streams_apps is False
    assert overridden.allow == rules.allow  # allow still restricts
    gone = policy.rules_connector_gone()
    assert gone.default_deny == tuple(p for p in DEFAULT_DENY_PATTERNS if p != "connect-*")
    assert gone.deny == ("keep-*",) and gone.deny_streams_apps is True


def test_to_dict_names_every_rule_and_cap():
    policy = CleanupPolicy(
        named=("a",),
        selector=GroupSelector(patterns=("tmp-*",), exclude=("tmp-keep",)),
        override_deny=("schema-registry",),
        max_deletions=3,
        max_deletions_percent=20,
    )
    d = policy.to_dict()
    assert d["named"] == ["a"] and d["override_deny"] == ["schema-registry"]
    assert d["selector"] == {"ids": [], "patterns": ["tmp-*"], "exclude": ["tmp-keep"]}
    assert (d["max_deletions"], d["max_deletions_percent"], d["dry_run"]) == (3, 20.0, True)
    assert d["default_deny"] == list(DEFAULT_DENY_PATTERNS) and d["assume_full_visibility"] is False


def test_the_cleanup_package_imports_without_airflow():
    import subprocess
    import sys

    code = (
        "import sys, airflow_provider_kgroups.cleanup, airflow_provider_kgroups.history.audit; "
        "sys.exit(1 if any(m == 'airflow' or m.startswith('airflow.') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=".", timeout=60).returncode == 0
