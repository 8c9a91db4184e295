"""The log of every request the brokers received, for exact request-count assertions, and the
sizes of the frames that went each way (see :mod:`.connection` for the size cap)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .codec import ApiRef, api_key_of, api_name

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
    size: int = 0  # frame bytes after the 4-byte length, as Kafka's socket.request.max.bytes counts them


class RequestLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[LoggedRequest] = []
        self._largest_response: dict[str, int] = {}  # api -> largest response frame (bytes after the length)
        self._refused: list[tuple[int, int]] = []  # (node, size) of request frames over the broker's cap

    def record(self, entry: LoggedRequest) -> None:
        with self._lock:
            self._entries.append(entry)

    def requests(self, api: ApiRef | None = None, node: int | None = None) -> list[LoggedRequest]:
        """Logged requests, oldest first, optionally of one API and/or one broker."""
        key = None if api is None else api_key_of(api)
        with self._lock:
            return [
                e
                for e in self._entries
                if (key is None or e.api_key == key) and (node is None or e.node == node)
            ]

    def count(self, api: ApiRef, node: int | None = None) -> int:
        return len(self.requests(api, node))

    def by_api(self, node: int | None = None) -> dict[str, int]:
        """``{"OffsetFetch": 3, ...}`` over all brokers or one."""
        with self._lock:
            return dict(Counter(e.api for e in self._entries if node is None or e.node == node))

    def record_response(self, api: str, size: int) -> None:
        with self._lock:
            if size > self._largest_response.get(api, -1):
                self._largest_response[api] = size

    def record_refused(self, node: int, size: int) -> None:
        with self._lock:
            self._refused.append((node, size))

    def refused_requests(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._refused)

    def largest_request(self, api: ApiRef | None = None) -> int:
        """The largest request frame received (of one API or any), 0 if none."""
        return max((e.size for e in self.requests(api)), default=0)

    def largest_response(self, api: ApiRef | None = None) -> int:
        """The largest response frame sent (of one API or any), 0 if none."""
        with self._lock:
            if api is None:
                return max(self._largest_response.values(), default=0)
            return self._largest_response.get(api_name(api_key_of(api)), 0)

    def reset(self) -> None:
        with self._lock:
            self._entries.clear()
            self._largest_response.clear()
            self._refused.clear()

    @staticmethod
    def now() -> float:
        return time.monotonic()
