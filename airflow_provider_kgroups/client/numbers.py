"""Number checks: the one place that tells an int from a bool and a number from NaN.

``True`` is an ``int`` in Python and ``float("nan")`` compares false with everything, so a
check written by hand (``isinstance(x, int) and x >= 0``) lets ``True`` through, and
``x <= 0`` lets NaN through. Every argument, option and stored value the package takes as a
number is checked here; ``tests/test_number_checks.py`` finds an ``isinstance(x, int)`` (or
``float``) written anywhere else.

A check returns the value or raises :class:`ConfigurationError` as
``"<name> must be <must_be>, got <value>."``: the caller names the argument and says what it
takes (the fix); without ``must_be`` the bounds are spelled out (``an int >= 1024``).

The bottom of the layering: the client imports this, and this imports nothing of the package
but its errors.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from .errors import ConfigurationError

__all__ = ["is_int", "is_number", "check_int", "check_number", "to_number"]


def is_int(value: object) -> TypeGuard[int]:
    """An int (an IntEnum too), never a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or a float (NaN and the infinities included), never a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_int(
    name: str,
    value: object,
    *,
    at_least: int | None = None,
    at_most: int | None = None,
    must_be: str | None = None,
) -> int:
    """``value`` when it is an int (not a bool) within ``[at_least, at_most]``."""
    if is_int(value) and (at_least is None or value >= at_least) and (at_most is None or value <= at_most):
        return value
    raise ConfigurationError(
        f"{name} must be {must_be or _bounds('an int', at_least, None, at_most)}, got {value!r}."
    )


def check_number(
    name: str,
    value: object,
    *,
    at_least: float | None = None,
    above: float | None = None,
    at_most: float | None = None,
    must_be: str | None = None,
) -> float:
    """``float(value)`` when it is a finite int or float (not a bool) that is ``>= at_least``,
    ``> above`` and ``<= at_most`` (each bound only when given)."""
    if (
        is_number(value)
        and math.isfinite(value)
        and (at_least is None or value >= at_least)
        and (above is None or value > above)
        and (at_most is None or value <= at_most)
    ):
        return float(value)
    raise ConfigurationError(
        f"{name} must be {must_be or _bounds('a finite number', at_least, above, at_most)}, got {value!r}."
    )


def to_number(name: str, value: object, *, must_be: str = "a number") -> float:
    """A number from loose input: an int, a float or the text of one (``"30"``, ``"1e3"``: a
    rendered template, a properties file, a Spark option), never a bool (``float(True)`` is
    1.0). NaN and the infinities come back as they are: the caller's range check refuses them
    in its own words."""
    if not isinstance(value, bool):
        try:
            return float(value)  # type: ignore[arg-type]  # float() raises on anything else, caught below
        except (TypeError, ValueError):
            pass
    raise ConfigurationError(f"{name} must be {must_be}, got {value!r}.")


def _bounds(kind: str, at_least: float | None, above: float | None, at_most: float | None) -> str:
    if at_least is not None and at_most is not None and above is None:
        return f"{kind} between {at_least} and {at_most}"
    parts = [
        f"{sign} {bound}"
        for sign, bound in ((">=", at_least), (">", above), ("<=", at_most))
        if bound is not None
    ]
    return " ".join([kind, *parts])
