"""The peer: what a user would write with bare kafka-python 3 to see the lag of the groups
matching a pattern (list, filter, committed offsets batched, log-end offsets, lag, JSON).

    python benchmarks/kp_lag.py BOOTSTRAP 'acc-g*'
"""

import fnmatch
import json
import sys

from kafka.admin import KafkaAdminClient
from kafka.errors import UnsupportedVersionError
from kafka.protocol.consumer import OffsetSpec


def main(bootstrap: str, pattern: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), client_id="kp-lag")
    try:
        groups = sorted(
            g["group_id"] for g in admin.list_groups() if fnmatch.fnmatchcase(g["group_id"], pattern)
        )
        try:
            offsets = admin.list_group_offsets(groups)
        except UnsupportedVersionError:  # below OffsetFetch v8: one group per request
            offsets = {}
            for group in groups:
                offsets.update(admin.list_group_offsets(group))
        tps = {tp for parts in offsets.values() for tp, om in parts.items() if om.offset >= 0}
        ends = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
        out = {}
        for group, parts in offsets.items():
            rows = [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "committed": om.offset,
                    "log_end": ends[tp].offset,
                    "lag": ends[tp].offset - om.offset,
                }
                for tp, om in sorted(parts.items())
                if om.offset >= 0
            ]
            out[group] = {"partitions": rows, "total_lag": sum(r["lag"] for r in rows)}
        json.dump(out, sys.stdout)
        print()
    finally:
        admin.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
