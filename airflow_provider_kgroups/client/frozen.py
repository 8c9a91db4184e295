"""A faster ``__init__`` for the frozen, slotted dataclasses built by the ten thousand.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
(the class's own ``__setattr__`` refuses), about twice what setting the same slots directly
costs. :func:`fast_init` replaces it with one that calls each
slot's descriptor, with the same signature and defaults. Everything else (frozen after
construction, ``__eq__``, ``__hash__``, ``__repr__``, ``replace``) stays the dataclass's.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import TypeVar

T = TypeVar("T", bound=type)


def fast_init(cls: T) -> T:
    """Class decorator, applied above ``@dataclass(frozen=True, slots=True)``. Fields with a
    ``default_factory`` or ``init=False``, and a ``__post_init__``, are not supported (refused)."""
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: fast_init does not run __post_init__")
    params, body, namespace = [], [], {}
    for f in fields(cls):
        if not f.init or f.default_factory is not MISSING:
            raise TypeError(
                f"{cls.__name__}.{f.name}: fast_init supports neither default_factory nor init=False"
            )
        if f.default is MISSING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        namespace[f"_set_{f.name}"] = cls.__dict__[f.name].__set__  # the slot's member descriptor
        body.append(f"    _set_{f.name}(self, {f.name})\n")
    source = "def __init__(self, " + ", ".join(params) + "):\n" + ("".join(body) or "    pass\n")
    exec(source, namespace)  # noqa: S102 - generated from the dataclass's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[misc]  # the generated __init__ replaces the dataclass's
    return cls
