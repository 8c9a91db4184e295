"""Listing groups on every broker, with the state and type filters applied whatever the broker's
version.

ListGroups goes to each broker: it lists the groups it coordinates (the Java admin client's
``listConsumerGroups``). The filters travel in the request where the broker can take them
(states v4+, types v5+: ListGroupsRequest.json, "Version 4 adds the StatesFilter field (KIP-518)",
"Version 5 adds the TypesFilter field (KIP-848)"); the Java client refuses to list an older broker
with a filter (``ListGroupsRequest.Builder.build``: UnsupportedVersionException). Here the filter
is applied on the client instead: a listing that does not carry what a filter needs - a state
(below v4, or a broker that answers "Unknown", as Tansu does) or a type (below v5) - is described
(:mod:`.describe`, one request per coordinator) and kept only when its described state and type
match. A group whose describe failed is kept with what the listing said (state Unknown): an
unknown is not proven to miss the filter, and callers that act on a state check it again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from operator import attrgetter

from .handlers.list_groups import ListGroupsHandler
from .results import GroupDescription, GroupListing, GroupState, KeyedResults, ListGroupsResult

Run = Callable[[ListGroupsHandler, list[int]], Awaitable[KeyedResults[int, tuple[GroupListing, ...]]]]
Describe = Callable[[list[str]], Awaitable[KeyedResults[str, GroupDescription]]]


async def list_everywhere(
    run: Run,
    describe: Describe,
    brokers: Iterable[int],
    states: frozenset[str] = frozenset(),
    types: frozenset[str] = frozenset(),
) -> tuple[ListGroupsResult, dict[str, int]]:
    """Every group of ``brokers`` matching ``states`` (Kafka's state names) and ``types`` (any
    case); ``run(handler, brokers)`` runs ListGroups under the caller's deadline and
    ``describe(group_ids)`` describes groups.

    Also returns the coordinator of each group that one broker alone listed: a broker lists the
    groups of the ``__consumer_offsets`` partitions it leads (``GroupCoordinator.listGroups``),
    so the listing names their coordinator, and the calls that follow need no FindCoordinator
    for them. A group two brokers list (its coordinator is moving) is left to FindCoordinator;
    a listing that turns out stale costs one NOT_COORDINATOR and a lookup, as any moved
    coordinator does."""
    results = await run(ListGroupsHandler(states, types), sorted(brokers))
    # While a coordinator moves, the old and the new broker may both list a group: one entry
    # per group id, as the Java admin client's listConsumerGroups keeps (by broker id here,
    # so the answer does not depend on which response came first).
    unique: dict[str, GroupListing] = {}
    coordinators: dict[str, int] = {}
    for node in sorted(results.values):
        for listing in results.values[node]:
            if unique.setdefault(listing.group_id, listing) is listing:
                coordinators[listing.group_id] = node
            else:
                coordinators.pop(listing.group_id, None)
    wanted_types = {t.lower() for t in types}
    unsure = [
        g
        for g in unique.values()
        if (states and g.state is GroupState.UNKNOWN) or (types and g.group_type is None)
    ]
    if unsure:
        described = await describe([g.group_id for g in unsure])
        for listing in unsure:
            description = described.values.get(listing.group_id)
            if description is None:
                continue  # not described: kept as listed (see the module docstring)
            listing = replace(
                listing, state=description.state, group_type=listing.group_type or description.group_type
            )
            if (states and listing.state.value not in states) or (
                types and (listing.group_type or "").lower() not in wanted_types
            ):
                del unique[listing.group_id]
            else:
                unique[listing.group_id] = listing
    groups = sorted(unique.values(), key=attrgetter("group_id"))
    twice = frozenset(unique.keys() - coordinators.keys())
    result = ListGroupsResult(
        groups=tuple(groups), broker_failures=dict(results.failures), listed_twice=twice
    )
    return result, coordinators
