"""Landing files for tests, written through the landing layout's own writer."""

from __future__ import annotations

import json

from airflow_provider_kgroups.landing import write_file


def land(root, topic: str, partition: int, start: int, end: int, offsets=None, fmt: str = "jsonl") -> str:
    """A landing file of positions [start, end) holding records at ``offsets`` (default: all)."""
    offsets = range(start, end) if offsets is None else offsets
    rows = [
        {
            "topic": topic,
            "partition": partition,
            "offset": o,
            "timestamp_ms": 1_700_000_000_000 + o,
            "key": f"k{o % 3}",
            "value": json.dumps({"qty": o}),
        }
        for o in offsets
    ]
    return write_file(str(root), topic, partition, start, end, rows, fmt=fmt)
