"""The cleanup's opt-in "stale offsets" rule: a *live* group (it has members) keeps committed
offsets on a topic it no longer reads, and lag tools (Burrow, KMinion, this project's sensor)
alarm on them forever. Those offsets are removed (OffsetDelete) through the same safety path as
every change: dry run by default, caps, a backup read back first, an audit record.

A topic's offsets are stale when, for a group with members whose subscriptions the describe
gives:

* the topic is **deleted**, proved by name (Metadata answers UNKNOWN_TOPIC_OR_PARTITION, as the
  dead-group evidence proves it); a topic this principal may not Describe proves nothing and is
  kept. Apache Kafka removes a deleted topic's offsets itself (KAFKA-2000, since 0.11;
  ``GroupCoordinator.onPartitionsDeleted``) and refuses OffsetDelete for a topic it does not know
  (``KafkaApis.handleOffsetDeleteRequest``: UNKNOWN_TOPIC_OR_PARTITION), so these turn up on
  brokers that keep them (other Kafka-protocol brokers, a deletion still in flight); the broker's
  answer is reported per partition either way;
* or **no member subscribes** to it any more (the broker's own rule: it refuses a subscribed
  topic with GROUP_SUBSCRIBED_TO_TOPIC).

A group whose members' subscriptions are unknown (a classic group outside Stable), a group
without members (the dead-group rules judge those), and the deny patterns' groups (Kafka Connect,
internals) are left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..client.results import TopicExistence
from ..offsets.deletion import GroupOffsetDeletion, Prediction, plan_offset_deletion
from .context import ChangeContext
from .offset_deletion import DeletionOptions, run_offset_deletion
from .offset_results import OffsetChangeResult

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["plan_stale_offsets", "run_stale_offsets"]


async def plan_stale_offsets(
    aclient: AsyncGroupsClient,
    group_ids: Iterable[str],
    *,
    denied: Callable[[str], str | None] = lambda g: None,
) -> tuple[dict[str, GroupOffsetDeletion], dict[str, str]]:
    """(the deletion plan per group, why each topic counts as stale: "group/topic" -> reason).
    ``denied(group_id)``: the deny pattern protecting the group, or None."""
    plans = await plan_offset_deletion(aclient, list(group_ids), None)
    topics = sorted({tp.topic for p in plans.values() if p.members for tp in p.partitions})
    existence = await aclient.check_topics(topics) if topics else None
    out: dict[str, GroupOffsetDeletion] = {}
    why: dict[str, str] = {}
    for g, plan in plans.items():
        if plan.refusal is not None and not plan.partitions:
            out[g] = plan
            continue
        pattern = denied(g)
        if pattern is not None:
            out[g] = replace(plan, partitions={}, refusal=f"protected by the deny pattern {pattern!r}")
            continue
        if not plan.members:
            out[g] = replace(
                plan, partitions={}, refusal="no members: the dead-group rules judge Empty groups"
            )
            continue
        stale = {}
        for tp, prediction in plan.partitions.items():
            state = existence.values.get(tp.topic) if existence is not None else None
            if (
                state is TopicExistence.ABSENT and prediction is not Prediction.SUBSCRIBED
            ):  # else the broker keeps it
                stale[tp] = prediction
                why[f"{g}/{tp.topic}"] = "deleted (Metadata names it UNKNOWN_TOPIC_OR_PARTITION)"
            elif state is TopicExistence.EXISTS and prediction is Prediction.DELETE:
                stale[tp] = prediction
                why[f"{g}/{tp.topic}"] = "no member subscribes to it"
        if not stale:
            unknown = any(p is Prediction.BROKER_DECIDES for p in plan.partitions.values())
            out[g] = replace(
                plan,
                partitions={},
                refusal=(
                    "its members' subscriptions are unknown (not Stable): kept"
                    if unknown
                    else "no stale offsets: every committed topic exists and is subscribed (or cannot be seen)"
                ),
            )
        else:
            out[g] = replace(
                plan, partitions=stale, committed={tp: o for tp, o in plan.committed.items() if tp in stale}
            )
    return out, why


async def run_stale_offsets(
    context: ChangeContext,
    group_ids: Iterable[str],
    options: DeletionOptions,
    *,
    denied: Callable[[str], str | None] = lambda g: None,
) -> OffsetChangeResult:
    """Delete the stale offsets of ``group_ids`` (:func:`plan_stale_offsets`) as
    :func:`.offset_deletion.run_offset_deletion` does."""
    plans, why = await plan_stale_offsets(context.client, group_ids, denied=denied)
    return await run_offset_deletion(
        context, plans, options, action="stale-offsets", extra={"stale_topics": why}
    )
