"""A small Kafka Connect REST server (the demo's Connect cluster, and the tests'), and the
documented answer shapes.

Shapes follow Apache Kafka's ``ConnectorsResource`` (listConnectors with and without
``expand``, getConnector, getConnectorStatus) and the entities ``ConnectorStateInfo``,
``ConnectorInfo`` and ``ErrorMessage`` (connect/runtime/src/main/java/org/apache/kafka/
connect/runtime/rest/), as documented in Kafka's docs/connect.html ("REST API") and in
Confluent's "Kafka Connect REST Interface" reference (GET /connectors?expand=status&expand=info).

:class:`ConnectServer` is a threaded ``http.server`` on 127.0.0.1 (free port), plain or TLS,
that checks HTTP basic auth the way Connect's ``BasicAuthSecurityRestExtension`` does
(401 with ``WWW-Authenticate: Basic`` for a missing or wrong ``Authorization``), answers
either the expand form or, with ``legacy=True``, the plain list of names (older workers ignore
``expand``), records every request, gives scripted answers first (``script``: say a 503,
then a 429 with ``Retry-After``), and can hold a request until released (``hang``) so a
client timeout runs for real without a sleep, or answer as a worker still starting does
(``starting``: 404 ``{"message": "Not Found", ...}`` to everything).

What a real worker does is judged against a real one (demo/kafka_connect.py,
tests/apachekafka/test_connect_*.py); this stand-in stays for what a real worker cannot be made
to do on demand (a worker older than Kafka 2.3, 5xx and 429 answers, a hung request, an alter
that Connect acknowledges but the group does not show), and for basic auth and TLS, which the
test worker is not configured for. Its answers are shaped as the real 4.3.1 worker's.

``PATCH /connectors/{name}/offsets`` (KIP-875, ``ConnectorsResource.alterConnectorOffsets``) is
answered as Connect does: 400 unless the connector is STOPPED ("Connectors must be in the
STOPPED state before their offsets can be modified"), else 200 with Worker's message; each
accepted body is kept in ``altered`` and handed to ``on_alter(name, body)`` (a test commits it
into its cluster there, as the worker's admin client would).
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


def connector_status(
    name: str,
    state: str = "RUNNING",
    tasks: list[str] | tuple[str, ...] = ("RUNNING",),
    type_: str | None = "sink",
    worker: str = "connect-1:8083",
    version: str | None = "4.3.1",
) -> dict[str, Any]:
    """``ConnectorStateInfo`` as JSON: name, connector {state, worker_id[, version][, trace]}, tasks, type.
    A 4.x worker adds the plugin's ``version`` to the connector and to each task (seen on 4.3.1)."""
    connector: dict[str, Any] = {"state": state, "worker_id": worker}
    if version is not None:
        connector["version"] = version
    if state == "FAILED":
        connector["trace"] = "org.apache.kafka.connect.errors.ConnectException: boom\n\tat ..."
    task_list = []
    for i, task_state in enumerate(tasks):
        task: dict[str, Any] = {"id": i, "state": task_state, "worker_id": worker}
        if version is not None:
            task["version"] = version
        if task_state == "FAILED":
            task["trace"] = "org.apache.kafka.common.errors.RecordTooLargeException\n"
        task_list.append(task)
    out: dict[str, Any] = {"name": name, "connector": connector, "tasks": task_list}
    if type_ is not None:
        out["type"] = type_
    return out


def connector_info(
    name: str, type_: str | None = "sink", config: dict[str, str] | None = None, tasks: int = 1
) -> dict[str, Any]:
    """``ConnectorInfo`` as JSON: name, config (all strings), tasks [{connector, task}], type."""
    cls = (
        "org.apache.kafka.connect.file.FileStreamSinkConnector"
        if type_ == "sink"
        else "org.apache.kafka.connect.file.FileStreamSourceConnector"
    )
    full_config = {
        "connector.class": cls,
        "tasks.max": str(max(tasks, 1)),
        "name": name,
        **({"topics": "orders"} if type_ == "sink" else {"topic": "orders"}),
        **(config or {}),
    }
    out: dict[str, Any] = {
        "name": name,
        "config": full_config,
        "tasks": [{"connector": name, "task": i} for i in range(tasks)],
    }
    if type_ is not None:
        out["type"] = type_
    return out


@dataclass
class Connector:
    name: str
    state: str = "RUNNING"
    tasks: tuple[str, ...] = ("RUNNING",)
    type: str | None = "sink"
    config: dict[str, str] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        return connector_status(self.name, self.state, self.tasks, self.type)

    def info(self) -> dict[str, Any]:
        return connector_info(self.name, self.type, self.config, len(self.tasks))


def expanded(connectors: list[Connector]) -> dict[str, Any]:
    """``GET /connectors?expand=status&expand=info``: {name: {"status": ..., "info": ...}}."""
    return {c.name: {"status": c.status(), "info": c.info()} for c in connectors}


def error_body(code: int, message: str) -> dict[str, Any]:
    """Connect's ``ErrorMessage`` entity."""
    return {"error_code": code, "message": message}


def not_ready_body(url: str) -> dict[str, Any]:
    """What a real worker (4.3.1) answers, with HTTP 404, to every request after its port opened and
    before its REST resources are registered (a restart: ~25 s on two busy cores). Not an
    ErrorMessage: ``{"message", "url", "status"}``, the status a string."""
    return {"message": "Not Found", "url": url, "status": "404"}


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None


class ConnectServer:
    """``with ConnectServer([...], auth=("u", "p"), ssl_context=ctx) as server: server.url``."""

    def __init__(
        self,
        connectors: list[Connector],
        *,
        auth: tuple[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        legacy: bool = False,
    ) -> None:
        self.connectors = list(connectors)
        self.auth = auth
        self.legacy = legacy
        self.ssl_context = ssl_context
        self.requests: list[Seen] = []
        #: answers given before any routing, first in first out: (status, body, headers)
        self.script: list[tuple[int, Any, dict[str, str]]] = []
        self.altered: list[tuple[str, Any]] = []  # accepted PATCH .../offsets: (connector, body)
        self.on_alter: Any = None  # called with (connector, body) for each accepted PATCH
        self.starting = False  # True: every request gets the 404 of a worker still starting
        self.hang = threading.Event()  # set: requests wait on `release` before answering
        self.release = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:
                with server._lock:
                    server.requests.append(Seen("GET", self.path, self.headers.get("Authorization")))
                if server.hang.is_set():
                    server.release.wait(30)
                if server.auth is not None:
                    expected = "Basic " + base64.b64encode(":".join(server.auth).encode()).decode()
                    if self.headers.get("Authorization") != expected:
                        return self._send(
                            401,
                            error_body(401, "User cannot access the resource."),
                            {"WWW-Authenticate": 'Basic realm="connect"'},
                        )
                if server.starting:
                    return self._send(404, not_ready_body(server.url + self.path))
                with server._lock:
                    scripted = server.script.pop(0) if server.script else None
                if scripted is not None:
                    return self._send(*scripted)
                status, body = server.route(self.path)
                self._send(status, body)

            def do_PATCH(self) -> None:
                with server._lock:
                    server.requests.append(Seen("PATCH", self.path, self.headers.get("Authorization")))
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                status, answer = server.alter(self.path, body)
                self._send(status, answer)

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer to

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        if ssl_context is not None:
            self._httpd.socket = ssl_context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="connect-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return (
            f"{'https' if self.ssl_context else 'http'}://{'localhost' if self.ssl_context else host}:{port}"
        )

    def route(self, raw_path: str) -> tuple[int, Any]:
        parts = urlsplit(raw_path)
        segments = [unquote(s) for s in parts.path.strip("/").split("/")]
        by_name = {c.name: c for c in self.connectors}
        if segments == ["connectors"]:
            if "expand" in parse_qs(parts.query) and not self.legacy:
                return 200, expanded(self.connectors)
            return 200, sorted(by_name)
        if len(segments) in (2, 3) and segments[0] == "connectors":
            connector = by_name.get(segments[1])
            if connector is None:
                return 404, error_body(404, f"Connector {segments[1]} not found")
            if len(segments) == 2:
                return 200, connector.info()
            if segments[2] == "status":
                return 200, connector.status()
        return 404, error_body(404, "HTTP 404 Not Found")

    def alter(self, raw_path: str, body: Any) -> tuple[int, Any]:
        segments = [unquote(s) for s in urlsplit(raw_path).path.strip("/").split("/")]
        if len(segments) != 3 or segments[0] != "connectors" or segments[2] != "offsets":
            return 404, error_body(404, "HTTP 404 Not Found")
        connector = {c.name: c for c in self.connectors}.get(segments[1])
        if connector is None:
            return 404, error_body(404, f"Connector {segments[1]} not found")
        if not isinstance(body, dict) or not body.get("offsets"):
            return 400, error_body(
                400, "Partitions / offsets need to be provided for an alter offsets request"
            )
        if connector.state != "STOPPED":
            return 400, error_body(
                400,
                "Connectors must be in the STOPPED state before their offsets can be "
                "modified. This can be done for the specified connector by issuing a 'PUT' "
                f"request to the '/connectors/{connector.name}/stop' endpoint",
            )
        with self._lock:
            self.altered.append((connector.name, body))
        if self.on_alter is not None:
            self.on_alter(connector.name, body)
        return 200, {"message": "The offsets for this connector have been altered successfully"}

    def __enter__(self) -> ConnectServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)
