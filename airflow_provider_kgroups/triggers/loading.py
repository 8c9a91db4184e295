"""The engine a trigger needs, imported off the triggerer's event loop.

The triggerer imports a trigger's module on its event loop, and every trigger of every DAG
runs on that one loop: a module that imported the client, the lag engine and the hook at
import would stall all of them for a few hundred ms (Airflow logs "Triggerer's async thread
was blocked"). The trigger modules import only Airflow's base classes and light values; the
first ``run()`` loads the rest in a worker thread (imports are thread-safe: the import lock
is per module), so the loop keeps serving the other triggers meanwhile.
"""

from __future__ import annotations

import asyncio
import sys
from importlib import import_module

#: what a trigger's run() imports: the hook (connection -> client), the client, the lag engine
ENGINE = (
    "airflow_provider_kgroups.hooks.groups",
    "airflow_provider_kgroups.client.client",
    "airflow_provider_kgroups.lag.snapshot",
    "airflow_provider_kgroups.lag.gate",
    "airflow_provider_kgroups.lag.watch",
)


CLIENT = "airflow_provider_kgroups.client.client"


async def load_engine(modules: tuple[str, ...] = ENGINE) -> None:
    """Import ``modules`` in a worker thread unless already loaded (then: no thread, no wait),
    and with the client the handlers its verbs import on first use (``client.VERB_HANDLERS``),
    so that no verb a trigger calls imports on the loop."""
    missing = [m for m in _with_verb_handlers(modules) if m not in sys.modules]
    if missing:
        await asyncio.to_thread(_import, missing)


def _with_verb_handlers(modules: tuple[str, ...] | list[str]) -> list[str]:
    client = sys.modules.get(CLIENT) if CLIENT in modules else None
    return [*modules, *getattr(client, "VERB_HANDLERS", ())]


def _import(modules: list[str]) -> None:
    for module in modules:
        import_module(module)
    for module in _with_verb_handlers(modules):  # the client's, now that it is loaded
        if module not in sys.modules:
            import_module(module)
