"""How a hook verb's twins are made from its one definition (hooks/twins.py), tried on a made-up
hook whose two entry points hand the definition a named client: each twin runs the definition
with its way's client and the caller's arguments, looks like the definition less ``aclient``
(name, docstring, signature), and answers client errors with ``on_error`` wherever they were
raised, or lets them through. KafkaGroupsHook's own twins: tests/airflow/test_hook_drift.py."""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError, KafkaGroupsError
from airflow_provider_kgroups.hooks.twins import async_twin, sync_twin


class Hook:
    """The sync way in runs the call on a loop of its own (in a thread, as GroupsClient does), the
    async one on the caller's."""

    def __init__(self, fail_to_connect: bool = False) -> None:
        self.fail_to_connect = fail_to_connect

    def _run(self, call):
        if self.fail_to_connect:
            raise ConfigurationError("no such connection")
        with ThreadPoolExecutor(1) as thread:
            return thread.submit(asyncio.run, call("sync client")).result()

    async def _arun(self, call):
        if self.fail_to_connect:
            raise ConfigurationError("no such connection")
        return await call("async client")

    async def _verb(self, aclient, x: int, *, y: str = "y") -> tuple:
        """The verb's docstring."""
        if x < 0:
            raise ConfigurationError("x must be >= 0")
        if x == 0:
            raise ZeroDivisionError("a bug")
        return (aclient, x, y)

    verb, averb = sync_twin(_verb), async_twin(_verb)

    answered = sync_twin(_verb, on_error=lambda exc: ("answered", str(exc)))
    aanswered = async_twin(_verb, on_error=lambda exc: ("answered", str(exc)))


async def test_each_twin_runs_the_definition_with_its_ways_client():
    assert Hook().verb(1, y="z") == ("sync client", 1, "z")
    assert await Hook().averb(2) == ("async client", 2, "y")


def test_a_twin_looks_like_its_definition_less_the_client():
    for name in ("verb", "averb"):
        twin = vars(Hook)[name]
        assert twin.__name__ == name and twin.__qualname__ == f"Hook.{name}"
        assert twin.__doc__ == "The verb's docstring." and twin.__wrapped__ is vars(Hook)["_verb"]
        assert str(inspect.signature(twin)) == "(self, x: 'int', *, y: 'str' = 'y') -> 'tuple'"
    assert str(inspect.signature(Hook().verb)) == "(x: 'int', *, y: 'str' = 'y') -> 'tuple'"
    assert not inspect.iscoroutinefunction(Hook.verb) and inspect.iscoroutinefunction(Hook.averb)


async def test_on_error_answers_a_client_error_raised_anywhere_on_the_way():
    assert Hook().answered(-1) == ("answered", "x must be >= 0")  # in the definition
    assert await Hook().aanswered(-1) == ("answered", "x must be >= 0")
    assert Hook(fail_to_connect=True).answered(1) == ("answered", "no such connection")  # before it
    assert await Hook(fail_to_connect=True).aanswered(1) == ("answered", "no such connection")


async def test_without_on_error_and_for_other_errors_the_error_goes_through():
    with pytest.raises(ConfigurationError, match="x must be"):
        Hook().verb(-1)
    with pytest.raises(ConfigurationError, match="no such connection"):
        await Hook(fail_to_connect=True).averb(1)
    with pytest.raises(ZeroDivisionError):  # not a client error: a bug is never answered
        Hook().answered(0)
    with pytest.raises(ZeroDivisionError):
        await Hook().aanswered(0)
    assert issubclass(ConfigurationError, KafkaGroupsError)


def test_a_definition_not_written_as_one_is_refused_when_the_class_is_made():
    async def _no_client(self, x): ...

    async def public(self, aclient, x): ...

    for definition in (_no_client, public):
        with pytest.raises(TypeError, match=r"async def _<name>\(self, aclient"):
            sync_twin(definition)
