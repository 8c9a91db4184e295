"""Validation of the caller's choices that every lag computation shares."""

from __future__ import annotations

from ..client.errors import ConfigurationError
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
    raise ConfigurationError(f"unknown lag policy {policy!r}: use one of {choices} (what a partition without a "
                             "committed offset counts as).")


def non_negative_ms(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{name} must be a non-negative int of milliseconds, got {value!r}.")
    return value


def positive_ms(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"{name} must be a positive int of milliseconds, got {value!r}.")
    return value
