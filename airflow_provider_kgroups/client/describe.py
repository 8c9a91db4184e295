"""Describing groups of every type: which describe API to ask, round after round.

Kafka has one describe API per group type, and each answers any other group as "not mine"
(GroupMetadataManager.describeGroups / consumerGroupDescribe / shareGroupDescribe /
streamsGroupDescribe). So a group is asked, one request per coordinator and API per round:

1. the API of its type, when a listing told it (ListGroups v5 ``GroupType``: no wasted
   round), else DescribeGroups: classic groups are still most groups;
2. after DescribeGroups said "not classic" (v6) or "Dead" (below v6): ConsumerGroupDescribe;
3. after that said "not mine", ShareGroupDescribe and StreamsGroupDescribe together, but only
   when DescribeGroups v6 said the group exists (or a listing said share/streams): a broker
   older than 4.0 (DescribeGroups below v6) has neither group type;
4. where the coordinator lacks the share or streams describe API (Kafka 4.0 keeps them
   unstable), its ListGroups filtered to those types gives the group's type and state (at
   once for a group a listing called share or streams).

A group is Dead only when DescribeGroups v6 says "not found", or every API that could hold it
said "not mine"; a live share or streams group is never Dead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .chunking import RequestLimits
from .errors import CLIENT_INCOMPLETE_RESPONSE, Failure, KafkaGroupsError
from .handlers.describe_groups import HANDLER_FOR_TYPE, NotDescribed
from .handlers.list_groups import ListGroupsHandler
from .lookup import CoordinatorLookup
from .results import (
    CLASSIC,
    CONSUMER,
    SHARE,
    STREAMS,
    GroupDescription,
    GroupListing,
    GroupState,
    KeyedResults,
)

Run = Callable[[Any, list[Any]], Awaitable[KeyedResults[Any, Any]]]
NEW_TYPES = (SHARE, STREAMS)


@dataclass
class _Progress:
    hint: str | None
    asked: set[str] = field(default_factory=set)
    unavailable: set[str] = field(default_factory=set)
    non_classic: bool = False

    def next_types(self) -> list[str]:
        """The types to ask next; [] when every API that could hold the group said no."""
        if CLASSIC not in self.asked:
            return [CLASSIC]
        if CONSUMER not in self.asked:
            return [CONSUMER]
        if self.non_classic or self.hint in NEW_TYPES:
            return [t for t in NEW_TYPES if t not in self.asked]
        return []


def dead(group_id: str, node: int | None) -> GroupDescription:
    return GroupDescription(
        group_id=group_id,
        state=GroupState.DEAD,
        protocol_type="",
        protocol="",
        members=(),
        coordinator_id=node if node is not None else -1,
    )


async def describe_all(
    run: Run,
    lookup: CoordinatorLookup,
    group_ids: list[str],
    hints: Mapping[str, str],
    locate: Callable[[list[str]], Awaitable[object]],
    *,
    limits: RequestLimits = RequestLimits(),
) -> KeyedResults[str, GroupDescription]:
    """``run(handler, keys)`` runs one handler under the caller's deadline; ``hints``: group id ->
    the type a listing reported; ``locate(keys)`` looks coordinators up (batched requests);
    ``limits`` bound each describe request."""
    rounds = _Rounds(hints, lookup, _first_plan(group_ids, hints))
    if len(rounds.plan) > 1:
        await _locate_first(lookup, group_ids, locate)
    while rounds.plan or rounds.to_list:
        if not rounds.plan:  # only listings left to ask
            to_list, rounds.to_list = rounds.to_list, {}
            rounds.read_listings(*await _from_listings(run, lookup, to_list))
            continue
        types = list(rounds.plan)
        answers = await asyncio.gather(
            *(run(HANDLER_FOR_TYPE[t](lookup, limits=limits), rounds.plan[t]) for t in types)
        )
        rounds.read_answers(zip(types, answers))
    values, failures = rounds.values, rounds.failures
    return KeyedResults(
        {g: values[g] for g in group_ids if g in values}, {g: failures[g] for g in group_ids if g in failures}
    )


def _first_plan(group_ids: list[str], hints: Mapping[str, str]) -> dict[str, list[str]]:
    """Type -> the groups to ask its describe API first: the listed type, else classic."""
    plan: dict[str, list[str]] = {}
    for g in group_ids:
        hint = hints.get(g)
        plan.setdefault(hint if hint in (CONSUMER, SHARE, STREAMS) else CLASSIC, []).append(g)
    return plan


async def _locate_first(
    lookup: CoordinatorLookup, group_ids: list[str], locate: Callable[[list[str]], Awaitable[object]]
) -> None:
    """Several APIs at once would each look the same coordinators up: one lookup for all first.
    What it leaves unmapped (or a failure) the drivers look up again, with retries."""
    unmapped = [g for g in group_ids if lookup.cached(g) is None]
    if not unmapped:
        return
    try:
        await locate(unmapped)
    except KafkaGroupsError:
        pass


@dataclass
class _Rounds:
    """What :func:`describe_all` knows between rounds: what to ask next (``plan``: type -> groups;
    ``to_list``: group -> the types whose describe API its coordinator lacks) and what is settled."""

    hints: Mapping[str, str]
    lookup: CoordinatorLookup
    plan: dict[str, list[str]]
    to_list: dict[str, list[str]] = field(default_factory=dict)
    values: dict[str, GroupDescription] = field(default_factory=dict)
    failures: dict[str, Failure] = field(default_factory=dict)
    # what each group was asked so far, kept only for the groups a first answer did not settle
    # (most groups are classic and described at once: no bookkeeping for them)
    progress: dict[str, _Progress] = field(default_factory=dict)

    def _progress_of(self, g: str) -> _Progress:
        return self.progress.get(g) or self.progress.setdefault(g, _Progress(self.hints.get(g)))

    def _ask_next(self, g: str, p: _Progress) -> bool:
        """Plans the next types to ask about ``g``; False when none is left."""
        next_types = p.next_types()
        for t in next_types:
            self.plan.setdefault(t, []).append(g)
        return bool(next_types)

    def read_listings(
        self, listed: dict[str, GroupDescription], failed: dict[str, Failure], unlisted: list[str]
    ) -> None:
        self.values.update(listed)
        self.failures.update(failed)
        for g in unlisted:  # not listed as the type it was thought to be
            p = self._progress_of(g)
            if self._ask_next(g, p):
                continue
            if p.non_classic:
                self.failures[g] = Failure(
                    CLIENT_INCOMPLETE_RESPONSE,
                    (
                        "DescribeGroups says the group exists and is not classic, but no describe API of its "
                        "coordinator has it and its ListGroups does not list it"
                    ),
                )
            else:
                self.values[g] = dead(g, self.lookup.cached(g))

    def read_answers(self, answers: Iterable[tuple[str, KeyedResults[str, Any]]]) -> None:
        """One round's answers (type, answer of its describe API); plans the next round."""
        values, failures = self.values, self.failures
        said: dict[str, list[tuple[str, NotDescribed]]] = {}
        for group_type, answer in answers:
            failures.update(answer.failures)
            for g, value in answer.values.items():
                if isinstance(value, GroupDescription):
                    values[g] = value
                else:
                    said.setdefault(g, []).append((group_type, value))
        self.plan = {}
        for g, nots in said.items():
            if g in values or g in failures:  # found by another API this round, or one of them failed
                continue
            self._read_not_mine(g, nots)
        for g in values.keys() & failures.keys():  # found by one API while another failed: found
            del failures[g]

    def _read_not_mine(self, g: str, nots: list[tuple[str, NotDescribed]]) -> None:
        """Every type asked of ``g`` this round said "not mine": what to ask next, or Dead."""
        p = self._progress_of(g)
        for group_type, value in nots:
            p.asked.add(group_type)
            p.non_classic |= value.non_classic
            if value.unavailable:
                p.unavailable.add(group_type)
        if any(value.absent for _, value in nots):
            self.values[g] = dead(g, self.lookup.cached(g))
        elif p.hint in NEW_TYPES and p.hint in p.unavailable and len(p.asked) == 1:
            self.to_list[g] = [p.hint]  # listed as share/streams, no API to describe it: its listing says
        elif not self._ask_next(g, p):  # no describe API left to ask
            unavailable = p.unavailable & set(NEW_TYPES)
            if unavailable:
                self.to_list[g] = sorted(unavailable)
            else:
                self.values[g] = dead(g, self.lookup.cached(g))


async def _from_listings(
    run: Run, lookup: CoordinatorLookup, to_list: dict[str, list[str]]
) -> tuple[dict[str, GroupDescription], dict[str, Failure], list[str]]:
    """Groups whose coordinator lacks the share/streams describe API: its ListGroups (v5,
    filtered to those types; one request per coordinator) gives their type and state.
    Returns (described, failed, not listed as any of those types)."""
    by_node: dict[int, set[str]] = {}
    failures: dict[str, Failure] = {}
    for g in to_list:
        node = lookup.cached(g)
        if node is None:
            failures[g] = Failure(
                CLIENT_INCOMPLETE_RESPONSE, "its coordinator was forgotten before it was listed"
            )
        else:
            by_node.setdefault(node, set()).add(g)
    values: dict[str, GroupDescription] = {}
    unlisted: list[str] = []
    if not by_node:
        return values, failures, unlisted
    types = frozenset(t for ts in to_list.values() for t in ts)
    listings = await run(ListGroupsHandler(types=types), sorted(by_node))
    for node, groups in by_node.items():
        if node in listings.failures:
            failures.update({g: listings.failures[node] for g in groups})
            continue
        found: dict[str, GroupListing] = {x.group_id: x for x in listings.values.get(node, ())}
        for g in sorted(groups):
            listing = found.get(g)
            if listing is not None and listing.group_type in to_list[g]:
                values[g] = GroupDescription(
                    group_id=g,
                    state=listing.state,
                    protocol_type=listing.protocol_type,
                    protocol="",
                    members=(),
                    coordinator_id=node,
                    group_type=listing.group_type,
                )
            else:
                unlisted.append(g)
    return values, failures, unlisted
