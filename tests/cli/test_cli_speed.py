"""The CLI's fast paths and output forms against the fake cluster: options before or after
the verb, compact JSON and --pretty, --format jsonl (one object per group), --seconds, and
--help answered without loading the client (checked through sys.modules in a fresh
interpreter, never by timing)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_provider_kgroups import cli
from airflow_provider_kgroups.cli import EXIT_OK, EXIT_PARTIAL, main, write_out
from airflow_provider_kgroups.client.gcpause import YOUNG_THRESHOLD
from tests.support.fakekafka import FakeCluster

ROOT = Path(__file__).resolve().parents[2]
T0 = int(time.time() * 1000) - 3_600_000  # an hour ago


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("events", 2)
        for p in range(2):
            c.append("events", p, 10, timestamp_ms=lambda offset: T0 + offset * 1000)
        c.add_group("acc-1", offsets={("events", 0): 4, ("events", 1): 10})  # worst: p0, record 4 at T0 + 4 s
        c.add_group("acc-2", offsets={("events", 0): 10, ("events", 1): 10})  # caught up
        c.add_group("other", offsets={("events", 0): 1})
        yield c


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_options_after_the_verb_work_as_before_it(cluster, capsys):
    before = run(capsys, "-b", cluster.bootstrap, "--format", "json", "lag", "-p", "acc-*")
    after = run(capsys, "lag", "-b", cluster.bootstrap, "--format", "json", "-p", "acc-*")
    assert before[0] == after[0] == EXIT_OK
    docs = [json.loads(before[1]), json.loads(after[1])]
    for doc in docs:
        doc.pop("taken_at_ms")
    assert docs[0] == docs[1]
    assert sorted(docs[0]["groups"]) == ["acc-1", "acc-2"]
    assert docs[0]["groups"]["acc-1"]["total_lag"] == 6


def test_an_option_after_the_verb_wins_over_the_same_one_before(cluster, capsys):
    code, out, _ = run(
        capsys,
        "-b",
        "127.0.0.1:1",
        "--format",
        "table",
        "lag",
        "acc-2",
        "-b",
        cluster.bootstrap,
        "--format",
        "json",
    )
    assert code == EXIT_OK
    assert json.loads(out)["groups"]["acc-2"]["total_lag"] == 0


def test_json_is_compact_by_default_and_indented_with_pretty(cluster, capsys):
    code, compact, _ = run(capsys, "-b", cluster.bootstrap, "--format", "json", "lag", "acc-1")
    assert code == EXIT_OK
    assert compact.count("\n") == 1 and ": " not in compact and ", " not in compact
    code, pretty, _ = run(capsys, "lag", "acc-1", "-b", cluster.bootstrap, "--format", "json", "--pretty")
    assert code == EXIT_OK
    assert pretty.startswith('{\n  "failures"')  # indented, keys sorted
    a, b = json.loads(compact), json.loads(pretty)
    a.pop("taken_at_ms"), b.pop("taken_at_ms")
    assert a == b


def test_jsonl_gives_one_object_per_group(cluster, capsys):
    code, out, _ = run(
        capsys, "-b", cluster.bootstrap, "--format", "jsonl", "lag", "-p", "acc-*", "missing-group"
    )
    assert code == EXIT_PARTIAL  # a group that does not exist is unknown, never fine
    lines = [json.loads(line) for line in out.splitlines()]
    assert sorted(line["group_id"] for line in lines) == ["acc-1", "acc-2", "missing-group"]
    by_id = {line["group_id"]: line for line in lines}
    assert by_id["acc-1"]["total_lag"] == 6 and by_id["acc-2"]["total_lag"] == 0
    assert by_id["missing-group"]["not_found"] is True and by_id["missing-group"]["total_lag"] is None
    assert all(isinstance(line["taken_at_ms"], int) for line in lines)


def test_seconds_gives_the_age_of_the_worst_partitions_oldest_unread_record(cluster, capsys):
    cluster.reset_counts()
    code, out, _ = run(
        capsys, "-b", cluster.bootstrap, "--format", "json", "lag", "acc-1", "acc-2", "--seconds"
    )
    assert code == EXIT_OK
    doc = json.loads(out)
    worst = doc["groups"]["acc-1"]["lag_seconds"]
    assert worst["partitions"][0]["partition"] == 0 and worst["partitions"][0]["basis"] == "record"
    assert worst["partitions"][0]["record_timestamp_ms"] == T0 + 4_000
    assert worst["max_seconds"] == pytest.approx((doc["taken_at_ms"] - (T0 + 4_000)) / 1000.0)
    assert doc["groups"]["acc-2"]["lag_seconds"]["max_seconds"] == 0.0  # nothing to read
    assert cluster.count("Fetch") == 1  # one leader holds the one partition measured
    before_ms = time.time() * 1000
    code, table, _ = run(capsys, "-b", cluster.bootstrap, "lag", "acc-1", "--seconds")
    after_ms = time.time() * 1000
    assert code == EXIT_OK
    header, *rows = table.splitlines()
    assert "LAG-SECONDS" in header
    total = next(r for r in rows if "TOTAL" in r)
    # the age of the record at T0 + 4 s when the command ran (T0 was fixed when the module loaded)
    age_s = float(total.split()[3])
    assert (before_ms - (T0 + 4_000)) / 1000 - 1 <= age_s <= (after_ms - (T0 + 4_000)) / 1000 + 1


def test_table_without_seconds_has_no_seconds_column(cluster, capsys):
    cluster.reset_counts()
    code, table, _ = run(capsys, "-b", cluster.bootstrap, "lag", "acc-1")
    assert code == EXIT_OK and "LAG-SECONDS" not in table
    assert cluster.count("Fetch") == 0


def test_help_loads_neither_the_client_nor_the_lag_engine():
    """Nor the client's errors (dataclasses, kafka.errors), logging, or shutil (argparse imports
    it, and bz2 and lzma with it, for the terminal width: the CLI asks os itself)."""
    probe = (
        "import sys\nfrom airflow_provider_kgroups.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ['airflow_provider_kgroups.client.client', 'airflow_provider_kgroups.lag.snapshot', "
        "'kafka.protocol', 'airflow_provider_kgroups.connect', 'airflow_provider_kgroups.client.errors', "
        "'kafka.errors', 'dataclasses', 'shutil', 'logging']\n"
        "print('LOADED', [m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert "usage: kgroups" in out
    assert out.strip().splitlines()[-1] == "LOADED []"


def test_lag_loads_neither_the_connect_rest_client_nor_the_unused_admin_messages(cluster):
    """``kgroups lag`` splits the connect.* properties off but never talks to Kafka Connect:
    requests/urllib3 (~60 ms) and kafka-python's non-group admin messages (~20 ms) stay unloaded."""
    probe = (
        "import sys\nfrom airflow_provider_kgroups.cli import main\n"
        f"code = main(['-b', {cluster.bootstrap!r}, '--format', 'json', 'lag', 'acc-1'])\n"
        "heavy = ['requests', 'urllib3', 'airflow_provider_kgroups.connect.rest', "
        "'airflow_provider_kgroups.connect.evidence', 'kafka.protocol.admin.acl', 'kafka.protocol.admin.topics', "
        "'kafka.admin', 'kafka.consumer', 'kafka.producer']\n"
        "print('EXIT', code, 'LOADED', [m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert json.loads(out.splitlines()[0])["groups"]["acc-1"]["total_lag"] == 6
    assert out.strip().splitlines()[-1] == "EXIT 0 LOADED []"


@pytest.mark.parametrize(
    "verb, own",
    [
        ("groups", "--state"),
        ("describe", "--pattern"),
        ("lag", "--unknown-lag"),
        ("delete", "--max-deletions"),
        ("restore", "backup_url"),
        ("reset-offsets", "--to-datetime"),
        ("delete-offsets", "--topic"),
    ],
)
def test_each_verbs_help_shows_its_own_and_the_common_options(capsys, verb, own):
    """A verb's arguments are added when it is first used: its help (and usage) still shows them all."""
    with pytest.raises(SystemExit) as done:
        main([verb, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert out.startswith(f"usage: kgroups {verb} ")
    assert own in out and "--bootstrap-servers" in out and "--format" in out


def test_a_verbs_bad_option_is_reported_with_the_verbs_usage(capsys):
    with pytest.raises(SystemExit) as done:
        main(["lag", "--unknown-lag", "zero"])
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert (
        err.startswith("usage: kgroups lag ")
        and "--unknown-lag {fail,ignore,from_earliest,from_latest}" in err
    )
    assert "argument --unknown-lag: invalid choice: 'zero'" in err


def test_json_writes_non_ascii_group_ids_as_utf8_and_pretty_escapes_them(cluster, capsysbinary):
    """Compact JSON (msgspec) writes UTF-8 bytes to stdout's buffer, whatever the locale; the
    values are exactly those of the standard library's encoding, which --pretty still uses."""
    cluster.add_group("accès-é", offsets={("events", 0): 7})
    assert main(["-b", cluster.bootstrap, "--format", "json", "lag", "accès-é"]) == EXIT_OK
    compact = capsysbinary.readouterr().out
    assert "accès-é".encode() in compact and compact.endswith(b"}\n") and compact.count(b"\n") == 1
    assert main(["-b", cluster.bootstrap, "--format", "json", "--pretty", "lag", "accès-é"]) == EXIT_OK
    pretty = capsysbinary.readouterr().out
    assert pretty.isascii() and b"acc\\u00e8s-\\u00e9" in pretty
    a, b = json.loads(compact.decode("utf-8")), json.loads(pretty.decode("ascii"))
    a.pop("taken_at_ms"), b.pop("taken_at_ms")
    assert a == b and a["groups"]["accès-é"]["total_lag"] == 3


def test_table_then_bytes_keep_their_order_on_stdout(capsys):
    """write_out flushes the text printed before it: nothing is reordered on a shared stdout."""
    print("first")
    write_out(b"second\n")
    assert capsys.readouterr().out == "first\nsecond\n"


def test_a_verb_runs_with_fewer_gc_passes_and_the_thresholds_come_back(cluster, capsys, monkeypatch):
    seen = []
    real = cli.run
    monkeypatch.setattr(cli, "run", lambda args: seen.append(gc.get_threshold()) or real(args))
    before = gc.get_threshold()
    assert main(["-b", cluster.bootstrap, "lag", "acc-1"]) == EXIT_OK
    assert seen == [(YOUNG_THRESHOLD, *before[1:])]
    assert gc.get_threshold() == before
    capsys.readouterr()


def test_render_table_pads_every_column_and_shows_none_as_a_dash():
    assert cli.render_table(
        ("A", "LONG-HEADER", "C"), [(None, 1, "x{y}"), ("long-value", None, "")]
    ).splitlines() == [
        "A           LONG-HEADER  C   ",
        "-           1            x{y}",
        "long-value  -                ",
    ]
    assert cli.render_table(("A", "B"), []) == "A  B"
