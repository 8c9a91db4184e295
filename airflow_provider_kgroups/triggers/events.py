"""``ConsumerLagEventTrigger``: start DAGs from lag, with Airflow 3's event-driven scheduling.

An asset watched by this trigger gets an event each time the watched consumer groups have
finished reading the next offset range of their topics (:mod:`..lag.watch`: the lag gate the
sensor uses, re-armed after each range, with a barrier fixed when the range opened, or lag
thresholds). It takes the sensor's gate arguments (every mode: ``lag_mode``,
``barrier_timestamp``, the thresholds, ``unknown_lag``, ``fail_on_verdicts``, ...), read into the
same :class:`~..lag.gate_spec.GateSpec`; ``max_total_lag`` alone still means threshold mode, as
it did before the trigger took the others. The gate's fail-fast findings (a Dead group, a verdict such as ABANDONED) are logged
as warnings while no range is reported; the event's extra carries the range as Spark's
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

Sharing: watchers with the same connection, poll interval, ``read_committed`` and
``unknown_lag`` (what a snapshot's numbers depend on) share one poll loop in the triggerer (``shared_stream_key``): each poll is one batched snapshot of every group and topic
they watch, so a hundred watched assets cost one snapshot per poll, not a hundred. One
:class:`SharedLagPoll` per stream key owns the watchers' subscriptions and the poll.

Restarts: where the last range ended is kept in the asset's state store (key
:data:`STATE_KEY`), so a restarted triggerer goes on from there, with no gap and no overlap.
The kwargs carry the connection id only: the connection is resolved with Airflow's async
lookup inside the triggerer, never serialized.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import AsyncIterator, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.triggers import BaseEventTrigger
from airflow.triggers.base import TriggerEvent

from ..arguments import parse_interval, parse_names
from ..client.errors import ConfigurationError, KafkaGroupsError, is_retriable
from ..lag.gate_spec import GateSpec, LagMode
from ..version_compat import AIRFLOW_V_3_3_PLUS, require_airflow
from .loading import load_engine

if TYPE_CHECKING:
    from pydantic import JsonValue

    from ..hooks.groups import KafkaGroupsHook
    from ..lag.watch import RangeWatch

log = logging.getLogger(__name__)

STATE_KEY = "kgroups_range_end"
SHARED_STREAM = "kgroups-lag-ranges"


def _stream_key(conn_id: str, poll_interval: float, read_committed: bool, unknown_lag: str) -> Hashable:
    return (SHARED_STREAM, conn_id, float(poll_interval), bool(read_committed), unknown_lag)


class SharedLagPoll:
    """One poll shared by the watchers of one stream key: it owns what each watcher reads (its
    subscriptions) and reads their union in one batched snapshot per poll.

    The triggerer opens the stream with one watcher's kwargs (``open_shared_stream``) and runs
    each watcher's ``filter_shared_stream`` apart, on the same event loop in the same process:
    both ends meet at the one poll of their key (:meth:`of`). A poll lives while its stream or a
    subscription holds it (a weak registry: nothing outlives its users, nothing is keyed by an
    object's address); a subscription is its own token, so one watcher leaving never drops another.
    """

    _polls: ClassVar[weakref.WeakValueDictionary[Hashable, SharedLagPoll]] = weakref.WeakValueDictionary()

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._wanted: dict[object, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.hook: KafkaGroupsHook | None = None  # while polling: for a watcher's own reads beside the poll

    @classmethod
    def of(cls, key: Hashable) -> SharedLagPoll:
        poll = cls._polls.get(key)
        if poll is None:
            poll = cls._polls[key] = cls(key)
        return poll

    @contextmanager
    def subscription(self, group_ids: tuple[str, ...], topics: tuple[str, ...]) -> Iterator[None]:
        """These groups and topics are read at every poll while the ``with`` block runs."""
        token = object()
        self._wanted[token] = (group_ids, topics)
        try:
            yield
        finally:
            del self._wanted[token]

    def wanted(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Every subscribed group and topic, sorted (empty when nobody is subscribed)."""
        groups = tuple(sorted({g for gs, _ in self._wanted.values() for g in gs}))
        return groups, tuple(sorted({t for _, ts in self._wanted.values() for t in ts}))

    async def snapshots(
        self, conn_id: str, poll_interval: float, read_committed: bool, unknown_lag: str
    ) -> AsyncIterator[Any]:
        """One snapshot (or the error that prevented it) per poll of what is subscribed, forever."""
        await load_engine()
        from ..hooks.groups import KafkaGroupsHook

        hook = self.hook = KafkaGroupsHook(conn_id)
        try:
            while True:
                groups, topics = self.wanted()
                if groups:
                    yield await _poll(hook, groups, topics, read_committed, unknown_lag)
                await asyncio.sleep(poll_interval)
        finally:
            self.hook = None
            await hook.aclose()


class ConsumerLagEventTrigger(BaseEventTrigger):
    """``gate_arguments``: the sensor's gate arguments by name (lag.gate_spec's table), read into
    ``spec`` here, when the DAG is parsed; :meth:`for_spec` takes a spec as it is."""

    def __init__(
        self,
        *,
        kafka_groups_conn_id: str,
        group_ids: Iterable[str],
        topics: Iterable[str],
        poll_interval: float = 60.0,
        max_total_lag: int | None = None,
        read_committed: bool = False,
        **gate_arguments: Any,
    ) -> None:
        require_airflow(
            "ConsumerLagEventTrigger", (3, 0), "it drives an AssetWatcher: event-driven scheduling"
        )
        super().__init__()
        if not isinstance(kafka_groups_conn_id, str) or not kafka_groups_conn_id.strip():
            raise ConfigurationError(
                f"kafka_groups_conn_id must name a connection, got {kafka_groups_conn_id!r}."
            )
        self.kafka_groups_conn_id = kafka_groups_conn_id
        interval = parse_interval("poll_interval", poll_interval)
        if interval is None:
            raise ConfigurationError(f"poll_interval must be a number of seconds > 0, got {poll_interval!r}.")
        self.poll_interval = float(interval)
        if max_total_lag is not None and gate_arguments.get("lag_mode") is None:
            gate_arguments["lag_mode"] = LagMode.THRESHOLD  # the one threshold this trigger took before
        self.spec = GateSpec.parse(
            group_ids=parse_names("group_ids", list(group_ids)),
            topics=parse_names("topics", list(topics)),
            max_total_lag=max_total_lag,
            read_committed=read_committed,
            **gate_arguments,
        )
        if not self.spec.bound:
            raise ConfigurationError(
                "ConsumerLagEventTrigger watches groups by id: give group_ids, not patterns."
            )

    @classmethod
    def for_spec(
        cls, spec: GateSpec, *, kafka_groups_conn_id: str, poll_interval: float = 60.0
    ) -> ConsumerLagEventTrigger:
        """A watcher of ``spec`` (its groups by id and its topics)."""
        return cls(
            kafka_groups_conn_id=kafka_groups_conn_id,
            poll_interval=poll_interval,
            **_gate_kwargs(spec),
        )

    @property
    def group_ids(self) -> tuple[str, ...]:
        return self.spec.group_ids

    @property
    def topics(self) -> tuple[str, ...]:
        return self.spec.topics or ()

    @property
    def read_committed(self) -> bool:
        return self.spec.read_committed

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "kafka_groups_conn_id": self.kafka_groups_conn_id,
                "poll_interval": self.poll_interval,
                **_gate_kwargs(self.spec),
            },
        )

    # -- one watcher alone ----------------------------------------------------------------------

    async def run(self) -> AsyncIterator[TriggerEvent]:
        await load_engine()  # off the event loop (see .loading)
        from ..hooks.groups import KafkaGroupsHook

        hook = KafkaGroupsHook(self.kafka_groups_conn_id)
        try:
            watch = await self._watch()
            while True:
                snapshot = await _poll(
                    hook, self.group_ids, self.topics, self.read_committed, self.spec.unknown_lag.value
                )
                event = await self._decide(watch, snapshot, hook)
                if event is not None:
                    yield event
                await asyncio.sleep(self.poll_interval)
        finally:
            await hook.aclose()

    # -- watchers sharing one poll --------------------------------------------------------------

    def shared_stream_key(self) -> Hashable | None:
        return _stream_key(
            self.kafka_groups_conn_id, self.poll_interval, self.read_committed, self.spec.unknown_lag.value
        )

    @classmethod
    async def open_shared_stream(cls, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        """One batched snapshot per poll of every group and topic the subscribers watch."""
        watcher = cls(**kwargs)  # the kwargs read as the watcher reads them
        conn_id, interval = watcher.kafka_groups_conn_id, watcher.poll_interval
        read_committed, unknown_lag = watcher.read_committed, watcher.spec.unknown_lag.value
        poll = SharedLagPoll.of(_stream_key(conn_id, interval, read_committed, unknown_lag))
        async for snapshot in poll.snapshots(conn_id, interval, read_committed, unknown_lag):
            yield snapshot

    async def filter_shared_stream(self, shared_stream: AsyncIterator[Any]) -> AsyncIterator[TriggerEvent]:
        poll = SharedLagPoll.of(self.shared_stream_key())
        with poll.subscription(self.group_ids, self.topics):
            watch = await self._watch()
            async for snapshot in shared_stream:
                event = await self._decide(watch, snapshot, poll.hook)
                if event is not None:
                    yield event

    # -- shared by both ways ------------------------------------------------------------------

    async def _watch(self) -> RangeWatch:
        await load_engine()
        from ..lag.watch import RangeWatch, nested_offsets

        stored = await self._stored_end()
        if not AIRFLOW_V_3_3_PLUS:
            log.info(
                "This Airflow keeps no asset state for triggers (3.3+): after a triggerer restart the "
                "next range of %s starts where the groups' committed offsets stand then",
                ", ".join(self.group_ids),
            )
        if stored:
            log.info(
                "Watching %s on %s from where the last range ended: %s",
                ", ".join(self.group_ids),
                ", ".join(self.topics),
                json.dumps(stored),
            )
        return RangeWatch(self.spec, start=nested_offsets(stored))

    async def _decide(
        self, watch: RangeWatch, snapshot: Any, hook: KafkaGroupsHook | None
    ) -> TriggerEvent | None:
        """The range ``snapshot`` finished, if any; ``hook``: for the reads the spec wants beside
        the poll (:func:`~..lag.gate.reads_wanted`)."""
        from ..lag.gate import reads_wanted
        from ..lag.watch import Waiting

        if isinstance(snapshot, BaseException):
            if not is_retriable(snapshot):
                raise snapshot  # a wrong password or a missing permission: the watcher fails, loudly
            log.warning("Lag poll failed, will retry: %s: %s", type(snapshot).__name__, snapshot)
            return None
        if reads_wanted(watch.spec) and hook is not None:
            try:
                finished = await watch.aobserve(await hook.aget_client(), snapshot)
            except KafkaGroupsError as exc:
                if not is_retriable(exc):
                    raise
                log.warning("Lag read failed, will retry: %s: %s", type(exc).__name__, exc)
                return None
        else:
            finished = watch.observe(snapshot)
        if finished is None:
            if watch.waiting is Waiting.GATE_FAILED:
                log.warning("No range while %s", watch.waiting_for)
            else:
                log.info("Waiting for %s", watch.waiting_for)
            return None
        from ..client.offset_map import OffsetKind, OffsetMap

        payload = finished.to_payload()
        await self._store_end(OffsetMap(finished.ending, OffsetKind.COMMITTED).nested())
        log.info(
            "Range consumed by %s: %s -> %s",
            ", ".join(self.group_ids),
            payload["startingOffsets"],
            payload["endingOffsets"],
        )
        return TriggerEvent(payload)

    async def _stored_end(self) -> JsonValue:
        """Where the last range ended, as stored (``{"topic": {"0": 5}}``, or None): JSON that
        :func:`~..lag.watch.nested_offsets` checks."""
        store = getattr(self, "asset_state_store", None)  # injected by the triggerer on Airflow 3.3+
        if store is None:
            return None
        stored: JsonValue = await store.aget(STATE_KEY)
        return stored

    async def _store_end(self, ending: Mapping[str, Mapping[str, int]]) -> None:
        store = getattr(self, "asset_state_store", None)
        if store is not None:
            await store.aset(STATE_KEY, {topic: dict(offsets) for topic, offsets in ending.items()})


async def _poll(
    hook: KafkaGroupsHook,
    group_ids: tuple[str, ...],
    topics: tuple[str, ...],
    read_committed: bool,
    unknown_lag: str,
) -> Any:
    """One snapshot, or the error that prevented it (a value: the stream goes on)."""
    from ..lag.snapshot import take_snapshot  # loaded by run() / open_shared_stream() (load_engine)

    try:
        return await take_snapshot(
            await hook.aget_client(),
            group_ids,
            policy=unknown_lag,
            topics=topics,
            read_committed=read_committed,
        )
    except KafkaGroupsError as exc:
        return exc


def _gate_kwargs(spec: GateSpec) -> dict[str, Any]:
    """The trigger's keywords for ``spec``, plain JSON: those it always had, then every other gate
    argument that is not its default (a trigger serialized before it took them has none)."""
    arguments = spec.arguments()
    defaults = GateSpec(group_ids=spec.group_ids).arguments()
    kwargs: dict[str, Any] = {
        "group_ids": list(spec.group_ids),
        "topics": arguments.pop("topics"),
        "max_total_lag": arguments.pop("max_total_lag"),
        "read_committed": arguments.pop("read_committed"),
    }
    return kwargs | {name: value for name, value in arguments.items() if value != defaults[name]}


def range_from_events(events: Iterable[Any]) -> dict[str, str]:
    """The range to process from a DAG run's triggering asset events (``triggering_asset_events[asset]``):
    from the first event's start to the last event's end when several ranges queued up, so a
    run never skips one. Returns ``{"startingOffsets": ..., "endingOffsets": ...}``."""
    payloads = [p for p in map(_payload, events) if p and "startingOffsets" in p]
    if not payloads:
        raise ConfigurationError(
            "no triggering asset event carries an offset range: schedule this DAG on an asset "
            "watched by ConsumerLagEventTrigger (or produced by a ConsumerLagSensor outlet)."
        )
    from ..client.offset_map import OffsetKind, OffsetMap
    from ..lag.offset_range import ENDING, STARTING, OffsetRange

    starts = [OffsetMap.parse(p[STARTING], OffsetKind.STARTING, name=STARTING) for p in payloads]
    starting = dict(starts[0])
    for later in starts[1:]:  # a partition first seen in a later range starts there
        for tp, offset in later.items():
            starting.setdefault(tp, offset)
    return OffsetRange(
        starting, OffsetMap.parse(payloads[-1][ENDING], OffsetKind.ENDING, name=ENDING)
    ).to_xcom()


def _payload(event: Any) -> Mapping[str, Any] | None:
    extra = event.get("extra") if isinstance(event, Mapping) else getattr(event, "extra", None)
    if not extra:
        return None
    return extra.get(
        "payload", extra
    )  # from a trigger: {"from_trigger": True, "payload": ...}; an outlet: as is
