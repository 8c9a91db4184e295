"""Subprocesses of the demo (``airflow db migrate``, ``airflow dags test``), each in its own
process group and logging to a file, stopped with the group when the demo ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from demo.scenario import ROOT


class Child:
    """A subprocess in its own process group (so the Spark JVM under ``airflow dags test`` goes
    with it), output to a log file; on exit the group is terminated, then killed."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._log_file = open(log, "wb")  # noqa: SIM115 - the child writes it until stop() closes it
        self.proc = subprocess.Popen(
            command,
            env=env,
            cwd=ROOT,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def wait(self, timeout: float, on_tick=None, tick_s: float = 5.0) -> int:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"{self.proc.args[1:3]} did not finish within {timeout:.0f} s (log: {self.log})"
                )
            try:
                return self.proc.wait(timeout=min(tick_s, left))
            except subprocess.TimeoutExpired:
                if on_tick is not None:
                    on_tick()

    def close(self) -> None:
        if self.proc.poll() is None:
            for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)
                try:
                    self.proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._log_file.close()

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


def airflow_command(*args: str) -> list[str]:
    airflow = Path(sys.executable).with_name("airflow")
    return [str(airflow), *args] if airflow.exists() else [sys.executable, "-m", "airflow", *args]
