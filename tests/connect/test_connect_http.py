"""The Connect REST transport over real HTTP: a threaded local server (demo/
connectserver.py) answering as Kafka's ConnectorsResource does (listConnectors with and without
``expand``, getConnector, getConnectorStatus; ConnectorStateInfo / ConnectorInfo /
ErrorMessage entities, docs/connect.html "REST API"), checking HTTP basic auth as Connect's
BasicAuthSecurityRestExtension does (401 + ``WWW-Authenticate: Basic``).

What requests-mock cannot show runs here for real: urllib3's Retry (5xx then success, 429
with Retry-After, a Retry-After past the deadline), the request timeout, the Authorization
header on the wire, TLS off and on, CA verification success and failure. Waits are
condition-based: a hung request is released when the test ends, sleeps of the retry policy
are recorded instead of slept.
"""

from __future__ import annotations

import base64
import socket
import time

import pytest

from airflow_provider_kgroups.connect import ConnectClusterConfig, ConnectStatus, fetch_connect_evidence
from demo.connectserver import Connector, ConnectServer, error_body
from tests.support.fakekafka import make_self_signed_cert, server_ssl_context

PASSWORD = "pw-for-the-local-connect"
CONNECTORS = [
    Connector("orders-sink"),
    Connector("archive-sink", "STOPPED", ()),
    Connector("orders sink 2", "PAUSED", ("PAUSED",)),
]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_self_signed_cert(tmp_path_factory.mktemp("connect-tls"))


@pytest.fixture
def sleeps(monkeypatch):
    """urllib3's Retry sleeps through ``time.sleep``: record the waits of this (the test's)
    thread instead of sleeping. ``time.sleep`` is process-wide, so threads other tests left
    running (consumers, fake clusters, the HTTP server itself) keep sleeping for real."""
    import threading

    import urllib3.util.retry

    slept: list[float] = []
    real_sleep = urllib3.util.retry.time.sleep
    caller = threading.current_thread()

    def sleep(seconds: float) -> None:
        if threading.current_thread() is caller:
            slept.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(urllib3.util.retry.time, "sleep", sleep)
    return slept


def verdicts(evidence) -> dict[str, ConnectStatus]:
    return {
        g: evidence.for_group(g).status
        for g in ("connect-orders-sink", "connect-archive-sink", "connect-orders sink 2", "connect-gone")
    }


EXPECTED = {
    "connect-orders-sink": ConnectStatus.ACTIVE,
    "connect-archive-sink": ConnectStatus.KEEP,
    "connect-orders sink 2": ConnectStatus.KEEP,
    "connect-gone": ConnectStatus.CONNECTOR_GONE,
}


def test_end_to_end_tls_basic_auth_and_ca_verification(certs, tmp_path):
    """One real read over TLS with basic auth and the CA bundle; then the failures the same
    transport must turn into UNAVAILABLE: wrong password (401), the system trust store
    (self-signed: verification fails), no verification (works), plain HTTP to a TLS port."""
    token = "Basic " + base64.b64encode(f"svc:{PASSWORD}".encode()).decode()
    with ConnectServer(CONNECTORS, auth=("svc", PASSWORD), ssl_context=server_ssl_context(certs)) as server:
        good = ConnectClusterConfig.create(server.url, username="svc", password=PASSWORD, verify=certs.cert)
        evidence = fetch_connect_evidence([good], timeout_s=20)
        assert evidence.complete and verdicts(evidence) == EXPECTED
        assert [(r.path, r.authorization) for r in server.requests] == [
            ("/connectors?expand=status&expand=info", token)
        ]

        server.requests.clear()
        wrong = ConnectClusterConfig.create(server.url, username="svc", password="wrong", verify=certs.cert)
        evidence = fetch_connect_evidence([wrong], timeout_s=20)
        assert set(verdicts(evidence).values()) == {ConnectStatus.UNAVAILABLE}
        assert "HTTP 401" in evidence.failures[0].reason and "wrong" not in evidence.failures[0].reason
        assert len(server.requests) == 1  # a 401 is not retried

        server.requests.clear()
        system_store = ConnectClusterConfig.create(server.url, username="svc", password=PASSWORD, verify=True)
        evidence = fetch_connect_evidence([system_store], timeout_s=20)
        assert set(verdicts(evidence).values()) == {ConnectStatus.UNAVAILABLE}
        assert (
            "TLS failed" in evidence.failures[0].reason
            and "CERTIFICATE_VERIFY_FAILED" in evidence.failures[0].reason
        )
        assert server.requests == []  # the handshake failed before any request

        other_ca = make_self_signed_cert(tmp_path)  # another self-signed CA, not the server's
        wrong_ca = ConnectClusterConfig.create(
            server.url, username="svc", password=PASSWORD, verify=other_ca.cert
        )
        evidence = fetch_connect_evidence([wrong_ca], timeout_s=20)
        assert "TLS failed" in evidence.failures[0].reason

        unverified = ConnectClusterConfig.create(server.url, username="svc", password=PASSWORD, verify=False)
        with pytest.warns(Warning, match="Unverified HTTPS"):
            evidence = fetch_connect_evidence([unverified], timeout_s=20)
        assert evidence.complete and verdicts(evidence) == EXPECTED

        plain = ConnectClusterConfig.create(server.url.replace("https://", "http://"), retries=0)
        evidence = fetch_connect_evidence([plain], timeout_s=20)
        assert not evidence.complete and "unreachable" in evidence.failures[0].reason


def test_plain_http_legacy_worker_per_connector_calls():
    """A worker without ``expand`` (pre KIP-465): list of names, then info and status per
    connector, names quoted on the wire and unquoted by the server."""
    with ConnectServer(CONNECTORS, legacy=True) as server:
        evidence = fetch_connect_evidence([ConnectClusterConfig.create(server.url)], timeout_s=20)
        assert evidence.complete and verdicts(evidence) == EXPECTED
        assert [r.path for r in server.requests] == [
            "/connectors?expand=status&expand=info",
            "/connectors/archive-sink",
            "/connectors/archive-sink/status",
            "/connectors/orders%20sink%202",
            "/connectors/orders%20sink%202/status",
            "/connectors/orders-sink",
            "/connectors/orders-sink/status",
        ]
        assert len(server.requests) == 7 and all(r.authorization is None for r in server.requests)


def test_5xx_then_success_is_retried_with_backoff(sleeps):
    """urllib3 Retry on 503 and 500 (status_forcelist), exponential backoff between them."""
    with ConnectServer(CONNECTORS) as server:
        server.script = [(503, error_body(503, "worker starting"), {}), (500, error_body(500, "oops"), {})]
        config = ConnectClusterConfig.create(server.url, retries=3, backoff_s=0.25)
        evidence = fetch_connect_evidence([config], timeout_s=20)
        assert evidence.complete and verdicts(evidence) == EXPECTED
        assert len(server.requests) == 3
        # urllib3: no wait before the first retry, then backoff_factor * 2 ** (n - 1)
        assert sleeps == [0.5]


def test_5xx_left_after_the_retries_fails_closed(sleeps):
    with ConnectServer(CONNECTORS) as server:
        server.script = [(502, {}, {})] * 3
        evidence = fetch_connect_evidence(
            [ConnectClusterConfig.create(server.url, retries=2, backoff_s=0)], timeout_s=20
        )
        assert set(verdicts(evidence).values()) == {ConnectStatus.UNAVAILABLE}
        assert "HTTP 502 Bad Gateway after retries" in evidence.failures[0].reason
        assert len(server.requests) == 3 and sleeps == []


def test_429_waits_as_retry_after_says(sleeps):
    with ConnectServer(CONNECTORS) as server:
        server.script = [(429, error_body(429, "slow down"), {"Retry-After": "2"})]
        evidence = fetch_connect_evidence(
            [ConnectClusterConfig.create(server.url, backoff_s=0.1)], timeout_s=20
        )
        assert evidence.complete and verdicts(evidence) == EXPECTED
        assert len(server.requests) == 2 and sleeps == [2.0]


def test_retry_after_past_the_deadline_is_not_waited_for(sleeps):
    """A Retry-After longer than the caller's deadline: no wait, no retry, fail closed."""
    with ConnectServer(CONNECTORS) as server:
        server.script = [(429, error_body(429, "slow down"), {"Retry-After": "120"})]
        evidence = fetch_connect_evidence([ConnectClusterConfig.create(server.url)], timeout_s=10)
        assert set(verdicts(evidence).values()) == {ConnectStatus.UNAVAILABLE}
        assert "HTTP 429" in evidence.failures[0].reason and "slow down" in evidence.failures[0].reason
        assert len(server.requests) == 1 and sleeps == []


def test_request_timeout_runs_for_real():
    """The server holds the request until the test ends; the client gives up after its
    timeout (0.3 s) and the evidence says why. Bounded: the whole read ends well inside the
    deadline."""
    with ConnectServer(CONNECTORS) as server:
        server.hang.set()
        config = ConnectClusterConfig.create(server.url, timeout_s=0.3, retries=0)
        started = time.monotonic()
        evidence = fetch_connect_evidence([config], timeout_s=20)
        assert time.monotonic() - started < 10
        assert set(verdicts(evidence).values()) == {ConnectStatus.UNAVAILABLE}
        assert "no answer within 0.3 s" in evidence.failures[0].reason
        assert len(server.requests) == 1


def test_deadline_caps_the_request_timeout():
    """timeout_s of the cluster is 30 s but the caller's deadline is 0.5 s: the request's
    timeout is what is left of the deadline."""
    with ConnectServer(CONNECTORS) as server:
        server.hang.set()
        config = ConnectClusterConfig.create(server.url, timeout_s=30, retries=3)
        started = time.monotonic()
        evidence = fetch_connect_evidence([config], timeout_s=0.5)
        assert time.monotonic() - started < 10
        assert not evidence.complete and "no answer within" in evidence.failures[0].reason


def test_connection_refused_is_unreachable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    config = ConnectClusterConfig.create(f"http://127.0.0.1:{port}", retries=1, backoff_s=0)
    evidence = fetch_connect_evidence([config], timeout_s=10)
    assert evidence.for_group("connect-orders-sink").status is ConnectStatus.UNAVAILABLE
    assert (
        "unreachable" in evidence.failures[0].reason and "Connection refused" in evidence.failures[0].reason
    )


def test_a_worker_still_starting_is_unavailable_over_real_http():
    """The 404 a restarting real worker gives before its REST resources exist, over the wire."""
    with ConnectServer(CONNECTORS) as server:
        server.starting = True
        evidence = fetch_connect_evidence([ConnectClusterConfig.create(server.url, retries=0)], timeout_s=10)
        assert set(verdicts(evidence).values()) == {ConnectStatus.UNAVAILABLE}
        assert "HTTP 404 Not Found: Not Found" in evidence.failures[0].reason
        server.starting = False
        assert (
            verdicts(fetch_connect_evidence([ConnectClusterConfig.create(server.url)], timeout_s=10))
            == EXPECTED
        )
