"""Validation of the caller's choices that every lag computation shares."""

from __future__ import annotations

from ..client.errors import ConfigurationError
from ..client.numbers import check_int
from .model import UnknownLagPolicy


def parse_policy(policy: UnknownLagPolicy | str) -> UnknownLagPolicy:
    """An :class:`UnknownLagPolicy` from itself or its name (``"from_earliest"``), or a clear error."""
    if isinstance(policy, UnknownLagPolicy):
        return policy
    if isinstance(policy, str):
        try:
            return UnknownLagPolicy(policy.strip().lower())
        except ValueError:
            pass
    choices = ", ".join(repr(p.value) for p in UnknownLagPolicy)
    raise ConfigurationError(
        f"unknown lag policy {policy!r}: use one of {choices} (what a partition without a "
        "committed offset counts as)."
    )


def non_negative_ms(name: str, value: object) -> int:
    return check_int(name, value, at_least=0, must_be="a non-negative int of milliseconds")


def positive_ms(name: str, value: object) -> int:
    return check_int(name, value, at_least=1, must_be="a positive int of milliseconds")
