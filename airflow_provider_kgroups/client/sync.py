"""A synchronous facade for callers that are not async (CLI, Airflow poke mode, scripts).

It owns a private event loop on a daemon thread, so it works the same whether or not
the caller's thread already runs a loop.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from .client import AsyncGroupsClient
from .config import ClientConfig
from .deadline import current_deadline, deadline, run_within
from .transport import RequestStats


class GroupsClient:
    """Same verbs as :class:`AsyncGroupsClient`, blocking. Use as a context manager or call ``close()``."""

    _VERBS = ("list_groups", "describe_groups", "fetch_committed_offsets", "delete_groups", "list_offsets",
              "log_end_offsets", "log_start_offsets", "offsets_for_timestamp", "describe_topics",
              "fetch_record_timestamps", "commit_offsets", "fetch_records", "check_topics",
              "commit_group_offsets", "delete_committed_offsets", "describe_share_group_offsets",
              "alter_share_group_offsets")

    def __init__(self, config: ClientConfig, stats: RequestStats | None = None) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kgroups-client", daemon=True)
        self._thread.start()
        self.aclient = AsyncGroupsClient(config, stats)

    @property
    def stats(self) -> RequestStats:
        return self.aclient.stats

    def run(self, coroutine) -> Any:
        """Run any coroutine (e.g. one using ``self.aclient``) on the client's loop and wait for it.
        The caller's deadline (``with client.deadline(s):``) goes along into the loop thread."""
        return asyncio.run_coroutine_threadsafe(run_within(current_deadline(), coroutine), self._loop).result()

    def deadline(self, seconds: float | None = None) -> deadline:
        """One deadline for every call in the block: ``with client.deadline(20): ...``
        (default ``config.call_timeout_s``)."""
        return deadline(self.config.call_timeout_s if seconds is None else seconds)

    def __getattr__(self, name: str):
        if name not in self._VERBS:
            raise AttributeError(name)
        verb = getattr(self.aclient, name)

        def call(*args, **kwargs):
            return self.run(verb(*args, **kwargs))

        call.__name__ = name
        call.__doc__ = verb.__doc__
        return call

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self.run(self.aclient.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()

    def __enter__(self) -> "GroupsClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
