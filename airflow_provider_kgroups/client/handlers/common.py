"""What every coordinator API handler shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from ..contract import Outcome
from ..errors import CLIENT_INCOMPLETE_RESPONSE, RELOOKUP, RETRY_SAME_BROKER, ErrorCode, Failure
from ..results import TopicPartition


def route_group_error(
    outcome: Outcome[str, Any], group_id: str, error_code: int, message: str | None = None
) -> bool:
    """Sort a group-level error into retry / re-lookup / failed. True when there was an error."""
    if error_code == ErrorCode.NONE:
        return False
    failure = Failure(error_code, message or "")
    if error_code in RETRY_SAME_BROKER:
        outcome.requeue(group_id, failure, relookup=False)
    elif error_code in RELOOKUP:
        outcome.requeue(group_id, failure, relookup=True)
    else:
        outcome.failed[group_id] = failure
    return True


def missing_from_response(
    outcome: Outcome[Any, Any], asked: tuple[Any, ...], answered: set[Any], api: str
) -> None:
    """A key the broker did not answer for fails rather than vanishing."""
    for key in set(asked) - answered:
        outcome.failed[key] = Failure(CLIENT_INCOMPLETE_RESPONSE, f"{api} response did not mention {key!r}")


V = TypeVar("V")


def by_topic(items: Mapping[TopicPartition, V]) -> dict[str, list[tuple[int, V]]]:
    """``{TopicPartition: v}`` -> ``{topic: [(partition, v), ...]}`` in partition order: the shape
    of every request that names partitions under their topic (OffsetCommit, OffsetDelete, ...)."""
    out: dict[str, list[tuple[int, V]]] = {}
    for tp in sorted(items):
        out.setdefault(tp.topic, []).append((tp.partition, items[tp]))
    return out
