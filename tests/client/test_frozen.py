"""fast_init: the frozen dataclass's own contract with a cheaper constructor (pure)."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from airflow_provider_kgroups.client.frozen import fast_init


@fast_init
@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    label: str | None = None


def test_same_signature_defaults_and_keywords():
    assert Point(1) == Point(x=1, y=0, label=None) == Point(1, 0)
    assert Point(1, label="a").label == "a"
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]  # wrong on purpose
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]  # wrong on purpose


def test_still_frozen_hashable_comparable_replaceable_and_picklable():
    p = Point(1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3  # type: ignore[misc]  # frozen: must raise
    assert hash(p) == hash(Point(1, 2)) and p != Point(2, 1)
    assert dataclasses.replace(p, y=5) == Point(1, 5)
    assert pickle.loads(pickle.dumps(p)) == p
    assert repr(p) == "Point(x=1, y=2, label=None)"


def test_refuses_what_it_cannot_honour():
    with pytest.raises(TypeError, match="default_factory"):

        @fast_init
        @dataclass(frozen=True, slots=True)
        class WithFactory:
            items: list = field(default_factory=list)

    with pytest.raises(TypeError, match="__post_init__"):

        @fast_init
        @dataclass(frozen=True, slots=True)
        class WithPostInit:
            x: int

            def __post_init__(self) -> None:
                pass
