"""Run a real Kafka Connect worker (distributed mode) from Maven Central's jars, for the tests and
the demo, beside a broker started by :mod:`demo.apache_kafka`.

    from demo.kafka_connect import ConnectWorker

    with ConnectWorker(bootstrap=cluster.bootstrap) as worker:   # CONNECT_VERSION, a free port
        worker.create_connector("orders-sink", {**worker.file_sink("orders", path)})
        worker.wait_for_state("orders-sink", "RUNNING", tasks=["RUNNING"])
        print(worker.url)                                         # "http://127.0.0.1:40871"

What it does:

1. The worker's classpath is connect-runtime, connect-json and the log4j2 slf4j binding
   (:func:`worker_artifacts`), resolved once by :func:`demo.apache_kafka.resolve_jars`;
   the ``connect-file`` plugin (FileStreamSink/FileStreamSource) is resolved apart and its one jar
   copied into a ``plugin.path`` folder of its own, as an operator installs a plugin.
2. ``start()`` writes ``worker.properties`` (JsonConverter without schemas, internal topics with
   replication 1, ``listeners=http://127.0.0.1:<free port>``, an absolute ``plugin.path``,
   ``connector.client.config.override.policy=All`` so a connector may set
   ``consumer.override.group.id``) and starts ``ConnectDistributed``; ready when ``GET /`` answers
   and the worker logged that it joined its group (after this start: a restart appends to the log).
3. ``stop()`` sends SIGTERM (the worker leaves its group), then kills after a deadline;
   ``restart()`` starts it again on the same port, group and internal topics.

Test-only settings, each said here because a production worker would not have them:
``scheduled.rebalance.max.delay.ms=0`` (a restarted worker gets its connectors back at once
instead of after up to 5 minutes), ``offset.flush.interval.ms=1000`` (a sink commits its group's
offsets every second), one partition per internal topic.

Stdlib only (no pytest, no requests): the demo imports it too.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from demo.apache_kafka import (
    _JVM_FLAGS,
    _LOG4J2_SLF4J,
    KafkaError,
    KafkaStartError,
    _logging_flags,
    _Process,
    java_binary,
    resolve_jars,
    write_properties,
)
from demo.tansu import free_port

__all__ = ["CONNECT_MAIN", "CONNECT_VERSION", "FILE_SINK", "FILE_SOURCE", "ConnectRestError", "ConnectWorker"]

CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
#: The Connect release run. Not NEWEST (4.4.0): Maven Central serves connect-file 4.4.0's pom but
#: not its jar (checked 2026-11-27), and connect-file 4.3.1 cannot load on a 4.4.0 worker (4.4.0
#: moved ``org.apache.kafka.common.utils.AppInfoParser`` to ``...utils.internals``, which
#: ``FileStreamSinkConnector.version()`` calls: NoClassDefFoundError at the plugin scan). So the
#: worker and its file plugin are both 4.3.1, against the 4.4.0 broker: a mix production has too.
CONNECT_VERSION = "4.3.1"
#: DistributedHerder.onAssigned logs this once the worker is in its group with an assignment.
JOINED_LINE = "Joined group at generation"


_STRINGS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}


class ConnectRestError(KafkaError):
    """A REST call the launcher made (creating, pausing, stopping a connector) was refused."""


def worker_artifacts(version: str) -> tuple[tuple[str, str, str], ...]:
    """The worker's classpath: connect-runtime (with connect-api, kafka-clients, Jetty, Jersey),
    connect-json for the JsonConverter, and the slf4j binding of Kafka 4.x's log4j2."""
    kafka = "org.apache.kafka"
    return ((kafka, "connect-runtime", version), (kafka, "connect-json", version), _LOG4J2_SLF4J)


def plugin_folder(target: Path, version: str = CONNECT_VERSION) -> Path:
    """A ``plugin.path`` folder holding ``connect-file`` alone (``target/connect-file/<jar>``): its
    runtime dependencies (connect-api, kafka-clients) are the worker's own, as in Kafka's libs/."""
    lib = resolve_jars([("org.apache.kafka", "connect-file", version)], name=f"connect-file-{version}")
    jars = sorted(lib.glob(f"connect-file-{version}.jar"))
    if not jars:
        raise KafkaError(
            f"Maven resolved connect-file {version} but {lib} holds no connect-file-{version}.jar"
        )
    plugin = target / "connect-file"
    plugin.mkdir(parents=True, exist_ok=True)
    shutil.copy2(jars[0], plugin / jars[0].name)
    return target


@dataclass
class ConnectWorker:
    """One Kafka Connect worker in distributed mode on ``bootstrap`` (a one-node cluster: replication 1)."""

    bootstrap: str
    version: str = CONNECT_VERSION
    group_id: str = field(default_factory=lambda: f"kgroups-connect-{uuid.uuid4().hex[:8]}")
    workdir: Path | None = None
    properties: Mapping[str, object] = field(default_factory=dict)
    heap: str = "384m"
    start_timeout: float = 120.0
    port: int = field(default_factory=free_port)
    lib: Path | None = field(default=None, init=False)
    process: _Process | None = field(default=None, init=False)
    _log_offset: int = field(default=0, init=False, repr=False)

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> ConnectWorker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def topics(self) -> dict[str, str]:
        """The worker's internal topics: config, offset and status storage."""
        return {kind: f"{self.group_id}-{kind}s" for kind in ("config", "offset", "status")}

    def config(self, plugin_path: Path) -> dict[str, object]:
        topics = self.topics
        return {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group_id,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "config.storage.topic": topics["config"],
            "offset.storage.topic": topics["offset"],
            "status.storage.topic": topics["status"],
            "config.storage.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "offset.storage.partitions": 1,
            "status.storage.partitions": 1,
            "listeners": self.url,
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": self.port,
            "plugin.path": plugin_path.resolve(),
            "plugin.discovery": "service_load",
            "connector.client.config.override.policy": "All",
            "offset.flush.interval.ms": 1000,
            "scheduled.rebalance.max.delay.ms": 0,
            **self.properties,
        }

    def start(self) -> None:
        self.lib = resolve_jars(worker_artifacts(self.version), name=f"connect-worker-{self.version}")
        if self.workdir is None:
            import tempfile

            self.workdir = Path(tempfile.mkdtemp(prefix=f"connect-{self.version}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        plugins = plugin_folder(self.workdir / "plugins", self.version)
        config_path = self.workdir / "worker.properties"
        write_properties(config_path, self.config(plugins))
        self.process = _Process(
            name="connect-worker",
            command=[
                java_binary(),
                f"-Xmx{self.heap}",
                *_JVM_FLAGS,
                *_logging_flags(self.version, self.workdir),
                "-cp",
                f"{self.lib}/*",
                CONNECT_MAIN,
                str(config_path),
            ],
            log_path=self.workdir / "worker.log",
            ready_line=JOINED_LINE,
        )
        self._launch()

    def _launch(self) -> None:
        self.start_again()
        try:
            self.wait_ready(self.start_timeout)
        except BaseException:
            self.stop(kill=True)
            raise

    def stop(self, *, timeout: float = 30.0, kill: bool = False) -> None:
        """SIGTERM (the worker stops its connectors and leaves its group), SIGKILL after ``timeout``;
        ``kill=True``: at once, as a crash."""
        if self.process is not None:
            self.process.stop(timeout=timeout, kill=kill)

    def restart(self) -> None:
        """Stop and start again on the same port, group and topics; returns once it is ready."""
        self.stop()
        self._launch()

    def start_again(self) -> None:
        """Start the (stopped) worker process without waiting (a test watches it come up), on the same
        port, group and topics; :meth:`wait_ready` waits for this start."""
        assert self.process is not None and self.workdir is not None, "start() the worker first"
        if self.process.running:
            return
        self._log_offset = self.process.log_size()
        self.process.start(self.workdir)

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Ready = ``GET /`` answers 200 and the worker logged that it joined its group since its last
        start (what an earlier run of the same worker logged does not count)."""
        assert self.process is not None
        process, deadline = self.process, time.monotonic() + timeout
        while True:
            if not process.running:
                raise KafkaStartError(f"the Connect worker exited while starting:\n{self.log_tail(30)}")
            if time.monotonic() > deadline:
                raise KafkaStartError(
                    f"the Connect worker was not ready within {timeout:.0f} s:\n{self.log_tail(30)}"
                )
            if process.ready_line in process.log_since(self._log_offset):
                try:
                    if self.rest("GET", "/", timeout=2.0)[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.2)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    def log_tail(self, lines: int = 40) -> str:
        return "" if self.process is None else self.process.log_tail("connect worker", lines)

    # -- REST ------------------------------------------------------------------------------------

    def rest(self, method: str, path: str, body: Any = None, *, timeout: float = 30.0) -> tuple[int, Any]:
        """One REST call: (HTTP status, the JSON body or None). Raises OSError when nothing answers."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def _ok(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.rest(method, path, body)
        if not 200 <= status < 300:
            raise ConnectRestError(f"{method} {self.url}{path}: HTTP {status}: {answer}")
        return answer

    @staticmethod
    def file_sink(topics: str | Sequence[str], path: Path | str, **config: object) -> dict[str, str]:
        """A FileStreamSink connector's config: ``topics`` written as lines to ``path``. Records are
        read as plain strings (the worker's JsonConverter would fail the task on a non-JSON value)."""
        listed = topics if isinstance(topics, str) else ",".join(topics)
        return {
            "connector.class": FILE_SINK,
            "tasks.max": "1",
            "topics": listed,
            "file": str(path),
            **_STRINGS,
            **{k: str(v) for k, v in config.items()},
        }

    @staticmethod
    def file_source(topic: str, path: Path | str, **config: object) -> dict[str, str]:
        """A FileStreamSource connector's config: the lines of ``path`` produced to ``topic`` as strings."""
        return {
            "connector.class": FILE_SOURCE,
            "tasks.max": "1",
            "topic": topic,
            "file": str(path),
            **_STRINGS,
            **{k: str(v) for k, v in config.items()},
        }

    def create_connector(
        self, name: str, config: Mapping[str, str], *, initial_state: str | None = None
    ) -> Any:
        """POST /connectors (KIP-980 ``initial_state`` RUNNING, PAUSED or STOPPED, Kafka 3.7+)."""
        body: dict[str, Any] = {"name": name, "config": dict(config)}
        if initial_state is not None:
            body["initial_state"] = initial_state
        return self._ok("POST", "/connectors", body)

    def pause(self, name: str) -> None:
        self._ok("PUT", f"/connectors/{quote(name, safe='')}/pause")

    def resume(self, name: str) -> None:
        self._ok("PUT", f"/connectors/{quote(name, safe='')}/resume")

    def stop_connector(self, name: str) -> None:
        """PUT /connectors/{name}/stop (KIP-875): tasks shut down, the connector STOPPED."""
        self._ok("PUT", f"/connectors/{quote(name, safe='')}/stop")

    def delete_connector(self, name: str) -> None:
        self._ok("DELETE", f"/connectors/{quote(name, safe='')}")

    def status(self, name: str) -> tuple[int, Any]:
        return self.rest("GET", f"/connectors/{quote(name, safe='')}/status")

    def wait_for_state(
        self, name: str, state: str, tasks: Sequence[str] | None = None, *, timeout: float = 60.0
    ) -> dict[str, Any]:
        """Wait until the connector is ``state`` and its tasks are ``tasks`` (in task-id order; None:
        any). Returns the status; raises TimeoutError naming the last one seen."""
        deadline = time.monotonic() + timeout
        seen: Any = None
        while time.monotonic() < deadline:
            code, seen = self.status(name)
            if code == 200 and seen["connector"]["state"] == state:
                states = [t["state"] for t in sorted(seen.get("tasks", []), key=lambda t: t["id"])]
                if tasks is None or states == list(tasks):
                    return seen
            time.sleep(0.2)
        raise TimeoutError(
            f"connector {name!r} not {state} with tasks {tasks} within {timeout:.0f} s; last status: {seen}"
        )

    def wait_until_gone(self, name: str, *, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code, listing = self.rest("GET", "/connectors")
            if code == 200 and name not in listing:
                return
            time.sleep(0.2)
        raise TimeoutError(f"connector {name!r} still listed after {timeout:.0f} s")
