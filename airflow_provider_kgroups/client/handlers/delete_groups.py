"""DeleteGroups: every group of one coordinator in one request; each group its own outcome."""

from __future__ import annotations

from ..driver import Outcome, RequestPlan
from ..lookup import CoordinatorLookup
from ..protocol import DeleteGroupsRequest
from .common import missing_from_response, route_group_error


class DeleteGroupsHandler:
    request_class = DeleteGroupsRequest

    def __init__(self, lookup: CoordinatorLookup) -> None:
        self.lookup = lookup

    def build(self, group_ids: list[str], version: int) -> list[RequestPlan[str]]:
        return [RequestPlan(DeleteGroupsRequest(groups_names=list(group_ids)), version, tuple(group_ids))]

    def parse(self, plan: RequestPlan[str], response) -> Outcome[str, bool]:
        outcome: Outcome[str, bool] = Outcome()
        for result in response.results:
            if result.group_id in plan.key_set and not route_group_error(outcome, result.group_id, result.error_code):
                outcome.completed[result.group_id] = True
        missing_from_response(outcome, plan.keys, {r.group_id for r in response.results}, "DeleteGroups")
        return outcome
