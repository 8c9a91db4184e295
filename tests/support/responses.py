"""Broker answers built by hand, for the driver's and lookups' tests that need no socket."""

from __future__ import annotations

from airflow_provider_kgroups.client.protocol import FindCoordinatorResponse, MetadataResponse


def found(*answers) -> FindCoordinatorResponse:
    """A batched (v4+) answer: (group, error code, node)."""
    return FindCoordinatorResponse(
        throttle_time_ms=0,
        coordinators=[
            FindCoordinatorResponse.Coordinator(
                key=g, node_id=node, host=f"b{node}", port=9092, error_code=error, error_message=None
            )
            for g, error, node in answers
        ],
    )


def metadata_response(partitions: dict[int, tuple[int, int]], topic_error: int = 0) -> MetadataResponse:
    """Brokers 1 and 2 and topic ``t``: partition -> (error code, leader)."""
    M = MetadataResponse
    return M(
        throttle_time_ms=0,
        brokers=[M.MetadataResponseBroker(node_id=n, host=f"b{n}", port=9092, rack=None) for n in (1, 2)],
        cluster_id="c",
        controller_id=1,
        topics=[
            M.MetadataResponseTopic(
                error_code=topic_error,
                name="t",
                is_internal=False,
                partitions=[
                    M.MetadataResponseTopic.MetadataResponsePartition(
                        error_code=error,
                        partition_index=p,
                        leader_id=leader,
                        leader_epoch=0,
                        replica_nodes=[],
                        isr_nodes=[],
                        offline_replicas=[],
                    )
                    for p, (error, leader) in partitions.items()
                ],
            )
        ],
    )
