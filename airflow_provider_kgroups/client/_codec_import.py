"""Load kafka-python's wire codec without its client stack.

Importing any ``kafka.*`` module first runs kafka-python's package ``__init__``, which imports
its admin client, consumer, producer, metrics and network layers: about 150 ms of a CLI call or
a triggerer's first check, none of it used here (this client uses ``kafka.protocol``,
``kafka.record`` and ``kafka.errors`` only). Before the first import, and only if nothing has
imported ``kafka`` yet, :func:`install` registers a stand-in for the package that finds its
submodules as usual and runs the real ``__init__`` the first time anything else is asked of
it (``from kafka import KafkaConsumer`` in the same process still works, PEP 562).
"""

from __future__ import annotations

import importlib.util
import sys
import types


class _LazyKafka(types.ModuleType):
    """``kafka`` whose own ``__init__`` runs on first use of a name it defines."""

    _loaded = False

    def __getattr__(self, name: str):
        if name.startswith("__") or self._loaded:
            raise AttributeError(f"module 'kafka' has no attribute {name!r}")
        self._loaded = True
        spec = self.__spec__
        assert spec is not None and spec.origin is not None
        with open(spec.origin, encoding="utf-8") as source:
            code = compile(source.read(), spec.origin, "exec")
        exec(code, self.__dict__)  # the real __init__, in this module's namespace
        return getattr(self, name)


def install() -> None:
    if "kafka" in sys.modules:
        return
    spec = importlib.util.find_spec("kafka")
    if spec is None or not spec.submodule_search_locations or spec.origin is None:
        return  # not installed as a regular package: let the normal import say so
    module = _LazyKafka("kafka")
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    module.__file__ = spec.origin
    module.__package__ = "kafka"
    module.__loader__ = spec.loader
    sys.modules["kafka"] = module
