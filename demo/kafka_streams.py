"""Run a small real Kafka Streams application (KIP-1071, ``group.protocol=streams``) as a child JVM,
beside a broker started by :mod:`demo.apache_kafka`, for the tests.

    from demo.kafka_streams import StreamsApp

    with StreamsApp(bootstrap=cluster.bootstrap, application_id="counts", input_topic="words",
                    output_topic="counts") as app:       # returns once the app is RUNNING
        ...                                               # its streams group "counts" has a member
    # stopped: the app closed and left its group (Empty at once)

What it does:

1. The classpath is kafka-streams :data:`STREAMS_VERSION` and the log4j2 slf4j binding
   (:func:`streams_artifacts`), resolved once by :func:`demo.apache_kafka.resolve_jars`.
2. The application is ``demo/streams_app/KgroupsStreamsApp.java`` (counts its input's values:
   two subtopologies, a repartition and a changelog topic, an in-memory store), compiled once with
   ``javac`` into a cached folder keyed by the source's hash (:func:`compiled_app`, built with
   :func:`demo.apache_kafka.build_once`).
3. ``start()`` writes ``streams.properties`` and starts the JVM; ready when it printed
   ``KGROUPS-STREAMS-STATE RUNNING`` (after this start), with a deadline. Whether the group is
   Stable with its tasks assigned is the caller's condition to wait on (the broker says so).
4. ``stop()`` sends SIGTERM: the app's shutdown hook closes it with ``LEAVE_GROUP``, so the
   group is Empty at once; SIGKILL after a deadline.

Test-only settings, each said here because a production app would not have them:
``commit.interval.ms=200`` (offsets committed soon after records are read),
``statestore.cache.max.bytes=0`` (counts forwarded at once), one stream thread, replication 1.

Stdlib only (no pytest): the demo may import it too.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from demo.apache_kafka import (
    _JVM_FLAGS,
    _LOG4J2_SLF4J,
    NEWEST,
    KafkaError,
    KafkaStartError,
    _cache_root,
    _logging_flags,
    _Process,
    build_once,
    java_binary,
    output_tail,
    resolve_jars,
    write_properties,
)

__all__ = ["APP_SOURCE", "STREAMS_VERSION", "StreamsApp", "compiled_app", "streams_artifacts"]

#: kafka-streams of the broker's own release (Maven Central serves 4.4.0's jar).
STREAMS_VERSION = NEWEST
APP_SOURCE = Path(__file__).resolve().parent / "streams_app" / "KgroupsStreamsApp.java"
APP_MAIN = "KgroupsStreamsApp"
STATE_LINE = "KGROUPS-STREAMS-STATE "


def streams_artifacts(version: str) -> tuple[tuple[str, str, str], ...]:
    """kafka-streams (with kafka-clients) and the slf4j binding of Kafka 4.x's log4j2."""
    return (("org.apache.kafka", "kafka-streams", version), _LOG4J2_SLF4J)


def compiled_app(lib: Path, version: str = STREAMS_VERSION) -> Path:
    """The folder of the application's compiled classes, built once per source and version."""
    source = APP_SOURCE.read_bytes()
    key = hashlib.sha256(source + version.encode()).hexdigest()[:12]
    target = _cache_root() / f"kgroups-streams-app-{version}-{key}"

    def compile_into(staging: Path) -> None:
        javac = shutil.which("javac")
        if javac is None:
            raise KafkaError(
                "javac is not installed: the Kafka Streams test application is compiled from "
                f"{APP_SOURCE.name} (apt-get install openjdk-17-jdk-headless)"
            )
        done = subprocess.run(
            [javac, "-cp", f"{lib}/*", "-d", str(staging / "classes"), str(APP_SOURCE)],
            capture_output=True,
            text=True,
            timeout=180,
        )
        if done.returncode != 0:
            raise KafkaError(f"javac could not compile {APP_SOURCE}:\n{output_tail(done)}")

    build_once(target, f"classes/{APP_MAIN}.class", compile_into)
    return target / "classes"


@dataclass
class StreamsApp:
    """One instance of the test application, with ``application_id`` (its streams group's id)."""

    bootstrap: str
    input_topic: str
    output_topic: str
    application_id: str = field(default_factory=lambda: f"kgroups-streams-{uuid.uuid4().hex[:8]}")
    client_id: str | None = None
    version: str = STREAMS_VERSION
    workdir: Path | None = None
    properties: Mapping[str, object] = field(default_factory=dict)
    heap: str = "256m"
    start_timeout: float = 90.0
    process: _Process | None = field(default=None, init=False)
    _log_offset: int = field(default=0, init=False, repr=False)

    def __enter__(self) -> StreamsApp:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def config(self) -> dict[str, object]:
        assert self.workdir is not None
        return {
            "application.id": self.application_id,
            "bootstrap.servers": self.bootstrap,
            "group.protocol": "streams",
            "client.id": self.client_id or self.application_id,
            "num.stream.threads": 1,
            "replication.factor": 1,
            "commit.interval.ms": 200,
            "statestore.cache.max.bytes": 0,
            "state.dir": self.workdir / "state",
            "auto.offset.reset": "earliest",
            **self.properties,
        }

    def start(self) -> None:
        lib = resolve_jars(streams_artifacts(self.version), name=f"kafka-streams-{self.version}")
        classes = compiled_app(lib, self.version)
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"streams-{self.application_id}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        config_path = self.workdir / "streams.properties"
        write_properties(config_path, self.config())
        self.process = _Process(
            name="streams-app",
            command=[
                java_binary(),
                f"-Xmx{self.heap}",
                *_JVM_FLAGS,
                *_logging_flags(self.version, self.workdir, tool=True),
                "-cp",
                f"{lib}/*:{classes}",
                APP_MAIN,
                str(config_path),
                self.input_topic,
                self.output_topic,
            ],
            log_path=self.workdir / "streams.log",
            ready_line=STATE_LINE + "RUNNING",
        )
        self.start_again()
        try:
            self.wait_running(self.start_timeout)
        except BaseException:
            self.stop(kill=True)
            raise

    def start_again(self) -> None:
        """Start the (stopped) application again with the same id, state folder and topics."""
        assert self.process is not None and self.workdir is not None, "start() the app first"
        if self.process.running:
            return
        self._log_offset = self.process.log_size()
        self.process.start(self.workdir)

    def wait_running(self, timeout: float = 90.0) -> None:
        """Until the app printed that it is RUNNING since its last start; it exiting, or reaching
        ERROR / PENDING_ERROR, fails at once with its log's tail."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while True:
            since = self.process.log_since(self._log_offset)
            if self.process.ready_line in since:
                return
            if STATE_LINE + "ERROR" in since or STATE_LINE + "PENDING_ERROR" in since:
                raise KafkaStartError(f"the Kafka Streams app failed:\n{self.log_tail(30)}")
            if not self.process.running:
                raise KafkaStartError(f"the Kafka Streams app exited while starting:\n{self.log_tail(30)}")
            if time.monotonic() > deadline:
                raise KafkaStartError(
                    f"the Kafka Streams app was not RUNNING within {timeout:.0f} s:\n{self.log_tail(30)}"
                )
            time.sleep(0.2)

    def stop(self, *, timeout: float = 30.0, kill: bool = False) -> None:
        """SIGTERM (the app closes and leaves its group), SIGKILL after ``timeout``; ``kill=True``:
        at once, as a crash (the member stays until its session times out)."""
        if self.process is not None:
            self.process.stop(timeout=timeout, kill=kill)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    def log_tail(self, lines: int = 40) -> str:
        return "" if self.process is None else self.process.log_tail("kafka streams app", lines)
