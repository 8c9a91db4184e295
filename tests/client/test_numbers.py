"""The number validators (``client/numbers.py``): a bool is never a number, NaN and the
infinities are never within bounds, and a refusal names the argument and what it takes."""

from __future__ import annotations

import math
from enum import IntEnum

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.numbers import check_int, check_number, is_int, is_number, to_number


class Level(IntEnum):
    LOW = 1


def test_a_bool_is_neither_an_int_nor_a_number():
    assert [is_int(v) for v in (0, -3, Level.LOW, True, False, 1.0, "1", None)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
        False,
    ]
    assert [is_number(v) for v in (0, 2.5, math.nan, math.inf, True, "1", None)] == [
        True,
        True,
        True,
        True,
        False,
        False,
        False,
    ]


def test_check_int_keeps_the_value_and_spells_out_its_bounds():
    assert check_int("n", 5, at_least=0) == 5
    assert check_int("n", 30_000, at_least=0, at_most=30_000) == 30_000
    for value, bounds, message in [
        (True, {"at_least": 0}, "n must be an int >= 0, got True."),
        (-1, {"at_least": 0}, "n must be an int >= 0, got -1."),
        (1.0, {}, "n must be an int, got 1.0."),
        ("5", {"at_least": 1}, "n must be an int >= 1, got '5'."),
        (30_001, {"at_least": 0, "at_most": 30_000}, "n must be an int between 0 and 30000, got 30001."),
        (7, {"at_most": 5}, "n must be an int <= 5, got 7."),
    ]:
        with pytest.raises(ConfigurationError) as caught:
            check_int("n", value, **bounds)
        assert str(caught.value) == message


def test_the_caller_says_what_the_argument_takes():
    with pytest.raises(ConfigurationError) as caught:
        check_int("max_deletions", False, at_least=0, must_be="a whole number >= 0")
    assert str(caught.value) == "max_deletions must be a whole number >= 0, got False."


def test_check_number_refuses_nan_and_the_infinities_whatever_the_bounds():
    assert check_number("x", 3) == 3.0 and isinstance(check_number("x", 3), float)
    assert check_number("p", 100, at_least=0, at_most=100) == 100.0
    for value in (math.nan, math.inf, -math.inf, True, "3", None):
        with pytest.raises(ConfigurationError, match=r"^x must be a finite number, got "):
            check_number("x", value)
    with pytest.raises(ConfigurationError, match=r"^t must be a finite number > 0, got 0\.$"):
        check_number("t", 0, above=0)
    with pytest.raises(ConfigurationError, match=r"^p must be a finite number between 0 and 100, got 101\.$"):
        check_number("p", 101, at_least=0, at_most=100)
    with pytest.raises(
        ConfigurationError, match=r"^t must be a positive, finite number of seconds \(e\.g\. 30\), "
    ):
        check_number("t", -1, above=0, must_be="a positive, finite number of seconds (e.g. 30)")


def test_to_number_reads_loose_input_but_never_a_bool():
    assert [to_number("x", v) for v in (3, 2.5, "30", " 1e3 ")] == [3.0, 2.5, 30.0, 1000.0]
    assert math.isnan(to_number("x", "nan"))  # the caller's range check refuses it in its words
    for value in (True, False, "fast", None, [1]):
        with pytest.raises(ConfigurationError) as caught:
            to_number("option timeout.ms", value, must_be="a number of milliseconds")
        assert str(caught.value) == f"option timeout.ms must be a number of milliseconds, got {value!r}."
