"""The demo's Kafka Connect: a real worker (``demo.kafka_connect.ConnectWorker``: ConnectDistributed
from Maven Central's jars) beside Apache Kafka, with sink connector ``orders-sink`` created PAUSED
(KIP-980 ``initial_state``: its task never starts, so no consumer joins ``connect-orders-sink``,
whose offsets and history the demo seeds) and no connector ``legacy-sink``. The cleanup asks it
over Connect's REST API, as in production. Where the demo fell back to Tansu, the stand-in REST
server (``demo.connectserver``) answers the same instead, and the line says so."""

from __future__ import annotations

import contextlib

from demo.connectserver import ConnectServer
from demo.kafka_connect import ConnectWorker
from demo.scenario import CONNECT_CONN_ID, CONNECTORS, TOPIC, WORK

SINK = "orders-sink"


def start_connect(stack: contextlib.ExitStack, bootstrap: str, fallback: bool) -> tuple[str, str]:
    """Start Connect; returns its REST URL and the demo's line about it."""
    if fallback:
        server = stack.enter_context(ConnectServer(CONNECTORS))
        return server.url, (
            f"a stand-in Kafka Connect REST API on {server.url} (connection {CONNECT_CONN_ID}; Tansu cannot host "
            "a real worker): connector orders-sink PAUSED; no connector legacy-sink"
        )
    (WORK / "connect").mkdir(parents=True, exist_ok=True)
    worker = stack.enter_context(ConnectWorker(bootstrap=bootstrap, workdir=WORK / "connect"))
    worker.create_connector(
        SINK, worker.file_sink(TOPIC, WORK / "connect" / f"{SINK}.out"), initial_state="PAUSED"
    )
    worker.wait_for_state(SINK, "PAUSED")
    return worker.url, (
        f"a real Kafka Connect worker (ConnectDistributed {worker.version}) on {worker.url} (connection "
        f"{CONNECT_CONN_ID}): sink connector {SINK} created PAUSED (it never consumed: group connect-{SINK} "
        "keeps its seeded offsets); no connector legacy-sink"
    )
