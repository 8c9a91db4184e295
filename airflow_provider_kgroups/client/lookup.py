"""Lookup strategies: which broker serves a key. Handlers never see how keys were mapped.

* :class:`CoordinatorLookup` - groups to their coordinator with FindCoordinator: batched
  requests (v4+, KIP-699) pipelined to one broker, each within the
  :class:`~.chunking.RequestLimits`, or, where no broker has v4, one request per key spread
  over the brokers and pipelined. Results are cached across calls.
* :class:`LeaderLookup` - partitions to their leader with Metadata.
* :class:`BrokerLookup` - the key *is* a broker (ListGroups goes to every broker).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Iterable

from .chunking import Chunker, RequestLimits
from .cluster import ClusterMetadata
from .config import BrokerAddress
from .driver import Call, Outcome, RequestPlan, send_splitting, transport_failure
from .errors import RELOOKUP, RETRY_SAME_BROKER, ErrorCode, Failure
from .protocol import FindCoordinatorRequest
from .results import TopicPartition

GROUP_KEY_TYPE = 0
BATCHED_FIND_COORDINATOR = 4


def _find_coordinators(group_ids: list[str], version: int) -> FindCoordinatorRequest:
    return FindCoordinatorRequest(key_type=GROUP_KEY_TYPE, coordinator_keys=group_ids)


class CoordinatorLookup:
    def __init__(self, metadata: ClusterMetadata, *, limits: RequestLimits = RequestLimits()) -> None:
        self._metadata = metadata
        self._coordinators: dict[str, int] = {}
        self._chunker = Chunker(limits, _find_coordinators)
        #: group id -> the FindCoordinator lookup now in flight for it (see :meth:`lookup`)
        self._inflight: dict[str, asyncio.Future[Outcome[str, int]]] = {}

    def cached(self, group_id: str) -> int | None:
        return self._coordinators.get(group_id)

    def forget(self, group_ids: Iterable[str]) -> None:
        for group_id in group_ids:
            self._coordinators.pop(group_id, None)

    async def lookup(self, group_ids: list[str], call: Call) -> Outcome[str, int]:
        """Coordinators of ``group_ids``. Calls running side by side (describe and OffsetFetch of
        the same groups, as the lag snapshot sends them) share one lookup: a group whose lookup
        is already in flight waits for that answer instead of asking again."""
        waiting = {g: self._inflight[g] for g in group_ids if g in self._inflight}
        mine = [g for g in group_ids if g not in waiting]
        outcome: Outcome[str, int] = Outcome()
        if mine:
            future: asyncio.Future[Outcome[str, int]] = asyncio.get_running_loop().create_future()
            self._inflight.update(dict.fromkeys(mine, future))
            try:
                outcome = await self._lookup(mine, call)
                future.set_result(outcome)
            except BaseException as exc:
                future.set_exception(exc)
                future.exception()  # retrieved: nobody else may be waiting
                raise
            finally:
                for g in mine:
                    if self._inflight.get(g) is future:
                        del self._inflight[g]
        for future in {id(f): f for f in waiting.values()}.values():
            shared = await asyncio.shield(future)
            keys = {g for g, f in waiting.items() if f is future}
            outcome.completed.update({k: v for k, v in shared.completed.items() if k in keys})
            outcome.failed.update({k: v for k, v in shared.failed.items() if k in keys})
            outcome.unmapped |= shared.unmapped & keys
            outcome.retry |= shared.retry & keys
            outcome.reasons.update({k: v for k, v in shared.reasons.items() if k in keys})
        return outcome

    async def _lookup(self, group_ids: list[str], call: Call) -> Outcome[str, int]:
        # A live broker that batches answers at once, without waiting for the broker list (on a
        # cold client the first Metadata is then in flight beside this FindCoordinator); only
        # without one is every broker connected (to learn its versions), which a silent broker
        # can slow down.
        call.expect(FindCoordinatorRequest, next_up=True)
        await call.any_connection()
        batched = _batching(call.pool.live())
        if batched:
            conns = call.pool.live()
        else:
            await self._metadata.bootstrap(call)
            conns = await _connect_all(call, self._metadata.brokers)
            batched = _batching(conns)
        if batched:
            conn = batched[0]  # the least loaded (connections come in load order)
            version = conn.version_for(FindCoordinatorRequest)

            def build(ids: list[str]) -> list[RequestPlan]:
                return [RequestPlan(_find_coordinators(chunk, version), version, tuple(chunk))
                        for chunk in self._chunker.chunks(ids, version)]

            outcome: Outcome[str, int] = Outcome()
            for plan, response in await send_splitting(call, conn, build(group_ids), build):
                if isinstance(response, BaseException):
                    failed = transport_failure(plan.keys, response)  # a dropped broker: look up again later
                    outcome.merge(Outcome(retry=failed.unmapped, failed=failed.failed, reasons=failed.reasons))
                else:
                    outcome.merge(self._read(plan, response, call))
            return outcome
        # No broker batches: one request per key, spread over the brokers, all in flight at once.
        plans: list = []
        for group_id, conn in zip(group_ids, itertools.cycle(conns)):
            version = conn.version_for(FindCoordinatorRequest)
            request = FindCoordinatorRequest(key=group_id, key_type=GROUP_KEY_TYPE)
            plans.append((conn, RequestPlan(request, version, (group_id,))))
        responses = await asyncio.gather(*(call.send(c, p) for c, p in plans), return_exceptions=True)
        outcome = Outcome()
        for (_, plan), response in zip(plans, responses):
            if isinstance(response, BaseException):
                outcome.retry.update(plan.keys)
                outcome.reasons.update({k: str(response) for k in plan.keys})
            else:
                outcome.merge(self._read(plan, response, call))
        return outcome

    def _read(self, plan: RequestPlan, response, call: Call) -> Outcome[str, int]:
        if plan.version >= BATCHED_FIND_COORDINATOR:
            answers = [(c.key, c.error_code, c.error_message, c.node_id, c.host, c.port) for c in response.coordinators]
        else:
            answers = [(plan.keys[0], response.error_code, response.error_message,
                        response.node_id, response.host, response.port)]
        outcome: Outcome[str, int] = Outcome()
        new_brokers = {}
        for key, error_code, message, node_id, host, port in answers:
            if key not in plan.key_set:
                continue
            if error_code == ErrorCode.NONE:
                self._coordinators[key] = node_id
                new_brokers[node_id] = BrokerAddress(host, port)
                outcome.completed[key] = node_id
            elif error_code in RETRY_SAME_BROKER or error_code in RELOOKUP:
                outcome.requeue(key, Failure(error_code, message or ""), relookup=True)
            else:
                outcome.failed[key] = Failure(error_code, message or "")
        # Keys the broker left out of its answer are looked up again.
        missing = set(plan.keys) - outcome.completed.keys() - outcome.failed.keys() - outcome.unmapped
        outcome.unmapped |= missing
        outcome.reasons.update({k: "missing from FindCoordinator response" for k in missing})
        self._metadata.learn_brokers(new_brokers)
        return outcome


class LeaderLookup:
    def __init__(self, metadata: ClusterMetadata) -> None:
        self._metadata = metadata

    def cached(self, tp: TopicPartition) -> int | None:
        return self._metadata.leader_of(tp.topic, tp.partition)

    def forget(self, tps: Iterable[TopicPartition]) -> None:
        self._metadata.mark_stale({tp.topic for tp in tps})

    async def lookup(self, tps: list[TopicPartition], call: Call) -> Outcome[TopicPartition, int]:
        await self._metadata.refresh(call, {tp.topic for tp in tps})
        outcome: Outcome[TopicPartition, int] = Outcome()
        for tp in tps:
            error = self._metadata.topic_errors.get(tp.topic)
            description = self._metadata.topics.get(tp.topic)
            if error == ErrorCode.LEADER_NOT_AVAILABLE:  # being created or electing (PartitionLeaderStrategy)
                outcome.requeue(tp, Failure(error, f"topic {tp.topic!r} has no leaders yet"), relookup=False)
            elif error is not None or description is None:
                outcome.failed[tp] = Failure(error or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                             f"topic {tp.topic!r} is not in the cluster metadata")
            elif tp.partition not in description.partitions:
                outcome.failed[tp] = Failure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                             f"topic {tp.topic!r} has no partition {tp.partition}")
            elif description.partitions[tp.partition] < 0:
                outcome.requeue(tp, Failure(ErrorCode.LEADER_NOT_AVAILABLE, ""), relookup=False)
            else:
                outcome.completed[tp] = description.partitions[tp.partition]
        return outcome


class BrokerLookup:
    """Keys are broker node ids; nothing to look up."""

    def cached(self, node_id: int) -> int | None:
        return node_id

    def forget(self, node_ids: Iterable[int]) -> None:
        pass

    async def lookup(self, node_ids: list[int], call: Call) -> Outcome[int, int]:
        # Only reached after a broker's request failed: ask it again after the backoff.
        return Outcome(completed={n: n for n in node_ids})


def _batching(conns) -> list:
    return [c for c in conns if (c.version_for(FindCoordinatorRequest) or 0) >= BATCHED_FIND_COORDINATOR]


async def _connect_all(call: Call, brokers: dict[int, BrokerAddress]):
    """Live connections to every known broker that opens one within a request timeout (a silent
    broker must not hold up the lookup of every key), bootstrap ones as a last resort."""
    results = await asyncio.gather(*(call.connection(n) for n in brokers), return_exceptions=True)
    opened = {id(r) for r in results if not isinstance(r, BaseException)}
    conns = [c for c in call.pool.live() if id(c) in opened]  # in the pool's order: a broker that just failed last
    if not conns:
        conns = [await call.any_connection()]
    return conns
