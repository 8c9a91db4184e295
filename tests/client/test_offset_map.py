"""``OffsetMap``: the one value for ``{topic: {"partition": offset}}``. It reads JSON text, the
nesting and the flat ``{TopicPartition: offset}``, writes the nesting in order, and takes the
values its kind allows (the sentinels are a property of the use, not of a parser); every error
names the map, the topic, the partition and the rule."""

from __future__ import annotations

import json
import pickle

import pytest

from airflow_provider_kgroups.arguments import parse_offsets_map
from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.client.offset_map import (
    EARLIEST,
    LATEST,
    OffsetKind,
    OffsetMap,
    SparkOffsetsError,
)
from airflow_provider_kgroups.client.results import TopicPartition as TP
from airflow_provider_kgroups.lag.barrier import BarrierCheckpoint, BarrierTarget, TargetKind
from airflow_provider_kgroups.lag.offset_range import OffsetRange, nest_offsets, unnest_offsets

FLAT = {TP("orders", 10): 3, TP("billing", 2): 0, TP("orders", 0): 40, TP("orders", 1): 7}
NESTED = {"billing": {"2": 0}, "orders": {"0": 40, "1": 7, "10": 3}}
TEXT = '{"billing": {"2": 0}, "orders": {"0": 40, "1": 7, "10": 3}}'


# -- round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [FLAT, NESTED, TEXT, {"orders": {0: 40, 1: 7, 10: 3}, "billing": {2: 0}}],
    ids=["flat", "nested", "json", "int-partitions"],
)
def test_every_form_reads_to_the_same_map_and_writes_the_same_nesting(given):
    found = OffsetMap.parse(given, OffsetKind.COMMITTED, name="offsets")
    assert found == FLAT and dict(found) == FLAT
    assert found.nested() == NESTED and list(found.nested()) == ["billing", "orders"]
    assert list(found.nested()["orders"]) == ["0", "1", "10"]  # partitions numerically, as Spark writes them
    assert found.to_json() == TEXT
    assert found.partitions == sorted(FLAT)


def test_round_trips_through_json_pickle_and_another_kind():
    found = OffsetMap(FLAT)
    assert OffsetMap.parse(found.to_json(), OffsetKind.COMMITTED, name="m") == found
    assert OffsetMap.parse(json.loads(json.dumps(found.nested())), OffsetKind.COMMITTED, name="m") == found
    assert pickle.loads(pickle.dumps(found)) == found  # Spark ships values to executors
    assert OffsetMap.parse(found, OffsetKind.COMMITTED, name="m") is found  # already read for this kind
    again = OffsetMap.parse(found, OffsetKind.STARTING, name="m")  # checked again for the other use
    assert again == found and again.kind is OffsetKind.STARTING
    with pytest.raises(AttributeError):
        found.kind = OffsetKind.ENDING  # type: ignore[misc]  # frozen: must raise


def test_a_map_is_checked_again_only_for_a_use_that_takes_less():
    assert [k.within(OffsetKind.STREAMING) for k in OffsetKind] == [True, False, True, True, True]
    assert [OffsetKind.COMMITTED.within(k) for k in OffsetKind] == [True] * 5
    ending = OffsetMap.parse(OffsetMap(FLAT), OffsetKind.ENDING, name="e")
    assert ending.kind is OffsetKind.ENDING and ending == FLAT
    latest = OffsetMap({TP("t", 0): LATEST}, OffsetKind.STREAMING)
    with pytest.raises(
        SparkOffsetsError, match=r"^s: t\[0\] is -1 \(latest\), which Spark's Kafka source refuses"
    ):
        OffsetMap.parse(latest, OffsetKind.STARTING, name="s")
    with pytest.raises(ConfigurationError, match=r"^c: t\[0\] is None"):
        OffsetMap.parse(OffsetMap({TP("t", 0): None}, OffsetKind.CHECKPOINT), OffsetKind.COMMITTED, name="c")


def test_the_earlier_names_and_the_range_go_through_it():
    assert nest_offsets(FLAT) == NESTED and unnest_offsets(NESTED) == FLAT
    gate_range = OffsetRange.up_to(FLAT, {"orders": {"0": 12, "10": -2}})
    assert isinstance(gate_range.starting, OffsetMap) and gate_range.starting.kind is OffsetKind.STARTING
    assert isinstance(gate_range.ending, OffsetMap) and gate_range.ending.kind is OffsetKind.ENDING
    assert OffsetRange.from_xcom(gate_range.to_xcom()) == gate_range
    assert json.loads(gate_range.to_xcom()["startingOffsets"]) == {
        "billing": {"2": -2},
        "orders": {"0": 12, "1": -2, "10": -2},
    }


def test_barrier_targets_and_checkpoints_round_trip_through_it():
    target = BarrierTarget({"g": {TP("t", 1): 9, TP("t", 0): 4}}, TargetKind.LOG_END, fixed_at_ms=1)
    assert target.to_dict()["groups"] == {"g": {"t": {"0": 4, "1": 9}}}
    assert BarrierTarget.from_dict(json.loads(json.dumps(target.to_dict()))) == target
    checkpoint = BarrierCheckpoint(2, {"g": {TP("t", 0): None, TP("t", 1): 3}})
    assert checkpoint.to_dict()["committed"] == {"g": {"t": {"0": None, "1": 3}}}
    assert BarrierCheckpoint.from_dict(json.loads(json.dumps(checkpoint.to_dict()))) == checkpoint


# -- which values each use takes -----------------------------------------------------------------

OK, REFUSED = True, False
RULES = {  # kind: what -2, -1, None and -3 do; every kind takes 0 and 2**63 - 1
    OffsetKind.COMMITTED: (REFUSED, REFUSED, REFUSED, REFUSED),
    OffsetKind.CHECKPOINT: (REFUSED, REFUSED, OK, REFUSED),
    OffsetKind.STARTING: (OK, REFUSED, REFUSED, REFUSED),
    OffsetKind.ENDING: (REFUSED, OK, REFUSED, REFUSED),
    OffsetKind.STREAMING: (OK, OK, REFUSED, REFUSED),
}


@pytest.mark.parametrize("kind", list(OffsetKind))
def test_each_kind_takes_exactly_its_sentinels(kind):
    assert set(RULES) == set(OffsetKind)
    for value, allowed in zip((EARLIEST, LATEST, None, -3), RULES[kind]):
        if allowed:
            assert OffsetMap({TP("t", 0): value}, kind)[TP("t", 0)] == value
        else:
            with pytest.raises(ConfigurationError, match=r"^m: t\[0\] is "):
                OffsetMap({TP("t", 0): value}, kind, name="m")
    for value in (0, 2**63 - 1):
        assert OffsetMap({TP("t", 0): value}, kind)[TP("t", 0)] == value
    assert kind.sentinels == {s for s, allowed in zip((EARLIEST, LATEST), RULES[kind]) if allowed}
    assert kind.takes_none is RULES[kind][2]


@pytest.mark.parametrize(
    "kind, value, message",
    [
        (
            OffsetKind.STARTING,
            -1,
            r"m: t\[0\] is -1 \(latest\), which Spark's Kafka source refuses in startingOffsets "
            r"for batch queries; use -2 \(earliest\) or an offset >= 0\.",
        ),
        (
            OffsetKind.ENDING,
            -2,
            r"m: t\[0\] is -2 \(earliest\), which Spark's Kafka source refuses in endingOffsets "
            r"for batch queries; use -1 \(latest\) or an offset >= 0 \(exclusive\)\.",
        ),
        (OffsetKind.COMMITTED, -2, r"m: t\[0\] is -2 \(earliest\); offsets are >= 0\.$"),
        (OffsetKind.COMMITTED, -1, r"m: t\[0\] is -1 \(latest\); offsets are >= 0\.$"),
        (
            OffsetKind.CHECKPOINT,
            -1,
            r"is -1 \(latest\); offsets are >= 0, or null where nothing is committed\.$",
        ),
        (OffsetKind.STREAMING, -3, r"is -3; offsets are >= 0, -2 for earliest or -1 for latest\.$"),
        (OffsetKind.ENDING, 2**63, r"m: t\[0\] is 9223372036854775808, beyond a Kafka offset \(int64\)"),
        (OffsetKind.COMMITTED, None, r"m: t\[0\] is None; an offset is a JSON integer \(>= 0\)"),
        (
            OffsetKind.ENDING,
            True,
            r"m: t\[0\] is True; an offset is a JSON integer \(>= 0, or -1 for latest\)",
        ),
        (
            OffsetKind.STARTING,
            5.0,
            r"m: t\[0\] is 5\.0; an offset is a JSON integer \(>= 0, or -2 for earliest\)",
        ),
        (OffsetKind.STARTING, "5", r"m: t\[0\] is '5'; an offset is a JSON integer"),
    ],
)
def test_a_refused_value_is_named_with_the_rule_of_its_use(kind, value, message):
    with pytest.raises(ConfigurationError, match=message):
        OffsetMap.parse({"t": {"0": value}}, kind, name="m")


def test_spark_options_raise_spark_offsets_errors_and_others_configuration_errors():
    for kind in (OffsetKind.STARTING, OffsetKind.ENDING, OffsetKind.STREAMING):
        with pytest.raises(SparkOffsetsError):
            OffsetMap({TP("t", 0): -9}, kind)
    for kind in (OffsetKind.COMMITTED, OffsetKind.CHECKPOINT):
        with pytest.raises(ConfigurationError) as caught:
            OffsetMap({TP("t", 0): -9}, kind)
        assert not isinstance(caught.value, SparkOffsetsError)


# -- bad input, named ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given, message",
    [
        ('{"t": {"0": 1}', r"^m is not valid JSON \(.*\); expected e\.g\. \{\"orders\""),
        ("[1, 2]", r"^m must be a JSON object of topic -> \{partition: offset\}, got list"),
        (7, r"^m must be a JSON object of topic -> \{partition: offset\}, got int"),
        ("latest", r"^m='latest' is Spark's global form"),
        ({"": {"0": 1}}, r"^m has an empty topic name\."),
        ({"t": [1]}, r"^m: topic 't' must map to an object of partition -> offset, got \[1\]"),
        (
            {"t": {"x": 1}},
            r"^m: topic 't' has partition 'x', which is not a partition number \(a non-negative int",
        ),
        ({"t": {"-1": 1}}, r"partition '-1', which is not a partition number"),
        ({"t": {"01": 1}}, r"partition '01', which is not a partition number"),
        ({"t": {" 1": 1}}, r"partition ' 1', which is not a partition number"),
        ({"t": {str(2**31): 1}}, r"partition '2147483648', which is not a partition number"),
        (
            {"t": {-1: 1}},
            r"^m: topic 't' has partition key -1; a partition is an int written as a JSON string",
        ),
        ({"t": {True: 1}}, r"has partition key True"),
        ({"t": {"0": 1, 0: 2}}, r"^m: t\[0\] is given twice\."),
        ({TP("t", -1): 1}, r"^m: TopicPartition\(topic='t', partition=-1\) is not a partition"),
        ({TP("", 0): 1}, r"is not a partition \(a topic and an int >= 0\)"),
        (
            {5: {"0": 1}},
            r"^m: 5 -> \{'0': 1\} is neither TopicPartition -> offset nor topic -> \{partition: offset\}",
        ),
    ],
)
def test_bad_input_names_what_is_wrong(given, message):
    with pytest.raises(ConfigurationError, match=message):
        OffsetMap.parse(given, OffsetKind.COMMITTED, name="m")


def test_a_spark_option_names_at_least_one_partition():
    assert OffsetMap.parse("{}", OffsetKind.ENDING, name="endingOffsets") == {}  # a map may be empty
    with pytest.raises(SparkOffsetsError, match=r"^endingOffsets names no topic: Spark would read nothing"):
        OffsetMap.parse("{}", OffsetKind.ENDING, name="endingOffsets", nonempty=True)
    with pytest.raises(SparkOffsetsError, match=r"topic 'orders' must map to a non-empty object"):
        OffsetMap.parse({"orders": {}}, OffsetKind.ENDING, name="endingOffsets", nonempty=True)
    with pytest.raises(SparkOffsetsError, match="names no topic"):
        OffsetMap.parse(
            OffsetMap({}, OffsetKind.ENDING), OffsetKind.ENDING, name="endingOffsets", nonempty=True
        )


def test_the_examples_in_messages_hold_only_what_the_kind_takes():
    for kind in OffsetKind:
        OffsetMap.parse(kind.example, kind, name="example", nonempty=True)


# -- the sensor's previous_barrier -----------------------------------------------------------------


def test_previous_barrier_is_a_starting_map_unless_the_caller_says_otherwise():
    assert parse_offsets_map("previous_barrier", "{'t': {0: 5, '1': -2}}") == {"t": {"0": 5, "1": -2}}
    assert parse_offsets_map("previous_barrier", {"endingOffsets": '{"t": {"0": 5}}'}) == {"t": {"0": 5}}
    # -1 (latest) used to pass and then count as earliest: where a range starts it is refused, naming why
    with pytest.raises(
        ConfigurationError,
        match=r"previous_barrier: t\[0\] is -1 \(latest\), which Spark's Kafka "
        r"source refuses in startingOffsets",
    ):
        parse_offsets_map("previous_barrier", {"t": {"0": -1}})
    with pytest.raises(
        ConfigurationError, match=r"ending_offsets: t\[0\] is -2 \(earliest\); offsets are >= 0\."
    ):
        parse_offsets_map("ending_offsets", {"t": {"0": -2}}, OffsetKind.COMMITTED)
