"""A bug is not a broker answer. A fault injected into a handler's or a lookup's ``build`` or
``parse`` propagates out of the call (it used to become a per-key CLIENT_UNSUPPORTED failure,
which the sensor took for a transient error and waited out its whole timeout); only what the
transport or the protocol failed at becomes a per-key outcome, with a code of its own: an
undecodable answer is CLIENT_PROTOCOL_ERROR for the keys of that request alone. After a bug the
client still serves the next call."""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client import AsyncGroupsClient, GroupsClient, TopicPartition
from airflow_provider_kgroups.client.errors import CLIENT_PROTOCOL_ERROR
from airflow_provider_kgroups.client.handlers.delete_groups import DeleteGroupsHandler
from airflow_provider_kgroups.client.handlers.list_offsets import ListOffsetsHandler
from airflow_provider_kgroups.client.handlers.offset_fetch import OffsetFetchHandler
from airflow_provider_kgroups.client.lookup import CoordinatorLookup, LeaderLookup
from tests.support.fakekafka import FakeCluster
from tests.support.fakekafka import dispatch as fake_dispatch
from tests.support.fakeutil import committed, config, seed


class InjectedFault(Exception):
    """Raised by a patched handler: a bug, not anything a broker said."""


def fault(what: str):
    def raising(*args, **kwargs):
        raise InjectedFault(f"injected into {what}")

    return raising


@pytest.mark.parametrize(
    "where",
    [
        (OffsetFetchHandler, "parse"),
        (OffsetFetchHandler, "build"),
        (CoordinatorLookup, "parse"),
    ],
)
async def test_a_fault_in_a_handler_or_lookup_propagates_out_of_the_call(where, monkeypatch):
    cls, method = where

    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 9)
        async with AsyncGroupsClient(config(c)) as client:
            with monkeypatch.context() as patch:
                patch.setattr(cls, method, fault(f"{cls.__name__}.{method}"))
                with pytest.raises(InjectedFault, match=f"injected into {cls.__name__}.{method}"):
                    await client.fetch_committed_offsets(list(seeded), timeout_s=10)
            again = await client.fetch_committed_offsets(list(seeded), timeout_s=10)  # the client still works
        assert again.failures == {} and committed(again) == seeded


def test_a_fault_in_the_leader_lookup_or_list_offsets_propagates_and_the_blocking_client_raises_it(
    monkeypatch,
):
    with FakeCluster.running_in_thread(brokers=2) as c:
        c.add_topic("orders", 4, end_offsets=50)
        tps = [TopicPartition("orders", p) for p in range(4)]
        with GroupsClient(config(c)) as client:
            for cls, method in (
                (LeaderLookup, "build"),
                (ListOffsetsHandler, "parse"),
                (DeleteGroupsHandler, "parse"),
            ):
                with monkeypatch.context() as patch:
                    patch.setattr(cls, method, fault(f"{cls.__name__}.{method}"))
                    with pytest.raises(InjectedFault, match=f"{cls.__name__}.{method}"):
                        if cls is DeleteGroupsHandler:
                            client.delete_groups(["some-group"], timeout_s=10)
                        else:
                            client.log_end_offsets(tps, timeout_s=10)
            ends = client.log_end_offsets(tps, timeout_s=10)
        assert ends.failures == {} and {tp: v.offset for tp, v in ends.values.items()} == dict.fromkeys(
            tps, 50
        )


async def test_an_undecodable_answer_fails_the_keys_of_that_request_with_a_protocol_error(monkeypatch):
    """The broker's answer is cut short inside a well-formed frame (as a broker bug or a proxy
    would): the connection reads it as a ProtocolError, and the groups that request carried fail
    with CLIENT_PROTOCOL_ERROR, not with CLIENT_UNSUPPORTED nor as a lost connection; the groups
    of the other coordinators are read as usual."""
    frame = fake_dispatch.encode_response_frame

    async with FakeCluster(brokers=3) as c:
        seeded = seed(c, 12)
        bad_node = c.coordinator_of("g0")
        on_bad = {g for g in seeded if c.coordinator_of(g) == bad_node}

        def cut(api_key, version, correlation_id, response):
            whole = frame(api_key, version, correlation_id, response)
            if api_key != 9 or not any(g.group_id in on_bad for g in getattr(response, "groups", [])):
                return whole
            kept = whole[4 : 4 + 4 + 3]  # the correlation id and three bytes of the body
            return len(kept).to_bytes(4, "big") + kept

        monkeypatch.setattr(fake_dispatch, "encode_response_frame", cut)
        async with AsyncGroupsClient(config(c)) as client:
            result = await client.fetch_committed_offsets(list(seeded), timeout_s=10)
        assert set(result.failures) == on_bad
        assert {f.code for f in result.failures.values()} == {CLIENT_PROTOCOL_ERROR}
        assert all("cannot decode OffsetFetchResponse" in f.message for f in result.failures.values())
        assert committed(result) == {g: o for g, o in seeded.items() if g not in on_bad}
