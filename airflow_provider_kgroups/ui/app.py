"""The page's FastAPI app, mounted by the api-server at ``/kgroups`` (see :mod:`.plugin`).

    GET  /                      the page (HTML; its script and styles under /static)
    GET  /api/groups            the overview: ?window=14d&pattern=orders-*&sort=lag|seconds|idle|name&order=desc
    GET  /api/group             one group: ?id=<group id>&window=14d&partitions=0|1&points=50000
    POST /api/group/refresh     "refresh now": ?id=<group id> (header X-Requested-With: kgroups)
    GET  /api/cleanups          the cleanup trail (audit records, newest first)
    GET  /api/backups/<name>    one backup of committed offsets (by its file name under _backups/)

An overview or group answer not ready within :data:`ANSWER_WAIT_S` (the first open of a store
whose history was never rolled up) is a 202 with ``{"preparing": {"files": k, "of": n}}``: the
work goes on, and the page asks again (the same request joins it) and shows the progress.

Every route needs an Airflow user who may read DAGs and assets (:mod:`.security`); the
page's static files too (a fixed list), so nothing loads for an anonymous visitor. Responses carry a
Content-Security-Policy that allows scripts from this app only and framing by Airflow's own
pages (the page is shown in the Airflow UI as an external view).
"""

from __future__ import annotations

import html
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as NotYet
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, JSONResponse, Response

from ..client.errors import ConfigurationError
from .data import PageData
from .security import ReaderDep, readable_dag_ids
from .settings import (
    BadRequest,
    PageSettings,
    parse_group_id,
    parse_pattern,
    parse_points,
    parse_sort,
    parse_window,
)

__all__ = ["create_app"]

log = logging.getLogger(__name__)

_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'; object-src 'none'"
)
_STATIC = resources.files(__package__).joinpath("static")
#: The page's files (nothing else under static/ is served); ECharts is vendored (static/VENDORED.md).
_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "charts.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "echarts.min.js": "text/javascript; charset=utf-8",
}


#: How long a request waits for an answer before it says how far the preparation is (202).
ANSWER_WAIT_S = 2.0


def _bad_request(exc: Exception) -> HTTPException:
    return HTTPException(status.HTTP_400_BAD_REQUEST, str(exc))


class _State:
    """The page's data, created on first use (settings are read then, not at import)."""

    def __init__(self, settings: PageSettings | None) -> None:
        self._settings = settings
        self._data: PageData | None = None
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="kgroups-answer")
        self._running: dict[tuple, Future] = {}

    def answer(self, key: tuple, build) -> Any:
        """``build()``, or a 202 saying how far it is when it takes longer than :data:`ANSWER_WAIT_S`;
        it goes on, and a request with the same ``key`` meanwhile waits for the same work."""
        data = self.data
        with self._lock:
            running = self._running.get(key)
            started = running is None
            if running is None:
                running = self._running[key] = self._pool.submit(build)
        if started:  # outside the lock: a build already done runs the callback here, and it takes the lock
            running.add_done_callback(lambda done: self._finished(key, done))
        try:
            return running.result(timeout=ANSWER_WAIT_S)
        except NotYet:
            files, of = data.rollups.progress() or (0, 0)
            return JSONResponse(
                {"preparing": {"files": files, "of": of}},
                status_code=status.HTTP_202_ACCEPTED,
                headers={"Retry-After": "1"},
            )
        except Exception:
            self._forget(key, running)  # this request reports the failure; the next one builds again
            raise

    def _finished(self, key: tuple, done: Future) -> None:
        """A finished answer is forgotten (the next request builds it again from the caches); a failed
        one is kept until a request reports it, so a page polling a 202 gets the error, not a new wait."""
        error = done.exception()
        if error is None:
            self._forget(key, done)
        elif not isinstance(error, HTTPException):
            log.warning("the page's %s answer failed: %s: %s", key[0], type(error).__name__, error)

    def _forget(self, key: tuple, done: Future) -> None:
        with self._lock:
            if self._running.get(key) is done:
                del self._running[key]

    @property
    def data(self) -> PageData:
        with self._lock:
            if self._data is None:
                try:
                    settings = self._settings or PageSettings.from_airflow()
                except ConfigurationError as exc:
                    raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from None
                if settings.history_url is None:
                    raise HTTPException(
                        status.HTTP_503_SERVICE_UNAVAILABLE,
                        "the page has no history store to read: set [kgroups] history_url "
                        "(AIRFLOW__KGROUPS__HISTORY_URL) to the snapshot operator's store.",
                    )
                self._data = PageData(settings)
            return self._data


def create_app(settings: PageSettings | None = None) -> FastAPI:
    state = _State(settings)
    app = FastAPI(title="Kafka consumer groups", docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def security_headers(request: Request, call_next):
        response: Response = await call_next(request)
        response.headers["Content-Security-Policy"] = _CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    _add_page_routes(app)
    _add_group_routes(app, state)
    _add_trail_routes(app, state)
    return app


def _add_page_routes(app: FastAPI) -> None:
    """The page and its static files."""

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page(request: Request, user: ReaderDep) -> HTMLResponse:
        base = html.escape(request.scope.get("root_path", "").rstrip("/") + "/", quote=True)
        return HTMLResponse(
            _STATIC.joinpath("index.html").read_text(encoding="utf-8").replace("{{BASE}}", base)
        )

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str, user: ReaderDep) -> Response:
        media_type = _FILES.get(name)
        if media_type is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
        return Response(
            _STATIC.joinpath(name).read_bytes(),
            media_type=media_type,
            headers={"Cache-Control": "private, max-age=300"},
        )


def _add_group_routes(app: FastAPI, state: _State) -> None:
    """The overview, one group, and "refresh now"."""

    @app.get("/api/groups")
    def groups(
        user: ReaderDep,
        window: str | None = None,
        pattern: str | None = None,
        sort: str | None = None,
        order: str | None = None,
    ) -> Response:
        from .overview import build_overview

        try:
            text, ms = parse_window(window)
            compiled, key = parse_pattern(pattern), parse_sort(sort)
            if order not in (None, "", "asc", "desc"):
                raise BadRequest(f"order={order!r}: asc or desc.")
        except BadRequest as exc:
            raise _bad_request(exc) from None
        # the rows come JSON-encoded from the overview's cache: no per-request serialization of 1,000 rows
        answer = state.answer(
            ("groups", text, pattern, key, order),
            lambda: build_overview(state.data, text, ms, compiled, key, descending=order != "asc"),
        )
        return answer if isinstance(answer, Response) else Response(answer, media_type="application/json")

    @app.get("/api/group")
    def group(
        user: ReaderDep,
        id: str | None = Query(default=None, max_length=1000),
        window: str | None = None,
        partitions: str | None = None,
        points: str | None = None,
    ) -> dict[str, Any]:
        return _group_answer(state, user, id, window, partitions, points)

    @app.post("/api/group/refresh")
    def refresh(
        request: Request, user: ReaderDep, id: str | None = Query(default=None, max_length=1000)
    ) -> dict[str, Any]:
        from .live import refresh_group

        if request.headers.get("x-requested-with") != "kgroups":
            raise HTTPException(
                status.HTTP_403_FORBIDDEN, "refresh needs the header X-Requested-With: kgroups"
            )
        try:
            group_id = parse_group_id(id)
        except BadRequest as exc:
            raise _bad_request(exc) from None
        settings = state.data.settings
        return refresh_group(settings.kafka_conn_id, group_id, settings.refresh_timeout_s)


def _group_answer(
    state: _State, user: Any, id: str | None, window: str | None, partitions: str | None, points: str | None
) -> Any:
    """``GET /api/group``: one group's page, with the DAGs that gate on it that ``user`` may read."""
    from .gates import gating_dags
    from .group import build_group
    from .trail import group_cleanups

    try:
        group_id, (text, ms), budget = parse_group_id(id), parse_window(window), parse_points(points)
        if partitions not in (None, "", "0", "1"):
            raise BadRequest(f"partitions={partitions!r}: 0 (one line per topic) or 1 (one per partition).")
    except BadRequest as exc:
        raise _bad_request(exc) from None
    data = state.data
    gates = gating_dags(group_id, readable_dag_ids(user))
    return state.answer(
        ("group", group_id, text, partitions, budget, repr(gates)),
        lambda: build_group(
            data,
            group_id,
            text,
            ms,
            per_partition=partitions == "1",
            points=budget,
            gates=gates,
            cleanups=group_cleanups(data.store.url, group_id),
        ),
    )


def _add_trail_routes(app: FastAPI, state: _State) -> None:
    """The cleanup trail and its backups."""

    @app.get("/api/cleanups")
    def cleanups(user: ReaderDep, limit: int = Query(default=200, ge=1, le=1000)) -> dict[str, Any]:
        from .trail import cleanup_runs, open_runs

        return {"runs": cleanup_runs(state.data.store.url, limit), "open": open_runs(state.data.store.url)}

    @app.get("/api/backups/{name}")
    def backup(name: str, user: ReaderDep) -> JSONResponse:
        from .trail import backup_document

        try:
            return JSONResponse(backup_document(state.data.store.url, name))
        except ConfigurationError as exc:
            raise _bad_request(exc) from None
        except FileNotFoundError:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no backup named {name!r}") from None
