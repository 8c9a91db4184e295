"""The checks of the client verbs' arguments: each raises :class:`ConfigurationError` naming
the argument and the fix, before anything is sent (the layer above has its own validators in
``arguments.py``; the client may not import them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .deadline import check_seconds
from .errors import ConfigurationError, ErrorCode, Failure
from .handlers.offset_commit import OffsetToCommit
from .numbers import is_int
from .protocol import MAX_STRING_BYTES, too_long
from .results import CommittedOffset, GroupState, TopicPartition


def unsendable_group_ids(group_ids: Iterable[str]) -> dict[str, Failure]:
    """Ids longer than Kafka's protocol can carry (32767 UTF-8 bytes, any version): a Failure each."""
    out = {}
    for group_id in group_ids:
        size = too_long(group_id)
        if size is not None:
            out[group_id] = Failure(
                ErrorCode.INVALID_GROUP_ID,
                f"group id is {size} bytes in UTF-8; Kafka's protocol carries at most "
                f"{MAX_STRING_BYTES} (not sent)",
            )
    return out


def check_timeout(timeout_s: float | None) -> None:
    if timeout_s is not None:
        check_seconds("timeout_s", timeout_s)


def is_partition(value: object) -> bool:
    return is_int(value) and value >= 0


def partitions_of(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """``partitions`` without duplicates, each checked to be a ``TopicPartition(topic, partition >= 0)``."""
    tps = list(dict.fromkeys(partitions))
    for tp in tps:
        if (
            not isinstance(tp, TopicPartition)
            or not isinstance(tp.topic, str)
            or not tp.topic
            or not is_partition(tp.partition)
        ):
            raise ConfigurationError(f"{tp!r} is not a TopicPartition(topic, partition >= 0).")
    return tps


def string_list(values: Iterable[str], what: str) -> list[str]:
    if isinstance(values, (str, bytes)):
        raise ConfigurationError(
            f"{what} must be a list, not the single string {values!r}; write [{values!r}]."
        )
    return list(values)


def topic_names(topics: Iterable[str]) -> list[str]:
    """``topics`` without duplicates, each a non-empty string."""
    names = list(dict.fromkeys(string_list(topics, "topics")))
    bad = [t for t in names if not isinstance(t, str) or not t]
    if bad:
        raise ConfigurationError(f"topics: {bad[0]!r} is not a topic name.")
    return names


def group_states(states: Iterable[str]) -> frozenset[str]:
    """Kafka's state names, whatever the case (``stable``, ``preparing_rebalance``); a typo is an error
    rather than a filter that silently matches nothing."""
    known = [s.value for s in GroupState if s is not GroupState.UNKNOWN]
    out = set()
    for state in string_list(states, "states"):
        parsed = GroupState.parse(state) if isinstance(state, str) else GroupState.UNKNOWN
        if parsed is GroupState.UNKNOWN:
            raise ConfigurationError(f"states: {state!r} is not a group state; use {', '.join(known)}.")
        out.add(parsed.value)
    return frozenset(out)


def group_types(types: Iterable[str]) -> frozenset[str]:
    out = string_list(types, "types")
    bad = [t for t in out if not isinstance(t, str) or not t.strip()]
    if bad:
        raise ConfigurationError(f"types: {bad[0]!r} is not a group type such as 'classic' or 'consumer'.")
    return frozenset(t.strip() for t in out)


def topic_filter(topics: Mapping[str, Iterable[int]] | None) -> dict[str, list[int]] | None:
    """``{topic: [partition, ...]}`` checked before anything is sent (None: every partition)."""
    if topics is None:
        return None
    if not isinstance(topics, Mapping):
        raise ConfigurationError(f"topics must be a mapping of topic -> partitions, got {topics!r}.")
    wanted = {}
    for topic, partitions in topics.items():
        if not isinstance(topic, str) or not topic:
            raise ConfigurationError(f"topics: {topic!r} is not a topic name.")
        if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Iterable):
            raise ConfigurationError(f"topics[{topic!r}] must be a list of partitions, got {partitions!r}.")
        partitions = list(partitions)
        bad = [p for p in partitions if not is_partition(p)]
        if bad:
            raise ConfigurationError(f"topics[{topic!r}] contains {bad[0]!r}: partitions are ints >= 0.")
        wanted[topic] = sorted(set(partitions))
    return wanted


def to_commit(tp: TopicPartition, value: int | CommittedOffset | OffsetToCommit) -> OffsetToCommit:
    """An offset to commit from an int, a :class:`CommittedOffset` (a backup's) or itself."""
    if isinstance(value, OffsetToCommit):
        commit = value
    elif isinstance(value, CommittedOffset):
        commit = OffsetToCommit(
            value.offset if value.offset is not None else -1, value.metadata, value.leader_epoch
        )
    elif is_int(value):
        commit = OffsetToCommit(value)
    else:
        raise ConfigurationError(
            f"offset for {tp} must be an int, a CommittedOffset or an OffsetToCommit, got {value!r}."
        )
    if commit.offset < 0:
        raise ConfigurationError(f"offset for {tp} must be >= 0, got {commit.offset}.")
    return commit
