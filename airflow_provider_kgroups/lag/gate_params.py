"""What a lag gate's argument is made of: :class:`GateParam` (its name, its parser, its JSON form,
whether the UI shows it as a threshold, its docs line), declared on the spec's field it fills with
:func:`declare`, and the parsers that turn what a user (or a trigger's kwargs) gives into the
typed value the spec keeps. The arguments themselves are declared once, as fields of
:class:`~.gate_spec.GateSpec` and of each mode's parameters (:mod:`.gate_spec`); the table every
front end reads (the sensor's keywords, template fields and ``:param`` lines, the event trigger's
keywords, the UI's threshold column) is derived from those fields.

Pure: no Airflow import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from ..arguments import parse_check_count, parse_interval, parse_offsets_map, parse_str_list
from ..client.errors import ConfigurationError
from ..client.offset_map import OffsetKind, OffsetMap
from .model import UnknownLagPolicy
from .policy import parse_policy
from .verdict_findings import Verdict

__all__ = [
    "DEFAULT_FAIL_ON",
    "GateParam",
    "declare",
    "declared",
    "parse_previous_barrier",
    "parse_unknown_lag",
    "parse_verdicts",
    "parse_whole_checks",
    "parse_positive_seconds",
]

#: The verdicts that fail a gate by default, as the sensor's keyword shows them.
DEFAULT_FAIL_ON = ("STOP", "STALL", "LOST")

_KEY = "kgroups.gate_param"  # the dataclass field metadata key


def _as_json(value: Any) -> Any:
    """The JSON form of a typed value (enums as their values, sets sorted, offset maps nested)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, OffsetMap):
        return value.nested()
    if isinstance(value, (frozenset, set)):
        return sorted(_as_json(v) for v in value)
    if isinstance(value, tuple):
        return [_as_json(v) for v in value]
    return value


@dataclass(frozen=True)
class GateParam:
    """One argument. ``name``: the keyword users pass (the sensor's, the event trigger's);
    ``key``: the spec's field it fills, which is also its key in the spec's JSON
    (:meth:`~.gate_spec.GateSpec.to_dict`); ``parse(name, value)`` returns the typed value or raises
    a ConfigurationError naming the argument; ``owner``: the mode it belongs to (None: every mode)."""

    name: str
    parse: Callable[[str, Any], Any]
    doc: str
    key: str = ""
    threshold: bool = False  # a limit the UI's gate list shows in its threshold column
    owner: Enum | None = None  # the mode (a LagMode)

    def to_json(self, value: Any) -> Any:
        """The typed value as plain JSON, which :attr:`parse` reads back to the same value."""
        return _as_json(value)


def declare(
    name: str, parse: Callable[[str, Any], Any], doc: str, *, threshold: bool = False
) -> Mapping[str, GateParam]:
    """The metadata of a spec field that is a gate argument: ``field(default=..., metadata=declare(...))``."""
    return {_KEY: GateParam(name, parse, doc, threshold=threshold)}


def declared(cls: type, owner: Enum | None = None) -> tuple[GateParam, ...]:
    """The arguments declared on the fields of the dataclass ``cls``, in field order, each with
    its field as ``key``."""
    out = []
    for f in fields(cls):
        param = f.metadata.get(_KEY)
        if param is not None:
            out.append(GateParam(param.name, param.parse, param.doc, f.name, param.threshold, owner))
    return tuple(out)


# -- the parsers of the gate's own types ------------------------------------------------------------


def parse_unknown_lag(name: str, value: Any) -> UnknownLagPolicy:
    return parse_policy(value)


def parse_verdicts(name: str, value: Any) -> frozenset[Verdict]:
    """Verdict names (any case) or verdicts, in a list or a set -> a set of :class:`Verdict`;
    ``[]``: none."""
    names = parse_str_list(name, value)
    known = [v.value for v in Verdict]
    unknown = [v for v in names if v.upper() not in known]
    if unknown:
        raise ConfigurationError(f"{name} has {unknown[0]!r}: use some of {', '.join(known)} (or []).")
    return frozenset(Verdict(v.upper()) for v in names)


def parse_whole_checks(name: str, value: Any) -> int:
    count = parse_check_count(name, value)
    if count is None:
        raise ConfigurationError(f"{name} must be a number of checks > 0, got {value!r}.")
    return count


def parse_positive_seconds(name: str, value: Any) -> float:
    """Seconds > 0 (a number, its rendered text, or a timedelta)."""
    if hasattr(value, "total_seconds"):
        value = value.total_seconds()
    seconds = parse_interval(name, value)
    if seconds is None:
        raise ConfigurationError(f"{name} must be a number of seconds > 0, got {value!r}.")
    return float(seconds)


def parse_previous_barrier(name: str, value: Any) -> OffsetMap | None:
    """Where the range starts (-2: earliest): a map, its JSON text or a previous success XCom of
    the sensor (:func:`~..arguments.parse_offsets_map`); read once, kept as an offset map."""
    if isinstance(value, OffsetMap):
        return OffsetMap.parse(value, OffsetKind.STARTING, name=name)
    nested = parse_offsets_map(name, value, OffsetKind.STARTING)
    return None if nested is None else OffsetMap.parse(nested, OffsetKind.STARTING, name=name)
