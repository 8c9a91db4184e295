"""``ConsumerLagEventTrigger``: start DAGs from lag, with Airflow 3's event-driven scheduling.

An asset watched by this trigger gets an event each time the watched consumer groups have
finished reading the next offset range of their topics (:mod:`..lag.watch`: a barrier fixed
when the range opened, or a lag threshold); the event's extra carries the range as Spark's
``startingOffsets``/``endingOffsets`` (the same JSON the ConsumerLagSensor's XCom carries), so
a DAG scheduled on the asset processes exactly that range::

    orders_range = Asset("kgroups://orders-landing/orders", watchers=[AssetWatcher(
        name="orders_landed", trigger=ConsumerLagEventTrigger(
            kafka_groups_conn_id="kgroups_default", group_ids=["orders-landing"], topics=["orders"]))])

    @dag(schedule=[orders_range])
    def process():
        @task
        def totals(triggering_asset_events=None):
            gate = range_from_events(triggering_asset_events[orders_range])  # startingOffsets, endingOffsets
            ...

Sharing: watchers with the same connection and poll interval share one poll loop in the
triggerer (``shared_stream_key``): each poll is one batched snapshot of every group and topic
they watch, so a hundred watched assets cost one snapshot per poll, not a hundred.

Restarts: where the last range ended is kept in the asset's state store (key
:data:`STATE_KEY`), so a restarted triggerer goes on from there, with no gap and no overlap.
The kwargs carry the connection id only: the connection is resolved with Airflow's async
lookup inside the triggerer, never serialized.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any, AsyncIterator, Hashable, Iterable, Mapping

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from ..client.errors import ConfigurationError, KafkaGroupsError, is_retriable
from ..arguments import parse_interval, parse_names, parse_offset_count
from .loading import load_engine

if TYPE_CHECKING:
    from ..hooks.groups import KafkaGroupsHook
    from ..lag.watch import RangeWatch

log = logging.getLogger(__name__)

STATE_KEY = "kgroups_range_end"
SHARED_STREAM = "kgroups-lag-ranges"

#: What each shared poll must read: stream key -> subscriber -> (groups, topics). The triggerer
#: runs all triggers on one event loop in one process, so a plain dict is the meeting point.
_SUBSCRIBERS: dict[Hashable, dict[int, tuple[tuple[str, ...], tuple[str, ...]]]] = {}


class ConsumerLagEventTrigger(BaseEventTrigger):
    def __init__(self, *, kafka_groups_conn_id: str, group_ids: Iterable[str], topics: Iterable[str],
                 poll_interval: float = 60.0, max_total_lag: int | None = None, read_committed: bool = False) -> None:
        super().__init__()
        if not isinstance(kafka_groups_conn_id, str) or not kafka_groups_conn_id.strip():
            raise ConfigurationError(f"kafka_groups_conn_id must name a connection, got {kafka_groups_conn_id!r}.")
        self.kafka_groups_conn_id = kafka_groups_conn_id
        self.group_ids = tuple(parse_names("group_ids", list(group_ids)))
        self.topics = tuple(parse_names("topics", list(topics)))
        self.poll_interval = float(parse_interval("poll_interval", poll_interval))
        self.max_total_lag = parse_offset_count("max_total_lag", max_total_lag)
        self.read_committed = bool(read_committed)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "kafka_groups_conn_id": self.kafka_groups_conn_id, "group_ids": list(self.group_ids),
            "topics": list(self.topics), "poll_interval": self.poll_interval, "max_total_lag": self.max_total_lag,
            "read_committed": self.read_committed})

    # -- one watcher alone ----------------------------------------------------------------------

    async def run(self) -> AsyncIterator[TriggerEvent]:
        await load_engine()  # off the event loop (see .loading)
        from ..hooks.groups import KafkaGroupsHook

        hook = KafkaGroupsHook(self.kafka_groups_conn_id)
        try:
            watch = await self._watch()
            while True:
                snapshot = await _poll(hook, self.group_ids, self.topics, self.read_committed)
                event = await self._decide(watch, snapshot)
                if event is not None:
                    yield event
                await asyncio.sleep(self.poll_interval)
        finally:
            await hook.aclose()

    # -- watchers sharing one poll --------------------------------------------------------------

    def shared_stream_key(self) -> Hashable | None:
        return (SHARED_STREAM, self.kafka_groups_conn_id, self.poll_interval, self.read_committed)

    @classmethod
    async def open_shared_stream(cls, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        """One batched snapshot per poll of every group and topic the subscribers watch."""
        key = (SHARED_STREAM, kwargs["kafka_groups_conn_id"], float(kwargs["poll_interval"]),
               bool(kwargs.get("read_committed", False)))
        await load_engine()
        from ..hooks.groups import KafkaGroupsHook

        hook = KafkaGroupsHook(kwargs["kafka_groups_conn_id"])
        try:
            while True:
                wanted = list(_SUBSCRIBERS.get(key, {}).values())
                if wanted:
                    groups = tuple(sorted({g for gs, _ in wanted for g in gs}))
                    topics = tuple(sorted({t for _, ts in wanted for t in ts}))
                    yield await _poll(hook, groups, topics, key[3])
                await asyncio.sleep(key[2])
        finally:
            await hook.aclose()

    async def filter_shared_stream(self, shared_stream: AsyncIterator[Any]) -> AsyncIterator[TriggerEvent]:
        key = self.shared_stream_key()
        _SUBSCRIBERS.setdefault(key, {})[id(self)] = (self.group_ids, self.topics)
        try:
            watch = await self._watch()
            async for snapshot in shared_stream:
                event = await self._decide(watch, snapshot)
                if event is not None:
                    yield event
        finally:
            _SUBSCRIBERS.get(key, {}).pop(id(self), None)

    # -- shared by both ways ------------------------------------------------------------------

    async def _watch(self) -> RangeWatch:
        await load_engine()
        from ..lag.watch import RangeWatch, nested_offsets

        stored = await self._stored_end()
        if stored:
            log.info("Watching %s on %s from where the last range ended: %s", ", ".join(self.group_ids),
                     ", ".join(self.topics), json.dumps(stored))
        return RangeWatch(self.group_ids, self.topics, self.max_total_lag, start=nested_offsets(stored))

    async def _decide(self, watch: RangeWatch, snapshot: Any) -> TriggerEvent | None:
        if isinstance(snapshot, BaseException):
            if not is_retriable(snapshot):
                raise snapshot  # a wrong password or a missing permission: the watcher fails, loudly
            log.warning("Lag poll failed, will retry: %s: %s", type(snapshot).__name__, snapshot)
            return None
        finished = watch.observe(snapshot)
        if finished is None:
            log.info("Waiting for %s", watch.waiting_for)
            return None
        from ..client.results import nest_by_topic

        payload = finished.to_payload()
        await self._store_end(nest_by_topic(finished.ending))
        log.info("Range consumed by %s: %s -> %s", ", ".join(self.group_ids), payload["startingOffsets"],
                 payload["endingOffsets"])
        return TriggerEvent(payload)

    async def _stored_end(self) -> Mapping[str, Mapping[str, int]] | None:
        if self.asset_state_store is None:
            return None
        return await self.asset_state_store.aget(STATE_KEY)

    async def _store_end(self, ending: Mapping[str, Mapping[str, int]]) -> None:
        if self.asset_state_store is not None:
            await self.asset_state_store.aset(STATE_KEY, dict(ending))


async def _poll(hook: KafkaGroupsHook, group_ids: tuple[str, ...], topics: tuple[str, ...],
                read_committed: bool) -> Any:
    """One snapshot, or the error that prevented it (a value: the stream goes on)."""
    from ..lag.snapshot import take_snapshot  # loaded by run() / open_shared_stream() (load_engine)

    try:
        return await take_snapshot(await hook.aget_client(), group_ids, topics=topics, read_committed=read_committed)
    except KafkaGroupsError as exc:
        return exc


def range_from_events(events: Iterable[Any]) -> dict[str, str]:
    """The range to process from a DAG run's triggering asset events (``triggering_asset_events[asset]``):
    from the first event's start to the last event's end when several ranges queued up, so a
    run never skips one. Returns ``{"startingOffsets": ..., "endingOffsets": ...}``."""
    payloads = [_payload(e) for e in events]
    payloads = [p for p in payloads if p and "startingOffsets" in p]
    if not payloads:
        raise ConfigurationError("no triggering asset event carries an offset range: schedule this DAG on an asset "
                                 "watched by ConsumerLagEventTrigger (or produced by a ConsumerLagSensor outlet).")
    from ..lag.offset_range import OffsetRange, unnest_offsets

    starting = unnest_offsets(json.loads(payloads[0]["startingOffsets"]))
    ending = unnest_offsets(json.loads(payloads[-1]["endingOffsets"]))
    for later in payloads[1:]:  # a partition first seen in a later range starts there
        for tp, offset in unnest_offsets(json.loads(later["startingOffsets"])).items():
            starting.setdefault(tp, offset)
    return OffsetRange(starting, ending).to_xcom()


def _payload(event: Any) -> Mapping[str, Any] | None:
    extra = event.get("extra") if isinstance(event, Mapping) else getattr(event, "extra", None)
    if not extra:
        return None
    return extra.get("payload", extra)  # from a trigger: {"from_trigger": True, "payload": ...}; an outlet: as is
