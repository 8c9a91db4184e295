"""The public asyncio client: a few verbs over the driver, each one deadline-bound call.

The read verbs live here; the verbs that change committed offsets (commit, delete) in
:mod:`.offset_verbs`, those that read topics' retention settings and sizes in :mod:`.topic_verbs`,
mixed in. Each verb checks its input (:mod:`.inputs`) and runs handlers
through the driver; the request logic lives in ``handlers/``, listing in :mod:`.listing`,
describing in :mod:`.describe`.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

from .chunking import RequestLimits
from .cluster import ClusterMetadata
from .config import ClientConfig
from .deadline import current_deadline, deadline
from .describe import describe_all
from .errors import (
    CLIENT_INCOMPLETE_RESPONSE,
    CLIENT_UNSUPPORTED,
    ConfigurationError,
    ErrorCode,
    Failure,
    UnsupportedVersion,
)
from .handlers.base import Handler
from .handlers.fetch_sizes import DEFAULT_PARTITION_BYTES, DEFAULT_RECORD_PAGE_BYTES
from .handlers.list_offsets import (
    EARLIEST,
    LATEST,
    MAX_TIMESTAMP,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    ListOffsetsHandler,
)
from .handlers.offset_fetch import OffsetFetchHandler
from .inputs import (
    check_timeout,
    group_states,
    group_types,
    partitions_of,
    topic_filter,
    topic_names,
    unsendable_group_ids,
)
from .listing import list_everywhere
from .lookup import CoordinatorLookup, LeaderLookup
from .numbers import check_int, is_int
from .offset_verbs import OffsetVerbs
from .results import (
    GROUP_TYPES,
    GroupDeletion,
    GroupDescription,
    GroupOffsets,
    GroupState,
    KeyedResults,
    ListedOffset,
    ListGroupsResult,
    RecordPage,
    RecordTimestamp,
    TopicDescription,
    TopicExistence,
    TopicPartition,
)
from .runner import Call, InFlight, beside_bootstrap, locate, refresh, run
from .selection import validate_group_ids
from .topic_verbs import TopicVerbs
from .transport import ConnectionPool, RequestStats

log = logging.getLogger(__name__)
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

OFFSET_SPECS = {"latest": LATEST, "earliest": EARLIEST, "max_timestamp": MAX_TIMESTAMP}

#: The handlers of the verbs the lag path never calls (delete, fetch, commit-side and topic verbs),
#: imported by their verb on its first call, so that a lag run never builds their message
#: classes; whoever must not import on an event loop (a trigger: ``triggers/loading.py``) loads
#: them beforehand.
VERB_HANDLERS = (
    "airflow_provider_kgroups.client.handlers.delete_groups",
    "airflow_provider_kgroups.client.handlers.describe_configs",
    "airflow_provider_kgroups.client.handlers.describe_log_dirs",
    "airflow_provider_kgroups.client.handlers.fetch",
    "airflow_provider_kgroups.client.handlers.fetch_records",
    "airflow_provider_kgroups.client.handlers.offset_delete",
    "airflow_provider_kgroups.client.handlers.share_offsets",
    "airflow_provider_kgroups.client.transport.authenticator",
)


class AsyncGroupsClient(OffsetVerbs, TopicVerbs):
    """Batched consumer-group administration for many groups at once.

    Every verb takes an optional ``timeout_s`` (default ``config.call_timeout_s``) for the
    whole call; each key gets its own value or :class:`~.errors.Failure`.
    """

    def __init__(self, config: ClientConfig, stats: RequestStats | None = None) -> None:
        self.config = config
        self.metadata = ClusterMetadata(config.bootstrap_servers)
        self.pool = ConnectionPool(config, self.metadata, stats)
        self._limits = RequestLimits.of(config)
        self._coordinators = CoordinatorLookup(self.metadata, limits=self._limits)
        self._leaders = LeaderLookup(self.metadata)
        self._in_flight = InFlight()  # lookups that calls running side by side share
        #: group id -> its type as a listing or a describe last reported it: the describe API to try first
        self._group_types: dict[str, str] = {}

    @property
    def stats(self) -> RequestStats:
        return self.pool.stats

    async def __aenter__(self) -> AsyncGroupsClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.pool.close()

    def _call(self, timeout_s: float | None) -> Call:
        check_timeout(timeout_s)
        return Call.start(
            self.pool, self.metadata, self.config, timeout_s, current_deadline(), self._in_flight
        )

    def deadline(self, seconds: float | None = None) -> deadline:
        """One deadline for several calls: ``async with aclient.deadline(20): ...`` (or plain
        ``with``); each call inside ends by the earlier of its own timeout and this deadline.
        ``seconds`` defaults to ``config.call_timeout_s``."""
        return deadline(self.config.call_timeout_s if seconds is None else seconds)

    async def _run(self, call: Call, handler: Handler[K, V], keys: Iterable[K]) -> KeyedResults[K, V]:
        # raises NoBrokerAvailable when nothing answers Metadata
        return await beside_bootstrap(call, run(call, handler, keys))

    async def _run_groups(
        self, call: Call, handler: Handler[str, V], group_ids: list[str]
    ) -> KeyedResults[str, V]:
        """``_run`` for group-keyed APIs: an id Kafka's protocol cannot carry fails alone, unsent
        (it would otherwise break the FindCoordinator and the request shared with other groups)."""
        refused = unsendable_group_ids(group_ids)
        sendable = [g for g in group_ids if g not in refused]
        results = await self._run(call, handler, sendable) if sendable else KeyedResults()
        return KeyedResults(results.values, {**results.failures, **refused}) if refused else results

    # -- groups ------------------------------------------------------------------------------

    async def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = (), timeout_s: float | None = None
    ) -> ListGroupsResult:
        """Every group on every broker (ListGroups goes to each broker: it lists what it coordinates).
        States match case-insensitively, as in Kafka (``stable`` is ``Stable``); a broker too old
        to filter (states v4, types v5) or that cannot tell a state has its groups described and
        filtered here (:mod:`.listing`)."""
        wanted_states, wanted_types = group_states(states), group_types(types)
        call = self._call(timeout_s)
        await refresh(call)
        result, coordinators = await list_everywhere(
            lambda handler, keys: self._run(call, handler, keys),
            lambda ids: self._describe(call, ids),
            self.metadata.brokers,
            wanted_states,
            wanted_types,
        )
        self._coordinators.learn(coordinators)
        self._group_types.update(
            (g.group_id, g.group_type) for g in result.groups if g.group_type in GROUP_TYPES
        )
        return result

    async def describe_groups(
        self, group_ids: Iterable[str], timeout_s: float | None = None
    ) -> KeyedResults[str, GroupDescription]:
        """State, type, protocol and members with their assignments, for groups of every type
        (classic, consumer, share, streams): see :mod:`.describe` for which API asks what.

        A group's type learnt from :meth:`list_groups` (ListGroups v5) or an earlier describe
        picks its describe API at once; without one, DescribeGroups goes first: it describes
        classic groups (still most groups) in one request per coordinator. (Asking
        ConsumerGroupDescribe first, as the Java client does, costs a second round for every
        classic group, and brokers such as Tansu answer it for classic groups too, without
        their members.) A group is Dead only when no API that could hold it has it.
        """
        ids = validate_group_ids(group_ids)
        return await self._describe(self._call(timeout_s), ids)

    async def _describe(self, call: Call, ids: list[str]) -> KeyedResults[str, GroupDescription]:
        refused = unsendable_group_ids(ids)
        sendable = [g for g in ids if g not in refused]
        result = (
            await beside_bootstrap(
                call,
                describe_all(
                    lambda handler, keys: run(call, handler, keys),
                    self._coordinators,
                    sendable,
                    self._group_types,
                    lambda keys: locate(call, self._coordinators, keys),
                    limits=self._limits,
                ),
            )
            if sendable
            else KeyedResults()
        )
        for group_id, description in result.values.items():
            if description.state is GroupState.DEAD:
                self._group_types.pop(group_id, None)
            else:
                self._group_types[group_id] = description.group_type
        failures = {**result.failures, **refused}
        return KeyedResults(dict(result.values), {g: failures[g] for g in ids if g in failures})

    async def fetch_committed_offsets(
        self,
        group_ids: Iterable[str],
        topics: Mapping[str, Iterable[int]] | None = None,
        require_stable: bool = False,
        timeout_s: float | None = None,
    ) -> KeyedResults[str, GroupOffsets]:
        """Committed offsets per group (all partitions it committed, or only ``topics``).

        What an all-partitions read (``topics=None``) proves, and what it cannot: Kafka
        (KafkaApis.fetchAllOffsetsForGroup) silently leaves out every topic this principal may
        not Describe, and answers an unknown group with no partitions and no error. So the
        offsets it returns are real, but a partition or topic *missing* from it proves neither
        "no committed offset" nor "topic gone": the topic may be hidden by an ACL. Name the
        topics (``topics={...}``) to get each hidden partition back with
        TOPIC_AUTHORIZATION_FAILED as its ``error``, and use :meth:`check_topics` to prove a
        topic absent (ABSENT) rather than invisible (NOT_VISIBLE). A group the principal may not
        Describe is a GROUP_AUTHORIZATION_FAILED failure for that group alone, never retried.

        ``require_stable``: a partition with pending transactional offsets (Kafka 3.x answers
        UNSTABLE_OFFSET_COMMIT per partition; 4.x holds the fetch, then answers NOT_COORDINATOR)
        makes its group ask again after a backoff until the offsets are stable or the call's
        deadline passes; then the group fails with a timeout naming the reason and partitions.
        """
        ids = validate_group_ids(group_ids)
        wanted = topic_filter(topics)
        call = self._call(timeout_s)
        handler = OffsetFetchHandler(self._coordinators, wanted, require_stable, limits=self._limits)
        return await self._run_groups(call, handler, ids)

    async def delete_groups(
        self, group_ids: Iterable[str], timeout_s: float | None = None
    ) -> KeyedResults[str, GroupDeletion]:
        """Delete groups; the broker refuses non-empty (NON_EMPTY_GROUP) and unknown groups per group.

        A group whose delete request got no response and whose retry answered GROUP_ID_NOT_FOUND
        is ``GroupDeletion.CONFIRMED_GONE_AFTER_LOST_RESPONSE``, not a failure (see
        :mod:`.handlers.delete_groups`)."""
        from .handlers.delete_groups import DeleteGroupsHandler  # on first use: VERB_HANDLERS

        ids = validate_group_ids(group_ids)
        handler = DeleteGroupsHandler(self._coordinators, limits=self._limits)
        return await self._run_groups(self._call(timeout_s), handler, ids)

    # -- partitions --------------------------------------------------------------------------

    async def list_offsets(
        self,
        specs: Mapping[TopicPartition, int],
        *,
        read_committed: bool = False,
        timeout_s: float | None = None,
    ) -> KeyedResults[TopicPartition, ListedOffset]:
        """ListOffsets by partition leader. A spec is -1 latest, -2 earliest, -3 max timestamp, or a ms timestamp."""
        tps = partitions_of(specs)
        for tp in tps:
            check_int(
                f"the offset spec for {tp}",
                specs[tp],
                at_least=MAX_TIMESTAMP,
                must_be="-1 (latest), -2 (earliest), -3 (max timestamp) or a timestamp in ms",
            )
        if not tps:
            return KeyedResults()
        handler = ListOffsetsHandler(
            self._leaders, dict(specs), READ_COMMITTED if read_committed else READ_UNCOMMITTED
        )
        return await self._run(self._call(timeout_s), handler, tps)

    async def log_end_offsets(
        self,
        partitions: Iterable[TopicPartition],
        *,
        read_committed: bool = False,
        timeout_s: float | None = None,
    ) -> KeyedResults[TopicPartition, ListedOffset]:
        return await self.list_offsets(
            {tp: LATEST for tp in partitions_of(partitions)},
            read_committed=read_committed,
            timeout_s=timeout_s,
        )

    async def log_start_offsets(
        self, partitions: Iterable[TopicPartition], timeout_s: float | None = None
    ) -> KeyedResults[TopicPartition, ListedOffset]:
        return await self.list_offsets(
            {tp: EARLIEST for tp in partitions_of(partitions)}, timeout_s=timeout_s
        )

    async def offsets_for_timestamp(
        self, partitions: Iterable[TopicPartition], timestamp_ms: int, timeout_s: float | None = None
    ) -> KeyedResults[TopicPartition, ListedOffset]:
        """The first offset whose record timestamp is >= ``timestamp_ms``; -1 (Kafka's answer) when no
        record is that recent."""
        check_int("timestamp_ms", timestamp_ms, at_least=0, must_be="a non-negative int (ms since the epoch)")
        return await self.list_offsets(
            {tp: timestamp_ms for tp in partitions_of(partitions)}, timeout_s=timeout_s
        )

    async def fetch_record_timestamps(
        self,
        positions: Mapping[TopicPartition, int | Iterable[int]],
        *,
        read_committed: bool = False,
        partition_bytes: int = DEFAULT_PARTITION_BYTES,
        timeout_s: float | None = None,
    ) -> KeyedResults[TopicPartition, dict[int, RecordTimestamp]]:
        """The timestamp of the record at (or first after) each offset: per partition,
        ``{offset: RecordTimestamp}``. One small Fetch per partition leader for all its
        partitions (``partition_bytes`` each, grown only for a batch that does not fit);
        several offsets of one partition are answered from one page where they fit, and
        the rest from further pages, each again one request per leader."""
        from .handlers.fetch import FetchTimestampHandler  # on first use: VERB_HANDLERS

        wanted: dict[TopicPartition, list[int]] = {}
        for tp in partitions_of(positions):
            position = positions[tp]
            offsets = list(position) if isinstance(position, Iterable) else [position]
            if not offsets or not all(is_int(o) and o >= 0 for o in offsets):
                raise ConfigurationError(f"offsets {positions[tp]!r} for {tp} are not non-negative ints.")
            wanted[tp] = sorted(set(offsets))
        check_int("partition_bytes", partition_bytes, at_least=1024)
        call = self._call(timeout_s)
        isolation = READ_COMMITTED if read_committed else READ_UNCOMMITTED
        values: dict[TopicPartition, dict[int, RecordTimestamp]] = {}
        failures: dict[TopicPartition, Failure] = {}
        budgets: dict[TopicPartition, int] = {}
        starts: dict[TopicPartition, int] = {}
        while wanted:
            handler = FetchTimestampHandler(
                self._leaders, wanted, isolation, partition_bytes, budgets, starts
            )
            pages = await self._run(call, handler, list(wanted))
            failures.update(pages.failures)
            next_wanted: dict[TopicPartition, list[int]] = {}
            next_starts: dict[TopicPartition, int] = {}
            for tp, page in pages.values.items():
                values.setdefault(tp, {}).update(page.found)
                if not page.unresolved:
                    continue
                # Next page: what this page did not reach; a page that moved nothing forward ends it.
                next_start = -1 if page.next_start is None else page.next_start
                if page.found or next_start > starts.get(tp, -1):
                    next_wanted[tp] = list(page.unresolved)
                    budgets[tp] = page.budget_bytes
                    if page.next_start is not None:
                        next_starts[tp] = page.next_start
                else:
                    failures[tp] = Failure(
                        CLIENT_INCOMPLETE_RESPONSE, f"Fetch made no progress at offset {page.unresolved[0]}"
                    )
            wanted, starts = next_wanted, next_starts
        return KeyedResults(values, failures)

    async def fetch_records(
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
        """One page of records per partition from ``positions[tp]``: one Fetch per leader for all
        its partitions, about ``page_bytes`` per partition (grown for a batch that does not fit;
        pass the same ``budgets`` dict to the next call to keep the grown size); the leader waits
        up to ``max_wait_ms`` for data. Reading a whole range, with gap and retention checks:
        :class:`~.records.RangeReader`. ``decode=False``: data batches stay undecoded (``RecordPage.batches``)."""
        from .handlers.fetch_records import FetchRecordsHandler  # on first use: VERB_HANDLERS

        tps = partitions_of(positions)
        for tp in tps:
            check_int(f"the fetch offset for {tp}", positions[tp], at_least=0)
        check_int("page_bytes", page_bytes, at_least=1024)
        if not tps:
            return KeyedResults()
        budgets = budgets if budgets is not None else {}
        for tp in tps:
            budgets.setdefault(tp, page_bytes)
        check_int("max_wait_ms", max_wait_ms, at_least=0, at_most=30_000)
        handler = FetchRecordsHandler(
            self._leaders,
            {tp: positions[tp] for tp in tps},
            READ_COMMITTED if read_committed else READ_UNCOMMITTED,
            budgets,
            max_wait_ms,
            decode,
        )
        pages = await self._run(self._call(timeout_s), handler, tps)
        for tp, page in pages.values.items():
            budgets[tp] = page.budget_bytes  # the caller's next page starts from the grown budget
        return pages

    async def describe_topics(
        self, topics: Iterable[str] | None = None, timeout_s: float | None = None
    ) -> dict[str, TopicDescription]:
        """Partitions and leaders of ``topics`` (None: every topic). Unknown topics are left out,
        and so are topics this principal may not Describe (Kafka hides them): a topic missing
        here is not proven absent; :meth:`check_topics` tells the two apart. Named topics need
        a broker with Metadata v4+ (older ones would create them): else :class:`UnsupportedVersion`."""
        call = self._call(timeout_s)
        names = None if topics is None else sorted(set(topics))
        await refresh(call, names)
        wanted = (
            self.metadata.topics
            if names is None
            else {n: self.metadata.topics[n] for n in names if n in self.metadata.topics}
        )
        return dict(wanted)

    async def check_topics(
        self, topics: Iterable[str], timeout_s: float | None = None
    ) -> KeyedResults[str, TopicExistence]:
        """Whether each topic exists, as far as this principal can tell: one Metadata request
        naming the topics (``KafkaApis.handleTopicMetadataRequest``).

        EXISTS, ABSENT (UNKNOWN_TOPIC_OR_PARTITION: the topic is gone) or NOT_VISIBLE
        (TOPIC_AUTHORIZATION_FAILED: Kafka answers it whether or not the topic exists, so it
        proves nothing). Any other answer, or a topic the response left out, is a Failure for
        that topic. This is the one way to prove a topic absent: an all-topics listing and an
        all-partitions OffsetFetch silently leave out what the principal may not Describe.
        """
        names = topic_names(topics)
        if not names:
            return KeyedResults()
        try:
            answered = await refresh(self._call(timeout_s), names)
        except UnsupportedVersion as exc:  # only brokers below Metadata v4: naming a topic could create it
            failure = Failure(CLIENT_UNSUPPORTED, str(exc))
            return KeyedResults({}, dict.fromkeys(names, failure))
        values: dict[str, TopicExistence] = {}
        failures: dict[str, Failure] = {}
        for name in names:
            code = answered.get(name)
            if code is None:
                failures[name] = Failure(CLIENT_INCOMPLETE_RESPONSE, "missing from the Metadata response")
            elif code in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE):  # 5: exists, electing a leader
                values[name] = TopicExistence.EXISTS
            elif code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                values[name] = TopicExistence.ABSENT
            elif code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                values[name] = TopicExistence.NOT_VISIBLE
            else:
                failures[name] = Failure(code, "Metadata for the named topic")
        return KeyedResults(values, failures)
