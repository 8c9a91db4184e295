"""ConsumerLagEventTrigger against the fake cluster: each event carries the next consumed range
exactly; watchers sharing a connection share one batched poll; where the last range ended
survives a restart through the asset's state store; an error retrying cannot fix ends it."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from airflow_provider_kgroups.client.errors import AuthenticationError
from airflow_provider_kgroups.triggers.events import (
    STATE_KEY,
    ConsumerLagEventTrigger,
    SharedLagPoll,
    range_from_events,
)
from tests.support.fakekafka import FakeCluster
from tests.support.fakeutil import counts

DEADLINE_S = 20


class MemoryStateStore:
    """The one-asset accessor the triggerer injects (``aget``/``aset``), kept in memory."""

    def __init__(self) -> None:
        self.values: dict = {}

    async def aget(self, key, default=None):
        return self.values.get(key, default)

    async def aset(self, key, value):
        self.values[key] = json.loads(json.dumps(value))  # stored as JSON, as Airflow does


def trigger(conn_id: str, groups, topics, **options) -> ConsumerLagEventTrigger:
    return ConsumerLagEventTrigger(
        kafka_groups_conn_id=conn_id, group_ids=groups, topics=topics, poll_interval=0.05, **options
    )


async def until(predicate, what: str, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise TimeoutError(what)
        await asyncio.sleep(0.02)


async def test_each_event_is_the_next_range_the_groups_consumed(kgroups_conn):
    async with asyncio.timeout(60):
        async with FakeCluster(brokers=2) as c:
            c.add_topic("orders", 2, end_offsets=[10, 6])
            c.add_group("landing", offsets={("orders", 0): 4, ("orders", 1): 6})
            conn = kgroups_conn("kg_events", host=c.bootstrap)
            watcher = trigger(conn, ["landing"], ["orders"])
            watcher.asset_state_store = MemoryStateStore()
            events = watcher.run()
            first = asyncio.ensure_future(events.__anext__())
            await until(lambda: c.count("OffsetFetch") >= 2, "a second poll")  # the first fixed {0: 10, 1: 6}
            c.append("orders", 0, 5)  # the producers go on: the barrier does not move
            c.commit("landing", {("orders", 0): 10})
            event = (await asyncio.wait_for(first, DEADLINE_S)).payload
            assert json.loads(event["startingOffsets"]) == {"orders": {"0": 4, "1": 6}}
            assert json.loads(event["endingOffsets"]) == {"orders": {"0": 10, "1": 6}}
            assert event["group_ids"] == ["landing"] and event["mode"] == "barrier"
            assert watcher.asset_state_store.values[STATE_KEY] == {"orders": {"0": 10, "1": 6}}

            second = asyncio.ensure_future(events.__anext__())
            await asyncio.sleep(0.2)
            c.commit("landing", {("orders", 0): 15})
            event = (await asyncio.wait_for(second, DEADLINE_S)).payload
            assert json.loads(event["startingOffsets"]) == {"orders": {"0": 10, "1": 6}}  # no gap, no overlap
            assert json.loads(event["endingOffsets"]) == {"orders": {"0": 15, "1": 6}}
            await events.aclose()

            restarted = trigger(conn, ["landing"], ["orders"])  # a triggerer restart: kwargs and the store
            restarted.asset_state_store = watcher.asset_state_store
            c.append("orders", 1, 3)
            c.commit("landing", {("orders", 1): 9})
            again = restarted.run()
            event = (await asyncio.wait_for(again.__anext__(), DEADLINE_S)).payload
            await again.aclose()
            assert json.loads(event["startingOffsets"]) == {"orders": {"0": 15, "1": 6}}
            assert json.loads(event["endingOffsets"]) == {"orders": {"0": 15, "1": 9}}


async def test_watchers_on_one_connection_share_one_batched_poll(kgroups_conn):
    """What the triggerer does for a shared_stream_key group (airflow.triggers.shared_stream):
    one open_shared_stream, its raw events fanned out to every watcher's filter_shared_stream."""
    async with asyncio.timeout(60):
        async with FakeCluster(brokers=1) as c:
            c.add_topic("orders", 1, end_offsets=10)
            c.add_topic("payments", 1, end_offsets=8)
            c.add_group("orders-landing", offsets={("orders", 0): 3})
            c.add_group("payments-landing", offsets={("payments", 0): 2})
            conn = kgroups_conn("kg_shared", host=c.bootstrap)
            watchers = [
                trigger(conn, ["orders-landing"], ["orders"]),
                trigger(conn, ["payments-landing"], ["payments"]),
            ]
            assert watchers[0].shared_stream_key() == watchers[1].shared_stream_key()
            queues = [asyncio.Queue() for _ in watchers]

            async def fan_out():
                async for raw in ConsumerLagEventTrigger.open_shared_stream(watchers[0].serialize()[1]):
                    for q in queues:
                        q.put_nowait(raw)

            async def stream(q):
                while True:
                    yield await q.get()

            filters = [w.filter_shared_stream(stream(q)) for w, q in zip(watchers, queues)]
            pending = [asyncio.ensure_future(f.__anext__()) for f in filters]
            poller = asyncio.ensure_future(fan_out())
            await until(lambda: c.count("OffsetFetch") >= 2, "two polls")
            c.reset_counts()
            await until(lambda: c.count("OffsetFetch") >= 3, "three more polls")
            sent = counts(c)
            assert (
                sent["OffsetFetch"] == sent["DescribeGroups"] >= 3
            )  # one of each per poll for both watchers
            assert all(
                len(r.request.groups) == 2 for r in c.requests("OffsetFetch")
            )  # both groups, one request
            c.commit("orders-landing", {("orders", 0): 10})
            c.commit("payments-landing", {("payments", 0): 8})
            events = [(await asyncio.wait_for(p, DEADLINE_S)).payload for p in pending]
            assert [json.loads(e["endingOffsets"]) for e in events] == [
                {"orders": {"0": 10}},
                {"payments": {"0": 8}},
            ]
            assert [json.loads(e["startingOffsets"]) for e in events] == [
                {"orders": {"0": 3}},
                {"payments": {"0": 2}},
            ]
            poller.cancel()
            for f in filters:
                await f.aclose()


async def test_a_wrong_password_ends_the_watcher_instead_of_polling_forever(kgroups_conn):
    async with asyncio.timeout(60):
        async with FakeCluster(brokers=1, sasl={"PLAIN": {"etl": "right"}}) as c:
            c.add_topic("orders", 1, end_offsets=10)
            conn = kgroups_conn(
                "kg_events_wrong",
                host=c.bootstrap,
                login="etl",
                password="wrong-pw-123",
                extra={"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"},
            )
            events = trigger(conn, ["landing"], ["orders"]).run()
            with pytest.raises(AuthenticationError):
                await asyncio.wait_for(events.__anext__(), DEADLINE_S)


def test_bad_arguments_fail_when_the_dag_is_parsed():
    with pytest.raises(ValueError, match="topics is empty"):
        ConsumerLagEventTrigger(kafka_groups_conn_id="c", group_ids=["g"], topics=[])
    with pytest.raises(ValueError, match="kafka_groups_conn_id must name a connection"):
        ConsumerLagEventTrigger(kafka_groups_conn_id="", group_ids=["g"], topics=["t"])
    with pytest.raises(ValueError, match="poll_interval"):
        ConsumerLagEventTrigger(kafka_groups_conn_id="c", group_ids=["g"], topics=["t"], poll_interval=0)
    with pytest.raises(ValueError, match="poll_interval must be a number of seconds > 0, got None"):
        ConsumerLagEventTrigger(kafka_groups_conn_id="c", group_ids=["g"], topics=["t"], poll_interval=None)


def test_a_run_processes_from_the_first_queued_range_to_the_last():
    events = [
        {
            "extra": {
                "from_trigger": True,
                "payload": {"startingOffsets": '{"t": {"0": 0}}', "endingOffsets": '{"t": {"0": 5}}'},
            }
        },
        {
            "extra": {
                "from_trigger": True,
                "payload": {
                    "startingOffsets": '{"t": {"0": 5, "1": 0}}',
                    "endingOffsets": '{"t": {"0": 9, "1": 4}}',
                },
            }
        },
    ]
    assert range_from_events(events) == {
        "startingOffsets": '{"t": {"0": 0, "1": 0}}',
        "endingOffsets": '{"t": {"0": 9, "1": 4}}',
    }
    with pytest.raises(ValueError, match="no triggering asset event carries an offset range"):
        range_from_events([{"extra": {}}])


def test_one_poll_object_owns_a_shared_streams_subscriptions():
    """Each subscription is its own token (not an object's address, which Python reuses), the
    poll of a key is found by both ends, and it is gone once nothing holds it."""
    import gc

    key = ConsumerLagEventTrigger(kafka_groups_conn_id="c", group_ids=["a"], topics=["t"]).shared_stream_key()
    poll = SharedLagPoll.of(key)
    assert SharedLagPoll.of(key) is poll
    with poll.subscription(("a",), ("t",)):
        with poll.subscription(("b",), ("t", "u")):
            assert poll.wanted() == (("a", "b"), ("t", "u"))
        with poll.subscription(("a",), ("t",)):  # a second watcher of the same group comes and goes
            pass
        assert poll.wanted() == (("a",), ("t",))  # the first is still read
    assert poll.wanted() == ((), ())
    del poll
    gc.collect()
    assert SharedLagPoll._polls.get(key) is None


# -- every gate argument the sensor has (the one GateSpec) -------------------------------------------


def test_the_event_trigger_takes_every_gate_argument_into_a_typed_spec_and_its_kwargs_round_trip():
    """Each argument of the gate's table, as a user writes it, is read once into the typed spec;
    the kwargs are plain JSON that re-create the same trigger (the enums, the verdict set and the
    offset map as their values)."""
    from datetime import timedelta

    from airflow_provider_kgroups.client.results import TopicPartition
    from airflow_provider_kgroups.lag.gate_spec import LagMode, ThresholdParams, all_params
    from airflow_provider_kgroups.lag.model import UnknownLagPolicy
    from airflow_provider_kgroups.lag.verdicts import Verdict

    arguments = {
        "lag_mode": "threshold",
        "max_lag_per_partition": "5",
        "max_total_lag": 10,
        "max_lag_seconds": 60,
        "previous_barrier": '{"orders": {"0": 3}}',
        "unknown_lag": "IGNORE",
        "read_committed": True,
        "fail_on_verdicts": ["lost", "AT_RISK"],
        "verdict_checks": 3,
        "stuck_after": timedelta(minutes=5),
        "retention_margin_floor": "120",
    }
    assert set(arguments) | {"topics", "barrier_timestamp"} == {p.name for p in all_params()}
    watcher = trigger("c", ["landing"], ["orders"], **arguments)
    spec = watcher.spec
    assert spec.lag_mode is LagMode.THRESHOLD and spec.mode == ThresholdParams(5, 10, 60)
    assert spec.previous_barrier == {TopicPartition("orders", 0): 3} and spec.topics == ("orders",)
    assert spec.unknown_lag is UnknownLagPolicy.IGNORE and spec.read_committed is True
    assert spec.fail_on_verdicts == frozenset({Verdict.LOST, Verdict.AT_RISK})
    assert (spec.verdict_checks, spec.stuck_after_s, spec.margin_floor_s) == (3, 300.0, 120.0)

    path, kwargs = watcher.serialize()
    plain = json.loads(json.dumps(kwargs))
    assert plain == kwargs  # nothing but JSON
    assert kwargs["lag_mode"] == "threshold" and kwargs["unknown_lag"] == "ignore"
    assert kwargs["fail_on_verdicts"] == ["AT_RISK", "LOST"] and kwargs["previous_barrier"] == {
        "orders": {"0": 3}
    }
    again = ConsumerLagEventTrigger(**plain)
    assert again.spec == spec and again.serialize() == (path, kwargs)
    assert ConsumerLagEventTrigger.for_spec(spec, kafka_groups_conn_id="c", poll_interval=0.05).spec == spec


def test_the_event_trigger_takes_barrier_mode_arguments_and_its_old_keyword_still_means_threshold():
    from airflow_provider_kgroups.lag.gate_spec import BarrierParams, LagMode, ThresholdParams

    at = trigger("c", ["g"], ["t"], barrier_timestamp="2024-05-01T00:00:00+00:00")
    assert at.spec.mode == BarrierParams(1714521600000)
    assert ConsumerLagEventTrigger(**json.loads(json.dumps(at.serialize()[1]))).spec == at.spec
    old = trigger("c", ["g"], ["t"], max_total_lag=4)  # before it took lag_mode: max_total_lag was threshold
    assert old.spec.lag_mode is LagMode.THRESHOLD and old.spec.mode == ThresholdParams(max_total_lag=4)
    assert trigger("c", ["g"], ["t"]).spec.lag_mode is LagMode.BARRIER


def test_a_bad_gate_argument_of_the_event_trigger_is_refused_when_the_dag_is_parsed():
    for arguments, named in (
        ({"unknown_lag": "zero"}, "unknown lag policy 'zero'"),
        ({"max_lag_seconds": 60}, "apply to lag_mode='threshold', not 'barrier'"),
        (
            {"lag_mode": "threshold", "barrier_timestamp": 5},
            "barrier_timestamp applies to lag_mode='barrier'",
        ),
        ({"lag_mode": "threshold"}, "needs at least one of max_lag_per_partition"),
        ({"fail_on_verdicts": ["STOPPED"]}, "fail_on_verdicts has 'STOPPED'"),
        ({"barrier_timestamp": "2024-05-01T00:00"}, "has no time zone"),
        ({"max_lag": 5}, "'max_lag' is not an argument of a lag gate"),
        ({"group_patterns": ["orders-*"]}, "watches groups by id"),
    ):
        with pytest.raises(ValueError, match=named):
            trigger("c", ["g"], ["t"], **arguments)


async def test_a_threshold_watcher_on_the_age_of_unread_records_reads_it_beside_the_shared_poll(kgroups_conn):
    """max_lag_seconds needs the records' ages, which a poll does not read: the watcher reads them
    with the poll's connection (the gate's own reads), and finishes a range once the group's
    oldest unread record is young enough."""
    async with asyncio.timeout(60):
        async with FakeCluster(brokers=1) as c:
            now = int(time.time() * 1000)
            c.add_topic("orders", 1)
            c.append("orders", 0, 10, timestamp_ms=now - 3_600_000)  # an hour old
            c.append("orders", 0, 5, timestamp_ms=now)
            c.add_group("landing", offsets={("orders", 0): 2})
            conn = kgroups_conn("kg_events_seconds", host=c.bootstrap)
            watcher = trigger(conn, ["landing"], ["orders"], lag_mode="threshold", max_lag_seconds=600)
            queue: asyncio.Queue = asyncio.Queue()

            async def fan_out():
                async for raw in ConsumerLagEventTrigger.open_shared_stream(watcher.serialize()[1]):
                    queue.put_nowait(raw)

            async def stream():
                while True:
                    yield await queue.get()

            events = watcher.filter_shared_stream(stream())
            pending = asyncio.ensure_future(events.__anext__())
            poller = asyncio.ensure_future(fan_out())
            await until(lambda: c.count("OffsetFetch") >= 3, "three polls")
            assert not pending.done()  # the oldest unread record is an hour old
            c.commit("landing", {("orders", 0): 11})  # what is left is young
            event = (await asyncio.wait_for(pending, DEADLINE_S)).payload
            assert event["mode"] == "threshold"
            assert json.loads(event["startingOffsets"]) == {"orders": {"0": 2}}
            assert json.loads(event["endingOffsets"]) == {"orders": {"0": 11}}
            assert event["total_lag"] == 4
            poller.cancel()
            await events.aclose()


async def test_a_watcher_with_barrier_timestamp_ends_its_first_range_at_that_time_then_at_the_log_end(
    kgroups_conn,
):
    async with asyncio.timeout(60):
        async with FakeCluster(brokers=1) as c:
            c.add_topic("orders", 1)
            c.append("orders", 0, 6, timestamp_ms=lambda offset: 1_000 + offset)  # offsets 0..5 at 1000..1005
            c.add_group("landing", offsets={("orders", 0): 1})
            conn = kgroups_conn("kg_events_at", host=c.bootstrap)
            watcher = trigger(conn, ["landing"], ["orders"], barrier_timestamp=1_004)
            events = watcher.run()
            first = asyncio.ensure_future(events.__anext__())
            await until(lambda: c.count("OffsetFetch") >= 2, "two polls")
            c.commit("landing", {("orders", 0): 4})  # the first record at 1004 is offset 4
            event = (await asyncio.wait_for(first, DEADLINE_S)).payload
            assert json.loads(event["startingOffsets"]) == {"orders": {"0": 1}}
            assert json.loads(event["endingOffsets"]) == {"orders": {"0": 4}}
            second = asyncio.ensure_future(events.__anext__())
            await asyncio.sleep(0.2)
            c.commit("landing", {("orders", 0): 6})
            event = (await asyncio.wait_for(second, DEADLINE_S)).payload
            assert json.loads(event["startingOffsets"]) == {"orders": {"0": 4}}
            assert json.loads(event["endingOffsets"]) == {"orders": {"0": 6}}  # the log end when it opened
            await events.aclose()
