"""Group selection for the cleanup: the shared routine (``client.selection.select_groups``)."""

from __future__ import annotations

try:
    from ..client.selection import select_groups  # noqa: F401
except ImportError:  # until the shared routine lands: the same contract (an incomplete listing refuses)
    from ..client.errors import KafkaGroupsError
    from ..client.selection import GroupSelector

    async def select_groups(aclient, selector: GroupSelector) -> list[str]:
        if not selector.needs_listing:
            return list(selector.ids)
        listed = await aclient.list_groups()
        if listed.broker_failures:
            failed = ", ".join(f"{b}: {f}" for b, f in sorted(listed.broker_failures.items()))
            raise KafkaGroupsError(f"cannot list groups on every broker ({failed}): a pattern would miss groups.")
        return selector.select(g.group_id for g in listed.groups)
