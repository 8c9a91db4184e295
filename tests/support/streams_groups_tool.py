"""Kafka's own ``kafka-streams-groups.sh`` (``StreamsGroupCommand`` in kafka-tools, 4.x) as a test
oracle for streams groups (KIP-1071), and the application that makes one: a
:class:`~demo.kafka_streams.StreamsApp` run beside the ``kafka`` fixture.

    tool = StreamsGroupsTool(cluster)
    tool.table("--describe", "--group", "app", "--offsets", "--verbose")  # rows keyed by column

The tool prints the same padded columns as kafka-consumer-groups.sh (:func:`parse_blocks` cuts
them); its members' ``ASSIGNMENTS`` are tasks, ``ACTIVE: 0:[0,1]; 1:[0];`` (subtopology id:
partitions), read by :func:`parse_tasks`.
"""

from __future__ import annotations

import re
import subprocess

from demo.apache_kafka import KafkaCluster
from tests.support.consumer_groups_tool import ToolError, ToolRun, parse_blocks

__all__ = ["STREAMS_GROUPS_TOOL", "StreamsGroupsTool", "parse_tasks"]

#: kafka-streams-groups.sh's class (kafka-tools, Kafka 4.1+).
STREAMS_GROUPS_TOOL = "org.apache.kafka.tools.streams.StreamsGroupCommand"


class StreamsGroupsTool:
    """``kafka-streams-groups.sh --bootstrap-server <cluster>`` of the cluster's own release."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster

    def run(self, *args: str, timeout: float = 120.0) -> ToolRun:
        done: subprocess.CompletedProcess[str] = self.cluster.run_tool(
            STREAMS_GROUPS_TOOL, "--bootstrap-server", self.cluster.bootstrap, *args, timeout=timeout
        )
        blocks, notes = parse_blocks(done.stdout)
        return ToolRun(args, done.returncode, done.stdout, done.stderr, blocks, notes)

    def table(self, *args: str) -> list[dict[str, str]]:
        """Every row of a run that must succeed and print no error line."""
        run = self.run(*args).check()
        errors = [n for n in run.notes if n.startswith("Error:")]
        if errors:
            raise ToolError(f"kafka-streams-groups {' '.join(args)} said {errors}:\n{run.stdout}")
        return run.rows


def parse_tasks(text: str, kind: str = "ACTIVE") -> dict[str, list[int]]:
    """One kind of task from the tool's ``ASSIGNMENTS`` column: ``ACTIVE: 0:[0,1]; 1:[0];`` ->
    ``{"0": [0, 1], "1": [0]}`` (``TARGET-ACTIVE:`` and the standby kinds are told apart)."""
    match = re.search(rf"(?:^|\s){re.escape(kind)}:((?:\s*[^\s:;]+:\[[0-9,]*\];)*)", text)
    if match is None:
        return {}
    return {
        sub: sorted(int(p) for p in parts.split(",") if p)
        for sub, parts in re.findall(r"([^\s:;]+):\[([0-9,]*)\];", match.group(1))
    }
