"""The hook's sync verbs cannot drift from its async ones: every async verb ``a<name>`` of
KafkaGroupsHook has a sync ``<name>`` with the same parameters (names, kinds, defaults,
annotations) and result annotation (the check: tests/support/drift.py, tried on made-up classes
in tests/client/test_sync_drift.py), and a sync verb without an async twin is a listed choice."""

from __future__ import annotations

import inspect

from airflow.sdk.bases.hook import BaseHook

from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from tests.support.drift import async_verbs, drift

#: the hook's async methods that are plumbing, not verbs (their sync sides are properties)
ASYNC_PLUMBING = {"aget_client", "aget_client_config"}
#: the hook's sync verbs with no async twin: a new sync verb gets its async twin (then the pair is
#: checked) or is listed here
SYNC_ONLY = {
    "cleanup",
    "committed_offsets",
    "delete_groups",
    "describe_groups",
    "find_dead_groups",
    "fix_barrier",
    "lag_seconds",
    "restore_offsets",
    "test_connection",  # the connection form's Test button
}


def test_every_async_hook_verb_has_a_sync_twin_with_its_signature():
    own = {name for name in vars(KafkaGroupsHook) if not name.startswith("_")}
    verbs = {name for name in async_verbs(KafkaGroupsHook) if name in own} - ASYNC_PLUMBING
    assert {"asnapshot", "acheck_gate", "areset_offsets", "ashare_lag", "aclose"} <= verbs
    assert all(name.startswith("a") for name in verbs)
    assert drift(KafkaGroupsHook, KafkaGroupsHook, {name: name[1:] for name in verbs}) == []


def test_a_sync_hook_verb_without_an_async_twin_is_listed():
    verbs = {
        name
        for name, member in vars(KafkaGroupsHook).items()
        if inspect.isfunction(member)
        and not inspect.iscoroutinefunction(member)
        and not name.startswith("_")
        and not hasattr(BaseHook, name)
    }
    twinned = {name[1:] for name in async_verbs(KafkaGroupsHook)}
    assert verbs - twinned == SYNC_ONLY
