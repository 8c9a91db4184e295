"""One offset map: ``{topic: {"partition": offset}}`` (the hand-off to Spark, the gate's XCom,
a barrier's target, where a watched range ended) as one value, :class:`OffsetMap`, which owns
its nesting, its parsing and its validation.

What a map may hold depends on what it is for, which its :class:`OffsetKind` says (never
which parser happened to read it):

==============  =========================================================  ========================
kind            what the map is                                            an offset is
==============  =========================================================  ========================
``COMMITTED``   committed offsets; a barrier's target; where the gate's    >= 0
                or a watched range ends; what a job processed up to
``CHECKPOINT``  the committed offsets one check saw                        >= 0, or None (no commit)
``STARTING``    where a range starts: Spark's ``startingOffsets`` for a    >= 0, or -2 (earliest)
                batch read, the gate's ``previous_barrier``
``ENDING``      where a range ends: Spark's ``endingOffsets`` for a batch  >= 0, or -1 (latest)
                read
``STREAMING``   Spark's options for a streaming query                      >= 0, -2 or -1
==============  =========================================================  ========================

-2 and -1 are Kafka's own (ListOffsets' earliest and latest), which Spark's Kafka source takes
over; for batch reads it refuses -1 in ``startingOffsets`` and -2 in ``endingOffsets``
(``KafkaSourceProvider.validateBatchOptions``). No offset reaches 2**63 (Kafka's int64).

The JSON form is Spark's (``JsonUtils.partitionOffsets``): an object of topic -> object of
partition -> offset, the partition a JSON string holding an int (``"0"``), topics and
partitions in order (partitions numerically). :meth:`OffsetMap.parse` reads that text, the
same nesting as a mapping (partitions as ints or strings), or the flat
``{TopicPartition: offset}`` the client returns; each error names the map (the argument), the
topic, the partition and the rule.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from enum import Enum
from typing import Any, TypeGuard

from .errors import ConfigurationError
from .numbers import is_int
from .results import TopicPartition, topic_partition

__all__ = ["EARLIEST", "LATEST", "OffsetKind", "OffsetMap", "SparkOffsetsError"]

#: ListOffsets' sentinels (as in :mod:`.handlers.list_offsets`, which this module does not
#: import: it would load the protocol classes wherever an argument is parsed).
EARLIEST = -2
LATEST = -1
_INT64 = 2**63
_INT32 = 2**31


class SparkOffsetsError(ConfigurationError):
    """Offsets that Spark's Kafka batch source would refuse (or misread); the message names
    the option, the topic, the partition and the rule."""


class OffsetKind(Enum):
    """What an offset map is for, which decides the values it may hold (module docstring)."""

    COMMITTED = "committed"
    CHECKPOINT = "checkpoint"
    STARTING = "starting"
    ENDING = "ending"
    STREAMING = "streaming"

    @property
    def sentinels(self) -> frozenset[int]:
        """The negative offsets this kind takes (Kafka's earliest and latest)."""
        return _SENTINELS[self]

    @property
    def takes_none(self) -> bool:
        """None (nothing committed there) is a value."""
        return self is OffsetKind.CHECKPOINT

    def within(self, other: OffsetKind) -> bool:
        """Every value this kind takes, ``other`` takes too (a committed map is a valid ending)."""
        return self.sentinels <= other.sentinels and (other.takes_none or not self.takes_none)

    @property
    def error(self) -> type[ConfigurationError]:
        return (
            SparkOffsetsError
            if self in (OffsetKind.STARTING, OffsetKind.ENDING, OffsetKind.STREAMING)
            else ConfigurationError
        )

    @property
    def allowed(self) -> str:
        """The values, in words: ``>= 0, or -2 for earliest``."""
        return _ALLOWED[self]

    @property
    def example(self) -> str:
        return _EXAMPLES[self]


_SENTINELS = {
    OffsetKind.COMMITTED: frozenset(),
    OffsetKind.CHECKPOINT: frozenset(),
    OffsetKind.STARTING: frozenset({EARLIEST}),
    OffsetKind.ENDING: frozenset({LATEST}),
    OffsetKind.STREAMING: frozenset({EARLIEST, LATEST}),
}
_ALLOWED = {
    OffsetKind.COMMITTED: ">= 0",
    OffsetKind.CHECKPOINT: ">= 0, or null where nothing is committed",
    OffsetKind.STARTING: ">= 0, or -2 for earliest",
    OffsetKind.ENDING: ">= 0, or -1 for latest",
    OffsetKind.STREAMING: ">= 0, -2 for earliest or -1 for latest",
}
_EXAMPLES = {
    OffsetKind.COMMITTED: '{"orders": {"0": 23, "1": 7}}',
    OffsetKind.CHECKPOINT: '{"orders": {"0": 23}}',
    OffsetKind.STARTING: '{"orders": {"0": 23, "1": -2}}',
    OffsetKind.ENDING: '{"orders": {"0": 23, "1": -1}}',
    OffsetKind.STREAMING: '{"orders": {"0": 23, "1": -2}}',
}
#: Why a kind refuses a sentinel it does not take, where the reason is more than "not an offset".
_REFUSED = {
    (
        OffsetKind.STARTING,
        LATEST,
    ): "Spark's Kafka source refuses in startingOffsets for batch queries; use -2 "
    "(earliest) or an offset >= 0.",
    (OffsetKind.ENDING, EARLIEST): "Spark's Kafka source refuses in endingOffsets for batch queries; use -1 "
    "(latest) or an offset >= 0 (exclusive).",
}
_NAMES = {EARLIEST: "earliest", LATEST: "latest"}


class OffsetMap(Mapping[TopicPartition, Any]):
    """``{TopicPartition: offset}`` of one :class:`OffsetKind`, checked when made; read-only.

    ``OffsetMap(offsets, kind)`` takes what the code has (flat ``{TopicPartition: offset}`` or
    the nesting); :meth:`parse` reads what was given (also the JSON text, or another map, checked
    again for this kind). :meth:`nested` and :meth:`to_json` write the nesting. It compares equal
    to a dict with the same items."""

    __slots__ = ("_offsets", "kind")
    _offsets: dict[TopicPartition, Any]  # set once, by _set
    kind: OffsetKind

    def __init__(
        self,
        offsets: Mapping[Any, Any] | None = None,
        kind: OffsetKind = OffsetKind.COMMITTED,
        *,
        name: str = "offsets",
    ) -> None:
        self._set(_read(name, offsets or {}, kind, nonempty=False), kind)

    @classmethod
    def parse(cls, value: Any, kind: OffsetKind, *, name: str, nonempty: bool = False) -> OffsetMap:
        """Read a map given as JSON text, a nested or flat mapping, or an OffsetMap. ``nonempty``:
        at least one partition, and no topic without one (a Spark option: Spark would read nothing)."""
        if isinstance(value, OffsetMap) and value.kind.within(kind) and (value or not nonempty):
            return value if value.kind is kind else cls._made(value._offsets, kind)  # nothing to check again
        if isinstance(value, str):
            value = _from_json(name, value, kind)
        if not isinstance(value, Mapping):
            raise kind.error(
                f"{name} must be a JSON object of topic -> {{partition: offset}}, got "
                f"{type(value).__name__}; expected e.g. {kind.example}."
            )
        return cls._made(_read(name, value, kind, nonempty=nonempty), kind)

    @classmethod
    def _made(cls, offsets: dict[TopicPartition, Any], kind: OffsetKind) -> OffsetMap:
        found = cls.__new__(cls)
        found._set(offsets, kind)
        return found

    def _set(self, offsets: dict[TopicPartition, Any], kind: OffsetKind) -> None:
        object.__setattr__(self, "_offsets", offsets)
        object.__setattr__(self, "kind", kind)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"an OffsetMap is read-only: make a new one (OffsetMap({{...}}, {self.kind}))")

    def __reduce__(self) -> tuple[Any, ...]:  # pickle (Spark ships values to executors) without __setattr__
        return (OffsetMap, (self._offsets, self.kind))

    # -- a read-only mapping ---------------------------------------------------------------------

    def __getitem__(self, tp: TopicPartition) -> Any:
        return self._offsets[tp]

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._offsets)

    def __len__(self) -> int:
        return len(self._offsets)

    def __repr__(self) -> str:
        return f"OffsetMap({self.nested()!r}, {self.kind})"

    # -- the nesting -----------------------------------------------------------------------------

    def flat(self) -> dict[TopicPartition, Any]:
        """A plain ``{TopicPartition: offset}`` copy, in order."""
        return self._offsets.copy()

    @property
    def partitions(self) -> list[TopicPartition]:
        return list(self._offsets)  # kept in order

    def nested(self) -> dict[str, dict[str, Any]]:
        """``{"topic": {"0": offset}}``, topics and partitions in order (the map is kept in order)."""
        out: dict[str, dict[str, Any]] = {}
        for tp, offset in self._offsets.items():
            out.setdefault(tp.topic, {})[str(tp.partition)] = offset
        return out

    def to_json(self) -> str:
        return json.dumps(self.nested())


def _from_json(name: str, text: str, kind: OffsetKind) -> Any:
    if text.strip() in ("earliest", "latest"):
        raise kind.error(
            f"{name}={text.strip()!r} is Spark's global form; this bridge passes per-partition JSON "
            f"such as {kind.example}."
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise kind.error(f"{name} is not valid JSON ({exc}); expected e.g. {kind.example}.") from None


def _read(
    name: str, value: Mapping[Any, Any], kind: OffsetKind, *, nonempty: bool
) -> dict[TopicPartition, Any]:
    """Flat or nested -> ``{TopicPartition: offset}`` in order, every key and value checked.
    (A gate's target holds an offset per group and partition: thousands are read per check, so
    the values that pass take the short way and the words are made only for one that fails.)"""
    error = kind.error
    if nonempty and not value:
        raise error(f"{name} names no topic: Spark would read nothing; expected e.g. {kind.example}.")
    sentinels, takes_none = _SENTINELS[kind], kind.takes_none
    found: list[tuple[TopicPartition, Any]] = []
    for key, item in value.items():
        if isinstance(key, TopicPartition):
            if not isinstance(key.topic, str) or not key.topic or not _is_partition(key.partition):
                raise error(f"{name}: {key!r} is not a partition (a topic and an int >= 0).")
            pairs: Any = ((key, item),)
        elif not isinstance(key, str):
            raise error(
                f"{name}: {key!r} -> {item!r} is neither TopicPartition -> offset nor topic -> "
                f"{{partition: offset}}; expected e.g. {kind.example}."
            )
        elif not key:
            raise error(f"{name} has an empty topic name.")
        elif not isinstance(item, Mapping) or (nonempty and not item):
            raise error(
                f"{name}: topic {key!r} must map to {'a non-empty' if nonempty else 'an'} object of "
                f"partition -> offset, got {item!r}; expected e.g. {kind.example}."
            )
        else:
            pairs = ((topic_partition(key, _partition(name, key, p, kind)), o) for p, o in item.items())
        for tp, offset in pairs:
            if not (is_int(offset) and (0 <= offset < _INT64 or offset in sentinels)) and not (
                offset is None and takes_none
            ):
                _refuse(name, tp, offset, kind)
            found.append((tp, offset))
    found.sort(key=_order)
    out = dict(found)
    if len(out) < len(found):
        twice = next(a for (a, _), (b, _) in itertools.pairwise(found) if a == b)
        raise error(f"{name}: {twice} is given twice.")
    return out


def _order(pair: tuple[TopicPartition, Any]) -> tuple[str, int]:
    return pair[0].topic, pair[0].partition


def _is_partition(value: object) -> TypeGuard[int]:
    return is_int(value) and 0 <= value < _INT32


def _partition(name: str, topic: str, partition: Any, kind: OffsetKind) -> int:
    """A partition key: an int >= 0, or its decimal text as JSON writes it (``"0"``, not ``"00"``)."""
    if (
        isinstance(partition, str)
        and partition.isascii()
        and partition.isdigit()
        and (len(partition) == 1 or partition[0] != "0")
        and int(partition) < _INT32
    ):
        return int(partition)
    if _is_partition(partition):
        return partition
    if not isinstance(partition, str):
        raise kind.error(
            f"{name}: topic {topic!r} has partition key {partition!r}; a partition is an int written "
            f"as a JSON string, e.g. {kind.example}."
        )
    raise kind.error(
        f"{name}: topic {topic!r} has partition {partition!r}, which is not a partition number "
        f'(a non-negative int such as "0"); expected e.g. {kind.example}.'
    )


def _refuse(name: str, tp: TopicPartition, offset: Any, kind: OffsetKind) -> None:
    """Raise the error that says why ``offset`` is not one ``kind`` takes."""
    where = f"{name}: {tp}"
    if not is_int(offset):
        raise kind.error(f"{where} is {offset!r}; an offset is a JSON integer ({kind.allowed}).")
    if offset >= _INT64:
        raise kind.error(f"{where} is {offset}, beyond a Kafka offset (int64).")
    label = f"{offset} ({_NAMES[offset]})" if offset in _NAMES else str(offset)
    why = _REFUSED.get((kind, offset))
    if why is not None:
        raise kind.error(f"{where} is {label}, which {why}")
    raise kind.error(f"{where} is {label}; offsets are {kind.allowed}.")
