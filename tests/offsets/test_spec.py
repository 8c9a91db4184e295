"""What a reset asks for, checked before any network call: Kafka's options and their values
(``ConsumerGroupCommandOptions``, ``Utils.getDateTime``, ``java.time.Duration.parse``) and the
reset-plan CSV (``CsvUtils``)."""

from __future__ import annotations

from datetime import UTC, datetime, timezone

import pytest

from airflow_provider_kgroups.client import ConfigurationError, TopicPartition
from airflow_provider_kgroups.offsets.csvfile import export_csv, parse_reset_csv
from airflow_provider_kgroups.offsets.spec import (
    Strategy,
    parse_iso_duration,
    parse_reset_datetime,
    parse_topic_scope,
    reset_spec,
)

MS_2024 = int(datetime(2024, 5, 1, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    "text, ms, assumed",
    [
        ("2024-05-01T00:00:00.000", MS_2024, True),  # Kafka's documented form: no zone is UTC
        ("2024-05-01T00:00:00", MS_2024, True),
        ("2024-05-01T00:00:00Z", MS_2024, False),
        ("2024-05-01T02:00:00.000+02:00", MS_2024, False),
        ("2024-05-01T02:00:00.000+0200", MS_2024, False),
        ("2024-05-01T02:00:00.000+02", MS_2024, False),  # pattern X: hours only
        ("2024-04-30T20:00:00-04:00", MS_2024, False),
        ("2024-05-01", MS_2024, True),
    ],
)
def test_datetimes_as_kafka_reads_them(text, ms, assumed):
    assert parse_reset_datetime("--to-datetime", text) == (ms, assumed)


def test_an_aware_datetime_object_is_taken_as_is():
    assert parse_reset_datetime("to_datetime", datetime(2024, 5, 1, tzinfo=UTC)) == (MS_2024, False)


@pytest.mark.parametrize("bad", ["yesterday", "2024-13-01T00:00:00", "", "1969-12-31T23:59:59Z", 5])
def test_an_unparsable_datetime_names_the_option_and_an_example(bad):
    with pytest.raises(ConfigurationError, match="to-datetime"):
        parse_reset_datetime("--to-datetime", bad)


@pytest.mark.parametrize(
    "text, ms",
    [
        ("P1D", 86_400_000),
        ("PT6H", 21_600_000),
        ("PT1H30M", 5_400_000),
        ("pt15m", 900_000),
        ("PT1.5S", 1_500),
        ("P1DT1S", 86_401_000),
        ("PT0S", 0),
    ],
)
def test_durations_as_java_time_duration_parses_them(text, ms):
    assert parse_iso_duration("--by-duration", text) == ms


@pytest.mark.parametrize("bad", ["P1M", "P1Y", "P1W", "PT", "P", "1 hour", "6h", "", "-PT1H", "P-1D"])
def test_a_duration_that_is_not_iso_8601_or_points_to_the_future_is_refused(bad):
    with pytest.raises(ConfigurationError, match="by-duration"):
        parse_iso_duration("--by-duration", bad)


def test_topic_scopes_as_kafka_writes_them():
    assert parse_topic_scope("--topic", ["orders", "pay:2,0", "pay:1", "orders:3"]) == {
        "orders": None,
        "pay": (0, 1, 2),
    }


@pytest.mark.parametrize("bad", ["orders:", ":1", "orders:a", "orders:-1", "orders:1,,2", ""])
def test_a_bad_topic_scope_names_the_value(bad):
    with pytest.raises(ConfigurationError, match="--topic"):
        parse_topic_scope("--topic", [bad])


@pytest.mark.parametrize(
    "strategy, value, topics, all_topics, fragment",
    [
        ("to_earliest", None, [], False, "needs a scope"),
        ("to_offset", "-1", ["orders"], False, "negative"),
        ("to_offset", "ten", ["orders"], False, "whole number"),
        ("shift_by", "1.5", ["orders"], False, "whole number"),
        ("to_offset", None, ["orders"], False, "needs a value"),
        ("to_earliest", None, ["orders"], True, "exclude each other"),
        ("sideways", None, ["orders"], False, "not a reset strategy"),
    ],
)
def test_bad_specs_are_refused_with_the_option_named(strategy, value, topics, all_topics, fragment):
    with pytest.raises(ConfigurationError, match=fragment):
        reset_spec(strategy, value, topics=topics, all_topics=all_topics)


def test_a_spec_says_what_it_does_and_that_a_zone_was_assumed():
    spec = reset_spec("to_datetime", "2024-05-01T00:00:00.000", topics=["orders"])
    assert spec.strategy is Strategy.TO_DATETIME and spec.timestamp_ms == MS_2024 and spec.zone_assumed
    assert "read as UTC" in spec.describe() and "2024-05-01T00:00:00.000Z" in spec.describe()
    duration = reset_spec("by_duration", "PT1H", all_topics=True)
    assert duration.at_ms(MS_2024) == MS_2024 - 3_600_000


def test_csv_one_group_three_columns_many_groups_four():
    one = parse_reset_csv("orders,0,10\norders,1,20\n", ["g"])
    assert one == {"g": {TopicPartition("orders", 0): 10, TopicPartition("orders", 1): 20}}
    assert export_csv(one, single_group=True) == "orders,0,10\norders,1,20\n"
    many = parse_reset_csv("g,orders,0,10\nh,orders,0,5\n", ["g", "h"])
    assert export_csv(many, single_group=False) == "g,orders,0,10\nh,orders,0,5\n"
    assert parse_reset_csv(export_csv(many, single_group=False), ["g", "h"]) == many  # --export round-trips
    quoted = {"g,1": {TopicPartition("a,b", 0): 1}}  # Jackson quotes what needs it; so does csv
    assert parse_reset_csv(export_csv(quoted, single_group=False), ["g,1"]) == quoted


@pytest.mark.parametrize(
    "text, groups, fragment",
    [
        ("", ["g"], "has no offsets"),
        ("orders,x,10\n", ["g"], "partition 'x' is not a whole number"),
        ("orders,0,ten\n", ["g"], "offset 'ten' is not a whole number"),
        ("orders,0,-5\n", ["g"], "must be >= 0"),
        ("other,orders,0,5\n", ["g", "h"], "names group 'other', which this call does not"),
        ("orders,0,5\n", ["g", "h"], "expected 4"),
        ("g,orders,0,5\ng,orders,0,6\n", ["g", "h"], "earlier line 5"),
    ],
)
def test_bad_csv_lines_are_named(text, groups, fragment):
    with pytest.raises(ConfigurationError, match=fragment):
        parse_reset_csv(text, groups)
