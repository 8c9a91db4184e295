"""The group-level risk a ``kgroups lag --risk`` JSON document carries: the shortest known margin
is flagged a lower bound, and the partitions whose margin could not be measured are counted, so
the known minimum is never read as the whole group's."""

from __future__ import annotations

from airflow_provider_kgroups.cli.lag_risk import group_risk
from airflow_provider_kgroups.lag.retention import (
    UNKNOWN_CATCH_UP,
    MarginBasis,
    PartitionRisk,
    RetentionMargin,
)


def _risk(seconds: float | None, basis: MarginBasis) -> PartitionRisk:
    return PartitionRisk(RetentionMargin(seconds, basis, "why"), UNKNOWN_CATCH_UP, at_risk=False)


def test_shortest_known_margin_is_a_lower_bound_and_unknowns_are_counted() -> None:
    risk = group_risk(
        {
            ("t", 0): _risk(120.0, MarginBasis.RETENTION_MS),
            ("t", 1): _risk(30.0, MarginBasis.RETENTION_MS),
            ("t", 2): _risk(None, MarginBasis.UNKNOWN),
            ("c", 0): _risk(None, MarginBasis.COMPACTED),
        }
    )
    assert risk["margin_seconds"] == 30.0
    assert risk["margin_at_least"] is True
    assert risk["margin_unknown_partitions"] == 1  # compacted: no margin to hide, not unknown


def test_no_known_margin_says_so() -> None:
    risk = group_risk({("t", 0): _risk(None, MarginBasis.NO_TIME_LIMIT)})
    assert risk["margin_seconds"] is None
    assert risk["margin_at_least"] is False
    assert risk["margin_unknown_partitions"] == 0
    assert group_risk({})["margin_at_least"] is False
