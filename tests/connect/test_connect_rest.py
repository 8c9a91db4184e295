"""Kafka Connect REST answers -> evidence per consumer group, with ``requests-mock``.

Every answer is shaped as Apache Kafka's ConnectorsResource returns it
(connect/runtime/src/main/java/org/apache/kafka/connect/runtime/rest/resources/
ConnectorsResource.java: listConnectors with/without ``expand``, getConnector,
getConnectorStatus; entities ConnectorStateInfo, ConnectorInfo, ErrorMessage) and as
documented in Kafka's docs/connect.html "REST API" and Confluent's "Kafka Connect REST
Interface" (``GET /connectors?expand=status&expand=info``); the builders are in
demo/connectserver.py. Group ids follow Worker.baseConsumerConfigs /
SinkUtils.consumerGroupId ("connect-" + name) and ``consumer.override.group.id``
(DistributedHerder.validateSinkConnectorGroupId).

Retries (5xx then success, 429 with Retry-After) are urllib3's, below the transport adapter
that requests-mock replaces: they run against the real local server in
test_connect_http.py. Here a 5xx is the answer left after the retries.
"""

from __future__ import annotations

import base64
import json
import logging

import pytest
import requests

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.connect import (
    ConnectClusterConfig,
    ConnectStatus,
    connect_configs_from_connection,
    connect_configs_from_properties,
    fetch_connect_evidence,
    split_connect_properties,
)
from demo.connectserver import (
    Connector,
    connector_info,
    connector_status,
    error_body,
    expanded,
    not_ready_body,
)

URL = "http://connect:8083"
URL_B = "https://connect-b.example:8443"
EXPAND = URL + "/connectors?expand=status&expand=info"
PASSWORD = "s3cret-Connect-pw"

SCENARIO = [
    Connector("orders-sink"),
    Connector("paused-sink", "PAUSED", ("PAUSED",)),
    Connector("stopped-sink", "STOPPED", ()),
    Connector("failed-sink", "FAILED", ("FAILED",)),
    Connector("unassigned-sink", "UNASSIGNED", ("UNASSIGNED",)),
    Connector("task-failed", "RUNNING", ("RUNNING", "FAILED")),
    Connector(
        "override-sink", "PAUSED", ("PAUSED",), config={"consumer.override.group.id": "billing-archive"}
    ),
    Connector("orders-source", "RUNNING", ("RUNNING",), type="source"),
]


def config(url: str = URL, **kwargs) -> ConnectClusterConfig:
    return ConnectClusterConfig.create(url, backoff_s=0, **kwargs)


def paths(requests_mock) -> list[str]:
    return [f"{r.method} {r.path}{'?' + r.query if r.query else ''}" for r in requests_mock.request_history]


def assert_scenario(evidence, url: str = URL) -> None:
    """Every group of SCENARIO, its exact status, connector and the words of its reason."""
    expected = {
        "connect-orders-sink": (ConnectStatus.ACTIVE, "orders-sink", "is RUNNING (1 task(s) RUNNING)"),
        "connect-paused-sink": (ConnectStatus.KEEP, "paused-sink", "is PAUSED: it resumes from this group's"),
        "connect-stopped-sink": (
            ConnectStatus.KEEP,
            "stopped-sink",
            f"sanctioned reset DELETE {url}/connectors/stopped-sink/offsets (Kafka 3.6+, KIP-875",
        ),
        "connect-failed-sink": (ConnectStatus.KEEP, "failed-sink", "is FAILED: it resumes"),
        "connect-unassigned-sink": (ConnectStatus.KEEP, "unassigned-sink", "is UNASSIGNED"),
        "connect-task-failed": (ConnectStatus.KEEP, "task-failed", "is RUNNING but task 1 FAILED"),
        "billing-archive": (ConnectStatus.KEEP, "override-sink", "is PAUSED"),
        "connect-override-sink": (
            ConnectStatus.KEEP,
            "override-sink",
            "uses group 'billing-archive' (consumer.override.group.id)",
        ),
        "connect-orders-source": (ConnectStatus.KEEP, "orders-source", "is a source connector"),
        "connect-old-sink": (ConnectStatus.CONNECTOR_GONE, "old-sink", "its connector no longer exists"),
    }
    for group, (status, connector, words) in expected.items():
        verdict = evidence.for_group(group)
        assert verdict is not None, group
        assert (verdict.status, verdict.connector) == (status, connector), (group, verdict)
        assert words in verdict.reason, (group, verdict.reason)
        assert verdict.cluster_url == (None if status is ConnectStatus.CONNECTOR_GONE else url), group
        assert verdict.allows_deletion is (status is ConnectStatus.CONNECTOR_GONE)
    assert evidence.for_group("payments") is None
    assert evidence.for_group("connect-cluster", protocol_type="connect").status is ConnectStatus.KEEP
    assert evidence.complete and evidence.failures == ()
    assert evidence.groups() == sorted(
        [
            "connect-orders-sink",
            "connect-paused-sink",
            "connect-stopped-sink",
            "connect-failed-sink",
            "connect-unassigned-sink",
            "connect-task-failed",
            "billing-archive",
        ]
    )


# -- answer shapes ------------------------------------------------------------------------------


def test_expand_form_maps_every_sink_connector_to_its_group(requests_mock):
    """listConnectors with expand=status&expand=info: one request for the whole cluster."""
    requests_mock.get(EXPAND, json=expanded(SCENARIO))
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    assert_scenario(evidence)
    assert paths(requests_mock) == ["GET /connectors?expand=status&expand=info"]
    assert requests_mock.request_history[0].headers["Accept"] == "application/json"
    assert "Authorization" not in requests_mock.request_history[0].headers


def test_legacy_list_form_falls_back_to_per_connector_calls(requests_mock):
    """Connect before KIP-465 ignores ``expand`` and answers the list of names; then
    getConnector and getConnectorStatus per connector (names URL-quoted)."""
    connectors = [*SCENARIO, Connector("with space/slash", "PAUSED", ("PAUSED",))]
    requests_mock.get(EXPAND, json=sorted(c.name for c in connectors))
    for c in connectors:
        quoted = requests.utils.quote(c.name, safe="")
        requests_mock.get(f"{URL}/connectors/{quoted}", json=c.info())
        requests_mock.get(f"{URL}/connectors/{quoted}/status", json=c.status())
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    assert_scenario_without = evidence.for_group("connect-with space/slash")
    assert (
        assert_scenario_without.status is ConnectStatus.KEEP and "is PAUSED" in assert_scenario_without.reason
    )
    assert len(requests_mock.request_history) == 1 + 2 * len(connectors)
    assert "GET /connectors/with%20space%2fslash/status" in paths(requests_mock)
    # the rest is exactly the expand form's evidence
    requests_mock.reset()
    requests_mock.get(EXPAND, json=sorted(c.name for c in SCENARIO))
    for c in SCENARIO:
        requests_mock.get(f"{URL}/connectors/{c.name}", json=c.info())
        requests_mock.get(f"{URL}/connectors/{c.name}/status", json=c.status())
    assert_scenario(fetch_connect_evidence([config()], timeout_s=10))


def test_connector_vanishing_between_list_and_details_is_gone(requests_mock):
    """A 404 (ErrorMessage) from getConnector or getConnectorStatus after the listing named the
    connector: it was deleted meanwhile, left out as listConnectors' expand form leaves it out
    (NotFoundException caught there). Its group becomes CONNECTOR_GONE."""
    alive = Connector("orders-sink")
    requests_mock.get(EXPAND, json=["gone-before-info", "gone-before-status", "orders-sink"])
    requests_mock.get(
        f"{URL}/connectors/gone-before-info",
        status_code=404,
        json=error_body(404, "Connector gone-before-info not found"),
    )
    requests_mock.get(f"{URL}/connectors/gone-before-status", json=connector_info("gone-before-status"))
    requests_mock.get(
        f"{URL}/connectors/gone-before-status/status",
        status_code=404,
        json=error_body(404, "No status found for connector gone-before-status"),
    )
    requests_mock.get(f"{URL}/connectors/orders-sink", json=alive.info())
    requests_mock.get(f"{URL}/connectors/orders-sink/status", json=alive.status())
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    assert [r.name for r in evidence.connectors] == ["orders-sink"]
    for group in ("connect-gone-before-info", "connect-gone-before-status"):
        assert evidence.for_group(group).status is ConnectStatus.CONNECTOR_GONE
    assert evidence.for_group("connect-orders-sink").status is ConnectStatus.ACTIVE
    assert paths(requests_mock) == [
        "GET /connectors?expand=status&expand=info",
        "GET /connectors/gone-before-info",
        "GET /connectors/gone-before-status",
        "GET /connectors/gone-before-status/status",
        "GET /connectors/orders-sink",
        "GET /connectors/orders-sink/status",
    ]


def test_type_unknown_or_missing_is_kept_as_a_possible_sink(requests_mock):
    """ConnectorType UNKNOWN (plugin not loadable) and answers without ``type`` (very old
    workers): the group might be a sink's, so it is kept, never ACTIVE nor GONE."""
    body = {
        "no-plugin": {
            "status": connector_status("no-plugin", "FAILED", (), type_="unknown"),
            "info": connector_info("no-plugin", type_="unknown"),
        },
        "old-worker": {
            "status": connector_status("old-worker", type_=None),
            "info": connector_info("old-worker", type_=None),
        },
    }
    requests_mock.get(EXPAND, json=body)
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    for group, words in (("connect-no-plugin", "is FAILED"), ("connect-old-worker", "is RUNNING")):
        verdict = evidence.for_group(group)
        assert verdict.status is ConnectStatus.KEEP and words in verdict.reason
        assert "type 'unknown'" in verdict.reason
    assert len(requests_mock.request_history) == 1


def test_info_null_for_a_connector_whose_config_is_gone(requests_mock):
    """AbstractHerder.connectorInfo returns null when the config is already removed; the
    status still says sink: the connect-<name> group is judged by its state."""
    requests_mock.get(
        EXPAND,
        json={
            "orders-sink": {"status": connector_status("orders-sink", "PAUSED", ("PAUSED",)), "info": None}
        },
    )
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    assert evidence.connectors[0].config_known is False
    assert evidence.for_group("connect-orders-sink").status is ConnectStatus.KEEP


# -- failures: fail closed ----------------------------------------------------------------------


def assert_fail_closed(evidence, words: str) -> None:
    for group in ("connect-orders-sink", "connect-old-sink"):
        verdict = evidence.for_group(group)
        assert verdict.status is ConnectStatus.UNAVAILABLE, verdict
        assert words in verdict.reason, verdict.reason
        assert "could not be read" in verdict.reason and verdict.cluster_url == URL
    assert evidence.for_group("payments") is None
    assert not evidence.complete and len(evidence.failures) == 1


@pytest.mark.parametrize(
    "status, words",
    [
        (401, "HTTP 401"),
        (403, "HTTP 403"),
        (500, "HTTP 500"),
        (503, "HTTP 503"),
        (409, "HTTP 409"),
        (404, "HTTP 404"),
    ],
)
def test_error_status_fails_closed(requests_mock, status, words):
    """401/403 (BasicAuthSecurityRestExtension / a gateway), a 5xx left after the retries,
    409 (a proxy's, or a legacy worker's per-connector call during a rebalance: the real worker's
    expanded listing reads its config snapshot and never answers 409), 404 on /connectors itself:
    every Connect group UNAVAILABLE."""
    requests_mock.get(EXPAND, status_code=status, json=error_body(status, f"the {status} message"))
    evidence = fetch_connect_evidence([config(username="svc", password=PASSWORD)], timeout_s=10)
    assert_fail_closed(evidence, words)
    assert f"the {status} message" in evidence.failures[0].reason or status in (401, 403)
    if status in (401, 403):
        assert "as user 'svc'" in evidence.failures[0].reason
    assert len(requests_mock.request_history) == 1


def test_a_worker_still_starting_fails_closed(requests_mock):
    """A restarting real worker answers 404 with ``{"message": "Not Found", "url", "status"}`` (not
    Connect's ErrorMessage) until its REST resources are registered (tests/apachekafka/
    test_connect_restart.py sees it): never taken for "no connectors"."""
    requests_mock.get(EXPAND, status_code=404, json=not_ready_body(EXPAND))
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    assert_fail_closed(evidence, "HTTP 404")
    assert evidence.failures[0].reason.endswith(": Not Found")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"text": "<html>502 Bad Gateway</html>"}, "not JSON"),
        ({"text": '{"orders-sink": {"status": '}, "not JSON"),
        ({"json": "connectors"}, "a JSON str"),
        ({"json": {"orders-sink": {"status": connector_status("orders-sink")}}}, "lacks status/info"),
        (
            {"json": {"orders-sink": {"status": {"name": "orders-sink"}, "info": None}}},
            "not a ConnectorStateInfo",
        ),
        (
            {"json": {"orders-sink": {"status": {"connector": {"worker_id": "w"}}, "info": None}}},
            "no connector state",
        ),
        (
            {
                "json": {
                    "x": {
                        "status": {"connector": {"state": "RUNNING"}, "tasks": [{"state": "RUNNING"}]},
                        "info": None,
                    }
                }
            },
            "lacks id/state",
        ),
        ({"json": {"x": {"status": connector_status("x"), "info": ["x"]}}}, "not a ConnectorInfo"),
        ({"json": [1, 2]}, "a JSON list"),
    ],
)
def test_unparseable_answer_fails_closed(requests_mock, kwargs, words):
    requests_mock.get(EXPAND, **kwargs)
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    assert_fail_closed(evidence, words)
    assert len(requests_mock.request_history) == 1


@pytest.mark.parametrize(
    "exc, words",
    [
        (requests.exceptions.ConnectTimeout, "no answer within 10 s"),
        (requests.exceptions.ReadTimeout, "no answer within 10 s"),
        (requests.exceptions.ConnectionError, "unreachable"),
        (requests.exceptions.SSLError, "TLS failed"),
    ],
)
def test_transport_errors_fail_closed(requests_mock, exc, words):
    requests_mock.get(EXPAND, exc=exc)
    evidence = fetch_connect_evidence([config()], timeout_s=30)
    assert_fail_closed(evidence, words)


@pytest.mark.parametrize(
    "info, status", [(None, connector_status("orders-sink")), (connector_info("orders-sink"), None)]
)
def test_legacy_null_details_are_not_taken_for_a_vanished_connector(requests_mock, info, status):
    """getConnector / getConnectorStatus answer an entity or 404, never null: a null body is
    not "deleted meanwhile" (that would make its group CONNECTOR_GONE) but unparseable."""
    requests_mock.get(EXPAND, json=["orders-sink"])
    requests_mock.get(f"{URL}/connectors/orders-sink", text=json.dumps(info))
    requests_mock.get(f"{URL}/connectors/orders-sink/status", text=json.dumps(status))
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    assert_fail_closed(evidence, "is not a Connector")


def test_legacy_per_connector_failure_fails_the_whole_cluster(requests_mock):
    """Half an answer is never the whole one: a 500 on one connector's status fails the cluster."""
    requests_mock.get(EXPAND, json=["orders-sink", "other"])
    requests_mock.get(f"{URL}/connectors/orders-sink", json=connector_info("orders-sink"))
    requests_mock.get(f"{URL}/connectors/orders-sink/status", status_code=500, json=error_body(500, "boom"))
    evidence = fetch_connect_evidence([config()], timeout_s=10)
    assert_fail_closed(evidence, "HTTP 500")
    assert len(requests_mock.request_history) == 3


# -- several clusters -------------------------------------------------------------------------


def test_connector_gone_needs_every_cluster(requests_mock):
    """A group is CONNECTOR_GONE only when no configured cluster has its connector; with one
    cluster unreadable the unknown ones are UNAVAILABLE and the known ones keep their verdict."""
    requests_mock.get(EXPAND, json=expanded([Connector("a-sink", "PAUSED", ("PAUSED",))]))
    requests_mock.get(URL_B + "/connectors?expand=status&expand=info", json=expanded([Connector("b-sink")]))
    evidence = fetch_connect_evidence([config(), config(URL_B)], timeout_s=10)
    assert evidence.cluster_urls == (URL, URL_B)
    assert evidence.for_group("connect-a-sink").status is ConnectStatus.KEEP
    b = evidence.for_group("connect-b-sink")
    assert (b.status, b.cluster_url) == (ConnectStatus.ACTIVE, URL_B)
    gone = evidence.for_group("connect-c-sink")
    assert gone.status is ConnectStatus.CONNECTOR_GONE and f"in {URL}, {URL_B}" in gone.reason
    assert len(requests_mock.request_history) == 2

    requests_mock.get(URL_B + "/connectors?expand=status&expand=info", status_code=503)
    evidence = fetch_connect_evidence([config(), config(URL_B)], timeout_s=10)
    assert evidence.for_group("connect-a-sink").status is ConnectStatus.KEEP
    for group in ("connect-b-sink", "connect-c-sink"):
        verdict = evidence.for_group(group)
        assert verdict.status is ConnectStatus.UNAVAILABLE and "HTTP 503" in verdict.reason
        assert verdict.cluster_url == URL_B


def test_same_group_in_two_clusters_keeps_if_either_is_not_running(requests_mock):
    requests_mock.get(EXPAND, json=expanded([Connector("orders-sink")]))
    requests_mock.get(
        URL_B + "/connectors?expand=status&expand=info",
        json=expanded([Connector("orders-sink", "STOPPED", ())]),
    )
    verdict = fetch_connect_evidence([config(), config(URL_B)], timeout_s=10).for_group("connect-orders-sink")
    assert (verdict.status, verdict.cluster_url) == (ConnectStatus.KEEP, URL_B)
    assert "is STOPPED" in verdict.reason


def test_no_cluster_configured_tells_nothing_and_sends_nothing(requests_mock):
    evidence = fetch_connect_evidence([], timeout_s=10)
    verdict = evidence.for_group("connect-orders-sink")
    assert (
        verdict.status is ConnectStatus.UNAVAILABLE
        and "no Kafka Connect cluster is configured" in verdict.reason
    )
    assert evidence.for_group("orders") is None and not evidence.complete
    assert requests_mock.request_history == []


# -- credentials --------------------------------------------------------------------------------


def test_basic_auth_header_is_sent_and_never_logged(requests_mock, caplog):
    token = base64.b64encode(f"svc:{PASSWORD}".encode()).decode()
    caplog.set_level(logging.DEBUG)  # every logger, urllib3's included
    requests_mock.get(EXPAND, json=expanded(SCENARIO))
    requests_mock.get(
        URL_B + "/connectors?expand=status&expand=info",
        status_code=401,
        json=error_body(401, "User cannot access the resource."),
    )
    cfg = config(username="svc", password=PASSWORD)
    evidence = fetch_connect_evidence([cfg, config(URL_B, username="svc", password=PASSWORD)], timeout_s=10)
    assert requests_mock.request_history[0].headers["Authorization"] == f"Basic {token}"
    assert evidence.failures[0].cluster_url == URL_B
    text = (
        caplog.text + json.dumps(evidence.to_dict()) + repr(evidence) + repr(cfg) + json.dumps(cfg.redacted())
    )
    text += "".join(evidence.for_group(g).reason for g in ("connect-orders-sink", "connect-x"))
    assert caplog.records, "nothing was logged: the test would prove nothing"
    assert PASSWORD not in text and token not in text
    assert "could not be read" in caplog.text


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, kwargs, named",
    [
        ("connect:8083", {}, "url"),
        ("ftp://connect", {}, "url"),
        ("http://svc:pw@connect:8083", {}, "must not carry credentials"),
        ("http://connect:8083/?x=1", {}, "query"),
        ("http://connect:99999", {}, "invalid port"),
        (URL, {"username": "svc"}, "password is missing"),
        (URL, {"password": "pw"}, "username is missing"),
        (URL, {"timeout_s": 0}, "timeout_s"),
        (URL, {"timeout_s": "soon"}, "timeout_s"),
        (URL, {"retries": -1}, "retries"),
        (URL, {"verify": "/no/such/ca.pem"}, "does not exist"),
        (URL, {"verify": 3}, "verify"),
    ],
)
def test_bad_cluster_config_is_refused_before_any_call(requests_mock, url, kwargs, named):
    with pytest.raises(ConfigurationError, match=named) as info:
        ConnectClusterConfig.create(url, **kwargs)
    assert "pw" not in str(info.value).replace("password", "")
    assert requests_mock.request_history == []


def test_ca_bundle_needs_https(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    with pytest.raises(ConfigurationError, match="is not https"):
        ConnectClusterConfig.create(URL, verify=str(ca))
    assert ConnectClusterConfig.create(URL_B + "/", verify=str(ca)).verify == str(ca)
    assert ConnectClusterConfig.create(URL_B + "/", verify=str(ca)).url == URL_B


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), "10", True])
def test_bad_deadline_is_refused(requests_mock, timeout):
    with pytest.raises(ConfigurationError, match="timeout_s"):
        fetch_connect_evidence([config()], timeout_s=timeout)
    assert requests_mock.request_history == []


def test_unvalidated_configs_are_refused_before_any_call(requests_mock):
    """The plain constructor checks nothing; fetch_connect_evidence validates again."""
    for clusters, named in (
        ([ConnectClusterConfig("connect:8083")], "not an http"),
        ([ConnectClusterConfig(URL, username="svc")], "password is missing"),
        ([ConnectClusterConfig(URL, timeout_s=-1)], "timeout_s"),
        (ConnectClusterConfig(URL), "a list of ConnectClusterConfig"),
        ([URL], "got str"),
    ):
        with pytest.raises(ConfigurationError, match=named):
            fetch_connect_evidence(clusters, timeout_s=10)
    assert requests_mock.request_history == []


def test_cli_properties_and_urls(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    props = {
        "bootstrap.servers": "k:9092",
        "security.protocol": "SSL",
        "connect.basic.auth.user": "svc",
        "connect.basic.auth.password": PASSWORD,
        "connect.ssl.ca.location": str(ca),
        "connect.timeout.ms": "2500",
        "connect.retries": "1",
        "connect.retry.backoff.ms": "200",
        "connect.url": "https://c2:8083, https://c1:8083/",
    }
    kafka, connect = split_connect_properties(props)
    assert kafka == {"bootstrap.servers": "k:9092", "security.protocol": "SSL"}
    assert set(connect) == set(props) - set(kafka)
    configs = connect_configs_from_properties(props, ["https://c1:8083"])
    assert [c.url for c in configs] == ["https://c1:8083", "https://c2:8083"]
    assert {(c.username, c.password, c.verify, c.timeout_s, c.retries, c.backoff_s) for c in configs} == {
        ("svc", PASSWORD, str(ca), 2.5, 1, 0.2)
    }
    assert connect_configs_from_properties({"bootstrap.servers": "k:9092"}) == []
    assert connect_configs_from_properties({"connect.ssl.verify": "false"}, ["https://c"])[0].verify is False


@pytest.mark.parametrize(
    "props, urls, named",
    [
        (
            {"connect.basic.auth.pasword": "x"},
            ["http://c"],
            "unknown Kafka Connect property connect.basic.auth.pasword",
        ),
        ({"connect.basic.auth.user": "svc"}, [], "no Kafka Connect URL"),
        ({"connect.basic.auth.user": "svc"}, ["http://c"], "connect.basic.auth.password is missing"),
        ({"connect.timeout.ms": "fast"}, ["http://c"], "connect.timeout.ms must be a number"),
        ({"connect.timeout.ms": "0"}, ["http://c"], "connect.timeout.ms must be > 0"),
        ({"connect.retries": "1.5"}, ["http://c"], "connect.retries must be a whole number"),
        ({"connect.ssl.verify": "maybe"}, ["https://c"], "connect.ssl.verify must be true or false"),
        ({"connect.ssl.verify": "false", "connect.ssl.ca.location": "/x"}, ["https://c"], "drop one of them"),
        ({"connect.ssl.ca.location": "/no/ca.pem"}, ["https://c"], "connect.ssl.ca.location: CA bundle"),
        ({}, ["c:8083"], "--connect-url/connect.url 'c:8083' is not an http"),
    ],
)
def test_cli_properties_errors_name_the_property(props, urls, named):
    with pytest.raises(ConfigurationError) as info:
        connect_configs_from_properties(props, urls)
    assert named in str(info.value)


def test_airflow_connection_fields(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    configs = connect_configs_from_connection(
        "kgroups_connect",
        conn_id="c",
        host="connect-a, https://connect-b:9443/gw",
        port=8083,
        schema="https",
        login="svc",
        password=PASSWORD,
        extra={"ca_bundle": str(ca), "timeout_s": "4", "retries": 2},
    )
    assert [c.url for c in configs] == ["https://connect-a:8083", "https://connect-b:9443/gw"]
    assert {(c.username, c.password, c.verify, c.timeout_s, c.retries) for c in configs} == {
        ("svc", PASSWORD, str(ca), 4.0, 2)
    }
    plain = connect_configs_from_connection(
        "kgroups_connect", host="connect", port=8083, extra={"verify": "false"}
    )
    assert (plain[0].url, plain[0].verify, plain[0].uses_auth) == ("http://connect:8083", False, False)
    for kwargs, named in (
        ({"host": None}, "no Kafka Connect URL"),
        ({"host": "c", "extra": {"verfy": "x"}}, "unknown option(s) verfy"),
        ({"host": "c", "login": "svc"}, "Password is missing"),
        ({"host": "c", "extra": {"timeout_s": "-3"}}, "timeout_s must be > 0"),
    ):
        with pytest.raises(ConfigurationError, match="connection 'x'") as info:
            connect_configs_from_connection("kgroups_connect", conn_id="x", **kwargs)
        assert named in str(info.value)
    with pytest.raises(ConfigurationError, match="not a Kafka Connect REST connection"):
        connect_configs_from_connection("kafka", host="c")


def test_the_connect_package_imports_no_airflow():
    """Imports run one way: connect/ is below hooks/ and must not load Airflow."""
    import subprocess
    import sys

    code = "import sys, airflow_provider_kgroups.connect; assert 'airflow' not in sys.modules, sorted(sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
