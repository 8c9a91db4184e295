"""``kgroups`` on conditions real clusters have: a broker whose listing fails, a silent
coordinator under ``--timeout``, a log-end offset that cannot be read, a group that does not
exist, and bad input refused before anything is sent (exit 2)."""

from __future__ import annotations

import json
import time

import pytest

from airflow_provider_kgroups.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL, main
from tests.support.fakekafka import Err, FakeCluster
from tests.support.fakekafka.tls import make_self_signed_cert

UNKNOWN_SERVER_ERROR = -1


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def requests_sent(c: FakeCluster) -> int:
    return sum(c.requests_by_api().values())


@pytest.mark.parametrize("command", ["lag", "describe", "delete"])
def test_a_pattern_with_a_failed_broker_listing_exits_1_naming_the_broker(capsys, command):
    """30 groups over 3 brokers, broker 1's ListGroups fails: before, its 10 groups vanished with
    exit 0; now nothing is selected, nothing else is sent, and the broker is named
    (KafkaAdminClient.listConsumerGroups reports each broker whose listing failed)."""
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 3, end_offsets=100)
        for i in range(30):
            c.add_group(f"orders-{i:02d}", offsets={("orders", i % 3): 50}, coordinator=i % 3)
        c.inject_error("ListGroups", UNKNOWN_SERVER_ERROR, node=1)
        extra = ["--yes"] if command == "delete" else []
        code, out, err = run(capsys, "-b", c.bootstrap, command, "--pattern", "orders-*", *extra)
        assert code == EXIT_PARTIAL
        assert out == ""
        assert "cannot list groups on every broker (broker 1: UNKNOWN)" in err
        assert {api: n for api, n in c.requests_by_api().items() if api != "ApiVersions"} == {
            "Metadata": 1,
            "ListGroups": 3,
        }
        assert len(c.group_ids()) == 30


def test_one_deadline_for_the_whole_lag_command_against_a_silent_coordinator(capsys):
    """Lag chains DescribeGroups, OffsetFetch, Metadata and ListOffsets; with --timeout 2 the
    whole command ends by 2 s (plus slack), and the failure names the deadline. Before, each
    call had its own 2 s (6.4 s in a trial)."""
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 3, end_offsets=100)
        c.add_group("slow", offsets={("orders", 0): 10}, coordinator=2)
        c.blackhole(2)
        started = time.monotonic()
        code, out, err = run(capsys, "-b", c.bootstrap, "--timeout", "2", "lag", "slow")
        elapsed = time.monotonic() - started
        c.blackhole(2, on=False)
    assert code == EXIT_PARTIAL
    assert elapsed < 3.5, f"kgroups --timeout 2 lag took {elapsed:.1f} s"
    assert "slow" in out and "CLIENT_TIMEOUT: the 2 s deadline passed before a result" in out
    assert err == ""  # the connection still opening at exit is closed quietly (no asyncio task warning)


def test_an_unreadable_log_end_offset_makes_the_total_unknown_and_exit_1(capsys):
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 2, end_offsets=100)
        c.add_group("reader", offsets={("orders", 0): 90, ("orders", 1): 80})
        c.inject_error("ListOffsets", Err.TOPIC_AUTHORIZATION_FAILED, key=("orders", 1))
        code, out, _ = run(capsys, "-b", c.bootstrap, "--format", "json", "lag", "reader")
        assert code == EXIT_PARTIAL
        group = json.loads(out)["groups"]["reader"]
        assert group["total_lag"] is None and group["not_found"] is False
        assert {
            p["partition"]: (p["lag"], p["flags"], p["error"] and p["error"]["error"])
            for p in group["partitions"]
        } == {0: (10, [], None), 1: (None, ["error"], "TOPIC_AUTHORIZATION_FAILED")}
        code, out, _ = run(capsys, "-b", c.bootstrap, "lag", "reader")
        assert code == EXIT_PARTIAL
        assert "total unknown" in out and "TOPIC_AUTHORIZATION_FAILED" in out


def test_a_group_that_does_not_exist_is_not_found_not_dead_with_total_0(capsys):
    with FakeCluster.running_in_thread(brokers=3) as c:
        c.add_topic("orders", 1, end_offsets=100)
        c.add_group("real", offsets={("orders", 0): 100})
        code, out, _ = run(capsys, "-b", c.bootstrap, "--format", "json", "lag", "real", "ghost")
        assert code == EXIT_PARTIAL
        groups = json.loads(out)["groups"]
        assert (
            groups["ghost"]["not_found"],
            groups["ghost"]["total_lag"],
            groups["ghost"]["partitions"],
        ) == (True, None, [])
        assert (groups["real"]["not_found"], groups["real"]["total_lag"]) == (False, 0)
        code, out, _ = run(capsys, "-b", c.bootstrap, "lag", "ghost")
        assert code == EXIT_PARTIAL
        assert "NOT FOUND" in out and "Dead" not in out
        code, _, _ = run(capsys, "-b", c.bootstrap, "lag", "real")
        assert code == EXIT_OK
        code, out, _ = run(capsys, "-b", c.bootstrap, "describe", "ghost", "real")
        assert code == EXIT_PARTIAL
        assert "NOT FOUND" in out and "Dead" not in out
        code, out, _ = run(capsys, "-b", c.bootstrap, "--format", "json", "describe", "ghost", "real")
        assert (code, json.loads(out)["not_found"]) == (EXIT_PARTIAL, ["ghost"])
        code, out, _ = run(capsys, "-b", c.bootstrap, "--format", "json", "describe", "real")
        assert (code, json.loads(out)["not_found"]) == (EXIT_OK, [])


def _encrypted_key_copy(key_path: str, target, password: bytes) -> str:
    from cryptography.hazmat.primitives import serialization

    with open(key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    target.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(password),
        )
    )
    return str(target)


def _bad_inputs(tmp_path, bootstrap: str) -> list[tuple[list[str], str]]:
    """(argv, what the message names) for each bad input."""
    files = make_self_signed_cert(tmp_path)
    props = {}

    def properties(name: str, text: str | bytes) -> str:
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        props[name] = str(path)
        return str(path)

    encrypted = _encrypted_key_copy(files.key, tmp_path / "encrypted-key.pem", b"right")
    not_a_cert = tmp_path / "notes.pem"
    not_a_cert.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    return [
        (["--timeout", "nan", "groups"], "--timeout must be a positive, finite number"),
        (
            ["describe", "--all-groups", "orders"],
            "--all-groups selects every group: give it without group ids",
        ),
        (["lag", "--all-groups", "--pattern", "o*"], "--all-groups selects every group"),
        (["--timeout", "inf", "groups"], "--timeout must be a positive, finite number"),
        (["--timeout", "-1", "groups"], "--timeout must be a positive, finite number"),
        (
            ["--command-config", properties("nan.properties", "request.timeout.ms=nan\n"), "groups"],
            "request.timeout.ms must be a finite number of milliseconds",
        ),
        (
            ["--command-config", properties("neg.properties", "default.api.timeout.ms=-5\n"), "groups"],
            "default.api.timeout.ms must be a finite number of milliseconds >= 0",
        ),
        (
            ["--command-config", properties("binary.properties", b"\x00\x01\x02bootstrap\xff\xfe"), "groups"],
            "is not UTF-8 text",
        ),
        (
            ["--command-config", properties("nul.properties", b"security.protocol=SSL\x00\n"), "groups"],
            "is binary",
        ),
        (
            [
                "--command-config",
                properties("plain-sasl.properties", "sasl.username=etl\nsasl.password=hunter2\n"),
                "groups",
            ],
            "security_protocol is PLAINTEXT",
        ),
        (
            [
                "--command-config",
                properties("bad-ca.properties", f"security.protocol=SSL\nssl.ca.location={not_a_cert}\n"),
                "groups",
            ],
            "the TLS files cannot be loaded",
        ),
        (
            [
                "--command-config",
                properties(
                    "wrong-key-pw.properties",
                    f"security.protocol=SSL\nssl.ca.location={files.cert}\n"
                    f"ssl.certificate.location={files.cert}\nssl.key.location={encrypted}\n"
                    "ssl.key.password=wrong\n",
                ),
                "groups",
            ],
            "ssl_key_password the key's password",
        ),
    ]


def test_bad_input_exits_2_before_any_request(capsys, tmp_path):
    with FakeCluster.running_in_thread(brokers=1) as c:
        for argv, fragment in _bad_inputs(tmp_path, c.bootstrap):
            code, out, err = run(capsys, "-b", c.bootstrap, *argv)
            assert (code, fragment in err, out) == (EXIT_BAD_INPUT, True, ""), (argv, err)
            assert "hunter2" not in err and "wrong" not in err.replace("wrong-key-pw", "")
        assert requests_sent(c) == 0
