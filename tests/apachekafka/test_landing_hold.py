"""The demo's landing consumer holding below a barrier until released (demo/landing.py
``hold_at``): what ``make demo`` relies on for its gate to meet the landing group behind."""

from __future__ import annotations

import itertools
import uuid

from airflow_provider_kgroups.client import TopicPartition
from airflow_provider_kgroups.landing import list_files
from demo.landing import LandingConsumer, OrderProducer

PARTITIONS, PER_PARTITION, HOLD = 3, 20, 8


def test_holds_below_the_hold_then_lands_on_contiguously(kafka, kafka_seed, tmp_path):
    topic = f"hold-{uuid.uuid4().hex[:8]}"
    kafka_seed.create_topics({topic: PARTITIONS})
    with OrderProducer(kafka.bootstrap, topic, PARTITIONS) as producer:
        producer.produce(PARTITIONS * PER_PARTITION)
    hold = {(topic, p): HOLD for p in range(PARTITIONS)}
    with LandingConsumer(
        kafka.bootstrap, f"{topic}-landing", [topic], str(tmp_path), flush_interval_s=0.1, hold_at=hold
    ) as landing:
        landing.start()
        held = landing.wait_committed(hold, timeout=60)
        # every partition was read past the hold in the poll that reached it (all 20 records fit one
        # fetch): a hold that did not hold would have landed and committed them
        assert {(t.topic, t.partition): o for t, o in held.items()} == hold
        assert landing.holding and landing.landed == PARTITIONS * HOLD

        landing.release()
        assert not landing.holding
        done = landing.wait_committed({(topic, p): PER_PARTITION for p in range(PARTITIONS)}, timeout=60)
        assert set(done.values()) == {PER_PARTITION}
        assert landing.landed == PARTITIONS * PER_PARTITION  # past the hold read again, landed once

    files = list_files(str(tmp_path), [TopicPartition(topic, p) for p in range(PARTITIONS)])
    for p in range(PARTITIONS):
        ranges = [(f.start, f.end) for f in files[TopicPartition(topic, p)]]
        assert ranges[0][0] == 0 and ranges[-1][1] == PER_PARTITION
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges)), ranges
        assert any(end == HOLD for _, end in ranges), (
            ranges
        )  # a file ends at the hold: nothing landed past it
