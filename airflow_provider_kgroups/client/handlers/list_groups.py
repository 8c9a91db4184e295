"""ListGroups: sent to every broker, each listing the groups it coordinates.

The states filter needs v4+ and the types filter v5+ (ListGroupsRequest.json); on older
brokers, and for a broker that answers a state "Unknown", the groups are kept here and the
client describes them and applies the filter itself (:mod:`..listing`), so callers get the
same answer from every broker.

A broker's answer with COORDINATOR_LOAD_IN_PROGRESS (14) carries a partial list on 3.x
(``GroupCoordinator.handleListGroups``): the list is discarded and the broker asked again
after a backoff, as are COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR (the Java admin
client's ``listConsumerGroups`` rethrows 14 and 15 as retriable). Any other error, or the
deadline, fails that broker only (``ListGroupsResult.broker_failures``).
"""

from __future__ import annotations

from typing import Any

from ..contract import Outcome, RequestPlan
from ..errors import RELOOKUP, RETRY_SAME_BROKER, Failure
from ..lookup import BrokerLookup
from ..protocol import KafkaApi, ListGroupsRequest, ListGroupsResponse
from ..results import GroupListing, GroupState
from .base import Handler, Notes

STATES_FILTER_VERSION = 4
TYPES_FILTER_VERSION = 5


class ListGroupsHandler(Handler[int, tuple[GroupListing, ...]]):
    kafka_api = KafkaApi(ListGroupsRequest, ListGroupsResponse, max_version=5)

    def __init__(self, states: frozenset[str] = frozenset(), types: frozenset[str] = frozenset()) -> None:
        self.lookup = BrokerLookup()
        self._states = states
        self._types = types

    def build(self, node_ids: list[int], version: int, notes: Notes) -> list[RequestPlan[int]]:
        request = ListGroupsRequest(
            states_filter=sorted(self._states) if version >= STATES_FILTER_VERSION else [],
            types_filter=sorted(self._types) if version >= TYPES_FILTER_VERSION else [],
        )
        return [RequestPlan(request, version, tuple(node_ids))]

    def parse(
        self, plan: RequestPlan[int], response: Any, notes: Notes
    ) -> Outcome[int, tuple[GroupListing, ...]]:
        node = plan.keys[0]
        outcome: Outcome[int, tuple[GroupListing, ...]] = Outcome()
        if response.error_code:
            failure = Failure(response.error_code)
            if response.error_code in RETRY_SAME_BROKER | RELOOKUP:
                outcome.requeue(node, failure, relookup=False)
            else:
                outcome.failed[node] = failure
            return outcome
        listings = []
        for group in response.groups:
            state = (
                GroupState.parse(group.group_state)
                if plan.version >= STATES_FILTER_VERSION
                else GroupState.UNKNOWN
            )
            group_type = (group.group_type or None) if plan.version >= TYPES_FILTER_VERSION else None
            # a state or type the broker did not tell (UNKNOWN, None): kept, for the client to describe
            if self._states and state.value not in self._states and state is not GroupState.UNKNOWN:
                continue
            if (
                self._types
                and group_type is not None
                and group_type.lower() not in {t.lower() for t in self._types}
            ):
                continue
            listings.append(GroupListing(group.group_id, group.protocol_type or "", state, group_type, node))
        outcome.completed[node] = tuple(listings)
        return outcome
