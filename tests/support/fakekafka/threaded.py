"""Run a FakeCluster on its own event loop in a daemon thread, for synchronous callers
(Airflow tests, kafka-python and librdkafka peers).

The state, fault and request-log helpers are thread-safe and are passed straight through;
the coroutine methods (``stop_broker``, ``start_broker``) become blocking calls.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

from .cluster import FakeCluster

__all__ = ["ThreadedFakeCluster"]

T = TypeVar("T")


class ThreadedFakeCluster:
    """``with FakeCluster.running_in_thread(brokers=9) as cluster: cluster.add_group(...)``"""

    def __init__(self, cluster: FakeCluster, *, timeout: float = 30.0) -> None:
        self.cluster = cluster
        self.timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ThreadedFakeCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="fakekafka", daemon=True)
        self._thread.start()
        ready.wait(self.timeout)
        self.run(self.cluster.start())

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            self.run(self.cluster.stop())
        finally:

            async def cancel_rest() -> None:
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            asyncio.run_coroutine_threadsafe(cancel_rest(), loop).result(self.timeout)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(self.timeout)
            loop.close()
            self._loop = self._thread = None

    def run(self, awaitable: Awaitable[T]) -> T:
        """Run a coroutine on the cluster's loop and wait for its result."""
        assert self._loop is not None, "the cluster is not running"
        return asyncio.run_coroutine_threadsafe(awaitable, self._loop).result(self.timeout)  # type: ignore[arg-type]  # a coroutine, typed Awaitable

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    def stop_broker(self, node: int) -> None:
        self.run(self.cluster.stop_broker(node))

    def start_broker(self, node: int) -> None:
        self.run(self.cluster.start_broker(node))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)
