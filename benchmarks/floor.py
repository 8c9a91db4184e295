"""The floor for the batched scenario: the minimum request sequence on the same transport
with no driver at all (connect, Metadata, one FindCoordinator, then one concurrent round of
OffsetFetch per coordinator and ListOffsets per leader), including decoding."""

from __future__ import annotations

import asyncio
import time

from airflow_provider_kgroups.client import ClientConfig
from airflow_provider_kgroups.client.config import BrokerAddress
from airflow_provider_kgroups.client.protocol import (
    FindCoordinatorRequest, ListOffsetsRequest, MetadataRequest, OffsetFetchRequest,
)
from airflow_provider_kgroups.client.cluster import ClusterMetadata
from airflow_provider_kgroups.client.transport import ConnectionPool


def run_floor(bootstrap: str, groups: list[str]) -> dict:
    async def work():
        started = time.perf_counter()
        config = ClientConfig.create(bootstrap)
        metadata = ClusterMetadata(config.bootstrap_servers)
        pool = ConnectionPool(config, metadata)
        first = await pool.any()
        meta = await first.send(MetadataRequest(topics=None, allow_auto_topic_creation=False),
                                first.version_for(MetadataRequest), 30)
        metadata.learn_brokers({b.node_id: BrokerAddress(b.host, b.port) for b in meta.brokers})
        conns = {b.node_id: c for b, c in zip(meta.brokers, await asyncio.gather(
            *(pool.get(b.node_id) for b in meta.brokers)))}
        found = await first.send(FindCoordinatorRequest(key_type=0, coordinator_keys=groups), 4, 30)
        by_coordinator: dict[int, list[str]] = {}
        for c in found.coordinators:
            by_coordinator.setdefault(c.node_id, []).append(c.key)
        by_leader: dict[int, dict[str, list[int]]] = {}
        for topic in meta.topics:
            for p in topic.partitions:
                by_leader.setdefault(p.leader_id, {}).setdefault(topic.name, []).append(p.partition_index)
        fetches = [conns[node].send(OffsetFetchRequest(groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None) for g in gs]), 8, 30)
            for node, gs in by_coordinator.items()]
        lists = [conns[node].send(ListOffsetsRequest(replica_id=-1, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=[
                ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=-1)
                for p in ps]) for t, ps in topics.items()]), 7, 30)
            for node, topics in by_leader.items()]
        responses = await asyncio.gather(*fetches, *lists)
        seconds = time.perf_counter() - started
        offsets = sum(1 for r in responses[:len(fetches)] for g in r.groups for t in g.topics for p in t.partitions)
        await pool.close()
        return {"seconds": seconds, "groups_ok": len(groups), "group_errors": 0, "offsets": offsets, "ends": 0}

    return asyncio.run(work())
