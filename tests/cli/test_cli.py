"""The kgroups command against the fake cluster (Apache Kafka semantics): outputs, exit codes,
and that delete without --yes changes nothing."""

import json

import pytest

from airflow_provider_kgroups.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL, EXIT_UNREACHABLE, main
from tests.support.fakekafka import Err, FakeCluster, Member


@pytest.fixture(scope="module")
def cluster():
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 3, end_offsets=[100, 100, 100])
        c.add_group("orders-landing", offsets={("orders", 0): 100, ("orders", 1): 90})
        c.add_group(
            "orders-live",
            offsets={("orders", 0): 100},
            members=[Member("m-1", {"orders": [0, 1, 2]}, client_id="app", host="/10.0.0.1")],
        )
        c.add_group("tmp-1", offsets={("orders", 2): 5})
        c.add_group("tmp-2", offsets={("orders", 2): 7})
        yield c


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_groups_lists_every_broker_with_states(cluster, capsys):
    code, out, _ = run(capsys, "-b", cluster.bootstrap, "--format", "json", "groups")
    assert code == EXIT_OK
    states = {g["group_id"]: g["state"] for g in json.loads(out)["groups"]}
    assert states == {"orders-landing": "Empty", "orders-live": "Stable", "tmp-1": "Empty", "tmp-2": "Empty"}


def test_lag_per_partition_with_totals(cluster, capsys):
    code, out, _ = run(
        capsys,
        "-b",
        cluster.bootstrap,
        "--format",
        "json",
        "lag",
        "orders-landing",
        "--unknown-lag",
        "from_earliest",
    )
    assert code == EXIT_OK
    group = json.loads(out)["groups"]["orders-landing"]
    lags = {p["partition"]: p["lag"] for p in group["partitions"]}
    assert lags[0] == 0 and lags[1] == 10
    assert group["total_lag"] == sum(lags.values())


def test_a_failing_group_gives_exit_code_1(cluster, capsys):
    cluster.inject_error("OffsetFetch", Err.GROUP_AUTHORIZATION_FAILED, key="orders-landing", times=1)
    code, out, _ = run(capsys, "-b", cluster.bootstrap, "lag", "orders-landing", "orders-live")
    assert code == EXIT_PARTIAL
    assert "GROUP_AUTHORIZATION_FAILED" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (("-b", "nohost", "groups"), "is not 'host:port'"),
        (("-b", "127.0.0.1:1", "describe"), "no groups selected"),
        (("-b", "127.0.0.1:1", "lag", "--pattern", "re:("), "not a valid regular expression"),
        (("-b", "127.0.0.1:1", "--timeout", "-5", "groups"), "--timeout must be a positive, finite number"),
        (("groups",), "no bootstrap servers"),
    ],
)
def test_bad_input_exits_2_naming_the_problem(capsys, monkeypatch, argv, fragment):
    monkeypatch.delenv("KGROUPS_BOOTSTRAP_SERVERS", raising=False)
    code, _, err = run(capsys, *argv)
    assert code == EXIT_BAD_INPUT
    assert fragment in err


def test_unreachable_cluster_exits_3(capsys):
    code, _, err = run(capsys, "-b", "127.0.0.1:1", "--timeout", "2", "groups")
    assert code == EXIT_UNREACHABLE
    assert "no broker reachable" in err


def test_command_config_file_is_read_and_secrets_stay_out_of_output(cluster, capsys, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(f"# ops cluster\nbootstrap.servers={cluster.bootstrap}\nsecurity.protocol=PLAINTEXT\n")
    code, out, _ = run(capsys, "--command-config", str(props), "groups")
    assert code == EXIT_OK and "orders-landing" in out
    props.write_text("bootstrap.servers=x:1\nsasl.jaas.config=secret-value\n")
    code, _, err = run(capsys, "--command-config", str(props), "groups")
    assert code == EXIT_BAD_INPUT and "sasl.jaas.config" in err and "secret-value" not in err


def test_a_scram_server_asking_a_billion_iterations_ends_the_command_at_once(capsys, tmp_path):
    """Issue 29: ``kgroups --timeout 20 groups`` against a server asking 1,000,000,000 SCRAM
    iterations was busy for as long as PBKDF2 took; the count is refused before any work."""
    import time

    with FakeCluster.running_in_thread(
        brokers=1, sasl={"SCRAM-SHA-512": {"alice": "pw-s3cret"}}, scram_iterations=1_000_000_000
    ) as c:
        c.add_group("g", offsets={})
        props = tmp_path / "client.properties"
        props.write_text(
            f"bootstrap.servers: {c.bootstrap}\nsecurity.protocol SASL_PLAINTEXT\n"
            "sasl.mechanism=SCRAM-SHA-512\nsasl.username=alice\nsasl.password=pw-s3cret\n"
        )
        started = time.monotonic()
        code, out, err = run(capsys, "--command-config", str(props), "--timeout", "20", "groups")
        assert time.monotonic() - started < 5
    assert code == EXIT_UNREACHABLE
    assert "asked for 1000000000 iterations" in err and "4096 to 16384" in err
    assert "pw-s3cret" not in out + err


def test_lag_names_a_topic_the_group_no_longer_reads(capsys):
    """klag issue 92: billing is Stable with members assigned payments only; its old commit on
    orders stays behind. The partition carries the flag and the group's line names the topic."""
    with FakeCluster.running_in_thread(brokers=1) as c:
        c.add_topic("orders", 1, end_offsets=50)
        c.add_topic("payments", 1, end_offsets=5)
        c.add_group(
            "billing",
            offsets={("orders", 0): 10, ("payments", 0): 5},
            members=[Member("m-1", {"payments": [0]})],
        )
        code, out, _ = run(capsys, "-b", c.bootstrap, "--format", "json", "lag", "billing")
        assert code == EXIT_OK
        flags = {p["topic"]: p["flags"] for p in json.loads(out)["groups"]["billing"]["partitions"]}
        assert flags == {"orders": ["topic_unassigned"], "payments": []}
        code, out, _ = run(capsys, "-b", c.bootstrap, "lag", "billing")
        total = next(line for line in out.splitlines() if "TOTAL" in line)
        assert "no member assigned orders (its commits there stay behind)" in total
