"""The hook's sync verbs cannot drift from its async ones: each pair ``<name>``/``a<name>`` is made
from one definition, ``async def _<name>(self, aclient, ...)`` (hooks/twins.py), so the pair's
parameters, result and docstring are the definition's. What is left to check is that it stays so:
every async verb of KafkaGroupsHook is such a generated twin of its sync verb (a hand-written
pair, which could drift, fails here), the signatures callers see are the definition's less
``aclient`` (tests/support/drift.py, the check tests/client/test_sync_drift.py tries on made-up
classes), and a sync verb without an async twin is a listed choice. The generation itself:
tests/airflow/test_hook_twins.py."""

from __future__ import annotations

import inspect

from airflow.sdk.bases.hook import BaseHook

from airflow_provider_kgroups.hooks.groups import KafkaGroupsHook
from tests.support.drift import async_verbs, drift

#: the hook's async methods that are plumbing, not verbs (their sync sides are properties)
ASYNC_PLUMBING = {"aget_client", "aget_client_config"}
#: written by hand on both sides: the two clients are closed differently (a cached property
#: popped; the async client awaited)
HAND_WRITTEN_PAIRS = {"aclose": "close"}
#: the hook's sync verbs with no async twin: a new sync verb gets its async twin (one line, from the
#: same definition) or is listed here
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


def own_async_verbs() -> set[str]:
    own = {name for name in vars(KafkaGroupsHook) if not name.startswith("_")}
    return {name for name in async_verbs(KafkaGroupsHook) if name in own} - ASYNC_PLUMBING


def test_every_async_hook_verb_is_made_with_its_sync_twin_from_one_definition():
    verbs = own_async_verbs() - set(HAND_WRITTEN_PAIRS)
    assert {"asnapshot", "acheck_gate", "areset_offsets", "ashare_lag"} <= verbs
    for name in verbs:
        definition = vars(KafkaGroupsHook).get(f"_{name[1:]}")
        assert inspect.iscoroutinefunction(definition), f"no definition _{name[1:]} for {name}"
        for twin in (name, name[1:]):
            made = vars(KafkaGroupsHook)[twin]
            assert getattr(made, "__wrapped__", None) is definition, f"{twin} is not made from _{name[1:]}"
            assert made.__name__ == twin and made.__doc__ == definition.__doc__


def test_the_twins_signatures_are_the_definitions_less_its_client():
    verbs = own_async_verbs()
    assert HAND_WRITTEN_PAIRS.keys() <= verbs
    assert drift(KafkaGroupsHook, KafkaGroupsHook, {name: name[1:] for name in verbs}) == []
    for name in verbs - set(HAND_WRITTEN_PAIRS):
        definition = inspect.signature(vars(KafkaGroupsHook)[f"_{name[1:]}"])
        seen = inspect.signature(getattr(KafkaGroupsHook, name))
        assert list(definition.parameters)[:2] == ["self", "aclient"]
        assert list(seen.parameters) == ["self", *list(definition.parameters)[2:]]
        assert seen.return_annotation == definition.return_annotation


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
