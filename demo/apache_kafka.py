"""Run the real Apache Kafka broker (and its tools) from Maven Central's jars, for tests, the demo
and benchmarks.

    from demo.apache_kafka import KafkaCluster

    with KafkaCluster(nodes=1) as cluster:   # Kafka NEWEST, KRaft, free loopback ports
        print(cluster.bootstrap)             # "127.0.0.1:40123"
        cluster.run_tool(CONSUMER_GROUPS_TOOL, "--bootstrap-server", cluster.bootstrap, "--list")

What it does, in order:

1. ``resolve_jars(version)`` writes a tiny pom for the version and runs
   ``mvn dependency:copy-dependencies`` into a cache folder keyed by the version and the artifact
   set (``$KGROUPS_JAR_CACHE``, else ``~/.cache/airflow-provider-kgroups/jars``). A second call is
   free. Maven missing, or Maven Central unreachable, raises :class:`JarResolutionError` saying so
   (never a silent skip).
2. ``KafkaCluster.start()`` formats fresh storage for each node (KRaft, a static voter set: the
   form 3.x and 4.x both accept) or, for a release before KRaft, starts ZooKeeper first; then
   starts every node as a child process with its log in the cluster's folder and waits for each
   to log that it started *and* to answer ApiVersions, with a deadline.
3. ``stop()`` sends SIGTERM, waits with a deadline, then kills. Logs stay in ``workdir`` for a
   failing test to read (``log_tail``).

This module stays free of pytest and of kafka-python: the demo imports it too.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from demo.tansu import _roundtrip, free_port, probe_api_versions

__all__ = [
    "CONSUMER_GROUPS_TOOL",
    "KafkaCluster",
    "KafkaError",
    "KafkaStartError",
    "JarResolutionError",
    "NEWEST",
    "OLD_PRE_BATCHING",
    "RELEASE_3X",
    "SHARE_GROUPS_TOOL",
    "kafka_artifacts",
    "resolve_jars",
    "run_java",
]

#: The newest Apache Kafka release Maven Central serves here (checked 2026-11: 4.4.0).
NEWEST = "4.4.0"
#: The last release line before KIP-699/KIP-709 batching (FindCoordinator v4, OffsetFetch v8: 3.0).
OLD_PRE_BATCHING = "2.8.2"
#: One 3.x release: batching, KRaft, the old log4j 1 logging.
RELEASE_3X = "3.9.1"

#: kafka-consumer-groups.sh's class (kafka-tools) from 3.7 on; 2.8 has it in the core jar.
CONSUMER_GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
OLD_CONSUMER_GROUPS_TOOL = "kafka.admin.ConsumerGroupCommand"
#: kafka-share-groups.sh's class (kafka-tools, Kafka 4.1+: KIP-932 share groups).
SHARE_GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"

_LOG4J2_SLF4J = ("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")


class KafkaError(RuntimeError):
    """Base class for the errors of this module."""


class JarResolutionError(KafkaError):
    """Maven is missing, or could not resolve the jars (Maven Central unreachable, no such version)."""


class KafkaStartError(KafkaError):
    """A node did not become ready before its deadline, or exited while starting."""


def _major(version: str) -> int:
    return int(version.split(".", 1)[0])


def _uses_zookeeper(version: str) -> bool:
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) < (3, 3)  # KRaft is production-ready from 3.3


def kafka_artifacts(version: str, *, connect: bool = False) -> tuple[tuple[str, str, str], ...]:
    """The Maven coordinates (group, artifact, version) a Kafka ``version`` needs: the broker, the
    command-line tools, the slf4j binding of that release's logging, and Kafka Connect when asked."""
    kafka = "org.apache.kafka"
    artifacts = [(kafka, "kafka_2.13", version)]
    if _major(version) >= 4:
        # Kafka 4.x logs through log4j2 on slf4j 1.7: log4j-slf4j-impl, not log4j-slf4j2-impl (which
        # would bind nothing and leave a silent no-op logger).
        artifacts += [(kafka, "kafka-tools", version), _LOG4J2_SLF4J]
    elif _uses_zookeeper(version):
        artifacts += [("org.slf4j", "slf4j-log4j12", "1.7.30")]
    else:
        artifacts += [(kafka, "kafka-tools", version), ("org.slf4j", "slf4j-reload4j", "1.7.36")]
    if connect:
        artifacts += [(kafka, "connect-runtime", version), (kafka, "connect-json", version)]
    return tuple(artifacts)


def _cache_root() -> Path:
    configured = os.environ.get("KGROUPS_JAR_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "airflow-provider-kgroups" / "jars"


def _pom(artifacts: Iterable[tuple[str, str, str]]) -> str:
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in artifacts
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kgroups.tests</groupId><artifactId>jars</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>\n"
    )


def resolve_jars(artifacts: Iterable[tuple[str, str, str]], *, name: str, timeout: float = 600.0) -> Path:
    """A folder holding ``artifacts`` and their runtime dependencies, resolved once with Maven.

    The folder is keyed by ``name`` and a hash of the artifact list; it appears whole (resolved into
    a temporary folder, then renamed) so a killed resolution never leaves half a classpath, and a
    file lock makes concurrent test sessions wait for one resolution instead of racing.
    """
    artifacts = tuple(artifacts)
    key = hashlib.sha256(repr(artifacts).encode()).hexdigest()[:12]
    root = _cache_root()
    target = root / f"{name}-{key}"
    if (target / "lib").is_dir():
        return target / "lib"
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            "Maven (mvn) is not installed: the real Apache Kafka comes from Maven Central's jars. "
            "Install it with `apt-get install maven` (.ci/run does)."
        )

    def resolve(staging: Path) -> None:
        (staging / "pom.xml").write_text(_pom(artifacts))
        try:
            done = subprocess.run(
                [
                    mvn,
                    "-q",
                    "-B",
                    "-f",
                    str(staging / "pom.xml"),
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={staging / 'lib'}",
                    "-DincludeScope=runtime",
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise JarResolutionError(
                f"Maven did not resolve {name} within {timeout:.0f} s: is Maven Central reachable?"
            ) from exc
        if done.returncode != 0:
            raise JarResolutionError(
                f"Maven could not resolve {name} ({', '.join(':'.join(a) for a in artifacts)}); "
                f"Maven Central must be reachable. Maven said:\n{output_tail(done)}"
            )

    build_once(target, "lib", resolve)
    return target / "lib"


def output_tail(done: subprocess.CompletedProcess[str], lines: int = 15) -> str:
    """The last lines a finished command printed (stdout, then stderr), for an error message."""
    return "\n".join((done.stdout + done.stderr).strip().splitlines()[-lines:])


def build_once(target: Path, marker: str, build: Callable[[Path], None]) -> None:
    """Make ``target`` (complete once ``target / marker`` exists) with ``build(staging)``, which
    fills a new folder beside it, renamed to ``target`` only when ``build`` returns: a killed or
    failed build never leaves a half-made ``target``, and under a file lock in the parent folder
    two processes build it once."""
    if (target / marker).exists():
        return
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / marker).exists():
            return
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=root))
        try:
            build(staging)
            staging.rename(target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)


def java_binary() -> str:
    java = shutil.which("java")
    if java is None:
        raise KafkaError(
            "Java is not installed: Apache Kafka needs a JDK 17 (apt-get install openjdk-17-jdk-headless)"
        )
    return java


#: Fast start-up on two cores: the C1 compiler only and the serial collector (a test broker is
#: short-lived and small).
_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")


def _logging_flags(version: str, workdir: Path, *, tool: bool = False) -> list[str]:
    """Logging for the release's library (log4j2 from 4.0, log4j 1 before): a node logs INFO to its
    log file; a tool logs warnings only, to stderr, so its stdout is just its answer."""
    level, target = ("WARN", "SYSTEM_ERR") if tool else ("INFO", "SYSTEM_OUT")
    if _major(version) >= 4:
        config = workdir / f"log4j2-{'tool' if tool else 'node'}.properties"
        if not config.exists():
            config.write_text(
                "status = warn\n"
                f"appender.out.type = Console\nappender.out.name = OUT\nappender.out.target = {target}\n"
                "appender.out.layout.type = PatternLayout\n"
                "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
                f"rootLogger.level = {level}\nrootLogger.appenderRef.out.ref = OUT\n"
                "logger.state.name = state.change.logger\nlogger.state.level = WARN\n"
            )
        return [f"-Dlog4j2.configurationFile={config}"]
    config = workdir / f"log4j-{'tool' if tool else 'node'}.properties"
    if not config.exists():
        config.write_text(
            f"log4j.rootLogger={level}, out\n"
            "log4j.appender.out=org.apache.log4j.ConsoleAppender\n"
            f"log4j.appender.out.Target={'System.err' if tool else 'System.out'}\n"
            "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.state.change.logger=WARN\n"
        )
    return [f"-Dlog4j.configuration=file:{config}"]


def run_java(
    lib: Path,
    main_class: str,
    *args: str,
    version: str,
    workdir: Path,
    heap: str = "256m",
    timeout: float = 120.0,
    jvm_flags: Iterable[str] = (),
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one Java program (a Kafka tool) to completion on ``lib``'s classpath; raises on a timeout."""
    command = [
        java_binary(),
        f"-Xmx{heap}",
        *_JVM_FLAGS,
        *_logging_flags(version, workdir, tool=True),
        *jvm_flags,
        "-cp",
        f"{lib}/*",
        main_class,
        *args,
    ]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, input=input_text, cwd=workdir
    )


def write_properties(path: Path, values: Mapping[str, object]) -> None:
    """A Java properties file (values here are plain: no keys or values needing escapes)."""
    lines = []
    for key, value in values.items():
        text = str(value)
        if any(ch in text for ch in "\n\r") or any(ch in key for ch in " =:\\"):
            raise ValueError(f"property {key!r} needs escaping, which this writer does not do")
        lines.append(f"{key}={text.replace(chr(92), chr(92) * 2)}")
    path.write_text("\n".join(lines) + "\n")


def random_cluster_id() -> str:
    """A Kafka Uuid as ``kafka-storage random-uuid`` prints it (base64url of 16 bytes, no padding),
    drawn again while its text holds a dash, as Kafka's ``Uuid.randomUuid()`` does (KAFKA-20072;
    before it, a leading dash): ``kafka-storage format -t -Xy...`` reads a leading dash as an
    option and refuses ("argument --cluster-id/-t: expected one argument"), one start in 64."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if "-" not in text:
            return text


@dataclass
class _Process:
    name: str
    command: list[str]
    log_path: Path
    ready_line: str
    popen: subprocess.Popen[bytes] | None = None
    log_file: object | None = None

    def start(self, cwd: Path) -> None:
        self.log_file = open(self.log_path, "ab")  # noqa: SIM115 - open for the child's life, closed in stop()
        self.popen = subprocess.Popen(
            self.command,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            start_new_session=True,
        )

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, signum: int) -> None:
        if self.popen is not None and self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signum)
            except ProcessLookupError:
                pass

    def stop(self, *, timeout: float = 30.0, kill: bool = False) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL if kill else signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)
        self.popen = None
        if self.log_file is not None:
            self.log_file.close()  # type: ignore[attr-defined]  # an open binary file
            self.log_file = None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_size(self) -> int:
        """Where the log ends now: a restart appends to the same file, so a readiness wait reads
        from here on (:meth:`log_since`)."""
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, label: str, lines: int = 40) -> str:
        tail = "\n".join(self.log_text().splitlines()[-lines:])
        return f"--- {label} ({self.log_path}) ---\n{tail}"


@dataclass
class KafkaNode:
    """One broker (KRaft: broker and controller in one process) of a :class:`KafkaCluster`."""

    node_id: int
    ports: dict[str, int]
    data_dir: Path
    config_path: Path
    process: _Process
    config: dict[str, object] = field(default_factory=dict)

    def address(self, listener: str = "PLAINTEXT") -> str:
        return f"127.0.0.1:{self.ports[listener]}"


@dataclass
class KafkaCluster:
    """Apache Kafka ``version`` with ``nodes`` nodes on free loopback ports, started as child processes.

    ``listeners`` maps extra listener names to their security protocol (PLAINTEXT is always there);
    ``properties`` are added to every node's configuration (they win over the defaults);
    ``listener_properties`` may hold ``{node_id}``-free values per listener;
    ``scram_users`` are ``(mechanism, name, password)`` stored at format time (KRaft only);
    ``features`` are passed to the storage format (``share.version=1`` ...);
    ``jvm_flags`` are added to each node's Java command line.
    """

    version: str = NEWEST
    nodes: int = 1
    listeners: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, object] = field(default_factory=dict)
    scram_users: tuple[tuple[str, str, str], ...] = ()
    features: tuple[str, ...] = ()
    jvm_flags: tuple[str, ...] = ()
    heap: str = "384m"
    workdir: Path | None = None
    start_timeout: float = 90.0
    node_list: list[KafkaNode] = field(default_factory=list, init=False)
    zookeeper: _Process | None = field(default=None, init=False)
    lib: Path | None = field(default=None, init=False)
    cluster_id: str = field(default_factory=random_cluster_id, init=False)

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.lib = resolve_jars(kafka_artifacts(self.version), name=f"kafka-{self.version}")
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"kafka-{self.version}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._plan_nodes()
            if _uses_zookeeper(self.version):
                self._start_zookeeper()
            for node in self.node_list:
                write_properties(node.config_path, node.config)
            if not _uses_zookeeper(self.version):
                with ThreadPoolExecutor(max_workers=len(self.node_list)) as pool:
                    list(pool.map(self._format, self.node_list))
            for node in self.node_list:
                node.process.start(self.workdir)
            deadline = time.monotonic() + self.start_timeout
            for node in self.node_list:
                self._wait_ready(node, deadline)
            self.wait_for_group_coordinator(deadline)
        except BaseException:
            self.stop()
            raise

    def stop(self, *, timeout: float = 15.0) -> None:
        """Stop every node at once (SIGTERM to all, then SIGKILL after ``timeout``): nodes stopped one
        by one lose their quorum and the last ones wait out their controlled shutdown."""
        for node in self.node_list:
            node.process.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for node in self.node_list:
            node.process.stop(timeout=max(0.1, deadline - time.monotonic()))
        if self.zookeeper is not None:
            self.zookeeper.stop()

    def stop_node(self, node_id: int, *, kill: bool = False) -> None:
        """Stop one node (SIGTERM, a controlled shutdown; SIGKILL when ``kill``)."""
        self.node(node_id).process.stop(kill=kill)

    def start_node(self, node_id: int, *, timeout: float = 60.0) -> None:
        """Start a stopped node again on the same ports and storage, and wait until it is ready."""
        node = self.node(node_id)
        if node.process.running:
            return
        assert self.workdir is not None
        node.process.start(self.workdir)
        self._wait_ready(node, time.monotonic() + timeout)

    # -- addresses -------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return self.address("PLAINTEXT")

    def address(self, listener: str = "PLAINTEXT") -> str:
        """The bootstrap list (every running node) of one listener."""
        return ",".join(node.address(listener) for node in self.node_list if node.process.running)

    def node(self, node_id: int) -> KafkaNode:
        for node in self.node_list:
            if node.node_id == node_id:
                return node
        raise KeyError(f"no node {node_id} (nodes: {[n.node_id for n in self.node_list]})")

    def log_tail(self, node_id: int | None = None, lines: int = 40) -> str:
        nodes = self.node_list if node_id is None else [self.node(node_id)]
        parts = []
        for node in nodes:
            tail = "\n".join(node.process.log_text().splitlines()[-lines:])
            parts.append(f"--- node {node.node_id} ({node.process.log_path}) ---\n{tail}")
        return "\n".join(parts)

    # -- tools -----------------------------------------------------------------------------------

    def run_tool(
        self, main_class: str, *args: str, timeout: float = 120.0, input_text: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's command-line tools of this release (``kafka-consumer-groups.sh`` is
        :data:`CONSUMER_GROUPS_TOOL`) to completion."""
        assert self.lib is not None and self.workdir is not None, "start the cluster first"
        return run_java(
            self.lib,
            main_class,
            *args,
            version=self.version,
            workdir=self.workdir,
            timeout=timeout,
            input_text=input_text,
        )

    @property
    def consumer_groups_tool(self) -> str:
        return OLD_CONSUMER_GROUPS_TOOL if _uses_zookeeper(self.version) else CONSUMER_GROUPS_TOOL

    def wait_for_group_coordinator(self, deadline: float) -> None:
        """Wait until FindCoordinator answers without error: a fresh cluster creates
        ``__consumer_offsets`` on the first lookup and answers COORDINATOR_NOT_AVAILABLE (15) until its
        partitions have leaders, which a test's first commit would otherwise meet."""
        host, port = "127.0.0.1", self.node_list[0].ports["PLAINTEXT"]
        key = b"kgroups-launcher-probe"
        error = None
        while time.monotonic() < deadline:
            try:
                body = _roundtrip(host, port, 10, 0, struct.pack(">h", len(key)) + key, timeout=2.0)
                (error,) = struct.unpack_from(">h", body, 0)
                if error == 0:
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise KafkaStartError(
            f"Kafka {self.version}: no group coordinator before the deadline "
            f"(last FindCoordinator error {error})\n{self.log_tail(lines=20)}"
        )

    # -- internals -------------------------------------------------------------------------------

    def _plan_nodes(self) -> None:
        assert self.workdir is not None
        listener_protocols = {"PLAINTEXT": "PLAINTEXT", **self.listeners}
        kraft = not _uses_zookeeper(self.version)
        planned = []
        for node_id in range(1, self.nodes + 1):
            ports = {name: free_port() for name in listener_protocols}
            if kraft:
                ports["CONTROLLER"] = free_port()
            data_dir = self.workdir / f"node-{node_id}"
            planned.append((node_id, ports, data_dir))
        voters = (
            ",".join(f"{nid}@127.0.0.1:{ports['CONTROLLER']}" for nid, ports, _ in planned) if kraft else ""
        )
        replication = min(3, self.nodes)
        for node_id, ports, data_dir in planned:
            data_dir.mkdir(parents=True, exist_ok=True)
            listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
            protocol_map = {**listener_protocols, **({"CONTROLLER": "PLAINTEXT"} if kraft else {})}
            config: dict[str, object] = {
                "listeners": listeners,
                # The CONTROLLER listener is advertised too (KIP-853 needs it from 3.8).
                "advertised.listeners": listeners,
                "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocol_map.items()),
                "inter.broker.listener.name": "PLAINTEXT",
                "log.dirs": data_dir / "logs",
                "offsets.topic.replication.factor": replication,
                "offsets.topic.num.partitions": 6,
                "transaction.state.log.replication.factor": replication,
                "transaction.state.log.min.isr": min(2, replication),
                "group.initial.rebalance.delay.ms": 0,
                "num.network.threads": 2,
                "num.io.threads": 2,
                "num.recovery.threads.per.data.dir": 1,
                "background.threads": 2,
                "log.cleaner.dedupe.buffer.size": 8_388_608,
                "auto.create.topics.enable": "false",
                # Seeded records carry old timestamps (demo.seed.BASE_TIMESTAMP_MS is in 2023): under the
                # default 7-day retention the first check would delete them from under a test.
                "log.retention.ms": -1,
            }
            if kraft:
                config.update(
                    {
                        "process.roles": "broker,controller",
                        "node.id": node_id,
                        "controller.listener.names": "CONTROLLER",
                        "controller.quorum.voters": voters,
                    }
                )
                if _major(self.version) >= 4 or self.version.startswith("3.9"):
                    config.update(
                        {
                            "share.coordinator.state.topic.replication.factor": replication,
                            "share.coordinator.state.topic.min.isr": min(2, replication),
                        }
                    )
            else:
                config.update({"broker.id": node_id})
            config.update(self.properties)
            config_path = self.workdir / f"node-{node_id}.properties"
            node = KafkaNode(
                node_id=node_id,
                ports=ports,
                data_dir=data_dir,
                config_path=config_path,
                config=config,
                process=_Process(
                    name=f"kafka-{node_id}",
                    command=self._java_command("kafka.Kafka", str(config_path)),
                    log_path=self.workdir / f"node-{node_id}.log",
                    ready_line="started (kafka.server" if not kraft else "Kafka Server started",
                ),
            )
            self.node_list.append(node)

    def _java_command(self, main_class: str, *args: str) -> list[str]:
        assert self.lib is not None and self.workdir is not None
        return [
            java_binary(),
            f"-Xmx{self.heap}",
            *_JVM_FLAGS,
            *_logging_flags(self.version, self.workdir),
            *self.jvm_flags,
            "-cp",
            f"{self.lib}/*",
            main_class,
            *args,
        ]

    def _format(self, node: KafkaNode) -> None:
        assert self.lib is not None and self.workdir is not None
        args = ["format", "-t", self.cluster_id, "-c", str(node.config_path)]
        for feature in self.features:
            args += ["--feature", feature]
        for mechanism, name, password in self.scram_users:
            args += ["--add-scram", f"{mechanism}=[name={name},password={password}]"]
        done = run_java(
            self.lib,
            "kafka.tools.StorageTool",
            *args,
            version=self.version,
            workdir=self.workdir,
            timeout=120,
        )
        if done.returncode != 0:
            out = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise KafkaStartError(
                f"kafka-storage format failed for node {node.node_id} of Kafka {self.version}:\n{out}"
            )

    def _start_zookeeper(self) -> None:
        assert self.workdir is not None
        port = free_port()
        zk_dir = self.workdir / "zookeeper"
        zk_dir.mkdir(exist_ok=True)
        self.zookeeper = _Process(
            name="zookeeper",
            command=self._java_command(
                "org.apache.zookeeper.server.ZooKeeperServerMain", str(port), str(zk_dir)
            ),
            log_path=self.workdir / "zookeeper.log",
            ready_line="binding to port",
        )
        self.zookeeper.start(self.workdir)
        deadline = time.monotonic() + self.start_timeout
        while self.zookeeper.ready_line not in self.zookeeper.log_text():
            self._check_alive(self.zookeeper, deadline)
            time.sleep(0.1)
        for node in self.node_list:
            node.config["zookeeper.connect"] = f"127.0.0.1:{port}"

    def _check_alive(self, process: _Process, deadline: float) -> None:
        if not process.running:
            tail = "\n".join(process.log_text().splitlines()[-30:])
            raise KafkaStartError(f"{process.name} (Kafka {self.version}) exited while starting:\n{tail}")
        if time.monotonic() > deadline:
            tail = "\n".join(process.log_text().splitlines()[-30:])
            raise KafkaStartError(
                f"{process.name} (Kafka {self.version}) not ready within {self.start_timeout:.0f} s:\n{tail}"
            )

    def _wait_ready(self, node: KafkaNode, deadline: float) -> None:
        """Ready = the node logged that it started and answers ApiVersions on its PLAINTEXT listener."""
        while True:
            self._check_alive(node.process, deadline)
            if node.process.ready_line in node.process.log_text():
                try:
                    probe_api_versions("127.0.0.1", node.ports["PLAINTEXT"], timeout=1.0)
                    return
                except (OSError, ValueError):
                    pass
            time.sleep(0.1)
