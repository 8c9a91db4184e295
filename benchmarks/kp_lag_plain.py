"""The plain peer: the shortest script a kafka-python 3 user writes for the lag of the groups
matching a pattern. One admin client lists the groups, fetches every group's commits in one
batched call and the log ends of what they committed in another; a loop subtracts. Prints
``{group: {"total_lag": N, "partitions": [[topic, partition, committed, log_end, lag], ...]}}``.

    python benchmarks/kp_lag_plain.py BOOTSTRAP 'acc-g*'
"""

import fnmatch
import json
import sys

from kafka import KafkaAdminClient
from kafka.protocol.consumer import OffsetSpec

admin = KafkaAdminClient(bootstrap_servers=sys.argv[1].split(","))
pattern = sys.argv[2]
groups = [g["group_id"] for g in admin.list_groups() if fnmatch.fnmatchcase(g["group_id"], pattern)]
offsets = admin.list_group_offsets(groups)
committed = {tp for parts in offsets.values() for tp, om in parts.items() if om.offset >= 0}
ends = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in committed})
admin.close()
lag = {}
for group, parts in offsets.items():
    rows = [
        [tp.topic, tp.partition, om.offset, ends[tp].offset, ends[tp].offset - om.offset]
        for tp, om in parts.items()
        if om.offset >= 0
    ]
    lag[group] = {"total_lag": sum(row[4] for row in rows), "partitions": rows}
sys.stdout.write(json.dumps(lag))
print()
