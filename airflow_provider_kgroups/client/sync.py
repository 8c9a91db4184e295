"""A synchronous facade for callers that are not async (CLI, Airflow poke mode, scripts).

It owns a private event loop on a daemon thread, so it works the same whether or not
the caller's thread already runs a loop. Each verb is made from its
:class:`~.client.AsyncGroupsClient` twin by :func:`blocking` (one line per verb), so it has the
twin's parameters and result for type checkers, IDEs and ``inspect.signature``;
``tests/client/test_sync_drift.py`` fails when an async verb has no blocking twin.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from .client import AsyncGroupsClient
from .config import ClientConfig
from .deadline import current_deadline, deadline, run_within
from .transport import RequestStats

T = TypeVar("T")
P = ParamSpec("P")


def blocking(
    verb: Callable[Concatenate[AsyncGroupsClient, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[GroupsClient, P], T]:
    """The blocking twin of an :class:`AsyncGroupsClient` verb: the same parameters (type checkers
    see them through ``P``; ``inspect.signature`` through ``__wrapped__``), run on the client's
    loop by :meth:`GroupsClient.run`. The verb is looked up on ``aclient`` by name at each call,
    so a subclass's or a test's replacement is the one that runs."""
    name = verb.__name__

    @functools.wraps(verb)
    def twin(self: GroupsClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        coroutine: Coroutine[Any, Any, T] = getattr(self.aclient, name)(*args, **kwargs)
        return self.run(coroutine)

    twin.__doc__ = f":meth:`AsyncGroupsClient.{name}`, blocking."
    return twin


class GroupsClient:
    """Same verbs as :class:`AsyncGroupsClient`, blocking. Use as a context manager or call ``close()``."""

    def __init__(self, config: ClientConfig, stats: RequestStats | None = None) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kgroups-client", daemon=True)
        self._thread.start()
        self.aclient = AsyncGroupsClient(config, stats)

    @property
    def stats(self) -> RequestStats:
        return self.aclient.stats

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run any coroutine (e.g. one using ``self.aclient``) on the client's loop and wait for it.
        The caller's deadline (``with client.deadline(s):``) goes along into the loop thread."""
        return asyncio.run_coroutine_threadsafe(
            run_within(current_deadline(), coroutine), self._loop
        ).result()

    def deadline(self, seconds: float | None = None) -> deadline:
        """One deadline for every call in the block: ``with client.deadline(20): ...``
        (default ``config.call_timeout_s``)."""
        return deadline(self.config.call_timeout_s if seconds is None else seconds)

    # -- the verbs: each blocks on its AsyncGroupsClient twin (made by :func:`blocking`) -------

    list_groups = blocking(AsyncGroupsClient.list_groups)
    describe_groups = blocking(AsyncGroupsClient.describe_groups)
    fetch_committed_offsets = blocking(AsyncGroupsClient.fetch_committed_offsets)
    delete_groups = blocking(AsyncGroupsClient.delete_groups)
    commit_offsets = blocking(AsyncGroupsClient.commit_offsets)
    commit_group_offsets = blocking(AsyncGroupsClient.commit_group_offsets)
    delete_committed_offsets = blocking(AsyncGroupsClient.delete_committed_offsets)
    describe_share_group_offsets = blocking(AsyncGroupsClient.describe_share_group_offsets)
    alter_share_group_offsets = blocking(AsyncGroupsClient.alter_share_group_offsets)
    list_offsets = blocking(AsyncGroupsClient.list_offsets)
    log_end_offsets = blocking(AsyncGroupsClient.log_end_offsets)
    log_start_offsets = blocking(AsyncGroupsClient.log_start_offsets)
    offsets_for_timestamp = blocking(AsyncGroupsClient.offsets_for_timestamp)
    fetch_record_timestamps = blocking(AsyncGroupsClient.fetch_record_timestamps)
    fetch_records = blocking(AsyncGroupsClient.fetch_records)
    describe_topics = blocking(AsyncGroupsClient.describe_topics)
    check_topics = blocking(AsyncGroupsClient.check_topics)
    describe_topic_retention = blocking(AsyncGroupsClient.describe_topic_retention)
    describe_log_dir_sizes = blocking(AsyncGroupsClient.describe_log_dir_sizes)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self.run(self.aclient.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()

    def __enter__(self) -> GroupsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
