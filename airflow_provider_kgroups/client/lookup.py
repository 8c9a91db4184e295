"""Lookup strategies: which broker serves a key. Handlers never see how keys were mapped.

Each is a handler of the same shape as the API handlers (``build`` requests for keys, ``parse``
a response into an :class:`~.contract.Outcome` whose ``completed`` maps key -> node id), after
the Java admin client's ``AdminApiLookupStrategy``; the driver asks them, the runner sends, to
where each one's :class:`~.contract.Routing` says (the runner never asks which API a lookup is).

* :class:`CoordinatorLookup` - groups to their coordinator with FindCoordinator
  (``CoordinatorStrategy``): batched requests (v4+, KIP-699), each within the
  :class:`~.chunking.RequestLimits`, or, from a broker without v4, one request per key.
  Results are cached across calls. Routed :attr:`~.contract.Routing.BATCHING`.
* :class:`LeaderLookup` - partitions to their leader with Metadata (``PartitionLeaderStrategy``).
  Routed :attr:`~.contract.Routing.LEAST_LOADED`.
* :class:`BrokerLookup` - the key *is* a broker (ListGroups goes to every broker;
  ``StaticBrokerStrategy``): no request. Routed :attr:`~.contract.Routing.FIXED`.
* :class:`AnyBrokerLookup` - any broker answers for the key (DescribeConfigs of a topic): no
  request; the sender picks the least-loaded broker. Routed :attr:`~.contract.Routing.ANY`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any, TypeVar

from .chunking import Chunker, RequestLimits
from .cluster import METADATA, ClusterMetadata
from .config import BrokerAddress
from .contract import Lookup, Outcome, RequestPlan, Routing
from .errors import RELOOKUP, RETRY_SAME_BROKER, ErrorCode, Failure
from .protocol import FindCoordinatorRequest, FindCoordinatorResponse, KafkaApi
from .results import TopicPartition

K = TypeVar("K", bound=Hashable)

GROUP_KEY_TYPE = 0
BATCHED_FIND_COORDINATOR = 4


def _find_coordinators(group_ids: list[str], version: int) -> FindCoordinatorRequest:
    return FindCoordinatorRequest(key_type=GROUP_KEY_TYPE, coordinator_keys=group_ids)


def batches(version: int | None) -> bool:
    """Whether a broker answering FindCoordinator up to ``version`` takes many keys at once."""
    return (version or 0) >= BATCHED_FIND_COORDINATOR


class CoordinatorLookup(Lookup[str]):
    """FindCoordinator for groups. Sent to a broker that batches (v4+), else to every broker in
    turn (:attr:`~.contract.Routing.BATCHING`); the request's shape follows that broker's version, as
    ``CoordinatorStrategy`` falls back from batched to one key per request (``disableBatch``)
    when the broker is older than v4. A coordinator's address goes to the cluster metadata."""

    kafka_api = KafkaApi(FindCoordinatorRequest, FindCoordinatorResponse, max_version=6)
    request_class = kafka_api.request
    routing = Routing.BATCHING

    def __init__(self, metadata: ClusterMetadata, *, limits: RequestLimits = RequestLimits()) -> None:
        self.metadata = metadata
        self._coordinators: dict[str, int] = {}
        self._chunker = Chunker(limits, _find_coordinators)

    def cached(self, group_id: str) -> int | None:
        return self._coordinators.get(group_id)

    def forget(self, group_ids: Iterable[str]) -> None:
        for group_id in group_ids:
            self._coordinators.pop(group_id, None)

    def learn(self, coordinators: Mapping[str, int]) -> None:
        """Coordinators known from elsewhere (the broker whose ListGroups listed a group): used
        as a FindCoordinator answer would be; a wrong one answers NOT_COORDINATOR and is looked
        up again."""
        self._coordinators.update(coordinators)

    def batches(self, version: int | None) -> bool:
        return batches(version)

    def build(self, group_ids: list[str], version: int) -> list[RequestPlan[str]]:
        if batches(version):
            return [
                RequestPlan(_find_coordinators(chunk, version), version, tuple(chunk))
                for chunk in self._chunker.chunks(group_ids, version)
            ]
        return [
            RequestPlan(FindCoordinatorRequest(key=group_id, key_type=GROUP_KEY_TYPE), version, (group_id,))
            for group_id in group_ids
        ]

    def parse(self, plan: RequestPlan[str], response: Any) -> Outcome[str, int]:
        """Errors route as ``CoordinatorStrategy.handleError``: COORDINATOR_NOT_AVAILABLE and
        COORDINATOR_LOAD_IN_PROGRESS (and NOT_COORDINATOR) look the group up again after a
        backoff; any other error fails the group. A group the answer leaves out is looked up
        again."""
        if batches(plan.version):
            answers = [
                (c.key, c.error_code, c.error_message, c.node_id, c.host, c.port)
                for c in response.coordinators
            ]
        else:
            answers = [
                (
                    plan.keys[0],
                    response.error_code,
                    response.error_message,
                    response.node_id,
                    response.host,
                    response.port,
                )
            ]
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
        missing = set(plan.keys) - outcome.completed.keys() - outcome.failed.keys() - outcome.unmapped
        outcome.unmapped |= missing
        outcome.reasons.update({k: "missing from FindCoordinator response" for k in missing})
        self.metadata.learn_brokers(new_brokers)
        return outcome


class LeaderLookup(Lookup[TopicPartition]):
    """Metadata for the partitions' topics, from the least-loaded broker (the next one when it
    fails); the cluster metadata keeps the leaders (its cache)."""

    kafka_api = METADATA
    request_class = METADATA.request
    routing = Routing.LEAST_LOADED

    def __init__(self, metadata: ClusterMetadata) -> None:
        self.metadata = metadata

    def cached(self, tp: TopicPartition) -> int | None:
        return self.metadata.leader_of(tp.topic, tp.partition)

    def forget(self, tps: Iterable[TopicPartition]) -> None:
        self.metadata.mark_stale({tp.topic for tp in tps})

    def build(self, tps: list[TopicPartition], version: int) -> list[RequestPlan[TopicPartition]]:
        return [RequestPlan(self.metadata.request({tp.topic for tp in tps}, version), version, tuple(tps))]

    def parse(self, plan: RequestPlan[TopicPartition], response: Any) -> Outcome[TopicPartition, int]:
        """A topic being created or electing (LEADER_NOT_AVAILABLE, or a partition without a
        leader) is asked again after a backoff, as ``PartitionLeaderStrategy.handleTopicError``
        / ``handlePartitionError`` retry; an unknown topic or partition fails."""
        self.metadata.absorb({tp.topic for tp in plan.keys}, response)
        outcome: Outcome[TopicPartition, int] = Outcome()
        for tp in plan.keys:
            error = self.metadata.topic_errors.get(tp.topic)
            description = self.metadata.topics.get(tp.topic)
            if error == ErrorCode.LEADER_NOT_AVAILABLE:
                outcome.requeue(tp, Failure(error, f"topic {tp.topic!r} has no leaders yet"), relookup=False)
            elif error is not None or description is None:
                outcome.failed[tp] = Failure(
                    error or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"topic {tp.topic!r} is not in the cluster metadata",
                )
            elif tp.partition not in description.partitions:
                outcome.failed[tp] = Failure(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"topic {tp.topic!r} has no partition {tp.partition}",
                )
            elif description.partitions[tp.partition] < 0:
                outcome.requeue(tp, Failure(ErrorCode.LEADER_NOT_AVAILABLE, ""), relookup=False)
            else:
                outcome.completed[tp] = description.partitions[tp.partition]
        return outcome


class BrokerLookup(Lookup[int]):
    """Keys are broker node ids; nothing to look up."""

    request_class = None
    routing = Routing.FIXED

    def cached(self, node_id: int) -> int | None:
        return node_id

    def forget(self, node_ids: Iterable[int]) -> None:
        pass

    def build(self, keys: list[int], version: int) -> list[RequestPlan[int]]:
        raise NotImplementedError("a broker id needs no lookup request")

    def parse(self, plan: RequestPlan[int], response: Any) -> Outcome[int, int]:
        raise NotImplementedError("a broker id needs no lookup request")

    def resolve(self, node_ids: list[int]) -> Outcome[int, int]:
        # Only reached after a broker's request failed: ask it again after the backoff.
        return Outcome(completed={n: n for n in node_ids})


class AnyBrokerLookup(Lookup[K]):
    """Keys any broker answers for (a topic's configuration: ``KafkaAdminClient.describeConfigs``
    sends every non-broker resource to ``LeastLoadedBrokerOrActiveKController``). Nothing is looked
    up or cached: each run's keys go to the broker the sender finds least loaded then."""

    request_class = None
    routing = Routing.ANY

    def cached(self, key: K) -> int | None:
        return None

    def forget(self, keys: Iterable[K]) -> None:
        pass

    def build(self, keys: list[K], version: int) -> list[RequestPlan[K]]:
        raise NotImplementedError("any broker serves these keys: the sender picks it, with no request")

    def parse(self, plan: RequestPlan[K], response: Any) -> Outcome[K, int]:
        raise NotImplementedError("any broker serves these keys: the sender picks it, with no request")
