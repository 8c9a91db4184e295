"""What a reset asks for: a strategy, a scope and their values, checked before any network call.

Kafka's ``kafka-consumer-groups.sh --reset-offsets`` (``ConsumerGroupCommand.resetOffsets`` /
``prepareOffsetsToReset``, options in ``ConsumerGroupCommandOptions``; KIP-122), option by
option:

==========================  =========================================================================
strategy                    the new offset of each partition in scope
==========================  =========================================================================
``--to-earliest``           the log start offset
``--to-latest``             the log end offset
``--to-current``            the committed offset; a partition without one: the log end offset
``--to-offset N``           N, clamped to [log start, log end] (``checkOffsetsRange``)
``--shift-by N``            committed + N, clamped; a partition without a commit cannot be shifted
``--to-datetime T``         the first offset whose record is at or after T (ListOffsets by time);
                            none that recent: the log end (Kafka warns "Falling back to latest")
``--by-duration D``         as ``--to-datetime now - D``; D is ISO-8601 ``PnDTnHnMn.nS``
                            (``java.time.Duration.parse``)
``--from-file CSV``         the file's offsets (Kafka's ``--export`` CSV), clamped
==========================  =========================================================================

Scope: ``--topic T`` (every partition, from Metadata), ``--topic T:0,2`` (those partitions),
repeatable, or ``--all-topics`` (every partition the group has committed); ``--from-file``
brings its own partitions. A time without a zone is UTC (``Utils.getDateTime`` appends "Z"),
and the plan says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from ..client.errors import ConfigurationError
from ..client.numbers import is_int
from ..client.results import TopicPartition


class Strategy(str, Enum):
    TO_EARLIEST = "to_earliest"
    TO_LATEST = "to_latest"
    TO_CURRENT = "to_current"
    TO_OFFSET = "to_offset"
    SHIFT_BY = "shift_by"
    TO_DATETIME = "to_datetime"
    BY_DURATION = "by_duration"
    FROM_FILE = "from_file"

    @property
    def option(self) -> str:
        """Kafka's option name (``--to-earliest``)."""
        return "--" + self.value.replace("_", "-")

    @property
    def clamps(self) -> bool:
        """Kafka clamps only what the user wrote as numbers (``checkOffsetsRange``)."""
        return self in (Strategy.TO_OFFSET, Strategy.SHIFT_BY, Strategy.FROM_FILE)

    @property
    def needs_value(self) -> bool:
        return self not in (Strategy.TO_EARLIEST, Strategy.TO_LATEST, Strategy.TO_CURRENT)

    @classmethod
    def parse(cls, name: str, value: Any) -> Strategy:
        if isinstance(value, Strategy):
            return value
        text = str(value).strip().lower().lstrip("-").replace("-", "_") if isinstance(value, str) else ""
        try:
            return cls(text)
        except ValueError:
            raise ConfigurationError(
                f"{name}={value!r} is not a reset strategy; use one of {', '.join(s.value for s in cls)}."
            ) from None


@dataclass(frozen=True, slots=True)
class Scope:
    """``all_topics``, or ``topics``: topic -> the partitions named (None: every partition)."""

    all_topics: bool = False
    topics: Mapping[str, tuple[int, ...] | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.all_topics and self.topics:
            raise ConfigurationError("--all-topics and --topic exclude each other: give one scope.")

    @property
    def given(self) -> bool:
        return self.all_topics or bool(self.topics)

    def to_dict(self) -> dict[str, Any]:
        return {
            "all_topics": self.all_topics,
            "topics": {t: None if p is None else list(p) for t, p in self.topics.items()},
        }


@dataclass(frozen=True, slots=True)
class ResetSpec:
    """One reset request, validated: use :func:`reset_spec` to build it from user input."""

    strategy: Strategy
    scope: Scope
    offset: int | None = None  # to_offset
    shift: int | None = None  # shift_by
    timestamp_ms: int | None = None  # to_datetime
    duration_ms: int | None = None  # by_duration
    zone_assumed: bool = False  # to_datetime without a zone: read as UTC
    datetime_text: str | None = None  # to_datetime / by_duration as given
    file_offsets: Mapping[str, Mapping[TopicPartition, int]] | None = None  # from_file: group -> offsets

    def at_ms(self, now_ms: int) -> int | None:
        """The time whose offsets the strategy asks for (to_datetime, by_duration), else None."""
        if self.strategy is Strategy.TO_DATETIME:
            return self.timestamp_ms
        if self.strategy is Strategy.BY_DURATION:
            return max(0, now_ms - int(self.duration_ms or 0))
        return None

    def describe(self, now_ms: int | None = None) -> str:
        """One line for the plan: what every partition is reset to."""
        s = self.strategy
        if s is Strategy.TO_OFFSET:
            return f"to offset {self.offset} (clamped to [log start, log end])"
        if s is Strategy.SHIFT_BY:
            return f"shift the committed offset by {self.shift:+d} (clamped to [log start, log end])"
        if s in (Strategy.TO_DATETIME, Strategy.BY_DURATION):
            at = self.at_ms(now_ms or 0)
            when = _iso(at) if at is not None else "?"
            what = (
                f"{self.datetime_text} ago"
                if s is Strategy.BY_DURATION
                else str(self.datetime_text)
                + (" (no zone given: read as UTC, as Kafka's tool does)" if self.zone_assumed else "")
            )
            return f"to the first offset at or after {when} ({what}); none that recent: the log end"
        if s is Strategy.FROM_FILE:
            return "to the offsets of the file (clamped to [log start, log end])"
        return {
            Strategy.TO_EARLIEST: "to the log start offset",
            Strategy.TO_LATEST: "to the log end offset",
            Strategy.TO_CURRENT: "to the committed offset (none: the log end offset)",
        }[s]

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy.value,
            "scope": self.scope.to_dict(),
            "offset": self.offset,
            "shift": self.shift,
            "timestamp_ms": self.timestamp_ms,
            "duration_ms": self.duration_ms,
            "zone_assumed": self.zone_assumed,
            "datetime": self.datetime_text,
        }


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_reset_datetime(name: str, value: Any) -> tuple[int, bool]:
    """(epoch ms, zone assumed) from an ISO-8601 date-time or a ``datetime``. Kafka's tool
    (``Utils.getDateTime``) reads ``2024-05-01T00:00:00.000`` with an optional zone (``Z``,
    ``+08:00``, ``+0800``, ``+08``) and takes a time without a zone as UTC; so does this, and
    it also takes seconds without milliseconds and a date alone (midnight UTC)."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if re.fullmatch(r".*[+-]\d\d", text) and "T" in text:
            text += ":00"  # "+08" (ISO-8601's hours-only zone, Kafka's pattern X): Python wants minutes
        try:
            parsed = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            raise ConfigurationError(
                f"{name}={value!r} is not an ISO-8601 date-time such as "
                "'2024-05-01T00:00:00.000' or '2024-05-01T02:00:00+02:00'."
            ) from None
    else:
        raise ConfigurationError(f"{name} must be an ISO-8601 date-time or a datetime, got {value!r}.")
    assumed = parsed.tzinfo is None or parsed.utcoffset() is None
    if assumed:
        parsed = parsed.replace(tzinfo=UTC)
    ms = int(parsed.timestamp() * 1000)
    if ms < 0:
        raise ConfigurationError(f"{name}={value!r} is before 1970: Kafka's record timestamps start there.")
    return ms, assumed


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
    r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_iso_duration(name: str, value: Any) -> int:
    """Milliseconds from an ISO-8601 duration as ``java.time.Duration.parse`` reads it (what
    Kafka's ``--by-duration`` takes): ``PnDTnHnMn.nS``, e.g. ``P1D``, ``PT6H``, ``PT1H30M``.
    Days are 24 hours; years, months and weeks are not durations (``P1M`` is an error, not a
    month). A duration pointing into the future (negative) is refused: it would reset to the log end."""
    text = value.strip() if isinstance(value, str) else ""
    match = _DURATION.fullmatch(text)
    if (
        not match
        or (match.group(3) is not None and match.group(3).upper() == "T")
        or not any(match.group(i) for i in (2, 4, 5, 6))
    ):
        raise ConfigurationError(
            f"{name}={value!r} is not an ISO-8601 duration such as 'P1D', 'PT6H' or "
            "'PT1H30M' (days, hours, minutes, seconds; java.time.Duration's format)."
        )
    sign = -1 if match.group(1) == "-" else 1
    days, hours, minutes, seconds = (int(match.group(i) or 0) for i in (2, 4, 5, 6))
    fraction = match.group(7) or ""
    millis = int((fraction + "000")[:3]) * (-1 if match.group(6) and match.group(6).startswith("-") else 1)
    total = sign * ((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000 + millis)
    if total < 0:
        raise ConfigurationError(
            f"{name}={value!r} is negative: a duration reaches back from now (write 'PT1H', not '-PT1H')."
        )
    return total


def parse_topic_scope(name: str, values: Any) -> dict[str, tuple[int, ...] | None]:
    """``["orders", "payments:0,2"]`` -> ``{"orders": None, "payments": (0, 2)}`` (Kafka's
    ``--topic`` form, ``parseTopicsWithPartitions``); a topic named twice merges its partitions."""
    if isinstance(values, str):
        values = [values]
    out: dict[str, tuple[int, ...] | None] = {}
    for item in values or ():
        text = item.strip() if isinstance(item, str) else ""
        topic, colon, partitions = text.partition(":")
        if not topic or (colon and not partitions.strip()):
            raise ConfigurationError(
                f"{name} {item!r} is not 'topic' or 'topic:0,2' (a topic name, then optionally "
                "a colon and partition numbers)."
            )
        if not colon:
            out[topic] = None
            continue
        parsed = []
        for p in partitions.split(","):
            if not p.strip().isdigit():
                raise ConfigurationError(
                    f"{name} {item!r} has partition {p.strip()!r}: partitions are whole "
                    "numbers >= 0 ('orders:0,2')."
                )
            parsed.append(int(p))
        if topic in out and out[topic] is None:
            continue  # the whole topic was asked already
        out[topic] = tuple(sorted(set(parsed) | set(out.get(topic) or ())))
    return out


def reset_spec(
    strategy: Any,
    value: Any = None,
    *,
    topics: Any = None,
    all_topics: bool = False,
    file_offsets: Mapping[str, Mapping[TopicPartition, int]] | None = None,
) -> ResetSpec:
    """The spec from user input (CLI options or operator arguments), every check made here.

    ``value``: the strategy's value (offset, shift, date-time, duration); ``topics``: the
    ``--topic`` values; ``file_offsets``: ``--from-file``, parsed (:mod:`.csvfile`)."""
    s = Strategy.parse("strategy", strategy)
    scope = Scope(all_topics=bool(all_topics), topics=parse_topic_scope("--topic", topics))
    if not scope.given and s is not Strategy.FROM_FILE:
        raise ConfigurationError(f"{s.option} needs a scope: --topic TOPIC (or TOPIC:0,2), or --all-topics.")
    if (
        s.needs_value
        and s is not Strategy.FROM_FILE
        and (value is None or (isinstance(value, str) and not value.strip()))
    ):
        raise ConfigurationError(f"{s.option} needs a value.")
    if not s.needs_value and value is not None:
        raise ConfigurationError(f"{s.option} takes no value, got {value!r}.")
    if s is Strategy.TO_OFFSET:
        offset = _whole("--to-offset", value)
        if offset < 0:
            raise ConfigurationError(
                f"--to-offset {value!r} is negative: offsets start at 0 (use --to-earliest for "
                "the log start)."
            )
        return ResetSpec(s, scope, offset=offset)
    if s is Strategy.SHIFT_BY:
        return ResetSpec(s, scope, shift=_whole("--shift-by", value))
    if s is Strategy.TO_DATETIME:
        ms, assumed = parse_reset_datetime("--to-datetime", value)
        text = value.isoformat() if isinstance(value, datetime) else str(value).strip()
        return ResetSpec(s, scope, timestamp_ms=ms, zone_assumed=assumed, datetime_text=text)
    if s is Strategy.BY_DURATION:
        return ResetSpec(
            s, scope, duration_ms=parse_iso_duration("--by-duration", value), datetime_text=str(value).strip()
        )
    if s is Strategy.FROM_FILE:
        if not file_offsets:
            raise ConfigurationError("--from-file names a file without a single offset.")
        return ResetSpec(s, scope, file_offsets=file_offsets)
    return ResetSpec(s, scope)


def _whole(name: str, value: Any) -> int:
    if is_int(value):
        return value
    text = value.strip() if isinstance(value, str) else ""
    if not re.fullmatch(r"[-+]?\d+", text):
        raise ConfigurationError(f"{name} must be a whole number, got {value!r}.")
    return int(text)
