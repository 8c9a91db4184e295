"""The fake's leader election: a new leader catching up its high watermark.

Follows Partition.fetchOffsetForTimestamp and ReplicaManager.fetchOffset: while the new
leader's high watermark lags behind the start offset of its epoch, "latest" and a timestamp
lookup that finds nothing below the high watermark answer OFFSET_NOT_AVAILABLE (78) from
ListOffsets v5, LEADER_NOT_AVAILABLE (5) below; "earliest" is answered. The old leader
answers NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import asyncio

from kafka.protocol.consumer import ListOffsetsRequest

from tests.support.fakekafka import Err, FakeCluster, roundtrip

DEADLINE_S = 20.0


def request(specs: dict[int, int]) -> ListOffsetsRequest:
    T = ListOffsetsRequest.ListOffsetsTopic
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            T(
                name="t",
                partitions=[
                    T.ListOffsetsPartition(partition_index=p, timestamp=ts, current_leader_epoch=-1)
                    for p, ts in specs.items()
                ],
            )
        ],
    )


def answers(response) -> dict[int, tuple[int, int]]:
    return {p.partition_index: (p.error_code, p.offset) for p in response.topics[0].partitions}


async def test_a_new_leader_answers_offset_not_available_until_it_caught_up():
    async with asyncio.timeout(DEADLINE_S):
        async with FakeCluster(brokers=2) as c:
            c.add_topic("t", 1, end_offsets=50, start_offsets=10, leaders=[0])
            c.append("t", 0, 2, timestamp_ms=[1000, 2000])  # offsets 50, 51
            c.move_leader("t", 0, 1, catching_up=3)
            old = await roundtrip(*c.address(0), request({0: -1}), 9)
            assert answers(old) == {0: (Err.NOT_LEADER_OR_FOLLOWER, -1)}
            # earliest and a timestamp found below the high watermark are answered, and use up nothing
            assert answers(await roundtrip(*c.address(1), request({0: -2}), 9)) == {0: (0, 10)}
            assert answers(await roundtrip(*c.address(1), request({0: 1500}), 9)) == {0: (0, 51)}
            # latest, and a timestamp after every record: 78 from v5, 5 below
            assert answers(await roundtrip(*c.address(1), request({0: -1}), 9)) == {
                0: (Err.OFFSET_NOT_AVAILABLE, -1)
            }
            assert answers(await roundtrip(*c.address(1), request({0: 9999}), 5)) == {
                0: (Err.OFFSET_NOT_AVAILABLE, -1)
            }
            assert answers(await roundtrip(*c.address(1), request({0: -1}), 4)) == {
                0: (Err.LEADER_NOT_AVAILABLE, -1)
            }
            caught_up = await roundtrip(*c.address(1), request({0: -1}), 9)
            assert answers(caught_up) == {0: (0, 52)}
            assert caught_up.topics[0].partitions[0].leader_epoch == 1
            assert c.count("ListOffsets", 1) == 6
