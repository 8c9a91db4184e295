"""The blocking client cannot drift from the async one: every public coroutine method of
AsyncGroupsClient has a blocking method on GroupsClient with the same parameters (names, kinds,
defaults, annotations) and result annotation. The check itself is tried on made-up classes with
each kind of drift, so a check that can no longer fail is seen. (The hook's twins:
tests/airflow/test_hook_drift.py.)"""

from __future__ import annotations

from airflow_provider_kgroups.client import AsyncGroupsClient, GroupsClient
from tests.support.drift import async_verbs, drift


def test_the_check_sees_a_missing_twin_and_each_kind_of_difference():
    class Async:
        async def a(self, x: int, y: int = 1) -> int: ...
        async def b(self, x: int, *, y: int = 1) -> int: ...
        async def c(self, x: int) -> int: ...
        async def d(self, x: int) -> int: ...
        async def e(self, x: int) -> int: ...
        async def f(self, x: int) -> int: ...

    class Sync:
        def a(self, x: int, y: int = 2) -> int: ...  # another default
        def b(self, x: int, y: int = 1) -> int: ...  # keyword-only no more
        def c(self, x: str) -> int: ...  # another annotation
        def d(self, x: int) -> str: ...  # another result
        async def e(self, x: int) -> int: ...  # not blocking
        def g(self, x: int) -> int: ...  # f has no twin

    problems = drift(Sync, Async, {n: n for n in async_verbs(Async)})
    assert [p.split("(")[0].split(" ")[0] for p in problems] == [
        "Sync.a",
        "Sync.b",
        "Sync.c",
        "Sync.d",
        "Sync.e",
        "Sync.f",
    ]
    assert "missing" in problems[-1]


def test_every_async_client_verb_has_a_blocking_twin_with_its_signature():
    verbs = async_verbs(AsyncGroupsClient) - {"close"}
    assert len(verbs) >= 17 and {"fetch_committed_offsets", "commit_offsets", "check_topics"} <= verbs
    assert drift(GroupsClient, AsyncGroupsClient, {n: n for n in verbs}) == []
    assert not hasattr(GroupsClient, "__getattr__")  # real methods: type checkers and IDEs see them
    for name in verbs:
        assert f"AsyncGroupsClient.{name}" in getattr(GroupsClient, name).__doc__
