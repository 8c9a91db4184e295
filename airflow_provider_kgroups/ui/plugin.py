"""The Airflow plugin: a "Consumer groups" entry in the UI's navigation, showing the page the
provider's FastAPI app serves at ``/kgroups/``.

Registered through the ``airflow.plugins`` entry point (pyproject.toml), as the official
OpenLineage provider registers its plugin: Airflow loads that group in every process with its
default settings, whereas the ``plugins`` of a provider's info are loaded only when providers
are discovered eagerly (``[core] lazy_discover_providers = False``), so ``get_provider_info``
does not list it (it would be registered twice there).

The entry is an external view (``url_route``: the page is shown inside the Airflow UI, same
origin, so the user's login cookie reaches it); the app is a React-free HTML page with
Apache ECharts. Any Airflow process that loads plugins imports this module (the scheduler
and the DAG processor too), so it imports nothing but the plugin base class: the FastAPI app
is built on the first request the api-server routes to it.

The page needs Airflow 3.1 or later: the api-server's plugin apps (3.0) and external views in
the UI's navigation (3.1). On an older Airflow the plugin registers nothing and says so once,
when Airflow loads it.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from typing import Any

from airflow.plugins_manager import AirflowPlugin

from ..version_compat import AIRFLOW_VERSION

__all__ = ["KafkaGroupsPlugin", "URL_PREFIX", "REQUIRED_MODULES"]

log = logging.getLogger(__name__)

URL_PREFIX = "/kgroups"
#: The oldest Airflow that shows the page (external views in the navigation).
PAGE_NEEDS = (3, 1)
_SHOWN = AIRFLOW_VERSION[:2] >= PAGE_NEEDS
#: What the page needs beyond the base install: ``pip install 'airflow-provider-kgroups[ui]'``.
REQUIRED_MODULES = ("pyarrow", "numpy", "tsdownsample")


class _LazyApp:
    """An ASGI app that builds the real one (:func:`.app.create_app`) on its first request."""

    def __init__(self) -> None:
        self._app: Any = None  # the FastAPI app, built on the first request
        self._lock = threading.Lock()

    def _build(self):
        with self._lock:
            if self._app is None:
                from .app import create_app

                self._app = create_app()
            return self._app

    async def __call__(self, scope, receive, send) -> None:
        app = self._app or self._build()
        await app(scope, receive, send)


def _apps() -> list[dict[str, Any]]:
    """The page's app, or none where this Airflow cannot show it."""
    if not _SHOWN:
        return []
    return [{"app": _LazyApp(), "url_prefix": URL_PREFIX, "name": "Kafka consumer groups"}]


def _views() -> list[dict[str, Any]]:
    """The page's entry in the UI's navigation, or none where this Airflow cannot show it."""
    if not _SHOWN:
        return []
    return [
        {
            "name": "Consumer groups",
            "href": f"{URL_PREFIX.lstrip('/')}/",
            "destination": "nav",
            "url_route": "consumer-groups",
            "category": "browse",
        },
    ]


class KafkaGroupsPlugin(AirflowPlugin):
    name = "kgroups"
    # AirflowPlugin's own (mutable) class attributes, overridden here as Airflow's docs do.
    fastapi_apps = _apps()
    external_views = _views()

    @classmethod
    def on_load(cls, *args, **kwargs) -> None:
        if not _SHOWN:
            running = ".".join(map(str, AIRFLOW_VERSION))
            log.info(
                "The Consumer groups page needs Airflow %d.%d or later (external views); this is "
                "Airflow %s: not shown (the kgroups command and the operators work as usual).",
                *PAGE_NEEDS,
                running,
            )
            return
        missing = [m for m in REQUIRED_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            raise ImportError(
                f"the Consumer groups page needs {', '.join(missing)}: "
                "pip install 'airflow-provider-kgroups[ui]'"
            )
