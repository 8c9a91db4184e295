"""Load kafka-python's wire codec without its client stack.

Importing any ``kafka.*`` module first runs kafka-python's package ``__init__``, which imports
its admin client, consumer, producer, metrics and network layers, a large part of a CLI call's
or a triggerer's first check's start (benchmarks/RESULTS-imports.txt), none of it used here
(this client uses ``kafka.protocol`` and ``kafka.errors`` only; record batches are read by
:mod:`.batches`). Likewise ``kafka.protocol.admin``'s ``__init__`` builds the message classes
of every admin API (ACLs, configs, topics, quotas, transactions, users) where the client needs
only its groups module. Before the first import, and only if nothing has imported the package
yet, :func:`install` (for ``kafka``, when the client package is imported) and
:func:`lazy_package` (for ``kafka.protocol.admin``, when the codec is) register a stand-in for
the package that finds its submodules as usual and runs the real ``__init__`` the first time
anything else is asked of it (``from kafka import KafkaConsumer`` or ``from
kafka.protocol.admin import CreateTopicsRequest`` in the same process still work, PEP 562).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any


class _LazyPackage(types.ModuleType):
    """A package whose own ``__init__`` runs on first use of a name it defines."""

    _loaded = False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or self._loaded:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        self._loaded = True
        spec = self.__spec__
        assert spec is not None and spec.origin is not None
        with open(spec.origin, encoding="utf-8") as source:
            code = compile(source.read(), spec.origin, "exec")
        exec(code, self.__dict__)  # noqa: S102 - the package's own __init__, run in this module's namespace
        return getattr(self, name)


def lazy_package(name: str) -> None:
    """Register the stand-in for package ``name`` (its parent is imported, the package is not)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations or spec.origin is None:
        return  # not installed as a regular package: let the normal import say so
    module = _LazyPackage(name)
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    module.__file__ = spec.origin
    module.__package__ = name
    module.__loader__ = spec.loader
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


def install() -> None:
    lazy_package("kafka")
