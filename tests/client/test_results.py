"""Parsing brokers' words into the client's values (pure, no network)."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client.results import GroupState


@pytest.mark.parametrize(
    "text, state",
    [
        # what Kafka sends (ClassicGroupState / ConsumerGroup.ConsumerGroupState toString, ListGroups v4+, DescribeGroups)
        ("Stable", GroupState.STABLE),
        ("PreparingRebalance", GroupState.PREPARING_REBALANCE),
        ("CompletingRebalance", GroupState.COMPLETING_REBALANCE),
        ("Empty", GroupState.EMPTY),
        ("Dead", GroupState.DEAD),
        ("Assigning", GroupState.ASSIGNING),
        ("Reconciling", GroupState.RECONCILING),
        ("NotReady", GroupState.NOT_READY),
        # the same words as people and older tools write them
        ("stable", GroupState.STABLE),
        ("PREPARING_REBALANCE", GroupState.PREPARING_REBALANCE),
        ("completing rebalance", GroupState.COMPLETING_REBALANCE),
        ("not_ready", GroupState.NOT_READY),
        # anything else is unknown, never a guess
        ("", GroupState.UNKNOWN),
        (None, GroupState.UNKNOWN),
        ("Rebalancing", GroupState.UNKNOWN),
        ("Unknown", GroupState.UNKNOWN),
        ("Stable!", GroupState.UNKNOWN),
    ],
)
def test_group_state_parse(text, state):
    assert GroupState.parse(text) is state
