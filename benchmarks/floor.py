"""Floors. For the batched scenario: the minimum request sequence on the same transport
with no driver at all (connect, Metadata, one FindCoordinator, then one concurrent round of
OffsetFetch per coordinator and ListOffsets per leader), including decoding. For the cold call
(``cold_call.py``): the fewest sequential round trips a correct client needs
(:func:`cold_call_floor`) and the same steps run driverless (:func:`run_cold_floor`). For
``kgroups lag --pattern`` (bench_cli's ``mixed`` row ``floor``, a whole process):
:func:`run_lag_floor`, the requests of the pattern's lag sent and their answers decoded, nothing
else.

    python benchmarks/floor.py BOOTSTRAP 'acc-g*'   (prints {"groups": N, "total_lag": L})
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import sys
import time
from pathlib import Path

if __name__ == "__main__":  # a script: this checkout's package, not the one the environment installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_provider_kgroups.client import ClientConfig
from airflow_provider_kgroups.client.cluster import METADATA, ClusterMetadata
from airflow_provider_kgroups.client.config import BrokerAddress
from airflow_provider_kgroups.client.handlers.list_groups import ListGroupsHandler
from airflow_provider_kgroups.client.handlers.list_offsets import ListOffsetsHandler
from airflow_provider_kgroups.client.handlers.offset_fetch import OffsetFetchHandler
from airflow_provider_kgroups.client.lookup import CoordinatorLookup
from airflow_provider_kgroups.client.protocol import (
    API_VERSIONS,
    AllOffsetsFetch,
    FindCoordinatorRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetFetchRequest,
    compile_codecs,
)
from airflow_provider_kgroups.client.transport import ConnectionPool


def _transport(bootstrap: str) -> tuple[ClusterMetadata, ConnectionPool]:
    """The client's transport alone: broker addresses and a connection pool, no driver."""
    config = ClientConfig.create(bootstrap)
    metadata = ClusterMetadata(config.bootstrap_servers)
    return metadata, ConnectionPool(config, metadata)


async def _cluster(bootstrap: str):
    """The transport and the cluster's Metadata (all topics) from the first broker, its brokers learnt."""
    metadata, pool = _transport(bootstrap)
    first = await pool.any()
    meta = await first.send(
        MetadataRequest(topics=None, allow_auto_topic_creation=False), first.version_for(MetadataRequest), 30
    )
    metadata.learn_brokers({b.node_id: BrokerAddress(b.host, b.port) for b in meta.brokers})
    return pool, first, meta


def run_floor(bootstrap: str, groups: list[str]) -> dict:
    async def work():
        started = time.perf_counter()
        pool, first, meta = await _cluster(bootstrap)
        conns = {
            b.node_id: c
            for b, c in zip(meta.brokers, await asyncio.gather(*(pool.get(b.node_id) for b in meta.brokers)))
        }
        found = await first.send(FindCoordinatorRequest(key_type=0, coordinator_keys=groups), 4, 30)
        by_coordinator: dict[int, list[str]] = {}
        for c in found.coordinators:
            by_coordinator.setdefault(c.node_id, []).append(c.key)
        by_leader: dict[int, dict[str, list[int]]] = {}
        for topic in meta.topics:
            for p in topic.partitions:
                by_leader.setdefault(p.leader_id, {}).setdefault(topic.name, []).append(p.partition_index)
        fetches = [
            conns[node].send(
                OffsetFetchRequest(
                    groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None) for g in gs]
                ),
                8,
                30,
            )
            for node, gs in by_coordinator.items()
        ]
        lists = [
            conns[node].send(
                ListOffsetsRequest(
                    replica_id=-1,
                    topics=[
                        ListOffsetsRequest.ListOffsetsTopic(
                            name=t,
                            partitions=[
                                ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                                    partition_index=p, timestamp=-1
                                )
                                for p in ps
                            ],
                        )
                        for t, ps in topics.items()
                    ],
                ),
                7,
                30,
            )
            for node, topics in by_leader.items()
        ]
        responses = await asyncio.gather(*fetches, *lists)
        seconds = time.perf_counter() - started
        # OffsetFetch v8-v9 answers come decoded into each group's partitions (client/wire.py)
        offsets = sum(len(g.partitions) for r in responses[: len(fetches)] for g in r.groups)
        await pool.close()
        return {
            "seconds": seconds,
            "groups_ok": len(groups),
            "group_errors": 0,
            "offsets": offsets,
            "ends": 0,
        }

    return asyncio.run(work())


def cold_call_floor(first: int, coordinators: set[int], leaders: set[int]) -> list[str]:
    """The fewest sequential round trips a correct client needs for what
    ``benchmarks/cold_call.py`` times (a new client: committed offsets of its groups, then the
    log-end offsets of what they committed), one step per round trip. ``first``: the broker
    the client connected to first; ``coordinators``, ``leaders``: the brokers OffsetFetch and
    ListOffsets must go to (from the fake's request log).

    Every new connection negotiates versions (ApiVersions) before its first request; the
    first Metadata (broker list) rides with the first FindCoordinator, which names the
    coordinators' addresses; which topics need leaders is known only from the committed
    offsets. Left out as not what a correct client should do by default: connecting every
    broker the first Metadata lists before knowing it is needed (one ApiVersions per broker,
    100 on a 100-broker cluster, for a call that may need two), and asking Metadata for every
    topic up front (its size grows with the cluster). TCP connects on localhost are ~0.1 ms.
    """
    steps = ["ApiVersions", "FindCoordinator+Metadata"]
    if coordinators - {first}:
        steps.append("ApiVersions (coordinators)")
    steps += ["OffsetFetch", "Metadata (topics)"]
    if leaders - coordinators - {first}:
        steps.append("ApiVersions (leaders)")
    steps.append("ListOffsets")
    return steps


def run_cold_floor(bootstrap: str, groups: list[str]) -> dict:
    """The steps of :func:`cold_call_floor` on the client's transport with no driver, lookups or
    retries, codecs compiled before the clock: what this harness (fake brokers in another
    process, a shared machine) charges for the fewest round trips, beside ``cold_call.py``."""
    for api in (
        API_VERSIONS,
        METADATA,
        CoordinatorLookup.kafka_api,
        OffsetFetchHandler.kafka_api,
        ListOffsetsHandler.kafka_api,
    ):
        compile_codecs(api.request, api.max_version)

    async def work():
        started = time.perf_counter()
        metadata, pool = _transport(bootstrap)
        first = await pool.any()
        meta, found = await asyncio.gather(
            first.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12, 30),
            first.send(FindCoordinatorRequest(key_type=0, coordinator_keys=groups), 6, 30),
        )
        metadata.learn_brokers({b.node_id: BrokerAddress(b.host, b.port) for b in meta.brokers})
        by_coordinator: dict[int, list[str]] = {}
        for c in found.coordinators:
            by_coordinator.setdefault(c.node_id, []).append(c.key)
        conns = await asyncio.gather(*(pool.get(node) for node in by_coordinator))
        fetched = await asyncio.gather(
            *(
                conn.send(
                    OffsetFetchRequest(
                        groups=[
                            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None) for g in gs
                        ]
                    ),
                    9,
                    30,
                )
                for conn, gs in zip(conns, by_coordinator.values())
            )
        )
        committed = {(tp.topic, tp.partition) for r in fetched for g in r.groups for tp in g.partitions}
        topics = sorted({t for t, _ in committed})
        described = await first.send(
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                allow_auto_topic_creation=False,
            ),
            12,
            30,
        )
        by_leader: dict[int, dict[str, list[int]]] = {}
        for topic in described.topics:
            for p in topic.partitions:
                if (topic.name, p.partition_index) in committed:
                    by_leader.setdefault(p.leader_id, {}).setdefault(topic.name, []).append(p.partition_index)
        conns = await asyncio.gather(*(pool.get(node) for node in by_leader))
        ends = await asyncio.gather(
            *(
                conn.send(
                    ListOffsetsRequest(
                        replica_id=-1,
                        topics=[
                            ListOffsetsRequest.ListOffsetsTopic(
                                name=t,
                                partitions=[
                                    ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                                        partition_index=p, timestamp=-1
                                    )
                                    for p in ps
                                ],
                            )
                            for t, ps in tps.items()
                        ],
                    ),
                    9,
                    30,
                )
                for conn, tps in zip(conns, by_leader.values())
            )
        )
        seconds = time.perf_counter() - started
        await pool.close()
        return {
            "seconds": seconds,
            "groups_ok": sum(len(r.groups) for r in fetched),
            "committed": len(committed),
            "ends": sum(len(p.partitions) for r in ends for p in r.topics),
        }

    return asyncio.run(work())


def run_lag_floor(bootstrap: str, pattern: str) -> dict:
    """What ``kgroups lag --pattern`` cannot do with less: Metadata (brokers and leaders) from the
    first broker, ListGroups from every broker, an OffsetFetch of every committed offset to each
    broker for the matching groups it listed (a listing names the coordinator), then ListOffsets
    (latest) to the leaders of what they committed; the same transport, versions and decoders as
    the client, no driver, lookups, retries, errors or output. Returns the groups read and the
    sum of their lags (what bench_cli checks)."""

    async def work() -> dict:
        pool, _, meta = await _cluster(bootstrap)
        conns = await asyncio.gather(*(pool.get(b.node_id) for b in meta.brokers))
        listings = await asyncio.gather(
            *(
                c.send(
                    ListGroupsRequest(states_filter=[], types_filter=[]),
                    c.version_for(ListGroupsHandler.request_class),
                    30,
                )
                for c in conns
            )
        )
        chosen = [
            (c, ids)
            for c, listing in zip(conns, listings)
            if (ids := [g.group_id for g in listing.groups if fnmatch.fnmatchcase(g.group_id, pattern)])
        ]
        fetched = await asyncio.gather(
            *(
                c.send(AllOffsetsFetch(ids, False), c.version_for(OffsetFetchHandler.request_class), 30)
                for c, ids in chosen
            )
        )
        committed = {
            tp
            for answer in fetched
            for group in answer.groups
            for tp, value in group.partitions.items()
            if value.offset >= 0
        }
        leaders = {(t.name, p.partition_index): p.leader_id for t in meta.topics for p in t.partitions}
        by_leader: dict[int, dict[str, list[int]]] = {}
        for tp in committed:
            by_leader.setdefault(leaders[tp.topic, tp.partition], {}).setdefault(tp.topic, []).append(
                tp.partition
            )
        leader_conns = await asyncio.gather(*(pool.get(node) for node in by_leader))
        ends = await asyncio.gather(
            *(
                conn.send(
                    ListOffsetsRequest(
                        replica_id=-1,
                        isolation_level=0,
                        topics=[
                            ListOffsetsRequest.ListOffsetsTopic(
                                name=t,
                                partitions=[
                                    ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                                        partition_index=p, timestamp=-1, current_leader_epoch=-1
                                    )
                                    for p in ps
                                ],
                            )
                            for t, ps in tps.items()
                        ],
                    ),
                    conn.version_for(ListOffsetsHandler.request_class),
                    30,
                )
                for conn, tps in zip(leader_conns, by_leader.values())
            )
        )
        end = {(t.name, p.partition_index): p.offset for r in ends for t in r.topics for p in t.partitions}
        lag = sum(
            end[tp.topic, tp.partition] - value.offset
            for answer in fetched
            for group in answer.groups
            for tp, value in group.partitions.items()
            if value.offset >= 0
        )
        await pool.close()
        return {"groups": sum(len(answer.groups) for answer in fetched), "total_lag": lag}

    return asyncio.run(work())


if __name__ == "__main__":
    print(json.dumps(run_lag_floor(sys.argv[1], sys.argv[2])))
