"""Step boundaries of a change to groups' offsets, for tests that kill a real process there.

Inert in production: unless the environment variable ``KGROUPS_STEP_SOCKET`` names a Unix
socket, :func:`reached` returns at once and does nothing. When it does, the process connects
to that socket (once), writes ``reached <step>`` and waits for the listener's ``go``: a test
that wants the process dead at that boundary never answers and kills it with SIGKILL, so it
waits on the boundary itself instead of sleeping and hoping.

The boundaries, in order (one change may pass ``change_sent`` once per request):
``before_backup``, ``after_backup``, ``after_intent``, ``change_sent`` (the request is written
to the broker's socket, its answer not yet read), ``change_answered``, ``before_outcome``.
Standard library only: the transport calls it too.
"""

from __future__ import annotations

import os
import socket

__all__ = ["ENV_STEP_SOCKET", "STEPS", "reached"]

ENV_STEP_SOCKET = "KGROUPS_STEP_SOCKET"
STEPS = ("before_backup", "after_backup", "after_intent", "change_sent", "change_answered", "before_outcome")

_connection: socket.socket | None = None


def reached(step: str) -> None:
    """Report ``step`` and wait for leave to go on (only under a test's ``KGROUPS_STEP_SOCKET``)."""
    global _connection
    path = os.environ.get(ENV_STEP_SOCKET)
    if not path:
        return
    if _connection is None:
        _connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _connection.connect(path)
    _connection.sendall(f"reached {step}\n".encode())
    answer = b""
    while not answer.endswith(b"\n"):
        chunk = _connection.recv(64)
        if not chunk:  # the listener went away: the test is over, so is this process
            os._exit(70)
        answer += chunk
