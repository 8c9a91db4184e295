"""FakeCluster: the cluster state plus N brokers serving it, faults and the request log."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .auth import SCRAM_ITERATIONS
from .broker import FakeBroker
from .codec import API_CLASSES, DEFAULT_MAX_VERSIONS, ApiRef, Err, api_key_of, codec_range
from .faults import Drop, Faults, Injection, Throttle
from .reqlog import LoggedRequest, RequestLog
from .state import ClusterState

if TYPE_CHECKING:
    from .threaded import ThreadedFakeCluster

__all__ = ["FakeCluster", "VersionSpec", "DEFAULT_MAX_REQUEST_BYTES"]

#: Kafka's ``socket.request.max.bytes`` default (SocketServerConfigs.SOCKET_REQUEST_MAX_BYTES_DEFAULT).
DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024


@dataclass
class _Loading:
    loaded: frozenset[str]
    times: int | None
    error: int


#: a max version, a (min, max) pair, or None to not offer the API at all
VersionSpec = int | tuple[int, int] | None


def _versions_with(
    base: dict[int, tuple[int, int]], overrides: Mapping[ApiRef, VersionSpec] | None
) -> dict[int, tuple[int, int]]:
    versions = dict(base)
    for api, spec in (overrides or {}).items():
        key = api_key_of(api)
        if spec is None:
            versions.pop(key, None)
            continue
        if key not in API_CLASSES:
            raise ValueError(f"the fake does not implement api {api!r}")
        lo, hi = (codec_range(key)[0], spec) if isinstance(spec, int) else spec
        codec_lo, codec_hi = codec_range(key)
        # A broker older than the codec (ListOffsets v0, OffsetFetch v0: Kafka 4 dropped them) may
        # be advertised, so that a client can be shown never to send those versions; a request at
        # one is undecodable here and closes the connection, as a broker does on a bad request.
        if not lo <= hi <= codec_hi or (lo < codec_lo and hi >= codec_lo):
            raise ValueError(
                f"{api}: versions {lo}-{hi} outside what the codec serves ({codec_lo}-{codec_hi}; "
                f"or wholly below {codec_lo}, advertised only)"
            )
        versions[key] = (lo, hi)
    return versions


class FakeCluster(ClusterState):
    """An in-process Kafka cluster speaking the wire protocol on 127.0.0.1.

    Args:
        brokers: how many brokers (node ids 0..n-1), or the node ids.
        api_versions: overrides for every broker, ``{"FindCoordinator": 3}`` (max),
            ``{"OffsetFetch": (1, 7)}`` (min, max) or ``{"ConsumerGroupDescribe": None}`` (off).
        broker_api_versions: per-broker overrides on top, ``{2: {"OffsetFetch": 7}}``.
        sasl: ``{"PLAIN": {"user": "pw"}, "SCRAM-SHA-512": {"user": "pw"}}``: every
            connection must authenticate before anything but ApiVersions/SASL requests.
        ssl_context: a server-side context: the brokers speak TLS.
        processing_s, latency_s: default delays for every request (see :mod:`.connection`).
        racks: ``{node id: rack}`` advertised in Metadata.
        offsets_topic_partitions: partitions of the virtual ``__consumer_offsets`` that the
            default coordinator hash uses (Kafka's default: 50).
        max_request_bytes: Kafka's ``socket.request.max.bytes`` (default 104857600): a broker
            closes the connection on a larger request frame (see :mod:`.connection`).
        sasl: also ``{"OAUTHBEARER": validator}`` (:mod:`.oauth`: unsecured JWS, JWKS, MSK IAM).
        connections_max_reauth_ms: KIP-368 session lifetime (see :mod:`.handlers.sasl`).
        scram_iterations: the iteration count SCRAM exchanges ask for (default 4096; any
            count, so a test can play a broker asking too few or too many).
    """

    def __init__(
        self,
        brokers: int | Sequence[int] = 3,
        *,
        api_versions: Mapping[ApiRef, VersionSpec] | None = None,
        broker_api_versions: Mapping[int, Mapping[ApiRef, VersionSpec]] | None = None,
        sasl: Mapping[str, Mapping[str, str]] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        host: str = "127.0.0.1",
        processing_s: float = 0.0,
        latency_s: float = 0.0,
        racks: Mapping[int, str] | None = None,
        offsets_topic_partitions: int = 50,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        connections_max_reauth_ms: int = 0,
        scram_iterations: int = SCRAM_ITERATIONS,
    ) -> None:
        node_ids = list(range(brokers)) if isinstance(brokers, int) else list(brokers)
        super().__init__(node_ids, offsets_topic_partitions=offsets_topic_partitions)
        if sasl:
            from .auth import MECHANISMS

            unknown = set(sasl) - set(MECHANISMS)
            if unknown:
                raise ValueError(f"unsupported SASL mechanisms {sorted(unknown)} (supported: {MECHANISMS})")
        self.sasl = dict(sasl) if sasl else None
        #: KIP-368: a SASL session ends after this (and at an OAUTHBEARER token's expiry); 0: never
        self.connections_max_reauth_ms = connections_max_reauth_ms
        self.scram_iterations = scram_iterations
        self.expired_closes = 0  # connections closed for an expired session (expiredConnectionsKilledCount)
        self.reauthentications = 0
        self.ssl_context = ssl_context
        self.faults = Faults(lock=self.lock)
        self.faults.set_delay(None, None, processing_s=processing_s, latency_s=latency_s)
        self.request_log = RequestLog()
        self.max_request_bytes = max_request_bytes
        self.handler_errors: list[BaseException] = []  # exceptions raised by handlers (fake bugs)
        base = _versions_with(DEFAULT_MAX_VERSIONS, api_versions)
        self.brokers: dict[int, FakeBroker] = {
            n: FakeBroker(
                self,
                n,
                versions=_versions_with(base, (broker_api_versions or {}).get(n)),
                host=host,
                ssl_context=ssl_context,
                rack=(racks or {}).get(n),
            )
            for n in node_ids
        }
        self._loop: asyncio.AbstractEventLoop | None = None
        self.loading: dict[int, _Loading] = {}  # node -> its coordinator is loading (see start_loading)
        self.stale_listings: dict[int, set[str]] = {}  # node -> groups it still lists after they moved away
        #: the brokers' ``auto.create.topics.enable``: Metadata naming a topic that does not exist
        #: creates it (below v4 always; from v4 when the request allows it)
        self.auto_create_topics = False
        #: ConsumerGroupDescribe and ShareGroupDescribe as brokers from 3.7 to late 2024 answer
        #: them: every coordinator shard describes every requested id (see handlers.groups)
        self.describe_per_shard = False

    def set_describe_per_shard(self, on: bool = True) -> None:
        """Model GroupCoordinatorService.consumerGroupDescribe / shareGroupDescribe of Kafka 3.7 to
        late 2024, which pass *all* requested ids to each shard (``__consumer_offsets``
        partition) among them: duplicate entries per id, the owning shard's real answer among
        GROUP_ID_NOT_FOUND from the others."""
        self.describe_per_shard = on

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> FakeCluster:
        self._loop = asyncio.get_running_loop()
        for broker in self.brokers.values():
            await broker.start()
        return self

    async def stop(self) -> None:
        for broker in self.brokers.values():
            await broker.stop()

    async def __aenter__(self) -> FakeCluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @classmethod
    def running_in_thread(cls, brokers: int | Sequence[int] = 3, **kwargs: Any) -> ThreadedFakeCluster:
        """A context manager running the cluster on its own event loop in a daemon thread,
        for synchronous callers: ``with FakeCluster.running_in_thread(brokers=9) as c:``."""
        from .threaded import ThreadedFakeCluster

        return ThreadedFakeCluster(cls(brokers, **kwargs))

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:port,..."`` of every broker."""
        return ",".join(f"{b.host}:{b.port}" for b in self.brokers.values())

    def address(self, node: int) -> tuple[str, int]:
        broker = self.brokers[node]
        return broker.host, broker.port

    @property
    def controller_id(self) -> int:
        return self.node_ids[0]

    async def stop_broker(self, node: int) -> None:
        """The broker goes down: connection refused, open connections reset."""
        await self.brokers[node].stop()

    async def start_broker(self, node: int) -> None:
        """Bring a stopped broker back on the same port."""
        await self.brokers[node].start()

    def set_api_versions(self, versions: Mapping[ApiRef, VersionSpec], *, node: int | None = None) -> None:
        """Change advertised versions at run time (a rolling upgrade), on one broker or all.
        Clients see the change on their next ApiVersions, i.e. on a new connection."""
        with self.lock:
            for broker in self.brokers.values():
                if node is None or broker.node_id == node:
                    broker.versions = _versions_with(broker.versions, versions)

    # ------------------------------------------------------------------ request log

    def count(self, api: ApiRef, node: int | None = None) -> int:
        """Requests of one API received (by one broker or all)."""
        return self.request_log.count(api, node)

    def requests(self, api: ApiRef | None = None, node: int | None = None) -> list[LoggedRequest]:
        return self.request_log.requests(api, node)

    def requests_by_api(self, node: int | None = None) -> dict[str, int]:
        return self.request_log.by_api(node)

    def reset_counts(self) -> None:
        """Forget the logged requests, the largest sizes and the refused requests."""
        self.request_log.reset()

    def largest_request(self, api: ApiRef | None = None) -> int:
        """Bytes of the largest request frame received (after its 4-byte length), 0 if none."""
        return self.request_log.largest_request(api)

    def largest_response(self, api: ApiRef | None = None) -> int:
        """Bytes of the largest response frame sent (after its 4-byte length), 0 if none."""
        return self.request_log.largest_response(api)

    def refused_requests(self) -> list[tuple[int, int]]:
        """``(node, size)`` of each request frame over ``max_request_bytes`` (connection closed)."""
        return self.request_log.refused_requests()

    # ------------------------------------------------------------------ faults

    def inject_error(
        self,
        api: ApiRef,
        error: int,
        *,
        key: Any = None,
        node: int | None = None,
        times: int | None = None,
        message: str | None = None,
    ) -> Injection:
        """Answer ``api`` with ``error`` for ``key`` (see :mod:`.faults` for keys; None: all)
        on broker ``node`` (None: any), the next ``times`` requests (None: always).
        Returns the injection: ``.hits`` counts answered requests, ``.cancel()`` stops it."""
        return self.faults.inject(api_key_of(api), error, key=key, node=node, times=times, message=message)

    def drop_mid_response(
        self, api: ApiRef | None = None, *, node: int | None = None, times: int | None = 1
    ) -> Drop:
        """The next ``times`` responses to ``api`` (None: any) on ``node`` (None: any broker)
        are cut: half the frame is written, then the connection is closed."""
        return self.faults.add_drop(None if api is None else api_key_of(api), node, times)

    def throttle(
        self, node: int, throttle_ms: int, *, api: ApiRef | None = None, times: int | None = None
    ) -> Throttle:
        """A quota switch on broker ``node`` (KIP-219): its next ``times`` responses (None: until
        ``.cancel()``) to ``api`` (None: any) carry ``throttle_time_ms`` and then mute the
        connection that long. The returned :class:`.faults.Throttle` records each mute."""
        return self.faults.add_throttle(node, throttle_ms, None if api is None else api_key_of(api), times)

    def blackhole(self, node: int, on: bool = True, *, api: ApiRef | None = None) -> None:
        """The broker reads requests (and logs them) but answers nothing while on; a
        connection that reached such a request stays stalled, and resumes in order when
        switched off. ``api``: only requests of that API stall the connection."""
        self.faults.set_blackhole(node, on, None if api is None else api_key_of(api))
        self._wake_brokers()

    def set_delay(
        self,
        *,
        processing_s: float | None = None,
        latency_s: float | None = None,
        node: int | None = None,
        api: ApiRef | None = None,
    ) -> None:
        """Delays for one broker and/or one API (most specific setting wins)."""
        self.faults.set_delay(
            node, None if api is None else api_key_of(api), processing_s=processing_s, latency_s=latency_s
        )

    # ------------------------------------------------------------------ coordinator moves (listings)

    def start_loading(
        self,
        node: int,
        *,
        loaded: Iterable[str] = (),
        times: int | None = None,
        error: int = Err.COORDINATOR_LOAD_IN_PROGRESS,
    ) -> None:
        """Broker ``node`` is loading its group coordinator state: its ListGroups lists only the
        groups in ``loaded`` (of those it coordinates), for the next ``times`` ListGroups (None:
        until :meth:`finish_loading`).

        ``error=14`` is a 3.x broker: ``GroupCoordinator.handleListGroups`` answers
        COORDINATOR_LOAD_IN_PROGRESS *together with* ``groupManager.currentGroups``, the
        partial list. ``error=0`` is the 4.x coordinator: ``GroupCoordinatorService.listGroups``
        maps a shard's NotCoordinatorException (not loaded yet) to an empty list, so the
        answer is partial with no error at all."""
        with self.lock:
            self._check_node(node)
            self.loading[node] = _Loading(frozenset(loaded), times, int(error))

    def finish_loading(self, node: int) -> None:
        with self.lock:
            self.loading.pop(node, None)

    def list_stale(self, group_id: str, node: int) -> None:
        """Broker ``node`` still lists ``group_id`` after the group's coordinator moved to another
        broker (the old coordinator unloads its groups only after the leadership change:
        ``GroupMetadataManager.removeGroupsForPartition``), so two brokers list it."""
        with self.lock:
            self._check_node(node)
            self.stale_listings.setdefault(node, set()).add(group_id)

    def listed_by(self, node: int) -> tuple[list[str], int]:
        """(group ids, error code) of ``node``'s next ListGroups answer; uses up one ``times``
        of a loading state. Call with the lock held (the ListGroups handler does)."""
        groups = set(self.groups_coordinated_by(node)) | {
            g for g in self.stale_listings.get(node, ()) if g in self.groups
        }
        loading = self.loading.get(node)
        if loading is None:
            return sorted(groups), 0
        if loading.times is not None:
            loading.times -= 1
            if loading.times <= 0:
                del self.loading[node]
        coordinated = set(self.groups_coordinated_by(node))
        return sorted(g for g in groups if g not in coordinated or g in loading.loaded), loading.error

    def clear_faults(self) -> None:
        """Cancel every injection and drop, lift every blackhole (delays stay)."""
        self.faults.clear()
        self._wake_brokers()

    def _wake_brokers(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def wake() -> None:
            for broker in self.brokers.values():
                broker.wake()

        loop.call_soon_threadsafe(wake)
