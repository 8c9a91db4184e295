"""Every argument of a lag gate, in one table: its name, its parser, the :class:`~.gate_spec.GateSpec`
field it fills, whether the UI shows it as a threshold, and its docs line; owned by the gate (every
mode) or by one mode (:class:`ModeTable`). What each front end needs is derived from it: the
sensor's ``template_fields``, docstring ``:param`` lines and argument checks, the spec's parsing
and its cross-mode checks (a mode's argument set under another mode is refused; a mode may need
one of its arguments), and the UI's threshold column. Validation happens once, by these parsers.

Pure: no Airflow import. Adding a mode: its :class:`LagMode` value and :class:`ModeTable` here,
its fields in ``GateSpec``, its class in ``MODES`` (:mod:`.gate`), its keyword in the sensor's
signature (a test checks the signature against this table); see docs/development.rst.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..arguments import (
    parse_bool,
    parse_check_count,
    parse_choice,
    parse_interval,
    parse_offset_count,
    parse_offsets_map,
    parse_seconds,
    parse_str_list,
    parse_timestamp_ms,
    parse_topics,
)
from ..client.errors import ConfigurationError
from .policy import parse_policy
from .verdict_findings import Verdict

__all__ = [
    "DEFAULT_FAIL_ON",
    "GATE_PARAMS",
    "MODE_TABLES",
    "GateParam",
    "LagMode",
    "ModeTable",
    "all_params",
    "param_docs",
    "params_of",
    "threshold_names",
]

DEFAULT_FAIL_ON = ("STOP", "STALL", "LOST")


class LagMode(str, Enum):
    """How a gate decides that the groups are there (``lag_mode``)."""

    BARRIER = "barrier"  # committed >= a target fixed at the first check, on every partition
    THRESHOLD = "threshold"  # every group provably within the lag thresholds


@dataclass(frozen=True)
class GateParam:
    """One argument: ``parse(name, value)`` returns the value the spec keeps or raises a
    ConfigurationError naming it; ``field``: the spec's field when it is not ``name``."""

    name: str
    parse: Callable[[str, Any], Any]
    doc: str
    field: str = ""
    threshold: bool = False  # a limit the UI's gate list shows in its threshold column

    @property
    def spec_field(self) -> str:
        return self.field or self.name


@dataclass(frozen=True)
class ModeTable:
    """A mode's own arguments. ``needs_one``: at least one of them must be set."""

    mode: LagMode
    params: tuple[GateParam, ...]
    needs_one: bool = False


def _lag_mode(name: str, value: Any) -> LagMode:
    return (
        value
        if isinstance(value, LagMode)
        else LagMode(parse_choice(name, value, [m.value for m in LagMode]))
    )


def _unknown_lag(name: str, value: Any) -> str:
    return parse_policy(value).value


def _verdicts(name: str, value: Any) -> tuple[str, ...]:
    verdicts = parse_str_list(name, value)
    known = [v.value for v in Verdict]
    unknown = [v for v in verdicts if v.upper() not in known]
    if unknown:
        raise ConfigurationError(f"{name} has {unknown[0]!r}: use some of {', '.join(known)} (or []).")
    return tuple(v.upper() for v in verdicts)


def _check_count(name: str, value: Any) -> int:
    count = parse_check_count(name, value)
    if count is None:
        raise ConfigurationError(f"{name} must be a number of checks > 0, got {value!r}.")
    return count


def _interval(name: str, value: Any) -> float:
    seconds = parse_interval(name, value)
    if seconds is None:
        raise ConfigurationError(f"{name} must be a number of seconds > 0, got {value!r}.")
    return seconds


#: The gate's own arguments (every mode), in the sensor's order; the modes' come after ``lag_mode``.
_HEAD = (
    GateParam(
        "topics",
        parse_topics,
        "only these topics (all their partitions); default: each group's committed and assigned partitions.",
    ),
    GateParam("lag_mode", _lag_mode, f"how the gate decides: {' or '.join(repr(m.value) for m in LagMode)}."),
)
_TAIL = (
    GateParam(
        "previous_barrier", parse_offsets_map, "where Spark's range starts (see the module docstring)."
    ),
    GateParam(
        "unknown_lag",
        _unknown_lag,
        'a partition without a committed offset: ``"fail"`` (cannot pass: '
        'wait), ``"ignore"`` (left out), ``"from_earliest"`` (counts the whole '
        'log), ``"from_latest"`` (counts as caught up).',
    ),
    GateParam("read_committed", parse_bool, "log end = last stable offset (transactional topics)."),
    GateParam(
        "fail_on_verdicts",
        _verdicts,
        "verdicts that fail the gate when they persist (``[]``: never); "
        "ABANDONED (a topic the group stopped consuming) fails it whenever "
        "STOP or STALL does.",
    ),
    GateParam(
        "verdict_checks", _check_count, "consecutive checks a verdict or a too-slow projection must persist."
    ),
    GateParam(
        "stuck_after",
        _interval,
        "a committed offset unchanged this long while lagging is STOP/STALL (seconds or timedelta).",
        field="stuck_after_s",
    ),
    GateParam(
        "retention_margin_floor",
        _interval,
        "with AT_RISK in ``fail_on_verdicts``: a lagging partition whose retention margin (the least "
        "time before retention may delete its first unread record) is below this is AT_RISK, whatever "
        "its catch-up time (seconds or timedelta).",
        field="margin_floor_s",
    ),
)
GATE_PARAMS = _HEAD + _TAIL

MODE_TABLES: Mapping[LagMode, ModeTable] = {
    LagMode.BARRIER: ModeTable(
        LagMode.BARRIER,
        (
            GateParam(
                "barrier_timestamp",
                parse_timestamp_ms,
                "barrier at the offsets of this time instead of the log "
                "end: a timezone-aware datetime, an ISO-8601 string "
                '(``"{{ data_interval_end }}"``) or epoch ms.',
                field="barrier_timestamp_ms",
            ),
        ),
    ),
    LagMode.THRESHOLD: ModeTable(
        LagMode.THRESHOLD,
        (
            GateParam(
                "max_lag_per_partition",
                parse_offset_count,
                "max lag of any partition, in records.",
                threshold=True,
            ),
            GateParam(
                "max_total_lag",
                parse_offset_count,
                "max total lag of each group, in records.",
                threshold=True,
            ),
            GateParam(
                "max_lag_seconds",
                parse_seconds,
                "max age of each group's oldest unread record (every lagging "
                "partition is measured; an age known only from below never "
                "passes).",
                threshold=True,
            ),
        ),
        needs_one=True,
    ),
}


def params_of(mode: LagMode) -> tuple[GateParam, ...]:
    return MODE_TABLES[mode].params


def all_params() -> tuple[GateParam, ...]:
    """Every argument in the sensor's order: the gate's head, each mode's, the gate's tail."""
    return _HEAD + tuple(p for table in MODE_TABLES.values() for p in table.params) + _TAIL


def owner_of(name: str) -> LagMode | None:
    """The mode an argument belongs to (None: the gate's, every mode)."""
    return next(
        (mode for mode, table in MODE_TABLES.items() if any(p.name == name for p in table.params)), None
    )


def threshold_names() -> tuple[str, ...]:
    """The arguments the UI shows as a gate's thresholds."""
    return tuple(p.name for p in all_params() if p.threshold)


def param_docs() -> str:
    """The ``:param`` lines of every argument (a mode's say which mode they belong to)."""
    lines = []
    for p in all_params():
        owner = owner_of(p.name)
        text = f"{owner.value} mode: {p.doc}" if owner is not None else p.doc
        lines.append(f":param {p.name}: {text}")
    return "\n".join(lines)


def check_modes(lag_mode: LagMode, values: Mapping[str, Any]) -> None:
    """The cross-mode rules, from the tables: another mode's argument set is refused, and a mode
    that needs one of its arguments gets one. ``values``: argument name -> parsed value."""
    for mode, table in MODE_TABLES.items():
        names = [p.name for p in table.params]
        given = [n for n in names if values.get(n) is not None]
        if mode is not lag_mode and given:
            verb = "applies" if len(names) == 1 else "apply"
            raise ConfigurationError(
                f"{' / '.join(names)} {verb} to lag_mode={mode.value!r}, not "
                f"{lag_mode.value!r}: set lag_mode={mode.value!r} or drop "
                f"{'it' if len(given) == 1 else 'them'}."
            )
        if mode is lag_mode and table.needs_one and not given:
            raise ConfigurationError(f"lag_mode={mode.value!r} needs at least one of {', '.join(names)}.")
