"""One deadline for everything a command, a hook verb or a sensor check does.

A CLI command or a sensor check chains several client calls (describe, committed offsets,
metadata, ListOffsets); each call has its own timeout, so without an enclosing deadline the
whole could take several times what the user asked for. Inside ``with deadline(seconds):``
(or ``async with``) every call ends by the earlier of its own timeout and the enclosing
deadline; nested deadlines never extend an outer one. The deadline lives in a context
variable, so asyncio tasks started inside inherit it, and the sync facade carries it into its
loop thread (:meth:`~.sync.GroupsClient.run`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TypeVar

from .numbers import check_number

__all__ = ["Deadline", "deadline", "current_deadline", "check_seconds"]


def check_seconds(name: str, value: object) -> float:
    """A positive, finite number of seconds, or a ConfigurationError naming ``name`` and the fix
    (NaN would make every comparison false: a call that never ends)."""
    return check_number(name, value, above=0, must_be="a positive, finite number of seconds (e.g. 30)")


@dataclass(frozen=True, slots=True)
class Deadline:
    """A point in ``time.monotonic()`` time and the budget it was set from (for messages)."""

    at: float
    seconds: float

    @property
    def time_left(self) -> float:
        return self.at - time.monotonic()

    def describe(self) -> str:
        return f"the {self.seconds:g} s deadline"


T = TypeVar("T")

_CURRENT: ContextVar[Deadline | None] = ContextVar("kgroups_deadline", default=None)


def current_deadline() -> Deadline | None:
    """The innermost enclosing deadline of this context, if any."""
    return _CURRENT.get()


class deadline:
    """Run the block under one deadline of ``seconds`` (or the enclosing one, if earlier)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = check_seconds("timeout", seconds)
        self._token: Token[Deadline | None] | None = None

    def __enter__(self) -> Deadline:
        outer = _CURRENT.get()
        mine = Deadline(time.monotonic() + self.seconds, self.seconds)
        active = outer if outer is not None and outer.at <= mine.at else mine
        self._token = _CURRENT.set(active)
        return active

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None

    async def __aenter__(self) -> Deadline:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


async def run_within(active: Deadline | None, coroutine: Awaitable[T]) -> T:
    """Await ``coroutine`` with ``active`` as the current deadline (how a deadline set in one
    thread reaches a coroutine run on another thread's loop)."""
    token = _CURRENT.set(active)
    try:
        return await coroutine
    finally:
        _CURRENT.reset(token)
