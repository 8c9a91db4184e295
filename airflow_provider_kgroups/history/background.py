"""One background thread for a reader's writes that no answer should wait for (date rows, merges
of rollups): each job named, a job not given again while it runs, and a way to wait for them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor, wait

__all__ = ["Background"]


class Background:
    def __init__(self, name: str) -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None  # started on the first job
        self._jobs: dict[Hashable, Future] = {}
        self._lock = threading.Lock()

    def submit(self, key: Hashable, job: Callable, *args) -> None:
        """Run ``job(*args)`` in the thread, unless the job named ``key`` is still waiting or running."""
        with self._lock:
            running = self._jobs.get(key)
            if running is not None and not running.done():
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix=self._name)
            self._jobs = {k: f for k, f in self._jobs.items() if not f.done()}
            self._jobs[key] = self._pool.submit(job, *args)

    def wait(self, timeout_s: float | None = None) -> None:
        """Until the jobs given so far are done (or failed), at most ``timeout_s``."""
        with self._lock:
            pending = list(self._jobs.values())
        wait(pending, timeout=timeout_s)
