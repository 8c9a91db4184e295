"""The log of every request the brokers received, for exact request-count assertions."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .codec import ApiRef, api_key_of

__all__ = ["LoggedRequest", "RequestLog"]


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    node: int
    api: str  # Kafka's API name, e.g. "OffsetFetch"
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: Any  # the decoded kafka.protocol request; None if it could not be decoded
    at: float  # time.monotonic() when the broker read it
    arrived: float | None = None  # when it reached the broker, if earlier (held unread while muted)


class RequestLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[LoggedRequest] = []

    def record(self, entry: LoggedRequest) -> None:
        with self._lock:
            self._entries.append(entry)

    def requests(self, api: ApiRef | None = None, node: int | None = None) -> list[LoggedRequest]:
        """Logged requests, oldest first, optionally of one API and/or one broker."""
        key = None if api is None else api_key_of(api)
        with self._lock:
            return [e for e in self._entries
                    if (key is None or e.api_key == key) and (node is None or e.node == node)]

    def count(self, api: ApiRef, node: int | None = None) -> int:
        return len(self.requests(api, node))

    def by_api(self, node: int | None = None) -> dict[str, int]:
        """``{"OffsetFetch": 3, ...}`` over all brokers or one."""
        with self._lock:
            return dict(Counter(e.api for e in self._entries if node is None or e.node == node))

    def reset(self) -> None:
        with self._lock:
            self._entries.clear()

    @staticmethod
    def now() -> float:
        return time.monotonic()
