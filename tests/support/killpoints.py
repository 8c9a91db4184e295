"""Kill a real child process at a step boundary of a change (``airflow_provider_kgroups.client.stepmarks``).

The child runs with ``KGROUPS_STEP_SOCKET`` naming a Unix socket this side listens on; at each
boundary it writes ``reached <step>`` and waits for ``go``. :class:`SteppedChild` reads those lines
with a deadline: the test answers ``go`` or kills it (SIGKILL) right there. Nothing sleeps: every
wait is on the child's next line or its exit, with a deadline.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from airflow_provider_kgroups.client.stepmarks import ENV_STEP_SOCKET

ROOT = Path(__file__).resolve().parents[2]


class ChildTimeout(AssertionError):
    pass


@dataclass
class SteppedChild:
    """One child process run under the step hook."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    deadline_s: float = 30.0
    steps: list[str] = field(default_factory=list)  # the boundaries it reached, in order
    killed_at: str | None = None

    def __post_init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="kg-step-", dir="/tmp")  # AF_UNIX paths are short
        self._path = os.path.join(self._dir, "s")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self._path)
        self._listener.listen(1)
        env = {
            **os.environ,
            **self.env,
            ENV_STEP_SOCKET: self._path,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        # files, not pipes: a child never blocks on a full pipe nobody reads while it runs
        self._out = open(os.path.join(self._dir, "out"), "w+b")  # noqa: SIM115 - the child's stdout, closed in finish()
        self._err = open(os.path.join(self._dir, "err"), "w+b")  # noqa: SIM115 - the child's stderr, closed in finish()
        self.proc = subprocess.Popen(self.argv, env=env, cwd=ROOT, stdout=self._out, stderr=self._err)
        self._exit = os.pidfd_open(self.proc.pid)  # readable once the child has exited
        self._conn: socket.socket | None = None
        self._buffer = b""
        self._ends = time.monotonic() + self.deadline_s
        self.stdout = self.stderr = ""

    def next_step(self) -> str | None:
        """The next boundary the child reached (it waits there), or None once it exited."""
        while b"\n" not in self._buffer:
            left = self._ends - time.monotonic()
            with selectors.DefaultSelector() as sel:
                sel.register(self._conn or self._listener, selectors.EVENT_READ)
                sel.register(self._exit, selectors.EVENT_READ)
                ready = [key.fileobj for key, _ in sel.select(timeout=max(left, 0))]
            if not ready:
                self.kill()
                raise ChildTimeout(
                    f"{self.argv} reached no step boundary nor exited within {self.deadline_s}s "
                    f"(steps so far {self.steps}); stderr: {self.stderr[-2000:]}"
                )
            if self._conn is None and self._listener in ready:
                self._conn, _ = self._listener.accept()
                continue
            if self._conn is not None and self._conn in ready:
                chunk = self._conn.recv(256)
                if chunk:
                    self._buffer += chunk
                    continue
            if self._exit in ready or self._conn in ready:  # exited (the socket closed with it)
                self.proc.wait(timeout=max(self._ends - time.monotonic(), 1.0))
                return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        step = line.decode().removeprefix("reached ")
        self.steps.append(step)
        return step

    def go(self) -> None:
        assert self._conn is not None
        self._conn.sendall(b"go\n")

    def kill(self) -> None:
        """SIGKILL, where it waits (or wherever it is)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.killed_at = self.steps[-1] if self.steps else None
        self.finish()

    def run_to_end(self) -> SteppedChild:
        while self.next_step() is not None:
            self.go()
        return self.finish()

    def kill_after(self, passed: int) -> SteppedChild:
        """Let ``passed`` boundaries go by, kill at the next one (or let it end if it has fewer)."""
        while True:
            step = self.next_step()
            if step is None:
                return self.finish()
            if len(self.steps) > passed:
                self.kill()
                return self
            self.go()

    def kill_at(self, step: str, nth: int = 1) -> SteppedChild:
        """Kill at the ``nth`` time the child reaches ``step``."""
        while True:
            reached = self.next_step()
            if reached is None:
                self.finish()
                raise AssertionError(
                    f"{self.argv} ended without reaching {step} #{nth} (reached {self.steps}); "
                    f"exit code {self.proc.returncode}; stdout: {self.stdout[-1500:]}; "
                    f"stderr: {self.stderr[-2000:]}"
                )
            if reached == step and self.steps.count(step) == nth:
                self.kill()
                return self
            self.go()

    def finish(self) -> SteppedChild:
        try:
            self.proc.wait(timeout=max(self._ends - time.monotonic(), 1.0))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f, name in ((self._out, "stdout"), (self._err, "stderr")):
            f.seek(0)
            setattr(self, name, f.read().decode())
            f.close()
        for s in (self._conn, self._listener):
            if s is not None:
                s.close()
        os.close(self._exit)
        shutil.rmtree(self._dir, ignore_errors=True)
        return self

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode


def cli_argv(bootstrap: str, *argv: str) -> list[str]:
    return [sys.executable, "-m", "airflow_provider_kgroups", "-b", bootstrap, "--format", "json", *argv]
