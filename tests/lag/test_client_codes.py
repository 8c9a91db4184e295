"""Client-side failures carry this client's own ``CLIENT_*`` codes, never a broker code: -1 is
Kafka's UNKNOWN_SERVER_ERROR (``Errors.UNKNOWN_SERVER_ERROR`` in
clients/src/main/java/org/apache/kafka/common/protocol/Errors.java), which would claim a broker
said so. Every code the package reacts to has a name."""

from __future__ import annotations

import ast
from pathlib import Path

from airflow_provider_kgroups.client import errors
from airflow_provider_kgroups.client.errors import (
    CLIENT_CODES,
    CLIENT_NOT_READ,
    ErrorCode,
    Failure,
    error_name,
)
from airflow_provider_kgroups.lag.model import LagFlag, UnknownLagPolicy
from tests.support.builders import tp

PACKAGE = Path(errors.__file__).resolve().parents[1]


def test_every_client_code_has_its_name_and_none_is_a_broker_code():
    assert CLIENT_CODES == {
        -100: "CLIENT_TIMEOUT",
        -101: "CLIENT_DISCONNECTED",
        -102: "CLIENT_UNSUPPORTED",
        -103: "CLIENT_INCOMPLETE_RESPONSE",
        -104: "CLIENT_RESPONSE_TOO_LARGE",
        -105: "CLIENT_NOT_READ",
        -106: "CLIENT_RECORDED_ERROR",
        -107: "CLIENT_UNDECODABLE",
        -108: "CLIENT_PROTOCOL_ERROR",
        -109: "CLIENT_NOT_SENT",
    }
    for code, name in CLIENT_CODES.items():
        assert error_name(code) == name and str(Failure(code, "why")) == f"{name}: why"
    assert error_name(-1) == "UNKNOWN"  # what a -1 would have said: the broker's unknown error
    # the named broker codes have Errors.java's numbers
    assert [
        int(c)
        for c in (
            ErrorCode.ILLEGAL_GENERATION,
            ErrorCode.UNKNOWN_MEMBER_ID,
            ErrorCode.REBALANCE_IN_PROGRESS,
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            ErrorCode.SASL_AUTHENTICATION_FAILED,
        )
    ] == [22, 25, 27, 31, 58]
    assert {29, 30, 31, 58} == errors.NOT_RETRIABLE_CODES


def test_no_failure_in_the_package_is_built_from_a_bare_number():
    bare = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Failure" and node.args:
                code = node.args[0]
                if isinstance(code, ast.UnaryOp):
                    code = code.operand
                if isinstance(code, ast.Constant):
                    bare.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert bare == []


def test_a_log_start_that_was_not_read_is_client_not_read():
    from airflow_provider_kgroups.lag.snapshot import partition_lag

    lag = partition_lag(
        tp("t", 0), committed=None, log_start=None, log_end=100, policy=UnknownLagPolicy.FROM_EARLIEST
    )
    assert LagFlag.ERROR in lag.flags and lag.error.code == CLIENT_NOT_READ
    assert str(lag.error) == "CLIENT_NOT_READ: log start or end offset unknown: cannot count from earliest"
