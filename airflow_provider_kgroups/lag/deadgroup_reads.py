"""The dead-group rules' reads, in one place: describe the groups, read their committed offsets,
check the committed topics of the groups the ``topics_deleted`` rule may judge **by name**, and
list the cluster's topics for the Kafka Streams heuristic only (which can only protect a group).
Then :func:`.deadgroups.judge_groups`. Nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..client.errors import ConfigurationError, Failure
from ..client.results import GroupDescription, GroupOffsets, GroupState, TopicExistence
from ..client.selection import GroupSelector, select_groups
from .deadfindings import GroupEvidence
from .deadgroups import NOT_JUDGED_GROUP_TYPES, DeadGroupRules, judge_groups
from .model import LagSnapshot
from .snapshot import now_ms as _now_ms

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["DeadGroupReads", "read_dead_group_evidence"]


@dataclass(frozen=True, slots=True)
class DeadGroupReads:
    evidence: Mapping[str, GroupEvidence]  # per group read, in the order described
    failures: Mapping[str, Failure]  # groups that could not be read (not judged)
    listed_topics: frozenset[str] | None  # the topic listing (Streams heuristic), None when not listed


def _topics_to_check(
    descriptions: Mapping[str, GroupDescription], offsets: Mapping[str, GroupOffsets]
) -> list[str]:
    """Every topic an Empty judged group committed to, readable or not."""
    topics: set[str] = set()
    for group_id, description in descriptions.items():
        if (
            description.state is GroupState.EMPTY
            and not description.members
            and description.group_type not in NOT_JUDGED_GROUP_TYPES
            and group_id in offsets
        ):
            topics.update(
                tp.topic
                for tp, c in offsets[group_id].partitions.items()
                if c.offset is not None or c.error is not None
            )
    return sorted(topics)


async def read_dead_group_evidence(
    client: AsyncGroupsClient,
    group_ids: Iterable[str] | None = None,
    *,
    history: Iterable[LagSnapshot] = (),
    rules: DeadGroupRules = DeadGroupRules(),
    now_ms: int | None = None,
    timeout_s: float | None = None,
) -> DeadGroupReads:
    """Read ``group_ids`` (default: every group the cluster lists) and judge them."""
    if group_ids is None:
        # The shared selection routine: a broker whose listing failed raises IncompleteListingError
        # rather than leaving its groups out of "every group".
        ids = await select_groups(client, GroupSelector(patterns=("*",)), timeout_s=timeout_s)
        if not ids:
            return DeadGroupReads({}, {}, None)
    else:
        if isinstance(group_ids, str):
            raise ConfigurationError(f"group_ids must be a list, not the single string {group_ids!r}.")
        ids = list(dict.fromkeys(group_ids))
    now = _now_ms() if now_ms is None else now_ms
    descriptions = await client.describe_groups(ids, timeout_s=timeout_s)
    offsets = await client.fetch_committed_offsets(ids, timeout_s=timeout_s)
    failures = {**descriptions.failures, **offsets.failures}
    described = {g: d for g, d in descriptions.values.items() if g not in failures}
    to_check = _topics_to_check(described, offsets.values)
    checks: dict[str, TopicExistence | Failure] = {}
    if to_check:
        checked = await client.check_topics(to_check, timeout_s=timeout_s)
        checks = {**checked.values, **checked.failures}
    # The listing leaves out topics the principal may not Describe: used only for the Streams
    # heuristic, which can only protect a group, never as evidence of absence.
    listed = (
        frozenset(await client.describe_topics(None, timeout_s=timeout_s))
        if rules.deny_streams_apps
        else None
    )
    evidence, all_failures = judge_groups(
        described, offsets.values, history, rules, now, failures=failures, topic_checks=checks
    )
    return DeadGroupReads(evidence, all_failures, listed)
