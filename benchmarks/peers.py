"""The measured work, one function per client: committed offsets of every group, then the
log-end offsets of every partition they committed. Each runs in its own subprocess."""

from __future__ import annotations

import asyncio
import time


def run_kgroups(bootstrap: str, groups: list[str]) -> dict:
    from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig

    async def work():
        started = time.perf_counter()
        async with AsyncGroupsClient(ClientConfig.create(bootstrap)) as client:
            offsets = await client.fetch_committed_offsets(groups)
            tps = {tp for value in offsets.values.values() for tp in value.committed()}
            ends = await client.log_end_offsets(tps)
        return {
            "seconds": time.perf_counter() - started,
            "groups_ok": len(offsets.values),
            "group_errors": len(offsets.failures),
            "offsets": sum(len(v.committed()) for v in offsets.values.values()),
            "ends": len(ends.values),
        }

    return asyncio.run(work())


def run_kafka_python(bootstrap: str, groups: list[str]) -> dict:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import UnsupportedVersionError
    from kafka.protocol.consumer import OffsetSpec

    started = time.perf_counter()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-kafka-python")
    try:
        offsets = admin.list_group_offsets(groups)
    except UnsupportedVersionError:
        # Below OffsetFetch v8 it takes one group per call.
        offsets = {}
        for group in groups:
            offsets.update(admin.list_group_offsets(group))
    tps = {tp for partitions in offsets.values() for tp, om in partitions.items() if om.offset >= 0}
    ends = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
    seconds = time.perf_counter() - started
    admin.close()
    return {
        "seconds": seconds,
        "groups_ok": len(offsets),
        "group_errors": len(groups) - len(offsets),
        "offsets": sum(1 for p in offsets.values() for om in p.values() if om.offset >= 0),
        "ends": len(ends),
    }


def run_confluent(bootstrap: str, groups: list[str]) -> dict:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    started = time.perf_counter()
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "bench-confluent"})
    # list_consumer_group_offsets takes one group per call: all calls at once, then wait.
    futures = {}
    for group in groups:
        futures.update(admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]))
    offsets, errors = {}, 0
    for group, future in futures.items():
        try:
            offsets[group] = [tp for tp in future.result().topic_partitions if tp.offset >= 0]
        except Exception:  # noqa: BLE001 - counted, the benchmark reports errors per client
            errors += 1
    tps = {(tp.topic, tp.partition) for committed in offsets.values() for tp in committed}
    end_futures = admin.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in tps})
    ends = {tp: f.result() for tp, f in end_futures.items()}
    return {
        "seconds": time.perf_counter() - started,
        "groups_ok": len(offsets),
        "group_errors": errors,
        "offsets": sum(len(v) for v in offsets.values()),
        "ends": len(ends),
    }


RUNNERS = {"kgroups": run_kgroups, "kafka-python": run_kafka_python, "confluent-kafka": run_confluent}
