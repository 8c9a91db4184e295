"""The retention margin, the catch-up time and the AT_RISK verdict (lag/retention.py, lag/verdicts.py):
pure rules, each case a number that could come out wrong. Apache Kafka judges the margin in
tests/apachekafka/test_retention_risk.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from airflow_provider_kgroups.lag.retention import MarginBasis, at_risk, catch_up, retention_margin
from airflow_provider_kgroups.lag.verdict_text import finding_text
from airflow_provider_kgroups.lag.verdicts import LagPoint, Verdict, VerdictRules, judge_partition

NOW = 1_700_000_000_000
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class Settings:
    retention_ms: int | None = 6 * HOUR_MS
    cleanup_policy: tuple[str, ...] = ("delete",)
    retention_bytes: int | None = None


def test_the_margin_is_the_first_unread_records_timestamp_plus_retention_ms_minus_now():
    stamp = NOW - 4 * HOUR_MS
    margin = retention_margin(4 * 3600.0, True, stamp, Settings(), NOW)
    assert margin.basis is MarginBasis.RETENTION_MS
    assert margin.seconds == pytest.approx(2 * 3600.0)
    assert margin.to_dict()["at_least"] is True


@pytest.mark.parametrize(
    "settings, exact, stamp, lagging, basis, says",
    [
        (
            Settings(cleanup_policy=("compact",)),
            True,
            NOW,
            True,
            MarginBasis.COMPACTED,
            "cleanup.policy=compact",
        ),
        (Settings(retention_ms=None), True, NOW, True, MarginBasis.NO_TIME_LIMIT, "retention.ms=-1"),
        # a size limit may delete before the time limit, by an amount no offset tells: no safe time
        (
            Settings(retention_bytes=1 << 30),
            True,
            NOW,
            True,
            MarginBasis.UNKNOWN,
            "retention.bytes=1073741824",
        ),
        (
            Settings(retention_ms=None, retention_bytes=1 << 30),
            True,
            NOW,
            True,
            MarginBasis.UNKNOWN,
            "also deletes by size",
        ),
        (
            Settings(cleanup_policy=("compact",), retention_bytes=1 << 30),
            True,
            NOW,
            True,
            MarginBasis.COMPACTED,
            "compact",
        ),
        (Settings(), False, NOW, True, MarginBasis.UNKNOWN, "not known exactly"),
        (Settings(), True, -1, True, MarginBasis.UNKNOWN, "without a timestamp"),
        (None, True, NOW, True, MarginBasis.UNKNOWN, "could not be read"),
        (Settings(), True, NOW, False, MarginBasis.NOTHING_UNREAD, "nothing unread"),
    ],
)
def test_where_only_an_unsafe_number_exists_the_margin_is_unknown_with_its_reason(
    settings, exact, stamp, lagging, basis, says
):
    margin = retention_margin(10.0, exact, stamp, settings, NOW, lagging=lagging)
    assert margin.seconds is None and margin.basis is basis and says in margin.reason


def test_compact_and_delete_is_still_deleted_by_time():
    margin = retention_margin(60.0, True, NOW - 60_000, Settings(cleanup_policy=("compact", "delete")), NOW)
    assert margin.seconds == pytest.approx(6 * 3600.0 - 60)


def points(*rows: tuple[int, int, int]) -> list[LagPoint]:
    """(seconds after NOW, committed, log end)."""
    return [LagPoint(NOW + s * 1000, c, 0, e, e - c) for s, c, e in rows]


def test_catch_up_closes_the_lag_at_the_difference_of_the_rates():
    eta = catch_up(points((0, 0, 1000), (100, 2000, 2000 + 500)))  # reads 20/s, producers 15/s, lag 500
    assert eta.consume_per_s == 20 and eta.produce_per_s == 15
    assert eta.seconds == pytest.approx(500 / 5)


def test_slower_than_the_producers_never_catches_up_and_one_point_is_unknown():
    assert catch_up(points((0, 0, 100), (60, 60, 400))).never
    single = catch_up(points((0, 0, 100)))
    assert not single.known and single.seconds is None


def test_at_risk_when_the_margin_is_under_the_floor_or_shorter_than_the_catch_up():
    margin = retention_margin(3600.0, True, NOW - 5 * HOUR_MS, Settings(), NOW)  # 1 h left
    slow = catch_up(points((0, 0, 10_000), (100, 500, 10_100)))  # 4/s net: 9600 / 4 = 2400 s < 3600 s
    assert not at_risk(margin, slow, floor_s=600)
    slower = catch_up(points((0, 0, 10_000), (100, 200, 10_100)))  # 1/s net: 9900 s > 3600 s
    assert at_risk(margin, slower, floor_s=600)
    assert at_risk(margin, slow, floor_s=7200)  # under the floor whatever the catch-up
    assert not at_risk(retention_margin(1.0, True, NOW, Settings(retention_ms=None), NOW), slower, 7200)


def test_the_verdict_turns_at_risk_before_lost_and_says_both_numbers():
    rules = VerdictRules(window_ms=30 * 60_000, stuck_after_ms=10 * 60_000, margin_floor_ms=60_000)
    series = points((0, 0, 10_000), (60, 60, 10_120), (120, 120, 10_240))  # 1/s against 2/s: never
    margin = retention_margin(3600.0, True, NOW - 5 * HOUR_MS, Settings(), NOW)
    found = judge_partition(series, rules, margin)
    assert found.verdict is Verdict.AT_RISK and found.never_catches_up and found.then == "WARN"
    text = finding_text(found)
    assert "in 60.0 min at the earliest" in text and "never catches up" in text and "WARN" in text
    assert judge_partition(series, rules).verdict is Verdict.WARN  # without a margin: as before
    lost = [LagPoint(NOW, 5, 10, 10_000, 9995)]
    assert judge_partition(lost, rules, margin).verdict is Verdict.LOST  # LOST stays LOST
    assert Verdict.WARN.severity < Verdict.AT_RISK.severity < Verdict.LOST.severity
