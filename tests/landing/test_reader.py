"""Reading exactly an offset range of the landing zone with Spark (local[2], one session)."""

from __future__ import annotations

import json
import random

import pytest

from airflow_provider_kgroups.landing import read_offset_range, read_selection, select_range
from tests.support.landing import land

pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kgroups-landing-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    yield session
    session.stop()


def offsets(df) -> list[tuple[str, int, int]]:
    return sorted((r["topic"], r["partition"], r["offset"]) for r in df.collect())


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_exactly_the_range_from_files_that_straddle_both_ends(spark, tmp_path, fmt):
    rng = random.Random(7)
    expected = []
    ranges = {0: (13, 71), 1: (0, 40), 2: (55, 55)}  # [start, end) per partition; partition 2: nothing
    for partition in range(3):
        cursor = 0
        while cursor < 90:  # files of 1-17 records tiling [0, 90)
            end = min(90, cursor + rng.randint(1, 17))
            land(tmp_path, "orders", partition, cursor, end, fmt=fmt)
            cursor = end
        start, end = ranges[partition]
        expected += [("orders", partition, o) for o in range(start, end)]
    xcom = {
        "startingOffsets": json.dumps({"orders": {str(p): s for p, (s, _) in ranges.items()}}),
        "endingOffsets": json.dumps({"orders": {str(p): e for p, (_, e) in ranges.items()}}),
    }
    selection = select_range(str(tmp_path), xcom, fmt=fmt)
    p0, p1 = selection.ranges[0].files, selection.ranges[1].files
    assert (p0[0].start, p0[0].end, p0[-1].start, p0[-1].end) == (11, 16, 69, 76)  # straddles 13 and 71
    assert p1[-1].start < 40 < p1[-1].end and not selection.ranges[2].files
    df = read_selection(spark, selection)
    assert offsets(df) == expected  # only the rows inside the range are read
    assert df.columns == ["topic", "partition", "offset", "timestamp_ms", "key", "value"]
    assert json.loads(df.where("offset = 20 AND partition = 0").first()["value"]) == {"qty": 20}


def test_overlapping_files_give_each_offset_once(spark, tmp_path):
    land(tmp_path, "orders", 0, 0, 10)
    land(tmp_path, "orders", 0, 6, 15)  # re-delivered after a crash before the commit
    df = read_offset_range(spark, str(tmp_path), ending={"orders": {"0": 15}})
    assert offsets(df) == [("orders", 0, o) for o in range(15)]


def test_many_partitions_and_an_empty_range(spark, tmp_path):
    for partition in range(40):
        land(tmp_path, "wide", partition, 0, 3)
    df = read_offset_range(
        spark,
        str(tmp_path),
        starting={"wide": {str(p): 1 for p in range(40)}},
        ending={"wide": {str(p): 2 for p in range(40)}},
    )
    assert offsets(df) == [("wide", p, 1) for p in range(40)]
    empty = read_offset_range(spark, str(tmp_path), starting={"wide": {"0": 2}}, ending={"wide": {"0": 2}})
    assert empty.count() == 0 and empty.columns == df.columns


def test_a_corrupt_row_fails_the_read_instead_of_vanishing(spark, tmp_path):
    path = land(tmp_path, "orders", 0, 0, 3)
    with open(path, "a") as f:
        f.write("{not json\n")
    df = read_offset_range(spark, str(tmp_path), ending={"orders": {"0": 3}})
    with pytest.raises(Exception, match="(?i)malformed|FAILFAST|parse"):
        df.collect()
