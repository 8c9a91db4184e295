"""Errors that retrying cannot fix end the task at once (no retries, no waiting for a timeout).

The rule itself is :func:`..client.errors.is_retriable`; this module turns it into Airflow's
terms for every operator and sensor alike.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from airflow.sdk.exceptions import AirflowFailException

from ..client.errors import KafkaGroupsError, is_retriable


def not_retriable_message(error: BaseException) -> str:
    return f"{type(error).__name__}: {error} (retrying cannot fix this: failing now)"


@contextmanager
def fail_fast(what: str) -> Iterator[None]:
    """Re-raise a non-retriable client error as ``AirflowFailException`` (the task fails without
    its retries); anything retriable passes through unchanged."""
    try:
        yield
    except KafkaGroupsError as exc:
        if is_retriable(exc):
            raise
        raise AirflowFailException(f"{what}: {not_retriable_message(exc)}") from None
