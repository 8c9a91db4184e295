"""``kgroups --format json lag`` written batch by batch (:class:`.output.JsonDocumentStream`): the
same bytes as the document built whole from one snapshot, a document that stays valid JSON with
a last ``"error"`` field when the run fails midway, and memory that does not grow with the
number of groups. ``--pretty`` (keys sorted: ``failures`` first) keeps the whole document."""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import tracemalloc

import msgspec
import pytest

from airflow_provider_kgroups.cli import EXIT_PARTIAL, EXIT_UNREACHABLE, main, output
from airflow_provider_kgroups.cli import lag as lag_verb
from airflow_provider_kgroups.cli.output import JsonDocumentStream
from airflow_provider_kgroups.client.errors import Failure, NoBrokerAvailable
from airflow_provider_kgroups.lag import snapshot as snapshot_module
from airflow_provider_kgroups.lag.model import LagSnapshot
from tests.support.builders import group, partition
from tests.support.fakekafka import Err, FakeCluster

T0 = 1_700_000_000_000
#: ids with what JSON must escape or write as UTF-8 (msgspec writes it as is)
ODD_IDS = ("acc-grüppe", 'acc-"quoted"\\slash', "acc-tab\tnew\nline")


def streamed(parts, head=None, error=None, deferred_in_memory=None, monkeypatch=None) -> bytes:
    if deferred_in_memory is not None:
        monkeypatch.setattr(output, "DEFERRED_IN_MEMORY", deferred_in_memory)
    out: list[bytes] = []
    document = JsonDocumentStream(out.append, "groups", "failures")
    document.start(head or {"taken_at_ms": T0, "policy": "fail"})
    for entries, deferred in parts:
        for key, value in entries:
            document.add(key, value)
        for key, value in deferred:
            document.defer(key, value)
        document.flush()
    document.close(error)
    return b"".join(out)


def whole(parts, head=None) -> bytes:
    return (
        msgspec.json.encode(
            {
                **(head or {"taken_at_ms": T0, "policy": "fail"}),
                "groups": {k: v for entries, _ in parts for k, v in entries},
                "failures": {k: v for _, deferred in parts for k, v in deferred},
            }
        )
        + b"\n"
    )


@pytest.mark.parametrize("in_memory", [None, 7])  # 7 bytes: the failures go to a temporary file
def test_the_document_written_in_parts_is_the_document_built_whole(monkeypatch, in_memory):
    value = {"total_lag": 3, "partitions": [{"lag": 1.5e16, "flags": ["x"]}], "error": None}
    cases = [
        [],
        [([], [])],
        [([("a", value)], [])],
        [([], [("f", {"code": 15, "message": "x"})])],
        [
            ([("a", value), (ODD_IDS[0], {"n": "ü"})], [("f1", {"code": 30})]),
            ([], []),
            ([(ODD_IDS[1], value), (ODD_IDS[2], None)], [("f2", {"code": 15}), ("f3", {})]),
        ],
    ]
    for parts in cases:
        assert streamed(parts, deferred_in_memory=in_memory, monkeypatch=monkeypatch) == whole(parts)


def test_entries_added_all_at_once_are_the_entries_added_one_by_one():
    value = {"total_lag": 3, "partitions": [{"lag": 1.5e16, "flags": ["x"]}], "error": None}
    entries = [("a", value), (ODD_IDS[0], {"n": "ü"}), (ODD_IDS[1], None), (ODD_IDS[2], [])]
    for chunks in ([entries], [entries[:1], [], entries[1:]], [[], []]):
        one_by_one: list[bytes] = []
        all_at_once: list[bytes] = []
        for out, add in ((one_by_one, "one"), (all_at_once, "all")):
            document = JsonDocumentStream(out.append, "groups", "failures")
            document.start({"taken_at_ms": T0})
            for chunk in chunks:
                if add == "one":
                    for key, entry in chunk:
                        document.add(key, entry)
                else:
                    document.add_all(dict(chunk))
                document.flush()
            document.close()
        assert b"".join(all_at_once) == b"".join(one_by_one)
        json.loads(b"".join(all_at_once))


def test_a_group_for_msgspec_is_encoded_as_its_to_dict():
    """The compact writers leave a partition without a flag or an error as its PartitionLag:
    msgspec writes it as the object its to_dict makes; every other partition is its to_dict."""
    from airflow_provider_kgroups.cli.lag_rows import group_document
    from airflow_provider_kgroups.client.results import GroupState
    from airflow_provider_kgroups.lag.model import GroupLag, LagFlag, PartitionLag

    plain = partition("t", 0, 5, 10)
    assigned = PartitionLag("t", 1, 2**40, None, 2**41, 2**41 - 2**40, frozenset(), "member-ü-1")
    groups = [
        group("plain", plain, assigned),
        group(
            "flags", partition("t", 0, 50, 40, flags=[LagFlag.TOPIC_UNASSIGNED]), partition("u", 3, 1, 9, 4)
        ),
        group("no-commit", partition("t", 0, None, 10), plain),
        group(
            "error",
            PartitionLag(
                "t", 0, 5, 0, None, None, frozenset({LagFlag.ERROR}), None, Failure(6, "not leader")
            ),
            PartitionLag("t", 1, 5, 0, 9, 4, frozenset(), None, Failure(6)),  # an error, no flag
        ),
        GroupLag("failed", GroupState.UNKNOWN, "", 0, (), Failure(15)),  # not described
        group("not-found", state="Dead", members=0),
        group("share", plain, protocol_type="share"),
        group(ODD_IDS[2]),
    ]
    encode = msgspec.json.Encoder().encode
    for g in groups:
        for with_seconds in (False, True):
            compact = group_document(g, None, with_seconds, for_msgspec=True)
            assert encode(compact) == encode(group_document(g, None, with_seconds)), g.group_id
    assert any(
        isinstance(p, PartitionLag)
        for p in group_document(groups[0], None, False, for_msgspec=True)["partitions"]
    )


def test_an_error_closes_the_open_objects_and_is_the_last_field():
    parts = [([("a", {"total_lag": 1})], [("f", {"code": 30})]), ([("b", {"total_lag": 2})], [])]
    text = streamed(parts, error=NoBrokerAvailable("no broker answered Metadata"))
    document = json.loads(text)
    assert list(document) == ["taken_at_ms", "policy", "groups", "failures", "error"]
    assert document["groups"] == {"a": {"total_lag": 1}, "b": {"total_lag": 2}}
    assert document["failures"] == {"f": {"code": 30}}
    assert document["error"] == {"type": "NoBrokerAvailable", "message": "no broker answered Metadata"}
    assert text.endswith(b"}\n") and text.count(b"\n") == 1
    interrupted = json.loads(streamed([], error=KeyboardInterrupt()))
    assert interrupted["error"] == {"type": "KeyboardInterrupt", "message": ""}


def test_entries_added_but_not_flushed_are_written_at_close():
    out: list[bytes] = []
    document = JsonDocumentStream(out.append, "groups", "failures")
    document.start({"taken_at_ms": T0})
    document.add("a", 1)
    document.close(RuntimeError("boom"))
    document.close()  # once only
    assert json.loads(b"".join(out)) == {
        "taken_at_ms": T0,
        "groups": {"a": 1},
        "failures": {},
        "error": {"type": "RuntimeError", "message": "boom"},
    }


def test_memory_does_not_grow_with_the_number_of_parts(monkeypatch):
    """The writer of ``kgroups --format json lag`` holds a part at a time: the peak of 10 parts is
    the peak of 60 (each of 300 groups, a tenth of them failed: the failures go to a file past
    DEFERRED_IN_MEMORY)."""
    monkeypatch.setattr(output, "DEFERRED_IN_MEMORY", 16 << 10)
    args = argparse.Namespace(pretty=False, seconds=False)

    def part(n: int) -> LagSnapshot:
        groups = {
            f"g-{n}-{i}": group(f"g-{n}-{i}", *(partition("orders", p, 5, 10 + i) for p in range(4)))
            for i in range(270)
        }
        return LagSnapshot(T0, groups, failures={f"f-{n}-{i}": Failure(30, "denied") for i in range(30)})

    def peak(parts: int) -> tuple[int, int]:
        written = 0

        def sink(data: bytes) -> None:
            nonlocal written
            written += len(data)

        document = JsonDocumentStream(sink, "groups", "failures")
        write = lag_verb._document_writer(document, args)
        tracemalloc.start()
        try:
            for n in range(parts):
                write(part(n), None)
            document.close()
            return tracemalloc.get_traced_memory()[1], written
        finally:
            tracemalloc.stop()

    (few, few_bytes), (many, many_bytes) = peak(10), peak(60)
    assert many_bytes > 5.5 * few_bytes
    assert many < few * 1.2, (few, many)


def test_pretty_json_keeps_the_whole_document():
    def args(**kw):
        return argparse.Namespace(**{"format": "json", "pretty": False, **kw})

    assert lag_verb.streams(args())
    assert not lag_verb.streams(args(pretty=True))
    assert lag_verb.streams(args(format="jsonl")) and lag_verb.streams(args(format="table"))


# ------------------------------------------------------------------ against the fake cluster

GROUPS = 23  # batches of 4: six parts, the last of 3 groups (with the missing group: 24 ids)


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 3, end_offsets=[100, 100, 100])
        c.add_topic("audit", 2, end_offsets=[50, 70])
        for i in range(GROUPS - len(ODD_IDS)):
            offsets = {("orders", i % 3): 90 - i}
            if i % 4 == 0:
                offsets[("audit", 1)] = 60
            c.add_group(f"acc-{i:02d}", offsets=offsets)
        for gid in ODD_IDS:
            c.add_group(gid, offsets={("audit", 0): 1})
        c.add_group("acc-nocommit", offsets={})  # nothing committed: Empty and no partition
        c.add_group("other", offsets={("orders", 0): 1})
        yield c


@pytest.fixture
def batches(monkeypatch):
    """iter_snapshot in batches of 4, two at a time, counting the parts; the clock a counter from
    T0 (each batch reads it once, when it starts)."""
    parts: list[int] = []
    real = snapshot_module.iter_snapshot

    async def counted(*a, **kw):
        async for part in functools.partial(real, batch_size=4, concurrency=2)(*a, **kw):
            parts.append(len(part.groups) + len(part.failures))
            yield part

    monkeypatch.setattr(snapshot_module, "iter_snapshot", counted)
    return parts


def clock(monkeypatch) -> None:
    ticks = itertools.count(T0)
    monkeypatch.setattr(snapshot_module, "now_ms", lambda: next(ticks))


def run(capsysbinary, *argv) -> tuple[int, bytes, str]:
    code = main(list(argv))
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


def both(cluster, monkeypatch, capsysbinary, *lag_args):
    """(streamed, whole): the command's output in batches, then built whole from one snapshot (the
    path --pretty takes), each run with the clock started again at T0."""
    argv = ("-b", cluster.bootstrap, "--format", "json", "lag", "-p", "acc-*", "acc-missing", *lag_args)
    clock(monkeypatch)
    streamed_run = run(capsysbinary, *argv)
    clock(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(lag_verb, "streams", lambda args: False)
        whole_run = run(capsysbinary, *argv)
    return streamed_run, whole_run


@pytest.mark.parametrize(
    "lag_args", [(), ("--unknown-lag", "from_earliest"), ("--unknown-lag", "ignore", "--read-committed")]
)
def test_the_streamed_document_is_byte_for_byte_the_whole_one(
    cluster, monkeypatch, capsysbinary, batches, lag_args
):
    denied = [
        cluster.inject_error("OffsetFetch", Err.GROUP_AUTHORIZATION_FAILED, key=gid)
        for gid in ("acc-02", "acc-13", ODD_IDS[1])  # failures in three batches
    ]
    try:
        (code, out, _), (whole_code, whole_out, _) = both(cluster, monkeypatch, capsysbinary, *lag_args)
    finally:
        for injection in denied:
            injection.cancel()
    assert len(batches) == 7 and sum(batches) == GROUPS + 2  # + acc-nocommit, acc-missing
    assert out == whole_out and code == whole_code == EXIT_PARTIAL  # failed and missing groups
    document = json.loads(out)
    assert list(document) == ["taken_at_ms", "policy", "groups", "failures"]
    assert document["taken_at_ms"] == T0  # the first batch's, as the snapshot's (its only batch)
    assert sorted(document["failures"]) == sorted(["acc-02", "acc-13", ODD_IDS[1]])
    assert document["groups"]["acc-missing"]["not_found"] is True


def test_with_seconds_too(cluster, monkeypatch, capsysbinary, batches):
    monkeypatch.setattr(snapshot_module, "now_ms", lambda: T0)  # the ages are each batch's own
    argv = ("-b", cluster.bootstrap, "--format", "json", "lag", "-p", "acc-*", "--seconds")
    code, out, _ = run(capsysbinary, *argv)
    with monkeypatch.context() as m:
        m.setattr(lag_verb, "streams", lambda args: False)
        whole_code, whole_out, _ = run(capsysbinary, *argv)
    assert len(batches) == 6
    assert out == whole_out and code == whole_code
    assert all("lag_seconds" in g for g in json.loads(out)["groups"].values())


def test_a_run_that_fails_midway_leaves_valid_json_with_the_error_last(monkeypatch, capsysbinary, batches):
    """After the first batch is written, every Metadata response is cut: the next batch's
    Metadata (its partitions' leaders) finds no broker (NoBrokerAvailable, exit 3, as the whole
    snapshot exits with that fault)."""
    with FakeCluster.running_in_thread(brokers=3) as cluster:
        cluster.add_topic("orders", 3, end_offsets=[100, 100, 100])
        for i in range(12):
            cluster.add_group(f"acc-{i:02d}", offsets={("orders", i % 3): 90 - i})
        argv = ("-b", cluster.bootstrap, "--timeout", "20", "--format", "json", "lag", "-p", "acc-*")
        clock(monkeypatch)
        _, full, _ = run(capsysbinary, *argv)

        writes: list[bytes] = []

        def write_then_fault(data: bytes) -> None:
            if not writes:
                cluster.drop_mid_response("Metadata", times=None)
            writes.append(data)
            output.write_out(data)

        clock(monkeypatch)
        with monkeypatch.context() as m:
            m.setattr(lag_verb, "write_out", write_then_fault)
            code, out, err = run(capsysbinary, *argv)
        assert code == EXIT_UNREACHABLE
        document = json.loads(out)
        assert list(document) == ["taken_at_ms", "policy", "groups", "failures", "error"]
        assert document["error"]["type"] == "NoBrokerAvailable"
        assert err.strip().endswith(f"kgroups: {document['error']['message']}")
        whole = json.loads(full)
        written = list(document["groups"])
        assert 4 <= len(written) < 12 and len(written) % 4 == 0  # whole batches, in the groups' order
        assert written == list(whole["groups"])[: len(written)]
        assert all(document["groups"][g] == whole["groups"][g] for g in written)
        assert document["taken_at_ms"] == whole["taken_at_ms"] == T0

        # the same fault before any batch: the whole snapshot's exit code and message, nothing written
        for streamed_or_whole in (True, False):
            with monkeypatch.context() as m:
                m.setattr(lag_verb, "streams", lambda args, s=streamed_or_whole: s)
                code, out, err = run(capsysbinary, *argv)
            assert (code, out) == (EXIT_UNREACHABLE, b"")
            assert "no broker answered Metadata" in err
        cluster.clear_faults()
