"""Metrics through Airflow's Stats, received by a real UDP StatsD listener on loopback.

Airflow's StatsD backend is configured the way a deployment does it (``[metrics] statsd_on``,
host, port, prefix, ``statsd_influxdb_enabled`` for tags) and built with Airflow's own factory
(``stats.initialize(factory=get_stats_factory())``, what the task runner does when a task
starts; ``dag.test()`` runs tasks in this process, so the test does it once per scenario).
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from airflow_provider_kgroups.lag.gate import LagGate
from airflow_provider_kgroups.lag.seconds import GroupLagSeconds, LagSecondsBasis, PartitionLagSeconds
from tests.support.builders import group, partition, seed_history, snapshot
from tests.support.fakekafka import Err, FakeCluster


class StatsdListener:
    """A UDP socket on 127.0.0.1 collecting StatsD lines (``name[,tag=v...]:value|type``)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.lines: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65535)
            except TimeoutError:
                continue
            self.lines.extend(data.decode().splitlines())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()

    def matching(self, name: str, **tags: str) -> list[tuple[float, str]]:
        """(value, type) of the lines for ``name`` whose tags include ``tags``."""
        out = []
        for line in list(self.lines):
            head, _, rest = line.partition(":")
            stat, *pairs = head.split(",")
            if stat != name or not all(f"{k}={v}" in pairs for k, v in tags.items()):
                continue
            value, _, kind = rest.partition("|")
            out.append((float(value), kind))
        return out

    def wait_for(
        self, name: str, count: int = 1, timeout: float = 30.0, **tags: str
    ) -> list[tuple[float, str]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.matching(name, **tags)
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"no {count} x {name} {tags} within {timeout} s; got {self.lines[-20:]}")


@pytest.fixture
def statsd(monkeypatch):
    """Airflow's Stats pointed at a listener of this test; ``tags`` switches InfluxDB tags."""
    listener = StatsdListener()

    def configure(tags: bool = True) -> StatsdListener:
        for name, value in {
            "STATSD_ON": "True",
            "STATSD_HOST": "127.0.0.1",
            "STATSD_PORT": str(listener.port),
            "STATSD_PREFIX": "airflow",
            "STATSD_INFLUXDB_ENABLED": str(tags),
        }.items():
            monkeypatch.setenv(f"AIRFLOW__METRICS__{name}", value)
        _rebuild_stats()
        return listener

    yield configure
    monkeypatch.delenv("AIRFLOW__METRICS__STATSD_ON")
    _rebuild_stats()  # back to no metrics
    listener.close()


def _rebuild_stats() -> None:
    """Airflow's Stats built again from the [metrics] settings now in the environment, as each
    Airflow builds it."""
    from airflow.providers.common.compat.sdk import Stats

    try:
        from airflow.sdk.observability.metrics.stats_utils import get_stats_factory
    except ImportError:  # before 3.2
        get_stats_factory = None
    try:
        from airflow.sdk.observability import stats
    except ImportError:
        stats = None
    if stats is not None and hasattr(stats, "initialize"):  # 3.3+
        stats.initialize(factory=get_stats_factory(), export_legacy_names=False)
    elif get_stats_factory is not None:  # 3.2: the Task SDK's Stats, initialized by its metaclass
        Stats.initialize(factory=get_stats_factory(Stats))
    else:  # Airflow 2 - 3.1: a metaclass that builds the logger on first use from its factory
        from airflow.metrics import statsd_logger
        from airflow.metrics.base_stats_logger import NoStatsLogger
        from airflow.providers.common.compat.sdk import conf

        factory = (
            statsd_logger.get_statsd_logger if conf.getboolean("metrics", "statsd_on") else NoStatsLogger
        )
        for attribute, value in (("factory", factory), ("instance", None)):
            setattr(type(Stats), attribute, value)
            if attribute in vars(Stats):  # the metaclass keeps the logger on the class it built it for
                type.__setattr__(Stats, attribute, value)


@pytest.mark.realbroker
def test_a_gate_that_waits_reports_lag_pending_groups_and_its_wait(
    run_dag, seed, broker, kgroups_conn, name_prefix, statsd
):
    listener = statsd(tags=True)
    kgroups_conn("kgroups_test", host=broker.bootstrap)
    topic, group_id = f"{name_prefix}metrics", f"{name_prefix}lander"
    seed.create_topic(topic, 2)
    seed.produce(topic, 0, 5)
    seed.produce(topic, 1, 3)
    seed.commit(group_id, {(topic, 0): 1, (topic, 1): 1})  # 4 + 2 records behind

    def catch_up_after_two_checks() -> None:
        listener.wait_for("airflow.kgroups.gate.checks", 2, timeout=60)
        seed.commit(group_id, {(topic, 0): 5, (topic, 1): 3})

    helper = threading.Thread(target=catch_up_after_two_checks, daemon=True)
    helper.start()
    result = run_dag("kg_sensor_poke", {"group": group_id, "topic": topic})
    helper.join(60)
    assert result.state == "success", result
    ids = {"dag_id": "kg_sensor_poke", "task_id": "gate"}
    totals = [v for v, kind in listener.matching("airflow.kgroups.gate.total_lag", **ids) if kind == "g"]
    assert totals[0] == 6 and totals[-1] == 0, totals
    pending = [v for v, _ in listener.matching("airflow.kgroups.gate.groups_pending", **ids)]
    assert pending[0] == 1 and pending[-1] == 0, pending
    per_topic = [
        v for v, _ in listener.matching("airflow.kgroups.gate.lag", group=group_id, topic=topic, **ids)
    ]
    assert per_topic[0] == 6 and per_topic[-1] == 0
    ((wait_ms, kind),) = listener.wait_for("airflow.kgroups.gate.wait", **ids)
    assert kind == "ms" and 0 < wait_ms <= result.seconds * 1000
    # a barrier gate does not measure seconds: nothing is sent rather than a made-up value
    assert listener.matching("airflow.kgroups.gate.max_lag_seconds") == []


def test_a_cleanup_run_reports_candidates_deletions_skips_and_failures(
    run_dag, kgroups_conn, tmp_path, statsd
):

    listener = statsd(tags=True)
    with FakeCluster.running_in_thread(brokers=1) as cluster:
        cluster.add_topic("orders", partitions=1, end_offsets=[60])
        dead = ["dead-1", "dead-2", "dead-3", "broken"]
        for group_id in dead:
            cluster.add_group(group_id, offsets={("orders", 0): 50})
        cluster.inject_error("DeleteGroups", Err.GROUP_AUTHORIZATION_FAILED, key="broken")
        history = str(tmp_path / "history")
        seed_history(history, {g: [(240, 50, 60)] for g in dead})
        kgroups_conn("kgroups_fake", host=cluster.bootstrap)
        conf = {"history": history, "ids": dead, "patterns": [], "conn": "kgroups_fake", "max_deletions": 3}
        result = run_dag("kg_cleanup", {**conf, "dry_run": False})
    out = result.xcoms["cleanup"]
    ids = {"dag_id": "kg_cleanup", "task_id": "cleanup"}
    assert listener.wait_for("airflow.kgroups.cleanup.candidates", **ids) == [(4.0, "g")]
    assert listener.wait_for("airflow.kgroups.cleanup.skipped", **ids) == [(1.0, "c")]
    deleted = listener.wait_for("airflow.kgroups.cleanup.deleted", **ids)
    failed = listener.wait_for("airflow.kgroups.cleanup.failed", **ids)
    assert deleted == [(float(len(out["deleted"])), "c")] and failed == [(float(len(out["failed"])), "c")]
    assert len(out["deleted"]) + len(out["failed"]) == 3 and len(out["skipped"]) == 1
    assert listener.wait_for("airflow.kgroups.cleanup.held", **ids) == [
        (0.0, "c")
    ]  # no Kafka Connect to hold it
    assert listener.wait_for("airflow.kgroups.cleanup.refused", **ids) == [(0.0, "c")]  # no NON_EMPTY_GROUP


def test_a_cleanup_held_for_an_unreadable_kafka_connect_reports_the_held_groups(
    run_dag, kgroups_conn, tmp_path, statsd
):
    """Issue 18 item 7: a Kafka Connect cluster refusing the credentials holds every deletion of the
    run; the held groups are counted (``kgroups.cleanup.held``), none as deleted or skipped."""
    from demo.connectserver import ConnectServer

    listener = statsd(tags=True)
    dead = ["dead-1", "dead-2"]
    with (
        FakeCluster.running_in_thread(brokers=1) as cluster,
        ConnectServer([], auth=("svc", "right")) as locked,
    ):
        cluster.add_topic("orders", partitions=1, end_offsets=[60])
        for group_id in dead:
            cluster.add_group(group_id, offsets={("orders", 0): 50})
        history = str(tmp_path / "history")
        seed_history(history, {g: [(240, 50, 60)] for g in dead})
        kgroups_conn("kgroups_fake", host=cluster.bootstrap)
        kgroups_conn(
            "kg_connect_locked",
            conn_type="kgroups_connect",
            host=locked.url,
            login="svc",
            password="wrong",
            extra=json.dumps({"retries": 0}),
        )
        result = run_dag(
            "kg_cleanup_safety",
            {
                "history": history,
                "ids": dead,
                "conn": "kgroups_fake",
                "connect": ["kg_connect_locked"],
                "max_deletions_percent": 100,
                "dry_run": False,
            },
        )
        assert all(cluster.has_group(g) for g in dead)
    out = result.xcoms["cleanup"]
    assert out["held"] == dead and out["connect_unreadable"] == [locked.url] and out["deleted"] == []
    ids = {"dag_id": "kg_cleanup_safety", "task_id": "cleanup"}
    assert listener.wait_for("airflow.kgroups.cleanup.held", **ids) == [(2.0, "c")]
    for name in ("deleted", "skipped", "failed"):
        assert listener.matching(f"airflow.kgroups.cleanup.{name}", **ids) == [(0.0, "c")], name


def _gate_after_one_check(groups, seconds=None):
    """A barrier-free (threshold) gate that has evaluated one snapshot of ``groups``."""
    from airflow_provider_kgroups.lag.gate import GateSpec, GateState

    gate = LagGate(
        GateSpec.parse(group_ids=tuple(g.group_id for g in groups), lag_mode="threshold", max_total_lag=0),
        GateState(started_ms=0),
        deadline_ms=10**13,
    )
    gate.evaluate(snapshot(1_000, *groups), seconds)
    return gate


def test_per_group_series_are_capped_and_untagged_backends_get_the_task_in_the_name(statsd, monkeypatch):
    from airflow_provider_kgroups.observability import metrics

    groups = [group(f"g{i}", partition("t", 0, 0, 10 * (i + 1))) for i in range(5)]  # lags 10..50
    gate = _gate_after_one_check(groups)
    listener = statsd(tags=True)
    monkeypatch.setenv("AIRFLOW__KGROUPS__METRICS_TAG_LIMIT", "2")
    metrics.gate_checked(gate, evaluated=True, dag_id="d", task_id="t")
    listener.wait_for("airflow.kgroups.gate.lag", 3)
    series = {
        (line.split(",group=")[1].split(",")[0])
        for line in listener.lines
        if line.startswith("airflow.kgroups.gate.lag,")
    }
    assert series == {"g4", "g3", "_other"}  # the two most lagging, the rest summed
    assert listener.matching("airflow.kgroups.gate.lag", group="_other") == [(60.0, "g")]  # 10 + 20 + 30
    assert listener.matching("airflow.kgroups.gate.total_lag", dag_id="d") == [(150.0, "g")]
    assert listener.matching("airflow.kgroups.gate.groups_pending") == [(5.0, "g")]

    listener = statsd(tags=False)
    listener.lines.clear()
    metrics.gate_checked(gate, evaluated=True, dag_id="my.dag", task_id="gate")
    listener.wait_for("airflow.kgroups.gate.total_lag.my.dag.gate")
    assert not any(line.startswith("airflow.kgroups.gate.lag") for line in listener.lines)


def _seconds(group_id: str, *parts: tuple[float | None, LagSecondsBasis, bool], unmeasured: int = 0):
    return GroupLagSeconds(
        group_id,
        tuple(
            PartitionLagSeconds(group_id, "t", i, 0, 5, s, basis, "test", at_least=at_least)
            for i, (s, basis, at_least) in enumerate(parts)
        ),
        unmeasured=unmeasured,
    )


@pytest.mark.parametrize(
    "second_group, sent",
    [
        ((42.0, LagSecondsBasis.RECORD, False), 42.0),  # exact: the worst value goes out
        ((42.0, LagSecondsBasis.HISTORY_BOUND, True), None),  # a lower bound is not a value
        ((42.0, LagSecondsBasis.HISTORY, False), None),  # an interpolated estimate is not exact either
        ((None, LagSecondsBasis.UNKNOWN, False), None),  # unknown is not 0
    ],
)
def test_worst_lag_seconds_is_sent_only_when_exact(statsd, second_group, sent):
    from airflow_provider_kgroups.observability import metrics

    groups = [group("a", partition("t", 0, 0, 5)), group("b", partition("t", 0, 0, 5))]
    seconds = {"a": _seconds("a", (7.0, LagSecondsBasis.RECORD, False)), "b": _seconds("b", second_group)}
    gate = _gate_after_one_check(groups, seconds)
    listener = statsd(tags=True)
    metrics.gate_checked(gate, evaluated=True, dag_id="d", task_id="t")
    listener.wait_for("airflow.kgroups.gate.checks")
    listener.wait_for("airflow.kgroups.gate.groups_pending")  # sent after max_lag_seconds would have been
    assert listener.matching("airflow.kgroups.gate.max_lag_seconds") == (
        [] if sent is None else [(sent, "g")]
    )
    # a lagging partition left unmeasured makes the maximum a lower bound too
    assert (
        metrics.exact_max_seconds({"a": _seconds("a", (7.0, LagSecondsBasis.RECORD, False), unmeasured=1)})
        is None
    )


def test_unknown_lag_sends_no_total_and_a_failed_read_counts_as_an_error(statsd):
    from airflow_provider_kgroups.observability import metrics

    gate = _gate_after_one_check([group("a", partition("t", 0, None, 5), partition("t", 1, 0, 5))])
    listener = statsd(tags=True)
    metrics.gate_checked(gate, evaluated=True, dag_id="d", task_id="t")
    metrics.gate_checked(gate, evaluated=False, dag_id="d", task_id="t")
    listener.wait_for("airflow.kgroups.gate.check_errors")
    listener.wait_for("airflow.kgroups.gate.groups_pending")
    assert listener.matching("airflow.kgroups.gate.total_lag") == []  # never 0 for unknown
    assert listener.matching("airflow.kgroups.gate.lag") == []


def test_the_shortest_retention_margin_and_the_longest_catch_up_go_out_per_group_and_topic(statsd):
    """With AT_RISK in fail_on_verdicts the check reads margins: the shortest per (group, topic) goes
    out as kgroups.retention_margin_seconds; the catch-up time over the gate's window (two checks:
    g reads 30/s against 10/s written, 100 behind: 5 s) as kgroups.lag.eta_seconds."""
    from airflow_provider_kgroups.lag.gate import GateSpec, GateState
    from airflow_provider_kgroups.lag.retention import MarginBasis, RetentionMargin
    from airflow_provider_kgroups.observability import metrics

    gate = LagGate(
        GateSpec.parse(group_ids=("g",), lag_mode="threshold", max_total_lag=0),
        GateState(started_ms=0),
        10**13,
    )
    gate.evaluate(snapshot(1_000, group("g", partition("t", 0, 0, 300))))
    margins = {
        "g": {
            ("t", 0): RetentionMargin(5400.0, MarginBasis.RETENTION_MS, "test"),
            ("t", 1): RetentionMargin(None, MarginBasis.COMPACTED, "test"),
        }
    }
    gate.evaluate(snapshot(11_000, group("g", partition("t", 0, 300, 400))), margins=margins)
    listener = statsd(tags=True)
    metrics.gate_checked(gate, evaluated=True, dag_id="d", task_id="t")
    listener.wait_for("airflow.kgroups.lag.eta_seconds")
    listener.wait_for("airflow.kgroups.retention_margin_seconds")
    assert listener.matching("airflow.kgroups.retention_margin_seconds", group="g", topic="t") == [
        (5400.0, "g")
    ]
    assert listener.matching("airflow.kgroups.lag.eta_seconds", group="g", topic="t") == [(5.0, "g")]
