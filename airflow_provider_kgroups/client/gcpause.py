"""Fewer garbage collections while a call builds a large answer.

A snapshot of 100,000 groups builds millions of small objects (decoded entries, committed
offsets, partition lags) that live until the call returns and hold no reference cycles.
CPython's collector, at its default thresholds (700 new objects per young collection), scans
them again and again as they age, which costs a large share of such a call's CPU. A young
collection scans what is alive of the young objects, so at a high threshold most of a streamed
read's batches are gone before one runs. While at least one such call runs, the young threshold
is raised to :data:`YOUNG_THRESHOLD` (cycles are still collected, just less often); the last
call to finish puts the thresholds back. What it saves, at this threshold and at the ones tried
before it, is measured in docs/performance.rst ("Where the time went, and what changed", and the
second round of "100,000 groups and the table").
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 1_000_000

_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def fewer_collections() -> Iterator[None]:
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            if _saved[0] and _saved[0] < YOUNG_THRESHOLD:  # 0: the collector is off; leave it so
                gc.set_threshold(YOUNG_THRESHOLD, *_saved[1:])
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                if gc.get_threshold()[0] == YOUNG_THRESHOLD:  # not changed by anyone else meanwhile
                    gc.set_threshold(*_saved)
                _saved = None


def no_collection_at_exit() -> None:
    """For a process that ends when its work is done (the command line): at exit, the objects
    still alive (every imported module's classes and functions) are frozen (``gc.freeze``), so
    the collections the interpreter runs while it shuts down do not scan them (the gain is
    measured in docs/performance.rst). Nothing is left
    unfinished: atexit handlers and stream flushes run as before; only cycles among those
    objects are not collected, and the process's memory goes back to the system anyway."""
    atexit.register(gc.freeze)
