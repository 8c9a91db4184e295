"""A bound is not a value (issue 18): a lower bound (``at_least``), an estimate's interval, a
partition not measured or an unknown can prove that a group is *over* a threshold, never that it
is under. The threshold gate waits on each (naming why) and never opens; the story that showed it
(an lz4 topic the client could not decode, a group 3.6 h behind, ``max_lag_seconds=60``) is
replayed on the fake cluster through ``check_gate``. Each case here opened the gate before."""

from __future__ import annotations

import asyncio
import json

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, ClientConfig
from airflow_provider_kgroups.client.errors import CLIENT_UNDECODABLE, Failure, UndecodableFailure
from airflow_provider_kgroups.lag.gate import GateSpec, GateState, LagGate, check_gate
from airflow_provider_kgroups.lag.model import UnknownLagPolicy
from airflow_provider_kgroups.lag.seconds import GroupLagSeconds, LagSecondsBasis, PartitionLagSeconds
from tests.support.builders import HOUR, T0, group, partition, snapshot
from tests.support.fakekafka import FakeCluster
from tests.support.undecodable import undecodable_batches

MAX_S = 60.0


def threshold_gate(**spec) -> LagGate:
    spec = {"max_lag_seconds": MAX_S, **spec}
    return LagGate(
        GateSpec.parse(group_ids=("g",), lag_mode="threshold", **spec), GateState(started_ms=T0), T0 + HOUR
    )


def lagging(*parts) -> dict:
    """One snapshot of group g with ``parts`` (topic t, partitions 0.. with lag 10 each)."""
    return snapshot(T0, group("g", *parts))


def seconds(*parts: PartitionLagSeconds, unmeasured: int = 0) -> dict[str, GroupLagSeconds]:
    return {"g": GroupLagSeconds("g", tuple(parts), unmeasured)}


def measured(
    p: int,
    value: float | None,
    basis: LagSecondsBasis,
    *,
    at_least: bool = False,
    bounds: tuple[float, float] | None = None,
) -> PartitionLagSeconds:
    return PartitionLagSeconds("g", "t", p, 0, 10, value, basis, "test", at_least=at_least, bounds=bounds)


def test_an_exact_age_under_the_threshold_opens_the_gate():
    decision = threshold_gate().evaluate(
        lagging(partition("t", 0, 0, 10)), seconds(measured(0, 30.0, LagSecondsBasis.RECORD))
    )
    assert decision.status == "done" and decision.result["lag"]["g"]["max_lag_seconds"] == 30.0


@pytest.mark.parametrize(
    "basis, value",
    [
        (LagSecondsBasis.HISTORY_BOUND, 0.0),
        (LagSecondsBasis.HISTORY_BOUND, 30.0),
        (LagSecondsBasis.NEXT_RECORD, 59.0),
        (LagSecondsBasis.NEXT_RECORD, 60.0),
    ],
)
def test_a_lower_bound_at_or_under_the_threshold_is_unknown_and_waits(basis, value):
    decision = threshold_gate().evaluate(
        lagging(partition("t", 0, 0, 10)), seconds(measured(0, value, basis, at_least=True))
    )
    assert decision.status == "wait", decision
    assert f"at least {value:.0f} s" in decision.message and "cannot tell" in decision.message


def test_a_lower_bound_over_the_threshold_proves_the_group_is_over():
    decision = threshold_gate().evaluate(
        lagging(partition("t", 0, 0, 10)),
        seconds(measured(0, 600.0, LagSecondsBasis.NEXT_RECORD, at_least=True)),
    )
    assert decision.status == "wait" and "at least 600 s over 60 s" in decision.message


def test_a_lower_bound_on_another_partition_leaves_the_groups_maximum_unknown():
    """The worst partition's exact 30 s is not the group's maximum when another partition is only
    known to be at least 10 s old: that one may be hours old."""
    decision = threshold_gate().evaluate(
        lagging(partition("t", 0, 0, 10), partition("t", 1, 0, 10)),
        seconds(
            measured(0, 30.0, LagSecondsBasis.RECORD),
            measured(1, 10.0, LagSecondsBasis.NEXT_RECORD, at_least=True),
        ),
    )
    assert decision.status == "wait" and "cannot tell" in decision.message


def test_an_estimate_whose_interval_reaches_over_the_threshold_waits():
    decision = threshold_gate().evaluate(
        lagging(partition("t", 0, 0, 10)),
        seconds(measured(0, 30.0, LagSecondsBasis.HISTORY, bounds=(20.0, 90.0))),
    )
    assert decision.status == "wait" and "between 20 and 90 s" in decision.message
    inside = threshold_gate().evaluate(
        lagging(partition("t", 0, 0, 10)),
        seconds(measured(0, 30.0, LagSecondsBasis.HISTORY, bounds=(20.0, 50.0))),
    )
    assert inside.status == "done"  # the whole interval is under the threshold


def test_lagging_partitions_that_were_not_measured_leave_the_age_unknown():
    decision = threshold_gate().evaluate(
        lagging(partition("t", 0, 0, 10), partition("t", 1, 5, 10)),
        seconds(measured(0, 30.0, LagSecondsBasis.RECORD), unmeasured=1),
    )
    assert decision.status == "wait" and "1 lagging partition(s) not measured" in decision.message


def test_an_unknown_age_waits_with_its_reason():
    unknown = PartitionLagSeconds(
        "g",
        "t",
        0,
        0,
        10,
        None,
        LagSecondsBasis.UNKNOWN,
        "reading the record at offset 0 failed (cannot decode records)",
    )
    decision = threshold_gate().evaluate(lagging(partition("t", 0, 0, 10)), seconds(unknown))
    assert decision.status == "wait" and "cannot decode records" in decision.message


def test_a_group_with_no_partition_to_judge_never_passes_vacuously():
    """No commit and no assignment (topics=None): nothing is known of its lag, so no threshold
    holds; as with topics=[], a gate that checks nothing must not pass."""
    gate = LagGate(
        GateSpec.parse(group_ids=("g",), lag_mode="threshold", max_total_lag=0),
        GateState(started_ms=T0),
        T0 + HOUR,
    )
    decision = gate.evaluate(snapshot(T0, group("g", members=2)))
    assert decision.status == "wait" and "no partition" in decision.message


def test_a_total_known_only_in_part_is_a_lower_bound_that_can_prove_over():
    gate = LagGate(
        GateSpec.parse(group_ids=("g",), lag_mode="threshold", max_total_lag=5),
        GateState(started_ms=T0),
        T0 + HOUR,
    )
    decision = gate.evaluate(lagging(partition("t", 0, 0, 10), partition("t", 1, None, 10)))
    assert decision.status == "wait"
    assert "total lag at least 10 over 5" in decision.message and "unknown lag" in decision.message


# -- on the fake cluster, through check_gate -------------------------------------------------------


async def run_check(setup, spec: GateSpec, checks: int = 1):
    async with asyncio.timeout(30):
        async with FakeCluster(brokers=1) as cluster:
            setup(cluster)
            config = ClientConfig.create(cluster.bootstrap, call_timeout_s=10.0, retry_backoff_s=0.01)
            gate = LagGate(spec, GateState(started_ms=T0), T0 + 100 * HOUR)
            async with AsyncGroupsClient(config) as client:
                decisions = [await check_gate(client, gate) for _ in range(checks)]
            return decisions


async def test_an_undecodable_topic_keeps_a_seconds_gate_closed_for_a_group_hours_behind(monkeypatch):
    """The user story: records 3.6 h old the client cannot decode; before, the age read "at least
    0 s" (from the snapshot itself) and the gate said "every group is within the thresholds"."""
    import time

    undecodable_batches(monkeypatch)
    old = int(time.time() * 1000) - int(3.6 * HOUR)

    def setup(cluster):
        cluster.add_topic("t", 1)
        cluster.append("t", 0, 50, timestamp_ms=old)
        cluster.add_group("g", offsets={("t", 0): 10})

    (decision,) = await run_check(
        setup, GateSpec.parse(group_ids=("g",), topics=("t",), lag_mode="threshold", max_lag_seconds=MAX_S)
    )
    assert decision.status == "wait", decision
    assert "lag in seconds unknown" in decision.message and "cannot decode records" in decision.message
    (told,) = decision.warnings  # from the client's value: the codec and library as the fake's batch has them
    assert told.startswith(
        "group g, t[0]: cannot decode records from offset 10: lz4 record batch could not be "
        "decoded with cramjam: "
    )


def undecodable(codec: str, library: str) -> PartitionLagSeconds:
    failure = UndecodableFailure(
        CLIENT_UNDECODABLE,
        f"t[0]: cannot decode records from offset 0: {codec} record "
        f"batch could not be decoded with {library}: boom",
        codec,
        library,
        0,
    )
    return PartitionLagSeconds(
        "g", "t", 0, 0, 10, None, LagSecondsBasis.UNKNOWN, f"reading failed ({failure})", failure=failure
    )


def test_an_undecodable_batch_is_told_once_per_gate_with_what_to_do_across_checks_and_the_hand_over():
    """Waiting is the decision (the committed offset moving past the batch, or the group reaching
    the log end, opens the gate without any record read), but the user is told once, not at every
    check, which partition, codec and library keep it closed and what to do."""
    gate = threshold_gate()
    check = lambda g: g.evaluate(lagging(partition("t", 0, 0, 10)), seconds(undecodable("lz4", "cramjam")))
    first = check(gate)
    assert first.status == "wait" and len(first.warnings) == 1, first
    assert first.warnings[0].startswith(
        "group g, t[0]: cannot decode records from offset 0: lz4 record batch "
        "could not be decoded with cramjam: boom: the age of its record at offset 0 "
        "is unknown"
    )
    assert "pip install --upgrade cramjam" in first.warnings[0] and "max_lag_seconds=60" in first.warnings[0]
    assert check(gate).warnings == ()  # the next check does not repeat it
    state = json.loads(json.dumps(gate.state.to_dict()))  # what ConsumerLagTrigger.for_gate hands over
    handed = LagGate(gate.spec, GateState.from_dict(state), gate.deadline_ms)  # the trigger's gate
    assert check(handed).status == "wait" and check(handed).warnings == ()


def test_a_batch_no_library_reads_is_told_without_an_upgrade_to_try():
    decision = threshold_gate().evaluate(
        lagging(partition("t", 0, 0, 10)), seconds(undecodable("none", "none"))
    )
    assert len(decision.warnings) == 1 and "no library upgrade reads it" in decision.warnings[0]
    assert "pip install" not in decision.warnings[0]


def test_an_age_unknown_for_another_reason_warns_nothing():
    timed_out = PartitionLagSeconds(
        "g",
        "t",
        0,
        0,
        10,
        None,
        LagSecondsBasis.UNKNOWN,
        "reading failed",
        failure=Failure(-100, "timed out"),
    )
    decision = threshold_gate().evaluate(lagging(partition("t", 0, 0, 10)), seconds(timed_out))
    assert decision.status == "wait" and decision.warnings == ()


async def test_every_lagging_partition_is_measured_not_only_the_worst_by_offsets():
    """Partition 0 lags by 1,000 young records, partition 1 by 2 records two hours old: the
    worst by offsets is not the oldest, so measuring only it opened the gate."""
    import time

    now = int(time.time() * 1000)

    def setup(cluster):
        cluster.add_topic("t", 2)
        cluster.append("t", 0, 1_000, timestamp_ms=now - 1_000)
        cluster.append("t", 1, 2, timestamp_ms=now - 2 * HOUR)
        cluster.add_group("g", offsets={("t", 0): 0, ("t", 1): 0})

    (decision,) = await run_check(
        setup,
        GateSpec.parse(
            group_ids=("g",),
            topics=("t",),
            lag_mode="threshold",
            max_lag_seconds=MAX_S,
            unknown_lag=UnknownLagPolicy.FAIL.value,
        ),
    )
    assert decision.status == "wait", decision
    assert "over 60 s" in decision.message
