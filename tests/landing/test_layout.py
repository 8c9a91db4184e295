"""Landing-zone layout: names, atomic writes, ranges, and the choice of files (no Spark)."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.results import TopicPartition
from airflow_provider_kgroups.landing import (
    LandingGapError,
    file_name,
    list_files,
    parse_file_name,
    parse_range,
    select_range,
    write_file,
)
from tests.support.landing import land

TP0 = TopicPartition("orders", 0)


def names(selection, tp=TP0) -> list[tuple[int, int]]:
    (r,) = [r for r in selection.ranges if r.tp == tp]
    return [(f.start, f.end) for f in r.files]


def test_names_sort_in_offset_order_and_parse_back():
    name = file_name(40, 47)
    assert name == "00000000000000000040-00000000000000000047.jsonl"
    assert parse_file_name(name) == (40, 47, "jsonl")
    assert sorted([file_name(100, 200), file_name(9, 100)]) == [file_name(9, 100), file_name(100, 200)]
    for bad in (
        "40-47.jsonl",
        ".00000000000000000040-00000000000000000047.jsonl.tmp-1",
        "_SUCCESS",
        "00000000000000000047-00000000000000000040.jsonl",
        "00000000000000000040-00000000000000000047.csv",
    ):
        assert parse_file_name(bad) is None
    with pytest.raises(ConfigurationError, match="end > start"):
        file_name(5, 5)
    with pytest.raises(ConfigurationError, match="format"):
        file_name(0, 1, "csv")


def test_a_file_is_written_whole_under_its_final_name_and_rows_are_checked(tmp_path):
    path = land(tmp_path, "orders", 0, 10, 13)
    assert path.endswith("orders/0/00000000000000000010-00000000000000000013.jsonl")
    with open(path) as f:
        lines = [json.loads(line) for line in f]
    assert [r["offset"] for r in lines] == [10, 11, 12] and list(lines[0]) == [
        "topic",
        "partition",
        "offset",
        "timestamp_ms",
        "key",
        "value",
    ]
    assert [p.name for p in (tmp_path / "orders" / "0").iterdir()] == [
        path.rsplit("/", 1)[1]
    ]  # no temporary left
    with pytest.raises(ConfigurationError, match=r"outside the file's range \[10, 13\)"):
        land(tmp_path, "orders", 0, 10, 13, offsets=[13])
    with pytest.raises(ConfigurationError, match="in a file of orders\\[1\\]"):
        write_file(
            str(tmp_path),
            "orders",
            1,
            0,
            1,
            [{"topic": "orders", "partition": 0, "offset": 0, "timestamp_ms": 0, "key": None, "value": None}],
        )


def test_ranges_come_from_the_sensor_xcom_or_spark_json():
    xcom = {
        "startingOffsets": '{"orders": {"0": 40, "1": -2}}',
        "endingOffsets": '{"orders": {"0": 90, "1": 7}}',
    }
    assert parse_range(xcom) == {TP0: (40, 90), TopicPartition("orders", 1): (None, 7)}
    assert parse_range(ending={"orders": {"0": 5}}) == {TP0: (None, 5)}  # no start: from earliest
    assert parse_range(xcom | {"endingOffsets": "{}", "startingOffsets": "{}"}) == {}
    with pytest.raises(ConfigurationError, match="no 'latest'"):
        parse_range(starting='{"orders": {"0": 1}}', ending='{"orders": {"0": -1}}')
    with pytest.raises(ConfigurationError, match="same partitions"):
        parse_range(starting='{"orders": {"0": 1}}', ending='{"orders": {"0": 5, "1": 5}}')
    with pytest.raises(ConfigurationError, match="after endingOffsets"):
        parse_range(starting='{"orders": {"0": 9}}', ending='{"orders": {"0": 5}}')
    with pytest.raises(ConfigurationError, match="ConsumerLagSensor XCom"):
        parse_range({"offsets": {}})


def test_the_fewest_files_that_cover_the_range_even_when_files_straddle_both_ends(tmp_path):
    for start, end in ((0, 10), (10, 25), (25, 31), (31, 50)):
        land(tmp_path, "orders", 0, start, end)
    (tmp_path / "orders" / "0" / ".00000000000000000050-00000000000000000060.jsonl.tmp-x").write_text("{}")
    land(tmp_path, "orders", 0, 0, 50, fmt="parquet")  # another format: not this reader's files
    selection = select_range(str(tmp_path), starting={"orders": {"0": 12}}, ending={"orders": {"0": 31}})
    assert names(selection) == [(10, 25), (25, 31)] and not selection.overlapping
    assert names(
        select_range(str(tmp_path), starting={"orders": {"0": 12}}, ending={"orders": {"0": 32}})
    ) == [(10, 25), (25, 31), (31, 50)]
    earliest = select_range(str(tmp_path), ending={"orders": {"0": 10}})
    assert names(earliest) == [(0, 10)] and earliest.ranges[0].first == 0
    assert select_range(str(tmp_path), starting={"orders": {"0": 31}}, ending={"orders": {"0": 31}}).empty
    assert list_files(str(tmp_path))[TP0][0].name == file_name(0, 10)


def test_a_hole_in_the_landing_zone_fails_naming_the_missing_offsets(tmp_path):
    land(tmp_path, "orders", 0, 0, 10)
    land(tmp_path, "orders", 0, 14, 20)
    with pytest.raises(LandingGapError, match=r"orders\[0\]: offsets \[10, 14\)"):
        select_range(str(tmp_path), ending={"orders": {"0": 20}})
    with pytest.raises(LandingGapError, match=r"offsets \[20, 25\)"):
        select_range(str(tmp_path), starting={"orders": {"0": 15}}, ending={"orders": {"0": 25}})
    with pytest.raises(LandingGapError, match="nothing has landed"):
        select_range(str(tmp_path), ending={"other": {"0": 3}})
    assert select_range(
        str(tmp_path), ending={"other": {"0": 0}}
    ).empty  # an empty partition: nothing to read


def test_positions_tile_the_log_across_offsets_without_records(tmp_path):
    # positions [0, 10) hold records 0..8 (offset 9 is a transaction marker): no hole
    land(tmp_path, "orders", 0, 0, 10, offsets=range(9))
    land(tmp_path, "orders", 0, 10, 12)
    assert names(select_range(str(tmp_path), ending={"orders": {"0": 12}})) == [(0, 10), (10, 12)]


def test_overlapping_files_from_a_redelivery_are_flagged(tmp_path):
    land(tmp_path, "orders", 0, 0, 10)
    land(tmp_path, "orders", 0, 5, 12)  # written again after a crash between the file and its commit
    land(tmp_path, "orders", 0, 12, 20)
    selection = select_range(str(tmp_path), ending={"orders": {"0": 20}})
    assert names(selection) == [(0, 10), (5, 12), (12, 20)] and selection.overlapping
    assert names(
        select_range(str(tmp_path), starting={"orders": {"0": 6}}, ending={"orders": {"0": 20}})
    ) == [(5, 12), (12, 20)]
