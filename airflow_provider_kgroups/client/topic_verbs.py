"""The verbs that read what decides when a topic's records are deleted: its retention settings
(DescribeConfigs, one request to any broker) and its partitions' sizes on their leaders
(DescribeLogDirs, one request per leader). Mixed into :class:`~.client.AsyncGroupsClient`; kept
apart so the client module stays the groups' and offsets' home.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from .inputs import partitions_of, topic_names
from .results import KeyedResults, TopicPartition, TopicRetention

if TYPE_CHECKING:
    from .lookup import LeaderLookup
    from .runner import Call


class TopicVerbs:
    """Topic settings and sizes. Expects the client's ``_leaders``, ``_call`` and ``_run``."""

    _leaders: LeaderLookup
    _call: Callable[[float | None], Call]
    _run: Callable[..., Awaitable[KeyedResults[Any, Any]]]

    async def describe_topic_retention(
        self, topics: Iterable[str], timeout_s: float | None = None
    ) -> KeyedResults[str, TopicRetention]:
        """Each topic's retention settings (``retention.ms``, ``retention.bytes``,
        ``cleanup.policy``, ``message.timestamp.type``, the segment and local-retention ones), and
        for each whether the topic overrides it or takes the broker's value
        (:class:`~.results.TopicRetention`): one DescribeConfigs for every topic, to the
        least-loaded broker. An unknown topic (UNKNOWN_TOPIC_OR_PARTITION) or one this principal
        may not DescribeConfigs (TOPIC_AUTHORIZATION_FAILED) is that topic's Failure."""
        from .handlers.describe_configs import DescribeConfigsHandler  # on first use: client.VERB_HANDLERS

        names = topic_names(topics)
        if not names:
            return KeyedResults()
        results: KeyedResults[str, TopicRetention] = await self._run(
            self._call(timeout_s), DescribeConfigsHandler(), names
        )
        return results

    async def describe_log_dir_sizes(
        self, partitions: Iterable[TopicPartition], timeout_s: float | None = None
    ) -> KeyedResults[TopicPartition, int]:
        """Each partition's size in bytes on its leader (its log segments there; with tiered
        storage, the local part): one DescribeLogDirs per leader. Needs Describe on the cluster
        (else every partition fails with CLUSTER_AUTHORIZATION_FAILED)."""
        from .handlers.describe_log_dirs import DescribeLogDirsHandler  # on first use: client.VERB_HANDLERS

        tps = partitions_of(partitions)
        if not tps:
            return KeyedResults()
        results: KeyedResults[TopicPartition, int] = await self._run(
            self._call(timeout_s), DescribeLogDirsHandler(self._leaders), tps
        )
        return results
