"""The retention margin the lag-history job reads from log-end samples alone."""

from __future__ import annotations

from types import SimpleNamespace

from airflow_provider_kgroups.lag.retention import MarginBasis
from airflow_provider_kgroups.lag.retention_history import (
    NOT_BY_TIME,
    deletion_retention_ms,
    history_margin,
)

#: (time ms, log end): 100 records appended between 10 s and 20 s, 100 more by 30 s.
SAMPLES = [(10_000, 0), (20_000, 100), (30_000, 200)]


def test_the_record_is_placed_between_two_samples_and_bounded_from_the_earlier() -> None:
    # offset 150 was appended in (20 s, 30 s]: with retention.ms=60 s it lives until at least 80 s
    margin = history_margin(SAMPLES, 150, 60_000, now_ms=35_000, lagging=True)
    assert margin.basis is MarginBasis.HISTORY
    assert margin.seconds == 45.0
    assert margin.retention_ms == 60_000
    # the record at offset 100 is the first one appended after the 20 s sample, not the 10 s one
    assert history_margin(SAMPLES, 100, 60_000, now_ms=35_000, lagging=True).seconds == 45.0
    assert history_margin(SAMPLES, 99, 60_000, now_ms=35_000, lagging=True).seconds == 35.0


def test_a_margin_past_due_is_negative_not_clamped() -> None:
    margin = history_margin(SAMPLES, 50, 5_000, now_ms=35_000, lagging=True)
    assert margin.seconds == -20.0  # retention may already have taken it: the caller sees how late


def test_what_the_history_cannot_place_is_unknown() -> None:
    older = history_margin([(10_000, 100), (20_000, 200)], 50, 60_000, now_ms=25_000, lagging=True)
    assert older.seconds is None and older.basis is MarginBasis.UNKNOWN
    no_commit = history_margin(SAMPLES, None, 60_000, now_ms=35_000, lagging=True)
    assert no_commit.seconds is None and no_commit.basis is MarginBasis.UNKNOWN
    not_given = history_margin(SAMPLES, 150, None, now_ms=35_000, lagging=True)
    assert not_given.basis is MarginBasis.UNKNOWN and "not given" in not_given.reason


def test_no_time_limit_and_nothing_unread() -> None:
    assert history_margin(SAMPLES, 150, NOT_BY_TIME, 35_000, lagging=True).basis is MarginBasis.NO_TIME_LIMIT
    assert history_margin(SAMPLES, 200, 60_000, 35_000, lagging=False).basis is MarginBasis.NOTHING_UNREAD


def test_deletion_retention_ms_reads_the_topic_settings() -> None:
    def topic(ms: int | None, *policy: str, size_limit: int | None = None) -> SimpleNamespace:
        return SimpleNamespace(retention_ms=ms, cleanup_policy=policy, retention_bytes=size_limit)

    assert deletion_retention_ms(topic(604_800_000, "delete")) == 604_800_000
    assert deletion_retention_ms(topic(604_800_000, "compact", "delete")) == 604_800_000
    assert deletion_retention_ms(topic(604_800_000, "compact")) == NOT_BY_TIME
    assert deletion_retention_ms(topic(None, "delete")) == NOT_BY_TIME
    # a size limit deletes by an amount no offset tells: no time to give, the topic is left out
    assert deletion_retention_ms(topic(604_800_000, "delete", size_limit=1 << 30)) is None
    assert deletion_retention_ms(topic(None, "delete", size_limit=1 << 30)) is None
    assert deletion_retention_ms(topic(None, "compact", size_limit=1 << 30)) == NOT_BY_TIME
