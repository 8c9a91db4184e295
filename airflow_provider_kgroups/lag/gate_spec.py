"""What a lag gate waits for: :class:`GateSpec`, one of the two halves that travel from the sensor
to its trigger and survive a triggerer restart (the other: :class:`~.gate_state.GateState`). Light
on purpose: the trigger modules read a spec without loading the engine.

A spec holds typed values (enums, a set of verdicts, an offset map, each mode's own parameters:
:class:`BarrierParams`, :class:`ThresholdParams`). :meth:`GateSpec.parse` reads what a user gives
(the sensor's or the event trigger's keywords, rendered), each argument by its one parser, once;
:meth:`GateSpec.to_dict` / :meth:`GateSpec.from_dict` are its JSON, only at a trigger's kwargs.

Every gate argument is declared once, as a field here (:func:`~.gate_params.declare`: its name,
parser and docs line); the table the front ends read (:func:`all_params`, :func:`param_docs`,
:func:`threshold_names`) is derived from these fields. Adding a mode: its :class:`LagMode`
value and its parameters class here (in ``MODE_PARAMS``), its :class:`~.gate_modes.GateMode` in
``MODES`` (:mod:`.gate`) and its keywords in the sensor's signature (a test checks it against
the table); see docs/development.rst.

A spec names its groups by exact ids, by patterns, or both. It validates without knowing which
groups the patterns will match: the gate binds them (:meth:`GateSpec.bind`) at its first check,
against the cluster's listing, and carries the bound ids from then on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, ClassVar, TypeVar

from ..arguments import (
    parse_bool,
    parse_choice,
    parse_offset_count,
    parse_seconds,
    parse_str_list,
    parse_timestamp_ms,
    parse_topics,
)
from ..client.errors import ConfigurationError
from ..client.offset_map import OffsetMap
from ..client.selection import GroupSelector
from .gate_params import (
    DEFAULT_FAIL_ON,
    GateParam,
    declare,
    declared,
    parse_positive_seconds,
    parse_previous_barrier,
    parse_unknown_lag,
    parse_verdicts,
    parse_whole_checks,
)
from .model import UnknownLagPolicy
from .verdict_findings import Verdict
from .verdicts import VerdictRules

__all__ = [
    "DEFAULT_FAIL_ON",
    "MODE_PARAMS",
    "BarrierParams",
    "GateSpec",
    "LagMode",
    "ModeParams",
    "ThresholdParams",
    "all_params",
    "param_docs",
    "params_of",
    "threshold_names",
]


# -- each mode's own parameters ----------------------------------------------------------------


class LagMode(str, Enum):
    """How a gate decides that the groups are there (``lag_mode``)."""

    BARRIER = "barrier"  # committed >= a target fixed at the first check, on every partition
    THRESHOLD = "threshold"  # every group provably within the lag thresholds


def parse_lag_mode(name: str, value: Any) -> LagMode:
    return (
        value
        if isinstance(value, LagMode)
        else LagMode(parse_choice(name, value, [m.value for m in LagMode]))
    )


@dataclass(frozen=True)
class ModeParams:
    """A mode's own parameter values; a spec holds exactly one, so another mode's argument has
    nowhere to go. ``needs_one``: at least one of them must be set."""

    lag_mode: ClassVar[LagMode]
    needs_one: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.needs_one and all(getattr(self, p.key) is None for p in declared(type(self))):
            names = ", ".join(p.name for p in declared(type(self)))
            raise ConfigurationError(f"lag_mode={self.lag_mode.value!r} needs at least one of {names}.")


@dataclass(frozen=True)
class BarrierParams(ModeParams):
    lag_mode = LagMode.BARRIER

    barrier_timestamp_ms: int | None = field(
        default=None,
        metadata=declare(
            "barrier_timestamp",
            parse_timestamp_ms,
            "barrier at the offsets of this time instead of the log end: a timezone-aware datetime, an "
            'ISO-8601 string (``"{{ data_interval_end }}"``) or epoch ms.',
        ),
    )


@dataclass(frozen=True)
class ThresholdParams(ModeParams):
    lag_mode = LagMode.THRESHOLD
    needs_one = True

    max_lag_per_partition: int | None = field(
        default=None,
        metadata=declare(
            "max_lag_per_partition",
            parse_offset_count,
            "max lag of any partition, in records.",
            threshold=True,
        ),
    )
    max_total_lag: int | None = field(
        default=None,
        metadata=declare(
            "max_total_lag", parse_offset_count, "max total lag of each group, in records.", threshold=True
        ),
    )
    max_lag_seconds: float | None = field(
        default=None,
        metadata=declare(
            "max_lag_seconds",
            parse_seconds,
            "max age of each group's oldest unread record (every lagging partition is measured; an age "
            "known only from below never passes).",
            threshold=True,
        ),
    )


#: Each mode's parameters class.
MODE_PARAMS: Mapping[LagMode, type[ModeParams]] = {
    cls.lag_mode: cls for cls in (BarrierParams, ThresholdParams)
}
P = TypeVar("P", bound=ModeParams)


# -- the spec ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateSpec:
    """What to wait for, as typed values (:meth:`parse` reads a user's arguments into one)."""

    group_ids: tuple[str, ...] = ()
    topics: tuple[str, ...] | None = field(
        default=None,
        metadata=declare(
            "topics",
            parse_topics,
            "only these topics (all their partitions); default: each group's committed and assigned partitions.",
        ),
    )
    #: the mode's parameters; its argument is ``lag_mode``, which picks the class
    mode: ModeParams = field(
        default_factory=BarrierParams,
        metadata=declare(
            "lag_mode",
            parse_lag_mode,
            f"how the gate decides: {' or '.join(repr(m.value) for m in LagMode)}.",
        ),
    )
    previous_barrier: OffsetMap | None = field(
        default=None,
        metadata=declare(
            "previous_barrier",
            parse_previous_barrier,
            "where Spark's range starts (see the module docstring).",
        ),
    )
    unknown_lag: UnknownLagPolicy = field(
        default=UnknownLagPolicy.FAIL,
        metadata=declare(
            "unknown_lag",
            parse_unknown_lag,
            'a partition without a committed offset: ``"fail"`` (cannot pass: wait), ``"ignore"`` (left '
            'out), ``"from_earliest"`` (counts the whole log), ``"from_latest"`` (counts as caught up).',
        ),
    )
    read_committed: bool = field(
        default=False,
        metadata=declare(
            "read_committed", parse_bool, "log end = last stable offset (transactional topics)."
        ),
    )
    fail_on_verdicts: frozenset[Verdict] = field(
        default=frozenset(Verdict(v) for v in DEFAULT_FAIL_ON),
        metadata=declare(
            "fail_on_verdicts",
            parse_verdicts,
            "verdicts that fail the gate when they persist (``[]``: never); ABANDONED (a topic the group "
            "stopped consuming) fails it whenever STOP or STALL does.",
        ),
    )
    verdict_checks: int = field(
        default=2,
        metadata=declare(
            "verdict_checks",
            parse_whole_checks,
            "consecutive checks a verdict or a too-slow projection must persist.",
        ),
    )
    stuck_after_s: float = field(
        default=600.0,
        metadata=declare(
            "stuck_after",
            parse_positive_seconds,
            "a committed offset unchanged this long while lagging is STOP/STALL (seconds or timedelta).",
        ),
    )
    margin_floor_s: float = field(
        default=3600.0,
        metadata=declare(
            "retention_margin_floor",
            parse_positive_seconds,
            "with AT_RISK in ``fail_on_verdicts``: a lagging partition whose retention margin (the least "
            "time before retention may delete its first unread record) is below this is AT_RISK, whatever "
            "its catch-up time (seconds or timedelta).",
        ),
    )
    group_patterns: tuple[str, ...] = ()  # matched against the cluster's groups at the first check
    exclude_patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.group_ids and not self.group_patterns:
            raise ConfigurationError(
                "give group_ids and/or group_patterns (e.g. group_ids=['orders-landing'] or "
                "group_patterns=['orders-*'])."
            )

    @classmethod
    def parse(
        cls,
        *,
        group_ids: Any = (),
        group_patterns: Any = (),
        exclude_patterns: Any = (),
        **arguments: Any,
    ) -> GateSpec:
        """A spec from a user's arguments (the sensor's keywords, rendered; None or absent: the
        default), each read by its one parser; another mode's argument, or an argument this gate
        does not have, is a ConfigurationError naming it."""
        unknown = sorted(set(arguments) - {p.name for p in all_params()})
        if unknown:
            raise ConfigurationError(
                f"{unknown[0]!r} is not an argument of a lag gate: use {', '.join(p.name for p in all_params())}."
            )
        ids = parse_str_list("group_ids", group_ids)
        patterns = parse_str_list("group_patterns", group_patterns)
        excludes = parse_str_list("exclude_patterns", exclude_patterns)
        given = {name: value for name, value in arguments.items() if value is not None}
        lag_mode = parse_lag_mode("lag_mode", given.pop("lag_mode", LagMode.BARRIER))
        for other, params in MODE_TABLES.items():
            names = [p.name for p in params]
            set_ = [n for n in names if n in given]
            if other is not lag_mode and set_:
                verb = "applies" if len(names) == 1 else "apply"
                raise ConfigurationError(
                    f"{' / '.join(names)} {verb} to lag_mode={other.value!r}, not {lag_mode.value!r}: set "
                    f"lag_mode={other.value!r} or drop {'it' if len(set_) == 1 else 'them'}."
                )
        mode = MODE_PARAMS[lag_mode](
            **{p.key: p.parse(p.name, given[p.name]) for p in MODE_TABLES[lag_mode] if p.name in given}
        )
        spec = cls(
            group_ids=ids,
            group_patterns=patterns,
            exclude_patterns=excludes,
            mode=mode,
            **{p.key: p.parse(p.name, given[p.name]) for p in _SPEC_PARAMS if p.name in given},
        )
        GroupSelector(ids, patterns, excludes)  # the patterns compile, the ids are ids: now, not at a check
        return spec

    @property
    def lag_mode(self) -> LagMode:
        return self.mode.lag_mode

    def params(self, kind: type[P]) -> P:
        """This spec's mode parameters, as the mode that reads them expects them."""
        if not isinstance(self.mode, kind):
            raise ConfigurationError(f"a {self.lag_mode.value} gate has no {kind.__name__}")
        return self.mode

    @property
    def bound(self) -> bool:
        """True once the groups are known by id (no pattern left to match)."""
        return not self.group_patterns

    @property
    def selector(self) -> GroupSelector:
        return GroupSelector(self.group_ids, self.group_patterns, self.exclude_patterns)

    def bind(self, group_ids: Iterable[str]) -> GateSpec:
        """The same spec for exactly these groups (what the patterns matched, plus the exact ids)."""
        return replace(self, group_ids=tuple(group_ids), group_patterns=(), exclude_patterns=())

    @property
    def rules(self) -> VerdictRules:
        stuck_ms = int(self.stuck_after_s * 1000)
        return VerdictRules(
            window_ms=3 * stuck_ms, stuck_after_ms=stuck_ms, margin_floor_ms=int(self.margin_floor_s * 1000)
        )

    def arguments(self) -> dict[str, Any]:
        """Every argument as plain JSON, by the name users pass (what :meth:`parse` reads back);
        another mode's arguments are None."""
        return {
            p.name: p.to_json(getattr(self, p.key))
            if p.owner is None
            else p.to_json(getattr(self.mode, p.key))
            if p.owner is self.lag_mode
            else None
            for p in all_params()
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON, keyed by the spec's fields (a trigger's kwargs; the keys older versions wrote)."""
        by_name = self.arguments()
        return {
            "group_ids": list(self.group_ids),
            **{p.key: by_name[p.name] for p in all_params()},
            "group_patterns": list(self.group_patterns),
            "exclude_patterns": list(self.exclude_patterns),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateSpec:
        """:meth:`to_dict` back (also what older versions wrote: the same keys, some absent)."""
        names = {p.key: p.name for p in all_params()}
        return cls.parse(**{names.get(key, key): value for key, value in data.items()})


# -- the table, derived from the fields above ---------------------------------------------------

#: Each mode's arguments.
MODE_TABLES: Mapping[LagMode, tuple[GateParam, ...]] = {
    mode: declared(cls, owner=mode) for mode, cls in MODE_PARAMS.items()
}
#: The gate's own arguments (every mode), in field order; ``lag_mode`` (the ``mode`` field's
#: argument) is read and written as the spec's ``lag_mode`` and followed by each mode's arguments.
_ALL = tuple(
    q
    for p in declared(GateSpec)
    for q in (
        (replace(p, key="lag_mode"), *(m for params in MODE_TABLES.values() for m in params))
        if p.key == "mode"
        else (p,)
    )
)
_SPEC_PARAMS = tuple(p for p in _ALL if p.owner is None and p.key != "lag_mode")


def params_of(mode: LagMode) -> tuple[GateParam, ...]:
    return MODE_TABLES[mode]


def all_params() -> tuple[GateParam, ...]:
    """Every argument in the sensor's order: the gate's, with each mode's after ``lag_mode``."""
    return _ALL


def threshold_names() -> tuple[str, ...]:
    """The arguments the UI shows as a gate's thresholds."""
    return tuple(p.name for p in all_params() if p.threshold)


def param_docs() -> str:
    """The ``:param`` lines of every argument (a mode's say which mode they belong to)."""
    return "\n".join(
        f":param {p.name}: {p.owner.value + ' mode: ' if p.owner is not None else ''}{p.doc}"
        for p in all_params()
    )
