"""DeleteGroups: the groups of one coordinator in as few requests as :class:`~..chunking.RequestLimits`
allow; each group its own outcome.

Errors route as in Kafka's DeleteConsumerGroupsHandler.handleError: 14 retry on the same
coordinator, 15/16 look the coordinator up again, 30/24/68/69 and anything else fail the group.

One exception, which the Java client does not make: a group whose DeleteGroups was sent but
whose response was lost (connection dropped, request timed out) may have been deleted by that
request, so the retry's GROUP_ID_NOT_FOUND (69) is the confirmation that it is gone, not a
failure. The driver reports such keys through ``response_lost``, which notes them as
:data:`LOST`; the driver keeps the note for the rest of the run and hands it back to ``parse``.
An answer of 14/15/16 proves only that *that* request did nothing, not that the lost one did
nothing, so the note stays until the group's final answer. A 69 with no lost response before
it stays a failure. A connection the broker closed because its SASL session had expired is not a
lost response (the broker closes it at the request, unprocessed: see transport.authenticator).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..chunking import Chunker, RequestLimits
from ..contract import Outcome, RequestPlan
from ..errors import ErrorCode
from ..lookup import CoordinatorLookup
from ..protocol import DeleteGroupsRequest, DeleteGroupsResponse, KafkaApi
from ..results import GroupDeletion
from .base import Handler, Notes
from .common import missing_from_response, route_group_error

LOST = "a DeleteGroups for this group was sent and its response never came"


class DeleteGroupsHandler(Handler[str, GroupDeletion]):
    kafka_api = KafkaApi(DeleteGroupsRequest, DeleteGroupsResponse, max_version=2)

    def __init__(self, lookup: CoordinatorLookup, *, limits: RequestLimits = RequestLimits()) -> None:
        self.lookup = lookup
        self._chunker = Chunker(limits, lambda ids, version: DeleteGroupsRequest(groups_names=ids))

    def build(self, group_ids: list[str], version: int, notes: Notes) -> list[RequestPlan[str]]:
        return [
            RequestPlan(DeleteGroupsRequest(groups_names=ids), version, tuple(ids))
            for ids in self._chunker.chunks(group_ids, version)
        ]

    def response_lost(self, group_ids: Iterable[str]) -> dict[str, Any]:
        return {group_id: LOST for group_id in group_ids}

    def parse(self, plan: RequestPlan[str], response: Any, notes: Notes) -> Outcome[str, GroupDeletion]:
        outcome: Outcome[str, GroupDeletion] = Outcome()
        for result in response.results:
            group_id = result.group_id
            if group_id not in plan.key_set:
                continue
            if result.error_code == ErrorCode.GROUP_ID_NOT_FOUND and notes.get(group_id) is LOST:
                outcome.completed[group_id] = GroupDeletion.CONFIRMED_GONE_AFTER_LOST_RESPONSE
            elif not route_group_error(outcome, group_id, result.error_code):
                outcome.completed[group_id] = GroupDeletion.DELETED
        missing_from_response(outcome, plan.keys, {r.group_id for r in response.results}, "DeleteGroups")
        return outcome
