"""The check that a blocking twin has the signature of its async verb (the client's
GroupsClient vs AsyncGroupsClient, the hook's ``<name>`` vs ``a<name>``)."""

from __future__ import annotations

import inspect


def async_verbs(cls: type) -> set[str]:
    """Public coroutine methods of ``cls``, inherited ones included (OffsetVerbs' are the client's)."""
    return {
        name
        for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }


def drift(sync_cls: type, async_cls: type, pairs: dict[str, str]) -> list[str]:
    """What differs between each async verb (the key) and its blocking twin (the value)."""
    problems = []
    for async_name, sync_name in sorted(pairs.items()):
        theirs = getattr(async_cls, async_name)
        ours = inspect.getattr_static(sync_cls, sync_name, None)
        if ours is None:
            problems.append(f"{sync_cls.__name__}.{sync_name} is missing (twin of {async_name})")
            continue
        if not inspect.isfunction(ours) or inspect.iscoroutinefunction(ours):
            problems.append(f"{sync_cls.__name__}.{sync_name} is not a plain (blocking) method")
            continue
        if inspect.signature(ours) != inspect.signature(theirs):
            problems.append(
                f"{sync_cls.__name__}.{sync_name}{inspect.signature(ours)} != "
                f"{async_cls.__name__}.{async_name}{inspect.signature(theirs)}"
            )
    return problems
