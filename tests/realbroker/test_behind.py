"""Issue 18's user story on the embedded broker, for every codec: records written by librdkafka
3.6 h ago in lingered multi-record batches (lz4, zstd, snappy, and gzip and none for contrast), a
group committed in the middle of a batch. Its lag in seconds is the age of that record (basis
``record``, never a bound), and a threshold gate of 60 s waits saying how far over it the group
is; a young group on the same topic opens the same gate. The sensor DAG on the same topics is in
tests/airflow/test_sensor_bounds.py."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from airflow_provider_kgroups.lag.gate import GateSpec, GateStatus, LagGate, check_gate
from airflow_provider_kgroups.lag.seconds import LagSecondsBasis, lag_seconds
from airflow_provider_kgroups.lag.snapshot import take_snapshot
from tests.support.production import BEHIND_MS, CODECS, append_young

pytestmark = pytest.mark.realbroker


async def run(bootstrap: str, body):
    async with asyncio.timeout(60):
        async with AsyncGroupsClient(ClientConfig.create(bootstrap, call_timeout_s=20.0)) as client:
            return await body(client)


def threshold_gate(group: str, topic: str) -> LagGate:
    return LagGate.start(
        GateSpec.parse(group_ids=(group,), topics=(topic,), lag_mode="threshold", max_lag_seconds=60),
        timeout_s=60,
    )


@pytest.mark.parametrize("codec", CODECS)
async def test_a_group_hours_behind_is_dated_by_its_record_and_keeps_the_gate_closed(
    broker, seed, behind, name_prefix, codec
):
    seeded = behind[codec]
    record, group = seeded.behind, f"{name_prefix}behind"
    assert (
        0 < record.offset < seeded.records[-2].offset
    )  # inside the first batch, far below the last one's base
    seed.commit(group, {(seeded.topic, 0): record.offset})

    async def measure(client):
        snap = await take_snapshot(client, [group])
        return snap, await lag_seconds(client, snap, worst_n=None)

    snap, seconds = await run(broker.bootstrap, measure)
    assert snap.groups[group].partitions[0].lag == seeded.end - record.offset
    (measured,) = seconds[group].partitions
    assert (measured.basis, measured.at_least, measured.record_offset, measured.record_timestamp_ms) == (
        LagSecondsBasis.RECORD,
        False,
        record.offset,
        record.timestamp_ms,
    )
    assert measured.seconds == (snap.taken_at_ms - record.timestamp_ms) / 1000
    assert BEHIND_MS / 1000 <= measured.seconds < BEHIND_MS / 1000 + 3600  # about 12,960 s

    decision = await run(
        broker.bootstrap, lambda client: check_gate(client, threshold_gate(group, seeded.topic))
    )
    assert decision.status is GateStatus.WAIT, decision
    over = re.search(rf"{re.escape(group)}: lag (\d+) s over 60 s", decision.message)
    assert over is not None and int(over.group(1)) >= BEHIND_MS / 1000, decision.message


@pytest.mark.parametrize("codec", CODECS)
async def test_a_young_group_on_the_same_topic_opens_the_gate(broker, seed, behind, name_prefix, codec):
    seeded = behind[codec]
    young = append_young(broker.bootstrap, seeded, int(time.time() * 1000) - 5_000)  # written 5 s ago
    group = f"{name_prefix}young"
    seed.commit(group, {(seeded.topic, 0): young[len(young) // 2].offset})  # inside the young batch

    decision = await run(
        broker.bootstrap, lambda client: check_gate(client, threshold_gate(group, seeded.topic))
    )
    assert decision.status is GateStatus.DONE, decision
    assert 4.9 < decision.result["lag"][group]["max_lag_seconds"] < 60


async def test_without_the_codec_library_the_gate_waits_and_says_once_what_to_install(
    broker, seed, behind, name_prefix, monkeypatch
):
    """The issue's first defect (the library was not there), replayed by hiding cramjam: the lz4
    partition's age is unknown, the gate waits (never opens) and its first check tells the user
    which partition, codec and library, and what to install; the second check does not repeat it."""
    from airflow_provider_kgroups.client import compression

    def missing():
        raise ImportError("the cramjam library is missing: reinstall airflow-provider-kgroups")

    monkeypatch.setattr(compression, "_cramjam", missing)
    seeded = behind["lz4"]
    group = f"{name_prefix}behind"
    seed.commit(group, {(seeded.topic, 0): seeded.behind.offset})
    gate = threshold_gate(group, seeded.topic)

    async def two_checks(client):
        return await check_gate(client, gate), await check_gate(client, gate)

    first, second = await run(broker.bootstrap, two_checks)
    assert first.status is second.status is GateStatus.WAIT
    assert "lag in seconds unknown" in first.message and "cramjam library is missing" in second.message
    (told,) = first.warnings
    assert told.startswith(
        f"group {group}, {seeded.topic}[0]: cannot decode records from offset "
        f"{seeded.behind.offset}: lz4 record batch could not be decoded with cramjam: ImportError"
    )
    assert "pip install --upgrade cramjam" in told and second.warnings == ()
