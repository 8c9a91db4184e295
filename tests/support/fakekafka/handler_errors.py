"""Exceptions raised inside the fake's handlers: bugs of the fake, never broker answers.

A handler that raises closes the client's connection without an answer (:func:`.dispatch.respond`),
which a client may well survive by retrying, so a test could pass over a broken fake. Each error
is kept twice: on its cluster (``cluster.handler_errors``, what a test that provokes one asserts)
and in :data:`RAISED`, every cluster's in this process in order, which the pytest plugin
(``tests/support/pytest_fakekafka.py``) reads to fail any test during which one was raised.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cluster import FakeCluster

__all__ = ["HandlerError", "RAISED", "record"]


@dataclass(frozen=True)
class HandlerError:
    """One exception of one handler, with the request it was answering."""

    node: int
    api: str
    version: int
    error: BaseException

    def __str__(self) -> str:
        return f"the fake's {self.api} v{self.version} handler on node {self.node} raised {self.error!r}"


#: every handler error of every fake cluster in this process, oldest first (append-only)
RAISED: list[HandlerError] = []
_lock = threading.Lock()  # threaded clusters record from their own loop's thread


def record(cluster: FakeCluster, node: int, api: str, version: int, error: BaseException) -> None:
    with _lock:
        cluster.handler_errors.append(error)
        RAISED.append(HandlerError(node, api, version, error))
