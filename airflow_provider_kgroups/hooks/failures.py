"""Errors that retrying cannot fix end the task at once (no retries, no waiting for a timeout).

The rule itself is :func:`..client.errors.is_retriable`; this module turns it into Airflow's
terms for every operator and sensor alike. A bug (an exception that is neither the client's
nor an I/O error nor Airflow's own) is not retried either: the same code would run into it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from ..client.errors import KafkaGroupsError, is_retriable

if TYPE_CHECKING:
    from ..lag.gate_decision import Decision


def not_retriable_message(error: BaseException) -> str:
    return f"{type(error).__name__}: {error} (retrying cannot fix this: failing now)"


def gate_decision_on_error(error: KafkaGroupsError) -> Decision:
    """A lag gate's check that a client error stopped: wait for the next one if retrying can fix
    it (no broker, a timeout, a target not readable yet), else fail now (``not_retriable``)."""
    from ..lag.gate_decision import Decision, FailureKind, GateStatus

    if is_retriable(error):
        return Decision(GateStatus.WAIT, f"check failed, will retry: {type(error).__name__}: {error}")
    return Decision(GateStatus.FAIL, not_retriable_message(error), kind=FailureKind.NOT_RETRIABLE)


@contextmanager
def fail_fast(what: str) -> Iterator[None]:
    """Re-raise a non-retriable client error, or a bug, as ``AirflowFailException`` (the task
    fails without its retries); anything retriable (and Airflow's own exceptions, and I/O errors
    outside the client) passes through unchanged."""
    try:
        yield
    except KafkaGroupsError as exc:
        if is_retriable(exc):
            raise
        raise AirflowFailException(f"{what}: {not_retriable_message(exc)}") from None
    except (AirflowException, OSError):
        raise
    except Exception as exc:
        raise AirflowFailException(f"{what}: a bug, {not_retriable_message(exc)}") from exc
