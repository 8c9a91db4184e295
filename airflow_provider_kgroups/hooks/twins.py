"""A hook's verbs are written once, async: ``async def _<name>(self, aclient, ...)`` over an
:class:`~..client.AsyncGroupsClient`. :func:`sync_twin` makes ``<name>`` from it (run on the sync
client's loop: operators, poke mode) and :func:`async_twin` makes ``a<name>`` (awaited on the
caller's loop: triggers), each through the hook's one entry point for its way in (``_run``,
``_arun``: the client, then one deadline for the whole verb).

A twin has the definition's parameters less ``aclient``, for type checkers (through ``P``) and
for ``inspect.signature``, and its docstring; its ``__wrapped__`` is the definition. The client's
blocking facade is made the same way (:func:`..client.sync.blocking`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from ..client.errors import KafkaGroupsError

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

P = ParamSpec("P")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class RunsVerbs(Protocol):
    """What the twins need of a hook: one entry point per way in, each running ``call(aclient)``."""

    def _run(self, call: Callable[[AsyncGroupsClient], Coroutine[Any, Any, T]]) -> T: ...

    async def _arun(self, call: Callable[[AsyncGroupsClient], Coroutine[Any, Any, T]]) -> T: ...


H = TypeVar("H", bound=RunsVerbs)


def sync_twin(
    verb: Callable[Concatenate[H, AsyncGroupsClient, P], Coroutine[Any, Any, T]],
    *,
    on_error: Callable[[KafkaGroupsError], T] | None = None,
) -> Callable[Concatenate[H, P], T]:
    """``<name>``: the definition ``_<name>`` run by the hook's ``_run``. ``on_error``: the answer
    to a client error raised anywhere on the way (the connection, the client, the verb) instead
    of raising it."""

    def twin(self: H, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return self._run(lambda aclient: verb(self, aclient, *args, **kwargs))
        except KafkaGroupsError as exc:
            if on_error is None:
                raise
            return on_error(exc)

    return _made_from(verb, twin, "")


def async_twin(
    verb: Callable[Concatenate[H, AsyncGroupsClient, P], Coroutine[Any, Any, T]],
    *,
    on_error: Callable[[KafkaGroupsError], T] | None = None,
) -> Callable[Concatenate[H, P], Coroutine[Any, Any, T]]:
    """``a<name>``: the definition ``_<name>`` awaited through the hook's ``_arun``; ``on_error``
    as for :func:`sync_twin`."""

    async def twin(self: H, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await self._arun(lambda aclient: verb(self, aclient, *args, **kwargs))
        except KafkaGroupsError as exc:
            if on_error is None:
                raise
            return on_error(exc)

    return _made_from(verb, twin, "a")


def _made_from(verb: Callable[..., Any], twin: F, prefix: str) -> F:
    """``twin`` named ``<prefix><name>`` after the definition ``_<name>``, with its docstring and
    its signature less ``aclient`` (what a caller passes)."""
    signature = inspect.signature(verb)
    hook, aclient, *rest = signature.parameters.values()
    if not verb.__name__.startswith("_") or aclient.name != "aclient":
        raise TypeError(f"a verb is defined as `async def _<name>(self, aclient, ...)`, not {verb.__name__}")
    functools.update_wrapper(twin, verb)
    twin.__name__ = prefix + verb.__name__.removeprefix("_")
    twin.__qualname__ = f"{verb.__qualname__.rpartition('.')[0]}.{twin.__name__}".removeprefix(".")
    vars(twin)["__signature__"] = signature.replace(parameters=[hook, *rest])  # read by inspect.signature
    return twin
