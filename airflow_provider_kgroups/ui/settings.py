"""What the page reads from Airflow's configuration, and the checks on what a request asks for.

Configuration: the provider's ``[kgroups]`` section (:mod:`..settings`; environment
``AIRFLOW__KGROUPS__<OPTION>``):

``history_url``
    the history store the page reads (the snapshot operator's ``history_url``). Unset: the
    page answers 503 saying to set it.
``ui_kafka_conn_id``
    the connection "refresh now" takes its one live snapshot through. Default ``kgroups_default``.
``ui_idle_hours``
    the dead-group rule the page judges candidates by (the cleanup operator's ``idle_hours``).
    Default 168 (7 days).
``ui_rollup_cache``
    where the history's rollups are saved (:mod:`..history.rollup_place`). Unset: beside the
    history, or a local directory when the api-server may not write there.

Every request parameter is checked here before anything is read: a bad one is a 400 naming
the parameter and what it accepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..client.errors import ConfigurationError
from ..client.selection import compile_pattern

__all__ = [
    "PageSettings",
    "BadRequest",
    "parse_window",
    "parse_pattern",
    "parse_group_id",
    "parse_points",
    "parse_sort",
    "WINDOWS",
    "MAX_POINTS",
]

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
#: The windows the page offers; any ``<n>h`` / ``<n>d`` up to :data:`MAX_WINDOW_MS` is accepted.
WINDOWS = ("1h", "6h", "24h", "3d", "7d", "14d", "30d")
MAX_WINDOW_MS = 92 * DAY_MS
#: Points a chart may hold (all its series together): above it, series are downsampled on the server.
MAX_POINTS = 50_000
MIN_POINTS = 100
MAX_PATTERN = 200
MAX_GROUP_ID = 255  # Kafka does not cap group ids; 255 is far above any seen in practice
SORTS = ("lag", "seconds", "idle", "name")
_WINDOW = re.compile(r"^([1-9][0-9]{0,3})([hd])$")


class BadRequest(ValueError):
    """A request parameter that cannot be used: the message names it and what it accepts."""


DEFAULT_KAFKA_CONN_ID = "kgroups_default"


@dataclass(frozen=True, slots=True)
class PageSettings:
    history_url: str | None = None
    kafka_conn_id: str = DEFAULT_KAFKA_CONN_ID
    idle_hours: float = 168.0
    refresh_timeout_s: float = 15.0
    rollup_cache: str | None = None

    @classmethod
    def from_airflow(cls) -> PageSettings:
        from .. import settings

        try:
            idle = settings.get_float("ui_idle_hours")
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if idle <= 0:
            raise ConfigurationError(f"[kgroups] ui_idle_hours must be positive, got {idle!r}.")
        return cls(
            history_url=settings.history_url(),
            kafka_conn_id=settings.get_str("ui_kafka_conn_id") or DEFAULT_KAFKA_CONN_ID,
            idle_hours=idle,
            rollup_cache=settings.get_str("ui_rollup_cache") or None,
        )


def parse_window(value: str | None, default: str = "14d") -> tuple[str, int]:
    """``(text, milliseconds)`` of a window such as ``6h`` or ``14d``."""
    text = (value or default).strip()
    match = _WINDOW.match(text)
    if not match:
        raise BadRequest(f"window={text!r}: use a number of hours or days such as {', '.join(WINDOWS)}.")
    ms = int(match.group(1)) * (HOUR_MS if match.group(2) == "h" else DAY_MS)
    if ms > MAX_WINDOW_MS:
        raise BadRequest(f"window={text!r} is longer than {MAX_WINDOW_MS // DAY_MS} days.")
    return text, ms


def parse_pattern(value: str | None) -> re.Pattern | None:
    """None (every group), a glob, or ``re:<regex>``; a plain word without a wildcard matches as
    a substring (``orders`` finds ``eu-orders-1``), which is what a filter box is expected to do."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if len(text) > MAX_PATTERN:
        raise BadRequest(f"pattern is {len(text)} characters long; at most {MAX_PATTERN}.")
    if not text.startswith("re:") and not any(c in text for c in "*?["):
        text = f"*{text}*"
    try:
        return compile_pattern(text)
    except ConfigurationError as exc:
        raise BadRequest(f"pattern: {exc}") from None


def parse_group_id(value: str | None) -> str:
    if value is None or value == "":
        raise BadRequest("id is required: the consumer group's id.")
    if len(value) > MAX_GROUP_ID:
        raise BadRequest(f"id is {len(value)} characters long; at most {MAX_GROUP_ID}.")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise BadRequest("id contains a control character: no consumer group id has one here.")
    return value


def parse_points(value: str | int | None) -> int:
    if value is None or value == "":
        return MAX_POINTS
    try:
        points = int(value)
    except (TypeError, ValueError):
        raise BadRequest(
            f"points={value!r}: a whole number of points per chart, {MIN_POINTS} to {MAX_POINTS}."
        ) from None
    if not MIN_POINTS <= points <= MAX_POINTS:
        raise BadRequest(f"points={points}: between {MIN_POINTS} and {MAX_POINTS} points per chart.")
    return points


def parse_sort(value: str | None) -> str:
    text = (value or "lag").strip()
    if text not in SORTS:
        raise BadRequest(f"sort={text!r}: one of {', '.join(SORTS)}.")
    return text
