"""Scriptable faults: injected error codes, dropped responses, blackholes, delays.

A fault matches an API on one broker (``node``) or any (``node=None``). Error injections
also match a key: the group id for group APIs and FindCoordinator, ``(topic, partition)``
for ListOffsets, Fetch and Produce, the topic for Metadata, ``(group, topic, partition)`` for one
partition in OffsetFetch/OffsetCommit; ``key=None`` matches every key an API has at its
main level (groups, partitions, topics) or the whole response for ListGroups.

``times`` counts requests: an injection is used up once per request in which it answered
at least one key (``times=None``: always).

A :class:`Throttle` is a violated quota on one broker (KIP-219, ClientQuotaManager.throttle,
RequestHandlerHelper.sendResponseMaybeThrottle): the response is sent at once carrying
``throttle_time_ms``, then the broker reads nothing more from that connection for that long.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Faults", "Injection", "Drop", "Throttle"]


@dataclass(eq=False)
class Injection:
    """An injected error; ``hits`` counts the requests it answered."""

    api_key: int
    error: int
    key: Hashable | None = None
    node: int | None = None
    times: int | None = None  # remaining; None = always
    message: str | None = None
    hits: int = 0
    cancelled: bool = False

    @property
    def active(self) -> bool:
        return not self.cancelled and (self.times is None or self.times > 0)

    def cancel(self) -> None:
        self.cancelled = True

    def matches(self, api_key: int, node: int, key: Any, wildcard: bool) -> bool:
        """Same API, node and key (``key=None`` matches any key when ``wildcard``)."""
        if self.cancelled or self.api_key != api_key:
            return False
        if self.node is not None and self.node != node:
            return False
        if self.key is None:
            return wildcard
        return self.key == key


@dataclass(eq=False)
class Drop:
    """Write part of the response frame, then close the connection."""

    api_key: int | None
    node: int | None
    times: int | None
    hits: int = 0
    cancelled: bool = False

    @property
    def active(self) -> bool:
        return not self.cancelled and (self.times is None or self.times > 0)

    def cancel(self) -> None:
        self.cancelled = True


@dataclass(eq=False)
class Throttle:
    """The next ``times`` responses (None: until cancelled) of ``api_key`` (None: any) on
    ``node`` carry ``throttle_ms``, and each mutes its connection that long. ``mutes`` holds
    (start, end) in ``time.monotonic()`` of every mute, for comparing with the request log."""

    node: int
    throttle_ms: int
    api_key: int | None
    times: int | None
    hits: int = 0
    cancelled: bool = False
    mutes: list[tuple[float, float]] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return not self.cancelled and (self.times is None or self.times > 0)

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class _Delay:
    processing_s: float | None = None  # None: inherit from a less specific scope
    latency_s: float | None = None


@dataclass
class Faults:
    """All scripted faults of one cluster (thread-safe through the cluster's lock)."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    injections: list[Injection] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    throttles: list[Throttle] = field(default_factory=list)
    blackholes: set[tuple[int, int | None]] = field(default_factory=set)
    delays: dict[tuple[int | None, int | None], _Delay] = field(default_factory=dict)

    # ---------------------------------------------------------------- error injection

    def inject(
        self,
        api_key: int,
        error: int,
        *,
        key: Hashable | None = None,
        node: int | None = None,
        times: int | None = None,
        message: str | None = None,
    ) -> Injection:
        injection = Injection(
            api_key=api_key, error=int(error), key=key, node=node, times=times, message=message
        )
        with self.lock:
            self.injections.append(injection)
        return injection

    def match(
        self, api_key: int, node: int, key: Any, used: set[int], *, wildcard: bool = True
    ) -> Injection | None:
        """The first injection answering this key. ``used`` holds the ids of the injections
        already charged in the current request: each is charged once per request, and keeps
        answering the request's other keys even if that used up its last time."""
        with self.lock:
            for injection in self.injections:
                if not injection.matches(api_key, node, key, wildcard):
                    continue
                if id(injection) in used:
                    return injection
                if injection.active:
                    used.add(id(injection))
                    injection.hits += 1
                    if injection.times is not None:
                        injection.times -= 1
                    return injection
            return None

    # ---------------------------------------------------------------- connection faults

    def add_drop(self, api_key: int | None, node: int | None, times: int | None) -> Drop:
        drop = Drop(api_key=api_key, node=node, times=times)
        with self.lock:
            self.drops.append(drop)
        return drop

    def take_drop(self, api_key: int, node: int) -> bool:
        with self.lock:
            for drop in self.drops:
                if drop.active and drop.api_key in (None, api_key) and drop.node in (None, node):
                    drop.hits += 1
                    if drop.times is not None:
                        drop.times -= 1
                    return True
            return False

    def add_throttle(self, node: int, throttle_ms: int, api_key: int | None, times: int | None) -> Throttle:
        throttle = Throttle(node=node, throttle_ms=throttle_ms, api_key=api_key, times=times)
        with self.lock:
            self.throttles.append(throttle)
        return throttle

    def take_throttle(self, api_key: int, node: int) -> Throttle | None:
        with self.lock:
            for throttle in self.throttles:
                if throttle.active and throttle.node == node and throttle.api_key in (None, api_key):
                    throttle.hits += 1
                    if throttle.times is not None:
                        throttle.times -= 1
                    return throttle
            return None

    def set_blackhole(self, node: int, on: bool, api_key: int | None) -> None:
        with self.lock:
            if on:
                self.blackholes.add((node, api_key))
            else:
                self.blackholes.discard((node, api_key))

    def is_blackholed(self, node: int, api_key: int) -> bool:
        with self.lock:
            return (node, None) in self.blackholes or (node, api_key) in self.blackholes

    # ---------------------------------------------------------------- delays

    def set_delay(
        self, node: int | None, api_key: int | None, *, processing_s: float | None, latency_s: float | None
    ) -> None:
        with self.lock:
            delay = self.delays.setdefault((node, api_key), _Delay())
            if processing_s is not None:
                delay.processing_s = processing_s
            if latency_s is not None:
                delay.latency_s = latency_s

    def delay_for(self, node: int, api_key: int) -> tuple[float, float]:
        """(processing_s, latency_s); each from the most specific scope that sets it:
        (node, api) > (node, any api) > (any node, api) > (any, any); else 0."""
        with self.lock:
            processing = latency = None
            for scope in ((node, api_key), (node, None), (None, api_key), (None, None)):
                delay = self.delays.get(scope)
                if delay is not None:
                    processing = delay.processing_s if processing is None else processing
                    latency = delay.latency_s if latency is None else latency
            return processing or 0.0, latency or 0.0

    def clear(self) -> None:
        """Forget injections, drops, throttles and blackholes (delays stay: they are configuration)."""
        with self.lock:
            for injection in self.injections:
                injection.cancel()
            for drop in self.drops:
                drop.cancel()
            for throttle in self.throttles:
                throttle.cancel()
            self.injections.clear()
            self.drops.clear()
            self.throttles.clear()
            self.blackholes.clear()
