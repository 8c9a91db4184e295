"""``kgroups lag --seconds`` exits 0 only when every age it prints is a value: an unknown age
(a record the client cannot decode) and a lower bound (``>=``: the record at the commit was
compacted away and only the next one could be dated) are exit 1, in table and JSON alike."""

from __future__ import annotations

import json
import time

import pytest

from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL, main
from tests.support.fakekafka import FakeCluster
from tests.support.undecodable import undecodable_batches

HOUR_MS = 3_600_000


@pytest.fixture
def cluster():
    old = int(time.time() * 1000) - 2 * HOUR_MS
    with FakeCluster.running_in_thread(brokers=1) as c:
        c.add_topic("t", 1)
        c.append("t", 0, 50, timestamp_ms=lambda offset: old + offset)
        c.add_group("exact", offsets={("t", 0): 10})
        c.add_group("compacted", offsets={("t", 0): 20})
        c.compact("t", 0, [20, 21])  # the next record (22) can only bound the age from below
        yield c


def run(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_an_exact_age_exits_0(cluster, capsys):
    code, out = run(capsys, "-b", cluster.bootstrap, "--format", "json", "lag", "exact", "--seconds")
    assert code == EXIT_OK
    assert json.loads(out)["groups"]["exact"]["lag_seconds"]["at_least"] is False


def test_a_lower_bound_is_exit_1_and_says_so(cluster, capsys):
    code, out = run(capsys, "-b", cluster.bootstrap, "--format", "json", "lag", "compacted", "--seconds")
    assert code == EXIT_PARTIAL
    measured = json.loads(out)["groups"]["compacted"]["lag_seconds"]
    assert measured["at_least"] is True and measured["max_seconds"] >= 2 * 3600 - 60
    code, table = run(capsys, "-b", cluster.bootstrap, "lag", "compacted", "--seconds")
    assert code == EXIT_PARTIAL and ">=" in next(r for r in table.splitlines() if "TOTAL" in r)


def test_an_undecodable_record_is_an_unknown_age_and_exit_1(cluster, capsys, monkeypatch):
    undecodable_batches(monkeypatch)
    code, table = run(capsys, "-b", cluster.bootstrap, "lag", "exact", "--seconds")
    assert code == EXIT_PARTIAL
    total = next(r for r in table.splitlines() if "TOTAL" in r)
    assert "unknown (" in total and "cannot decode records" in total and ">=0.000" not in total
