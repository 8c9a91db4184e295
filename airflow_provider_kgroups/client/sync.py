"""A synchronous facade for callers that are not async (CLI, Airflow poke mode, scripts).

It owns a private event loop on a daemon thread, so it works the same whether or not
the caller's thread already runs a loop. Each verb is a real method with the signature of its
:class:`~.client.AsyncGroupsClient` twin (checked by ``tests/client/test_fake_sync.py``), so type
checkers and IDEs see the same parameters and results.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from .client import AsyncGroupsClient
from .config import ClientConfig
from .deadline import current_deadline, deadline, run_within
from .handlers.fetch import DEFAULT_PARTITION_BYTES
from .handlers.fetch_records import DEFAULT_RECORD_PAGE_BYTES
from .handlers.offset_commit import OffsetToCommit
from .offset_verbs import PartitionOutcomes
from .results import (
    CommittedOffset,
    GroupDeletion,
    GroupDescription,
    GroupOffsets,
    KeyedResults,
    ListedOffset,
    ListGroupsResult,
    RecordPage,
    RecordTimestamp,
    TopicDescription,
    TopicExistence,
    TopicPartition,
)
from .transport import RequestStats

T = TypeVar("T")


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

    # -- the verbs: each blocks on its AsyncGroupsClient twin --------------------------------

    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = (), timeout_s: float | None = None
    ) -> ListGroupsResult:
        """:meth:`AsyncGroupsClient.list_groups`, blocking."""
        return self.run(self.aclient.list_groups(states, types, timeout_s))

    def describe_groups(
        self, group_ids: Iterable[str], timeout_s: float | None = None
    ) -> KeyedResults[str, GroupDescription]:
        """:meth:`AsyncGroupsClient.describe_groups`, blocking."""
        return self.run(self.aclient.describe_groups(group_ids, timeout_s))

    def fetch_committed_offsets(
        self,
        group_ids: Iterable[str],
        topics: Mapping[str, Iterable[int]] | None = None,
        require_stable: bool = False,
        timeout_s: float | None = None,
    ) -> KeyedResults[str, GroupOffsets]:
        """:meth:`AsyncGroupsClient.fetch_committed_offsets`, blocking."""
        return self.run(self.aclient.fetch_committed_offsets(group_ids, topics, require_stable, timeout_s))

    def delete_groups(
        self, group_ids: Iterable[str], timeout_s: float | None = None
    ) -> KeyedResults[str, GroupDeletion]:
        """:meth:`AsyncGroupsClient.delete_groups`, blocking."""
        return self.run(self.aclient.delete_groups(group_ids, timeout_s))

    def commit_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | CommittedOffset | OffsetToCommit],
        timeout_s: float | None = None,
    ) -> KeyedResults[TopicPartition, int]:
        """:meth:`AsyncGroupsClient.commit_offsets`, blocking."""
        return self.run(self.aclient.commit_offsets(group_id, offsets, timeout_s))

    def commit_group_offsets(
        self,
        offsets: Mapping[str, Mapping[TopicPartition, int | CommittedOffset | OffsetToCommit]],
        timeout_s: float | None = None,
    ) -> KeyedResults[str, PartitionOutcomes]:
        """:meth:`AsyncGroupsClient.commit_group_offsets`, blocking."""
        return self.run(self.aclient.commit_group_offsets(offsets, timeout_s))

    def delete_committed_offsets(
        self, partitions: Mapping[str, Iterable[TopicPartition]], timeout_s: float | None = None
    ) -> KeyedResults[str, PartitionOutcomes]:
        """:meth:`AsyncGroupsClient.delete_committed_offsets`, blocking."""
        return self.run(self.aclient.delete_committed_offsets(partitions, timeout_s))

    def describe_share_group_offsets(
        self,
        group_ids: Iterable[str],
        topics: Mapping[str, Iterable[int]] | None = None,
        timeout_s: float | None = None,
    ) -> KeyedResults[str, GroupOffsets]:
        """:meth:`AsyncGroupsClient.describe_share_group_offsets`, blocking."""
        return self.run(self.aclient.describe_share_group_offsets(group_ids, topics, timeout_s))

    def alter_share_group_offsets(
        self, offsets: Mapping[str, Mapping[TopicPartition, int]], timeout_s: float | None = None
    ) -> KeyedResults[str, PartitionOutcomes]:
        """:meth:`AsyncGroupsClient.alter_share_group_offsets`, blocking."""
        return self.run(self.aclient.alter_share_group_offsets(offsets, timeout_s))

    def list_offsets(
        self,
        specs: Mapping[TopicPartition, int],
        *,
        read_committed: bool = False,
        timeout_s: float | None = None,
    ) -> KeyedResults[TopicPartition, ListedOffset]:
        """:meth:`AsyncGroupsClient.list_offsets`, blocking."""
        return self.run(self.aclient.list_offsets(specs, read_committed=read_committed, timeout_s=timeout_s))

    def log_end_offsets(
        self,
        partitions: Iterable[TopicPartition],
        *,
        read_committed: bool = False,
        timeout_s: float | None = None,
    ) -> KeyedResults[TopicPartition, ListedOffset]:
        """:meth:`AsyncGroupsClient.log_end_offsets`, blocking."""
        return self.run(
            self.aclient.log_end_offsets(partitions, read_committed=read_committed, timeout_s=timeout_s)
        )

    def log_start_offsets(
        self, partitions: Iterable[TopicPartition], timeout_s: float | None = None
    ) -> KeyedResults[TopicPartition, ListedOffset]:
        """:meth:`AsyncGroupsClient.log_start_offsets`, blocking."""
        return self.run(self.aclient.log_start_offsets(partitions, timeout_s))

    def offsets_for_timestamp(
        self, partitions: Iterable[TopicPartition], timestamp_ms: int, timeout_s: float | None = None
    ) -> KeyedResults[TopicPartition, ListedOffset]:
        """:meth:`AsyncGroupsClient.offsets_for_timestamp`, blocking."""
        return self.run(self.aclient.offsets_for_timestamp(partitions, timestamp_ms, timeout_s))

    def fetch_record_timestamps(
        self,
        positions: Mapping[TopicPartition, int | Iterable[int]],
        *,
        read_committed: bool = False,
        partition_bytes: int = DEFAULT_PARTITION_BYTES,
        timeout_s: float | None = None,
    ) -> KeyedResults[TopicPartition, dict[int, RecordTimestamp]]:
        """:meth:`AsyncGroupsClient.fetch_record_timestamps`, blocking."""
        return self.run(
            self.aclient.fetch_record_timestamps(
                positions, read_committed=read_committed, partition_bytes=partition_bytes, timeout_s=timeout_s
            )
        )

    def fetch_records(
        self,
        positions: Mapping[TopicPartition, int],
        *,
        read_committed: bool = False,
        page_bytes: int = DEFAULT_RECORD_PAGE_BYTES,
        budgets: dict[TopicPartition, int] | None = None,
        max_wait_ms: int = 1,
        timeout_s: float | None = None,
        decode: bool = True,
    ) -> KeyedResults[TopicPartition, RecordPage]:
        """:meth:`AsyncGroupsClient.fetch_records`, blocking."""
        return self.run(
            self.aclient.fetch_records(
                positions,
                read_committed=read_committed,
                page_bytes=page_bytes,
                budgets=budgets,
                max_wait_ms=max_wait_ms,
                timeout_s=timeout_s,
                decode=decode,
            )
        )

    def describe_topics(
        self, topics: Iterable[str] | None = None, timeout_s: float | None = None
    ) -> dict[str, TopicDescription]:
        """:meth:`AsyncGroupsClient.describe_topics`, blocking."""
        return self.run(self.aclient.describe_topics(topics, timeout_s))

    def check_topics(
        self, topics: Iterable[str], timeout_s: float | None = None
    ) -> KeyedResults[str, TopicExistence]:
        """:meth:`AsyncGroupsClient.check_topics`, blocking."""
        return self.run(self.aclient.check_topics(topics, timeout_s))

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
