""" "Refresh now": the page's only live Kafka call, one snapshot of one group under one deadline.

Through the ``[kgroups] ui_kafka_conn_id`` connection (the hook resolves it; its secrets stay
in the api-server), all under the client's one deadline (``call_timeout_s``): the group's
description (members, their client ids, hosts and assignments), its lag (the engine's
``take_snapshot``) and the exact lag in seconds of its worst partitions (the record at the
committed offset, ``lag_seconds``), with the retention margin of those partitions (at least how
long until retention may delete the first unread record: :mod:`..lag.retention`). Nothing is written: the history stays what the snapshot
DAG stored. A failure is returned as a message naming what failed, without the connection's
details.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..client.errors import KafkaGroupsError
from ..lag.retention_reads import retention_margins, tightest
from ..lag.seconds import lag_seconds
from ..lag.snapshot import take_snapshot
from ..lag.verdicts import VerdictRules

if TYPE_CHECKING:
    from ..client import AsyncGroupsClient

__all__ = ["live_view", "refresh_group"]

FLOOR_S = VerdictRules().margin_floor_ms / 1000.0  # the verdicts' default floor


async def live_view(aclient: AsyncGroupsClient, group_id: str) -> dict[str, Any]:
    """The group now: description, lag per partition, lag in seconds (worst 3 partitions)."""
    described = await aclient.describe_groups([group_id])
    snapshot = await take_snapshot(aclient, [group_id])
    seconds = await lag_seconds(aclient, snapshot, worst_n=3) if group_id in snapshot.groups else {}
    out: dict[str, Any] = {"taken_at_ms": snapshot.taken_at_ms, "group_id": group_id}
    if group_id in described.failures:
        out["description_error"] = str(described.failures[group_id])
    else:
        d = described.values[group_id]
        out.update(
            {
                "state": d.state.value,
                "protocol_type": d.protocol_type,
                "protocol": d.protocol,
                "group_type": d.group_type,
                "members": [m.to_dict() for m in d.members],
            }
        )
    if group_id in snapshot.failures:
        out["lag_error"] = str(snapshot.failures[group_id])
    else:
        group = snapshot.groups[group_id]
        out.update({"total_lag": group.total_lag, "partitions": [p.to_dict() for p in group.partitions]})
    if group_id in seconds:
        out["lag_seconds"] = seconds[group_id].to_dict()
        margins = (await retention_margins(aclient, snapshot, seconds=seconds)).get(group_id, {})
        shortest = tightest(margins)
        out["retention_margin"] = (
            {
                "topic": key[0],
                "partition": key[1],
                **shortest.to_dict(),
                # one snapshot has no catch-up time: only the floor rule can say AT_RISK here
                "below_floor_s": FLOOR_S if (shortest.seconds or 0.0) < FLOOR_S else None,
            }
            if shortest is not None and (key := next(k for k, m in margins.items() if m is shortest))
            else {"seconds": None, "reasons": sorted({m.reason for m in margins.values()})}
        )
    return out


def refresh_group(conn_id: str, group_id: str, timeout_s: float) -> dict[str, Any]:
    """:func:`live_view` through a hook on ``conn_id``, under a deadline of ``timeout_s``."""
    from ..hooks.groups import KafkaGroupsHook

    hook = KafkaGroupsHook(conn_id, client_options={"call_timeout_s": timeout_s})
    try:
        client = hook.client
        with client.deadline():
            return {"ok": True, "conn_id": conn_id, **client.run(live_view(client.aclient, group_id))}
    except KafkaGroupsError as exc:
        return {"ok": False, "conn_id": conn_id, "error": f"{type(exc).__name__}: {exc}"}
    except Exception as exc:  # noqa: BLE001 - e.g. no such connection: say which, never its contents
        return {
            "ok": False,
            "conn_id": conn_id,
            "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}",
        }
    finally:
        hook.close()
