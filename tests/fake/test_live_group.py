"""The tests' live group (tests/support/live.py) replaces a member that stalls: kafka-python 3.0.12's
member sometimes stops after its first rebalances, and a test about our reads must not fail for it.
Judged on Apache Kafka: the first member is made to look stalled (its heartbeat check fails once);
the group is still handed over Stable, with its commits, by a second member."""

from __future__ import annotations

from kafka.structs import TopicPartition

from demo.seed import SeedError
from tests.support import live
from tests.support.wire import WireConnection


def test_a_stalled_member_is_replaced_by_a_new_one(seed, name_prefix, monkeypatch):
    real = live.LiveConsumer.wait_heartbeating
    calls: list[str | None] = []

    def stalls_once(self: live.LiveConsumer, timeout: float) -> None:
        calls.append(self.member_id)
        if len(calls) == 1:
            raise SeedError("timed out after 6.0s waiting for a heartbeat answered")
        real(self, timeout)

    monkeypatch.setattr(live.LiveConsumer, "wait_heartbeating", stalls_once)
    group = live.start_live_group(seed, f"{name_prefix}g", f"{name_prefix}t", records_per_partition=(4, 2))
    try:
        assert len(calls) == 2 and calls[0] != calls[1], calls  # a second member, not the first again
        assert seed.committed(group.group_id) == {
            TopicPartition(group.topic, 0): 4,
            TopicPartition(group.topic, 1): 2,
        }
        with WireConnection.to(seed.bootstrap) as wire:
            assert live.group_state(wire, group.group_id) == "Stable"
    finally:
        group.stop()
