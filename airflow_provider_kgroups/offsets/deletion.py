"""The plan of an offset deletion (OffsetDelete, KIP-496): for every group, the committed
partitions of the topics named and what the broker will say of each. Read-only; a dry run
prints exactly this and a real run deletes exactly this (``cleanup.offset_deletion``).

The broker's rule (``Group.validateOffsetDelete``, ``isSubscribedToTopic``): a live group keeps
the offsets of every topic one of its members subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); a
classic group whose members do not speak the consumer protocol refuses as a whole
(NON_EMPTY_GROUP); a share group is not a consumer group. The plan predicts this from the
describe where the members' subscriptions are known, and says "the broker decides" where not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Any

from ..client.results import CLASSIC, SHARE, GroupDescription, GroupState, TopicPartition
from ..client.selection import validate_group_ids

__all__ = ["Prediction", "GroupOffsetDeletion", "plan_offset_deletion", "subscribed_topics"]


class Prediction(str, Enum):
    """What the broker will answer for one partition, as far as the describe tells."""

    DELETE = "delete"  # no member subscribes to the topic (or the group has none)
    SUBSCRIBED = "subscribed"  # a member subscribes: GROUP_SUBSCRIBED_TO_TOPIC
    BROKER_DECIDES = "broker_decides"  # members whose subscriptions the describe did not give


@dataclass(frozen=True, slots=True)
class GroupOffsetDeletion:
    group_id: str
    state: GroupState
    group_type: str
    protocol_type: str
    members: int
    partitions: Mapping[TopicPartition, Prediction]  # committed partitions in scope
    committed: Mapping[TopicPartition, int]
    refusal: str | None = None  # why nothing can be deleted for the group (in words, from values)

    @property
    def ok(self) -> bool:
        return self.refusal is None and bool(self.partitions)

    def deletable(self) -> list[TopicPartition]:
        return sorted(tp for tp, p in self.partitions.items() if p is not Prediction.SUBSCRIBED)

    def rows(self) -> tuple[dict[str, Any], ...]:
        return tuple(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "current": self.committed.get(tp),
                "prediction": p.value,
            }
            for tp, p in sorted(self.partitions.items())
        )


def subscribed_topics(description: GroupDescription) -> frozenset[str] | None:
    """The topics the members subscribe to, or None when a member's subscription is unknown (a
    classic group outside Stable: Kafka sends member metadata only then)."""
    topics: set[str] = set()
    for m in description.members:
        if not m.subscribed_topics and not m.assignment:
            return None
        topics |= set(m.subscribed_topics or {tp.topic for tp in m.assignment})
    return frozenset(topics)


def _predict(d: GroupDescription, tps: Iterable[TopicPartition]) -> dict[TopicPartition, Prediction]:
    if not d.members:
        return {tp: Prediction.DELETE for tp in tps}
    subscribed = subscribed_topics(d)
    if subscribed is None:
        return {tp: Prediction.BROKER_DECIDES for tp in tps}
    return {tp: Prediction.SUBSCRIBED if tp.topic in subscribed else Prediction.DELETE for tp in tps}


def _in_scope(tp: TopicPartition, topics: Mapping[str, tuple[int, ...] | None] | None) -> bool:
    if topics is None:
        return True
    if tp.topic not in topics:
        return False
    partitions = topics[tp.topic]
    return partitions is None or tp.partition in partitions


async def plan_offset_deletion(
    aclient, group_ids: Iterable[str], topics: Mapping[str, tuple[int, ...] | None] | None
) -> dict[str, GroupOffsetDeletion]:
    """Per group: the committed partitions of ``topics`` (topic -> partitions named, None: every
    partition the group committed; ``topics`` None: every topic it committed) and the broker's
    expected answer for each."""
    ids = validate_group_ids(group_ids)
    described, committed = await asyncio.gather(
        aclient.describe_groups(ids), aclient.fetch_committed_offsets(ids)
    )
    out = {}
    for g in ids:
        d = described.values.get(g)
        offsets = committed.values[g].committed() if g in committed.values else {}
        scope = {tp: o for tp, o in offsets.items() if _in_scope(tp, topics)}
        base = partial(
            GroupOffsetDeletion,
            group_id=g,
            state=d.state if d else GroupState.UNKNOWN,
            group_type=d.group_type if d else "",
            protocol_type=d.protocol_type if d else "",
            members=len(d.members) if d else 0,
            committed=scope,
        )
        failure = described.failures.get(g) or committed.failures.get(g)
        if failure is not None:
            out[g] = base(partitions={}, refusal=f"could not be read, so not planned: {failure}")
        elif d.state is GroupState.DEAD:
            out[g] = base(partitions={}, refusal="no such group")
        elif d.group_type == SHARE:
            out[g] = base(
                partitions={},
                refusal="a share group: OffsetDelete is for consumer "
                "groups (Kafka answers GROUP_ID_NOT_FOUND)",
            )
        elif d.group_type == CLASSIC and d.members and d.protocol_type not in ("consumer", ""):
            out[g] = base(
                partitions={},
                refusal=(
                    f"its members speak the {d.protocol_type!r} protocol, not 'consumer': Kafka refuses OffsetDelete while "
                    "it has members (NON_EMPTY_GROUP)"
                ),
            )
        elif not scope:
            out[g] = base(partitions={}, refusal="no committed offset on the topics named")
        else:
            out[g] = base(partitions=_predict(d, scope))
    return out
